// A small well-formedness check for the SVG the runner writes: every tag closes in order, attribute
// values are quoted, and text holds no raw '<' or bare '&'. Not a full XML parser; enough to catch
// a broken writer or unescaped names.
#pragma once
#include <cctype>
#include <string>
#include <vector>

namespace moepage::test {

// "" when well-formed, else what is wrong and where.
inline std::string svg_is_well_formed(const std::string& text) {
  std::vector<std::string> open;
  size_t i = 0;
  bool root_seen = false;
  auto check_entities = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (text[k] != '&') continue;
      const size_t semi = text.find(';', k);
      const std::string ent = semi == std::string::npos ? "" : text.substr(k, semi - k + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
        return "bare '&' at " + std::to_string(k);
    }
    return "";
  };
  while (i < text.size()) {
    const size_t lt = text.find('<', i);
    if (std::string e = check_entities(i, lt == std::string::npos ? text.size() : lt); !e.empty()) return e;
    if (lt == std::string::npos) break;
    const size_t gt = text.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag at " + std::to_string(lt);
    std::string tag = text.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.rfind("?xml", 0) == 0) continue;
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(lt);
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name)
        return "</" + name + "> does not close <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
      continue;
    }
    const bool self_closing = !tag.empty() && tag.back() == '/';
    if (self_closing) tag.pop_back();
    size_t n = 0;
    while (n < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[n])) || tag[n] == '-' || tag[n] == ':')) ++n;
    const std::string name = tag.substr(0, n);
    if (name.empty()) return "a tag without a name at " + std::to_string(lt);
    if (open.empty() && root_seen) return "content after the root element";
    // Attributes: name="value" pairs.
    size_t k = n;
    while (k < tag.size()) {
      while (k < tag.size() && std::isspace(static_cast<unsigned char>(tag[k]))) ++k;
      if (k >= tag.size()) break;
      const size_t eq = tag.find('=', k);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"')
        return "unquoted attribute in <" + name + "> at " + std::to_string(lt);
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
      if (std::string e = check_entities(lt + 1 + eq + 2, lt + 1 + close); !e.empty()) return e;
      k = close + 1;
    }
    if (open.empty()) {
      if (name != "svg") return "the root element is <" + name + ">, not <svg>";
      root_seen = true;
    }
    if (!self_closing) open.push_back(name);
  }
  if (!root_seen) return "no <svg> element";
  if (!open.empty()) return "<" + open.back() + "> is never closed";
  return "";
}

}  // namespace moepage::test
