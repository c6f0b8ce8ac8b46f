// Walking a text file's lines, for the line-oriented formats of the pager core (traces,
// /proc/meminfo).
#pragma once
#include <cstddef>
#include <string_view>

namespace moepage::pager {

// Calls fn(line, line_no) for each line of `text`, numbered from 1, without its "\n" or "\r\n";
// a last line without a newline counts too.
template <class Fn>
void for_each_line(std::string_view text, Fn&& fn) {
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    fn(line, ++line_no);
  }
}

}  // namespace moepage::pager
