#include "host/elf_symbols.hpp"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace moepage::host {
namespace {

[[noreturn]] void malformed(const std::string& what) { throw std::runtime_error(what); }

// Bytes at an offset of a file, refusing anything that runs past its end. Only the tables the
// check needs are read, so a large library is never read whole.
class FileBytes {
 public:
  explicit FileBytes(const std::filesystem::path& file) : in_(file, std::ios::binary) {
    if (!in_) malformed("cannot be opened");
    std::error_code ec;
    size_ = std::filesystem::file_size(file, ec);
    if (ec) malformed("cannot be sized: " + ec.message());
  }
  uint64_t size() const { return size_; }
  void read(uint64_t offset, void* out, uint64_t bytes, const char* what) {
    if (offset > size_ || bytes > size_ - offset) malformed(std::string(what) + " extends past the end of the file");
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
    if (!in_) malformed(std::string("cannot read ") + what);
  }

 private:
  std::ifstream in_;
  uint64_t size_ = 0;
};

class MemoryBytes {
 public:
  explicit MemoryBytes(std::span<const unsigned char> image) : image_(image) {}
  uint64_t size() const { return image_.size(); }
  void read(uint64_t offset, void* out, uint64_t bytes, const char* what) const {
    if (offset > image_.size() || bytes > image_.size() - offset)
      malformed(std::string(what) + " extends past the end of the file");
    if (bytes > 0) std::memcpy(out, image_.data() + offset, bytes);
  }

 private:
  std::span<const unsigned char> image_;
};

template <class Bytes>
bool exports_function(Bytes& bytes, std::string_view symbol) {
  Elf64_Ehdr eh{};
  if (bytes.size() < sizeof eh) malformed("not an ELF shared library (shorter than an ELF header)");
  bytes.read(0, &eh, sizeof eh, "the ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) malformed("not an ELF shared library (no ELF magic)");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    malformed("not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN) malformed("an ELF file but not a shared library");
  if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr)) malformed("ELF file without usable section headers");

  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  bytes.read(eh.e_shoff, sections.data(), uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), "the section header table");

  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size())
      malformed("malformed dynamic symbol table");
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (strtab.sh_type != SHT_STRTAB) malformed("dynamic symbol table without a string table");
    // Sizes are checked against the file before anything is allocated for them.
    if (strtab.sh_size > bytes.size() || sh.sh_size > bytes.size()) malformed("dynamic tables larger than the file");
    std::vector<char> names(strtab.sh_size + 1, '\0');  // the extra NUL ends an unterminated last name
    bytes.read(strtab.sh_offset, names.data(), strtab.sh_size, "the dynamic string table");
    std::vector<Elf64_Sym> symbols(sh.sh_size / sizeof(Elf64_Sym));
    bytes.read(sh.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym), "the dynamic symbol table");
    for (const Elf64_Sym& s : symbols) {
      const unsigned bind = ELF64_ST_BIND(s.st_info);
      const unsigned visibility = ELF64_ST_VISIBILITY(s.st_other);
      if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;  // imports, data
      if (bind != STB_GLOBAL && bind != STB_WEAK) continue;
      if (visibility != STV_DEFAULT && visibility != STV_PROTECTED) continue;
      if (s.st_name >= strtab.sh_size) malformed("a symbol name lies outside the dynamic string table");
      if (symbol == std::string_view(names.data() + s.st_name)) return true;
    }
    return false;
  }
  return false;  // no dynamic symbol table: exports nothing
}

}  // namespace

bool elf_exports_function(const std::filesystem::path& file, std::string_view symbol) {
  FileBytes bytes(file);
  return exports_function(bytes, symbol);
}

bool elf_exports_function(std::span<const unsigned char> image, std::string_view symbol) {
  MemoryBytes bytes(image);
  return exports_function(bytes, symbol);
}

}  // namespace moepage::host
