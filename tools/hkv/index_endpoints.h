// The addresses `hkv index` is given: each instance's KV event endpoint and
// replay endpoint (--instance ENDPOINT[,REPLAY_ENDPOINT] or one per line of
// --instances-file), and the HTTP listener (--http HOST:PORT).
//
// Thread-safety: pure functions.
//
// Example:
//   Result<InstanceEndpoints> e =
//       ParseInstance("tcp://10.0.0.7:5557,tcp://10.0.0.7:5558");
//   e->endpoint;  // "tcp://10.0.0.7:5557"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hkv/result.h"

namespace hkv::cli {

struct InstanceEndpoints {
  std::string endpoint;         // the engine's PUB socket
  std::string replay_endpoint;  // its ROUTER replay socket; empty: none
};

// "ENDPOINT[,REPLAY_ENDPOINT]", surrounding blanks ignored.
// kInvalidArgument naming the text when an endpoint is empty, holds blanks
// or a comma more, or lacks "://" (ZeroMQ's transport://address).
[[nodiscard]] Result<InstanceEndpoints> ParseInstance(std::string_view text);

// One instance per line of `text`; blank lines and lines starting with '#'
// are skipped. Errors name the line ("`source`:3: ..."): kInvalidArgument.
[[nodiscard]] Result<std::vector<InstanceEndpoints>> ParseInstanceList(
    std::string_view text, std::string_view source);

struct HostPort {
  std::string host;  // without brackets ("::1" for "[::1]:80")
  std::uint16_t port = 0;
};

// "HOST:PORT" or "[IPV6]:PORT", PORT 0 to 65535 (0: any free port).
// kInvalidArgument naming the text otherwise.
[[nodiscard]] Result<HostPort> ParseHostPort(std::string_view text);

}  // namespace hkv::cli
