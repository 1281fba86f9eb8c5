// Bindings of hkv/event_publisher.h: KV events on a ZeroMQ socket in the
// reference system's wire format.
#include "bindings.h"
#include "hkv/event_publisher.h"

namespace hkv::python {

void BindPublisher(py::module_& m) {
  py::class_<PublisherCounters>(m, "PublisherCounters")
      .def_readonly("published", &PublisherCounters::published)
      .def_readonly("dropped", &PublisherCounters::dropped)
      .def_readonly("replay_requests", &PublisherCounters::replay_requests)
      .def_readonly("bad_replay_requests",
                    &PublisherCounters::bad_replay_requests)
      .def_readonly("socket_errors", &PublisherCounters::socket_errors);
  py::class_<EventPublisher, std::unique_ptr<EventPublisher>>(
      m, "EventPublisher",
      "Publishes KV event batches on a ZeroMQ PUB socket (bound), with a "
      "replay ROUTER socket when replay_endpoint is set (docs/events.md). "
      "'tcp://127.0.0.1:*' binds a free port: see .endpoint.")
      .def(
          py::init([](const std::string& endpoint,
                      std::optional<std::string> replay_endpoint,
                      const std::string& topic, std::uint32_t rank,
                      const std::string& key_function,
                      const std::string& hashes, std::size_t replay_batches,
                      std::size_t queue_batches) {
            if (hashes != "bytes" && hashes != "low64") {
              throw UsageError("hashes must be \"bytes\" or \"low64\", got \"" +
                               hashes + "\"");
            }
            return ValueOrThrow(EventPublisher::Create(
                {.endpoint = endpoint,
                 .replay_endpoint = std::move(replay_endpoint),
                 .topic = topic,
                 .data_parallel_rank = rank,
                 .key_function = ValueOrThrow(ParseKeyFunction(key_function)),
                 .hashes = hashes == "bytes" ? HashEncoding::kBytes
                                             : HashEncoding::kLow64,
                 .replay_batches = replay_batches,
                 .queue_batches = queue_batches}));
          }),
          py::arg("endpoint"), py::arg("replay_endpoint") = py::none(),
          py::arg("topic") = "", py::arg("data_parallel_rank") = 0,
          py::arg("key_function") = "sha256_cbor", py::arg("hashes") = "bytes",
          py::arg("replay_batches") = 10'000,
          py::arg("queue_batches") = 100'000)
      .def_property_readonly("endpoint", &EventPublisher::endpoint)
      .def_property_readonly("replay_endpoint",
                             &EventPublisher::replay_endpoint)
      .def(
          "publish",
          [](EventPublisher& publisher, std::vector<KvEvent> events,
             double timestamp) {
            publisher.Publish(std::move(events), timestamp);
          },
          py::arg("events"), py::arg("timestamp"),
          "Queues one batch (never blocks; a full queue drops its oldest)")
      .def(
          "flush",
          [](EventPublisher& publisher, double timeout_s) {
            if (!(timeout_s >= 0.0 && timeout_s <= 86400.0)) {
              throw UsageError("flush(): timeout_s must be in [0, 86400]");
            }
            py::gil_scoped_release release;
            return publisher.Flush(std::chrono::milliseconds(
                static_cast<std::int64_t>(timeout_s * 1000)));
          },
          py::arg("timeout_s") = 5.0,
          "Waits until every queued batch was sent; returns whether it was")
      .def_property_readonly("counters", &EventPublisher::counters);
}

}  // namespace hkv::python
