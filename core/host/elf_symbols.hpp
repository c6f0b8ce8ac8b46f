// Reads a shared library's dynamic symbol table without loading it, so the loader can check a
// plugin's entry symbol before running any of the file's code.
//
// Why not boost::dll::library_info: in Boost 1.74 it reads .symtab (which `strip` removes, so an
// installed, stripped plugin would look empty) and pairs it with whichever string table comes
// last (usually .shstrtab), so names it reports depend on section order. .dynsym is what the
// dynamic loader itself uses, and it survives stripping.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace moepage::host {

// True when `file` is a 64-bit little-endian ELF shared object whose .dynsym defines a global or
// weak, default-visibility function named `symbol`. Throws std::runtime_error with a one-line
// reason (no path) when the file is not such an object or its tables are malformed.
bool elf_exports_function(const std::filesystem::path& file, std::string_view symbol);

// The same check on an image already in memory (used by the fuzz target and corruption tests).
bool elf_exports_function(std::span<const unsigned char> image, std::string_view symbol);

}  // namespace moepage::host
