// Writing a value into a `--set key=value` override or a generated profile: the value becomes a
// YAML double-quoted scalar, so it reads back as the same string whatever characters it holds.
#pragma once
#include <string>
#include <string_view>

namespace moepage::profile {

// "text" with \" \\ \n \r \t and \xNN escapes. Double-quoted rather than single-quoted because a
// single-quoted YAML scalar folds its line breaks into spaces.
std::string yaml_quote(std::string_view text);

}  // namespace moepage::profile
