// `hkv index`'s HTTP listener (cpp-httplib): POST /query answers a query
// (index_query.h) and GET /metrics gives the counts in Prometheus' text
// format, both from the shared IndexState. Bodies above kMaxQueryBytes are
// refused (413) before they are read whole.
//
// Thread-safety: handlers run on the listener's own threads; Start and the
// destructor on the owner's.
//
// Example:
//   auto http = IndexHttp::Start(state, "127.0.0.1:0");
//   log.Always("http on " + (*http)->address());
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "hkv/result.h"
#include "index_state.h"

namespace httplib {
class Server;
}

namespace hkv::cli {

class IndexHttp {
 public:
  // Binds HOST:PORT (port 0: a free one) and starts listening.
  // kInvalidArgument for an address that is not HOST:PORT, kIoError naming
  // it when it cannot be bound. `state` must outlive the listener.
  [[nodiscard]] static Result<std::unique_ptr<IndexHttp>> Start(
      IndexState& state, const std::string& address);
  // Stops listening and waits for the handlers to finish.
  ~IndexHttp();
  IndexHttp(const IndexHttp&) = delete;
  IndexHttp& operator=(const IndexHttp&) = delete;

  // HOST:PORT as bound.
  const std::string& address() const { return address_; }

 private:
  IndexHttp();

  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::atomic<bool> listened_ = false;  // the listener returned
  std::string address_;
};

}  // namespace hkv::cli
