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

// Reads `bytes` at `offset`, refusing anything that runs past the end of the file.
void read_at(std::ifstream& in, uint64_t file_size, uint64_t offset, void* out, uint64_t bytes, const char* what) {
  if (offset > file_size || bytes > file_size - offset)
    malformed(std::string(what) + " extends past the end of the file");
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes));
  if (!in) malformed(std::string("cannot read ") + what);
}

}  // namespace

bool elf_exports_function(const std::filesystem::path& file, std::string_view symbol) {
  std::ifstream in(file, std::ios::binary);
  if (!in) malformed("cannot be opened");
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(file, ec);
  if (ec) malformed("cannot be sized: " + ec.message());

  Elf64_Ehdr eh{};
  if (size < sizeof eh) malformed("not an ELF shared library (shorter than an ELF header)");
  read_at(in, size, 0, &eh, sizeof eh, "the ELF header");
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) malformed("not an ELF shared library (no ELF magic)");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    malformed("not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN) malformed("an ELF file but not a shared library");
  if (eh.e_shnum == 0 || eh.e_shentsize != sizeof(Elf64_Shdr)) malformed("ELF file without usable section headers");

  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  read_at(in, size, eh.e_shoff, sections.data(), uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr), "the section header table");

  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size())
      malformed("malformed dynamic symbol table");
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    if (strtab.sh_type != SHT_STRTAB) malformed("dynamic symbol table without a string table");
    std::vector<char> names(strtab.sh_size + 1, '\0');  // the extra NUL ends any unterminated name
    read_at(in, size, strtab.sh_offset, names.data(), strtab.sh_size, "the dynamic string table");
    std::vector<Elf64_Sym> symbols(sh.sh_size / sizeof(Elf64_Sym));
    read_at(in, size, sh.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym), "the dynamic symbol table");
    for (const Elf64_Sym& s : symbols) {
      const unsigned bind = ELF64_ST_BIND(s.st_info);
      if (s.st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s.st_info) != STT_FUNC) continue;  // imports, data
      if (bind != STB_GLOBAL && bind != STB_WEAK) continue;
      if (ELF64_ST_VISIBILITY(s.st_other) != STV_DEFAULT && ELF64_ST_VISIBILITY(s.st_other) != STV_PROTECTED) continue;
      if (s.st_name >= strtab.sh_size) malformed("a symbol name lies outside the dynamic string table");
      if (symbol == std::string_view(names.data() + s.st_name)) return true;
    }
    return false;
  }
  return false;  // no dynamic symbols at all: exports nothing
}

}  // namespace moepage::host
