// Reading a trace file from disk: plain text, or .xz through liblzma (Debian's xz-utils library).
#include <fcntl.h>
#include <lzma.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/trace.hpp"

namespace moepage::pager {

namespace {

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

std::string read_plain(FILE* f, const std::string& path) {
  std::string text;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
  if (std::ferror(f)) throw PagerError(ErrorKind::Format, path + ": read failed (" + std::strerror(errno) + ")");
  return text;
}

const char* lzma_words(lzma_ret r) {
  switch (r) {
    case LZMA_MEM_ERROR: return "out of memory";
    case LZMA_FORMAT_ERROR: return "not in the .xz format";
    case LZMA_OPTIONS_ERROR: return "unsupported compression options";
    case LZMA_DATA_ERROR: return "the compressed data is corrupt";
    case LZMA_BUF_ERROR: return "the compressed data is truncated";
    default: return "liblzma error";
  }
}

// Every .xz stream of the file, concatenated (what `xz -dc` prints).
std::string read_xz(FILE* f, const std::string& path) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (const lzma_ret r = lzma_stream_decoder(&strm, UINT64_MAX, LZMA_CONCATENATED); r != LZMA_OK)
    throw PagerError(ErrorKind::Format, "cannot decompress trace " + path + ": " + lzma_words(r));
  std::unique_ptr<lzma_stream, void (*)(lzma_stream*)> guard(&strm, &lzma_end);
  std::string text;
  uint8_t in[1 << 16];
  char out[1 << 16];
  lzma_action action = LZMA_RUN;
  for (;;) {
    if (strm.avail_in == 0 && action == LZMA_RUN) {
      strm.next_in = in;
      strm.avail_in = std::fread(in, 1, sizeof in, f);
      if (std::ferror(f)) throw PagerError(ErrorKind::Format, path + ": read failed (" + std::strerror(errno) + ")");
      if (std::feof(f)) action = LZMA_FINISH;
    }
    strm.next_out = reinterpret_cast<uint8_t*>(out);
    strm.avail_out = sizeof out;
    const lzma_ret r = lzma_code(&strm, action);
    text.append(out, sizeof out - strm.avail_out);
    if (text.size() > kMaxTraceFileBytes)
      throw PagerError(ErrorKind::Format, "trace " + path + " decompresses to more than " +
                                              std::to_string(kMaxTraceFileBytes) + " bytes, the most that is read");
    if (r == LZMA_STREAM_END) return text;
    if (r != LZMA_OK) throw PagerError(ErrorKind::Format, "cannot decompress trace " + path + ": " + lzma_words(r));
  }
}

}  // namespace

Trace read_trace_file(const std::string& path) {
  // O_NONBLOCK: a FIFO must not block the open; only a regular file of a bounded size is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw PagerError(ErrorKind::Format, path + ": cannot open the trace (" + std::strerror(errno) + ")");
  File f(::fdopen(fd, "rb"), &std::fclose);
  if (!f) {
    ::close(fd);
    throw PagerError(ErrorKind::Format, path + ": cannot open the trace (" + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) throw PagerError(ErrorKind::Format, path + ": not a regular file");
  if (uint64_t(st.st_size) > kMaxTraceFileBytes)
    throw PagerError(ErrorKind::Format, path + ": the trace is " + std::to_string(st.st_size) + " bytes; at most " +
                                            std::to_string(kMaxTraceFileBytes) + " are read");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const bool xz = path.size() >= 3 && path.compare(path.size() - 3, 3, ".xz") == 0;
  return parse_trace(xz ? read_xz(f.get(), path) : read_plain(f.get(), path), path);
}

}  // namespace moepage::pager
