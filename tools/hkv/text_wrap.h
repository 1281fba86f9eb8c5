// Text output that fits the terminal: the CLI's reports keep to 100
// columns.
#pragma once

#include <cstddef>
#include <string>

namespace hkv::cli {

inline constexpr std::size_t kLineWidth = 100;

// Prints `text` wrapped at kLineWidth on spaces, each line after the first
// indented by `indent`; a word longer than a line gets a line of its own.
void PrintWrapped(const std::string& text, const std::string& indent);

}  // namespace hkv::cli
