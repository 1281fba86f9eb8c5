// Bindings of hkv/keys.h and hkv/request.h: key schemes, extra keys and the
// Request whose keys grow with its tokens.
#include "hkv/request.h"

#include <limits>
#include <span>
#include <string>
#include <vector>

#include "bindings.h"
#include "hkv/keys.h"

namespace hkv::python {
namespace {

// Token ids from a list, or without a copy through Python from a
// contiguous buffer of uint32 (array('I'), a numpy uint32 array).
// UsageError naming `what` and the first element that is not a token id.
std::vector<TokenId> Tokens(const py::object& tokens, const std::string& what) {
  if (py::isinstance<py::buffer>(tokens) && !py::isinstance<py::list>(tokens)) {
    const py::buffer_info info = tokens.cast<py::buffer>().request();
    if (info.ndim == 1 && info.itemsize == sizeof(TokenId) &&
        info.format == py::format_descriptor<TokenId>::format() &&
        info.strides[0] == static_cast<py::ssize_t>(sizeof(TokenId))) {
      const auto* data = static_cast<const TokenId*>(info.ptr);
      return {data, data + info.size};
    }
  }
  try {
    return tokens.cast<std::vector<TokenId>>();
  } catch (const py::cast_error&) {
    if (!py::isinstance<py::sequence>(tokens) ||
        py::isinstance<py::str>(tokens)) {
      throw UsageError(what + " must be a list of token ids (ints in [0, " +
                       std::to_string(std::numeric_limits<TokenId>::max()) +
                       "]), got " + ShortRepr(tokens));
    }
    const py::sequence items = tokens.cast<py::sequence>();
    for (std::size_t i = 0; i < items.size(); ++i) {
      Convert<TokenId>(items[i], what + "[" + std::to_string(i) + "]");
    }
    throw;  // every element converts: not expected
  }
}

void BindKeys(py::module_& m) {
  py::enum_<KeyFunction>(m, "KeyFunction")
      .value("SHA256_CBOR", KeyFunction::kSha256Cbor)
      .value("XXH3_128_CBOR", KeyFunction::kXxh3_128Cbor);
  m.def("parse_key_function", [](std::string_view name) {
    return ValueOrThrow(ParseKeyFunction(name));
  });
  m.def("key_function_name",
        [](KeyFunction f) { return std::string(KeyFunctionName(f)); });
  m.def("digest_size", &DigestSize);
  py::class_<KeySchemeOptions>(m, "KeySchemeOptions")
      .def(py::init<KeyFunction, std::uint32_t, std::optional<std::string>>(),
           py::arg("function") = KeyFunction::kSha256Cbor,
           py::arg("hash_unit") = 16, py::arg("seed") = py::none())
      .def_readwrite("function", &KeySchemeOptions::function)
      .def_readwrite("hash_unit", &KeySchemeOptions::hash_unit)
      .def_readwrite("seed", &KeySchemeOptions::seed);
  py::class_<KeyScheme>(m, "KeyScheme")
      .def_readonly("function", &KeyScheme::function)
      .def_readonly("hash_unit", &KeyScheme::hash_unit)
      .def_readonly("seed_key", &KeyScheme::seed_key)
      .def(py::self == py::self);
  m.def(
      "make_key_scheme",
      [](const KeySchemeOptions& options) {
        return ValueOrThrow(MakeKeyScheme(options));
      },
      py::arg("options"));
}

void BindExtras(py::module_& m) {
  py::class_<ExtraKey>(m, "ExtraKey")
      .def(py::init<std::string, std::optional<std::int64_t>>(),
           py::arg("text"), py::arg("offset") = py::none())
      .def_readwrite("text", &ExtraKey::text)
      .def_readwrite("offset", &ExtraKey::offset)
      .def(py::self == py::self)
      .def("__repr__", [](const ExtraKey& e) {
        return e.offset ? "ExtraKey(" + e.text + ", " +
                              std::to_string(*e.offset) + ")"
                        : "ExtraKey(" + e.text + ")";
      });
  py::class_<MultimodalItem>(m, "MultimodalItem")
      .def(py::init<std::string, std::uint32_t, std::uint32_t>(),
           py::arg("identifier"), py::arg("offset"), py::arg("length"))
      .def_readwrite("identifier", &MultimodalItem::identifier)
      .def_readwrite("offset", &MultimodalItem::offset)
      .def_readwrite("length", &MultimodalItem::length);
  py::class_<KeyExtras>(m, "KeyExtras")
      .def(py::init<std::string, std::vector<MultimodalItem>, std::string>(),
           py::arg("lora_name") = "",
           py::arg("multimodal") = std::vector<MultimodalItem>{},
           py::arg("cache_salt") = "")
      .def_readwrite("lora_name", &KeyExtras::lora_name)
      .def_readwrite("multimodal", &KeyExtras::multimodal)
      .def_readwrite("cache_salt", &KeyExtras::cache_salt);
  m.def("unit_extra_keys", &UnitExtraKeys, py::arg("extras"), py::arg("start"),
        py::arg("end"));
}

std::unique_ptr<Request> MakeRequest(RequestId id, const py::object& tokens,
                                     const KeyScheme& scheme,
                                     const RequestOptions& options) {
  const std::vector<TokenId> prompt = Tokens(tokens, "Request(): tokens");
  RequestOptions o = options;
  o.id = id;
  py::gil_scoped_release release;  // keying a long prompt takes milliseconds
  return std::make_unique<Request>(std::move(o), prompt, scheme);
}

void BindRequestClass(py::module_& m) {
  py::enum_<CacheRead>(m, "CacheRead")
      .value("ALLOWED", CacheRead::kAllowed)
      .value("SKIPPED", CacheRead::kSkipped);
  py::enum_<EventReport>(m, "EventReport")
      .value("INCREMENTAL", EventReport::kIncremental)
      .value("FULL", EventReport::kFull);
  py::class_<Request>(m, "Request")
      .def(py::init([](RequestId id, const py::object& tokens,
                       const KeyScheme& scheme, const KeyExtras& extras,
                       CacheRead cache_read, std::optional<std::uint32_t> lora,
                       EventReport report) {
             return MakeRequest(id, tokens, scheme,
                                {.extras = extras,
                                 .cache_read = cache_read,
                                 .lora_id = lora,
                                 .event_report = report});
           }),
           py::arg("id"), py::arg("tokens"), py::arg("scheme"),
           py::arg("extras") = KeyExtras{},
           py::arg("cache_read") = CacheRead::kAllowed,
           py::arg("lora_id") = py::none(),
           py::arg("event_report") = EventReport::kIncremental)
      .def("append_tokens",
           [](Request& r, const py::object& tokens) {
             const std::vector<TokenId> t =
                 Tokens(tokens, "append_tokens(): tokens");
             py::gil_scoped_release release;
             r.AppendTokens(t);
           })
      .def_property_readonly("id", &Request::id)
      .def_property_readonly("key_scheme", &Request::key_scheme)
      .def_property_readonly("extras", &Request::extras)
      .def_property_readonly("cache_read", &Request::cache_read)
      .def_property_readonly("lora_id", &Request::lora_id)
      .def_property_readonly("num_tokens", &Request::num_tokens)
      .def_property_readonly("num_prompt_tokens", &Request::num_prompt_tokens)
      .def_property_readonly("tokens",
                             [](const Request& r) {
                               const auto t = r.tokens();
                               return std::vector<TokenId>(t.begin(), t.end());
                             })
      .def_property_readonly("keys", [](const Request& r) {
        const auto k = r.keys();
        return std::vector<BlockHash>(k.begin(), k.end());
      });
}

}  // namespace

void BindRequest(py::module_& m) {
  BindKeys(m);
  BindExtras(m);
  BindRequestClass(m);
}

}  // namespace hkv::python
