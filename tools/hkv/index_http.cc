#include "index_http.h"

#include <httplib.h>

#include <chrono>
#include <exception>

#include "index_endpoints.h"
#include "index_metrics.h"
#include "index_query.h"

namespace hkv::cli {
namespace {

constexpr std::chrono::seconds kSocketTimeout{5};
// Connections served at once, each on a thread of its own: a client that
// trickles its request in holds one for as long as it keeps sending (the
// library has no per-request deadline), so that many slow clients stand
// between a query and a thread (the library's default is 8).
constexpr std::size_t kHttpThreads = 64;
constexpr std::chrono::seconds kStartWait{5};
constexpr char kTooLarge[] =
    "the body exceeds 64 MiB, or 8 KiB when not sent as application/json "
    "(the HTTP library's limit for form data)";

void AddRoutes(httplib::Server& server, IndexState& state) {
  server.Post("/query", [&state](const httplib::Request& request,
                                 httplib::Response& response) {
    const QueryReply reply = state.Query(request.body);
    response.status = reply.http_status;
    response.set_content(reply.json, "application/json");
  });
  server.Get("/metrics", [&state](const httplib::Request& /*request*/,
                                  httplib::Response& response) {
    response.set_content(PrometheusText(state.Snapshot()),
                         kPrometheusContentType);
  });
}

void AddErrorHandlers(httplib::Server& server, IndexState& state) {
  // Error statuses the library sets itself (404, 413, ...) get a JSON
  // body; a query body refused for its size counts as a bad query.
  server.set_error_handler(httplib::Server::HandlerWithResponse(
      [&state](const httplib::Request& request, httplib::Response& response) {
        if (!response.body.empty())
          return httplib::Server::HandlerResponse::Unhandled;
        std::string json;
        if (response.status == 413 && request.path == "/query") {
          json = state.Refuse(kTooLarge).json;
        } else {
          json = ErrorJson("HTTP status " + std::to_string(response.status) +
                           " for " + request.method + " " + request.path +
                           " (POST /query, GET /metrics)");
        }
        response.set_content(json, "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }));
  server.set_exception_handler([](const httplib::Request& /*request*/,
                                  httplib::Response& response,
                                  const std::exception_ptr& /*error*/) {
    response.status = 500;
    response.set_content(ErrorJson("internal error"), "application/json");
  });
}

}  // namespace

IndexHttp::IndexHttp() : server_(std::make_unique<httplib::Server>()) {}

IndexHttp::~IndexHttp() {
  // stop() is lost on a server not yet listening: repeat it until the
  // listener returns.
  while (thread_.joinable() && !listened_.load()) {
    server_->stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<IndexHttp>> IndexHttp::Start(
    IndexState& state, const std::string& address) {
  Result<HostPort> host_port = ParseHostPort(address);
  if (!host_port)
    return Fail(ErrorCode::kInvalidArgument,
                "--http: " + host_port.error().message);
  std::unique_ptr<IndexHttp> http(new IndexHttp());
  httplib::Server& server = *http->server_;
  server.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  server.set_payload_max_length(kMaxQueryBytes);
  server.set_read_timeout(kSocketTimeout);
  server.set_write_timeout(kSocketTimeout);
  AddRoutes(server, state);
  AddErrorHandlers(server, state);
  const std::string& host = host_port->host;
  const int port = host_port->port == 0 ? server.bind_to_any_port(host)
                   : server.bind_to_port(host, host_port->port)
                       ? host_port->port
                       : -1;
  if (port <= 0) {
    return Fail(ErrorCode::kIoError,
                "--http: cannot listen on \"" + address + "\"");
  }
  const bool v6 = host.find(':') != std::string::npos;
  http->address_ = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  http->thread_ = std::thread([&server, &listened = http->listened_] {
    server.listen_after_bind();
    listened = true;
  });
  // Queries are answered once it runs.
  const auto until = std::chrono::steady_clock::now() + kStartWait;
  while (!server.is_running() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return http;
}

}  // namespace hkv::cli
