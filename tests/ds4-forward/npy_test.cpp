#include <doctest/doctest.h>

#include <cstring>
#include <string>

#include "npy.hpp"
#include "output/npy.hpp"

using moepage::test::parse_npy;

namespace {
// A version-1 .npy as numpy (and `moepage run --dump-logits`) writes it.
std::string make_npy(const std::string& dict, const std::string& data) {
  return moepage::output::npy_preamble(dict) + data;
}
std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), v.begin(), s.size());
  return s;
}
}  // namespace

TEST_CASE("a float32 npy file reads back with its shape and values") {
  const auto a = parse_npy(
      make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats({1, 2, 3, 4, 5, -6.5f})), "x.npy");
  REQUIRE(a.shape == std::vector<int64_t>{2, 3});
  REQUIRE(a.f32.size() == 6);
  CHECK(a.f32[5] == -6.5f);
}

TEST_CASE("int64 and one-dimensional npy files read back") {
  std::string data(16, '\0');
  const int64_t v[2] = {7, -1};
  std::memcpy(data.data(), v, 16);
  const auto a = parse_npy(make_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", data), "ids.npy");
  REQUIRE(a.shape == std::vector<int64_t>{2});
  CHECK(a.i64[0] == 7);
  CHECK(a.i64[1] == -1);
}

TEST_CASE("a truncated npy file gives an error naming the file") {
  const std::string good = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", floats({1, 2, 3, 4}));
  CHECK_THROWS_WITH(parse_npy(good.substr(0, good.size() - 2), "logits.npy"),
                    doctest::Contains("logits.npy: holds 14 data bytes, the header says 16"));
  CHECK_THROWS_WITH(parse_npy("hello world", "bad.npy"), doctest::Contains("bad.npy: not an .npy file"));
  CHECK_THROWS_WITH(
      parse_npy(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\0')), "d.npy"),
      doctest::Contains("d.npy: dtype '<f8'"));
}

TEST_CASE("the writer's preamble starts the data on a 64-byte boundary and reads back") {
  const std::string preamble = moepage::output::npy_preamble(moepage::output::npy_f32_matrix_dict(2, 3));
  CHECK(preamble.size() % 64 == 0);
  CHECK(preamble.back() == '\n');
  const auto a = parse_npy(preamble + floats({1, 2, 3, 4, 5, 6}), "dump.npy");
  CHECK(a.shape == std::vector<int64_t>{2, 3});
  CHECK(a.f32[4] == 5.f);
}
