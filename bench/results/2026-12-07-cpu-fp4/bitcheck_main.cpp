#include <cstdio>
#include <cstring>
#include <random>
#include <vector>
#include "deepseek4/cpu/gemm.hpp"
using namespace moepage; using namespace moepage::ds4::cpu;
int main(){
  std::mt19937 g(3); uint64_t h=1469598103934665603ull;
  auto mix=[&](const std::vector<float>& v){ for(float f:v){uint32_t u; std::memcpy(&u,&f,4); h=(h^u)*1099511628211ull;} };
  for (Dtype dt : {Dtype::I8, Dtype::F8_E4M3, Dtype::BF16, Dtype::F32}) for (int64_t cols : {64, 512, 4096, 1056}) for (int64_t nt : {1, 3, 70}) {
    const int64_t rows=37;
    size_t bytes = dt==Dtype::I8? rows*cols/2 : dt==Dtype::F8_E4M3? rows*cols : dt==Dtype::BF16? rows*cols*2 : rows*cols*4;
    std::vector<std::byte> d(bytes); for(auto&b:d){ int v=g()&0xff; if(dt==Dtype::F8_E4M3 && (v&0x7f)==0x7f) v&=0xfe; if(dt==Dtype::BF16||dt==Dtype::F32) v&= (&b-d.data())%2? 0x3f: 0xff; b=std::byte(v);} 
    std::vector<std::byte> sc(dt==Dtype::I8? rows*cols/32 : ((rows+127)/128)*((cols+127)/128)); for(auto&b:sc) b=std::byte(120+g()%10);
    MatRef m{dt,rows,cols,d.data(), (dt==Dtype::I8||dt==Dtype::F8_E4M3)? sc.data():nullptr,0,0};
    std::vector<float> x(cols*nt); for(auto&f:x) f=float(int(g()%2001)-1000)/997.f;
    std::vector<float> y(rows*nt);
    matmul_rows(m,x.data(),cols,y.data(),rows,nt,0,rows); mix(y);
  }
  printf("%016llx\n",(unsigned long long)h);
}
