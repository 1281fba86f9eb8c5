#include "index_endpoints.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hkv::cli {
namespace {

std::string_view Trim(std::string_view text) {
  const auto blank = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  while (!text.empty() && blank(text.front())) text.remove_prefix(1);
  while (!text.empty() && blank(text.back())) text.remove_suffix(1);
  return text;
}

bool IsEndpoint(std::string_view text) {
  const bool separators = std::any_of(text.begin(), text.end(), [](char c) {
    return c == ',' || std::isspace(static_cast<unsigned char>(c)) != 0;
  });
  const std::size_t scheme = text.find("://");
  return !separators && scheme != std::string_view::npos && scheme > 0 &&
         scheme + 3 < text.size();
}

Result<InstanceEndpoints> Refuse(std::string_view text) {
  return Fail(ErrorCode::kInvalidArgument,
              "instance \"" + std::string(text) +
                  "\" is not ENDPOINT[,REPLAY_ENDPOINT] (ZeroMQ endpoints "
                  "such as tcp://10.0.0.7:5557)");
}

}  // namespace

Result<InstanceEndpoints> ParseInstance(std::string_view text) {
  const std::string_view trimmed = Trim(text);
  const std::size_t comma = trimmed.find(',');
  InstanceEndpoints endpoints{
      .endpoint = std::string(Trim(trimmed.substr(0, comma))),
      .replay_endpoint = ""};
  if (comma != std::string_view::npos) {
    endpoints.replay_endpoint = std::string(Trim(trimmed.substr(comma + 1)));
    if (!IsEndpoint(endpoints.replay_endpoint)) return Refuse(text);
  }
  if (!IsEndpoint(endpoints.endpoint)) return Refuse(text);
  return endpoints;
}

Result<std::vector<InstanceEndpoints>> ParseInstanceList(
    std::string_view text, std::string_view source) {
  std::vector<InstanceEndpoints> instances;
  std::size_t line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = Trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty() || line.front() == '#') continue;
    Result<InstanceEndpoints> instance = ParseInstance(line);
    if (!instance) {
      return Fail(ErrorCode::kInvalidArgument,
                  std::string(source) + ":" + std::to_string(line_number) +
                      ": " + instance.error().message);
    }
    instances.push_back(std::move(*instance));
  }
  return instances;
}

Result<HostPort> ParseHostPort(std::string_view text) {
  const std::size_t colon = text.rfind(':');
  const auto refuse = [text] {
    return Fail(ErrorCode::kInvalidArgument,
                "\"" + std::string(text) +
                    "\" is not HOST:PORT (PORT 0 to 65535, 0: any free one)");
  };
  if (colon == std::string_view::npos || colon == 0) return refuse();
  std::string_view host = text.substr(0, colon);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return refuse();
    host = host.substr(1, host.size() - 2);
  }
  const std::string_view digits = text.substr(colon + 1);
  std::uint16_t port = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, port);
  if (digits.empty() || ec != std::errc() || ptr != end) return refuse();
  return HostPort{.host = std::string(host), .port = port};
}

}  // namespace hkv::cli
