#include "text_wrap.h"

#include <fmt/core.h>

#include <algorithm>

namespace hkv::cli {

void PrintWrapped(const std::string& text, const std::string& indent) {
  std::size_t start = std::min(text.find_first_not_of(' '), text.size());
  std::string line = text.substr(0, start);
  bool fresh = true;  // no word on the line yet
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!fresh && line.size() + 1 + word.size() > kLineWidth) {
      fmt::print("{}\n", line);
      line = indent;
      fresh = true;
    }
    line += (fresh ? "" : " ") + word;
    fresh = false;
    start = end + 1;
  }
  if (!fresh) fmt::print("{}\n", line);
}

}  // namespace hkv::cli
