// Bindings of hkv/keys.h and hkv/request.h: key schemes, extra keys and the
// Request whose keys grow with its tokens.
#include "hkv/request.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
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
// A list or tuple of plain ints in TokenId's range as token ids, without
// pybind11's per-element caster (a 128k-token prompt: about 1 ms through
// it). nullopt on anything else, for the checked conversion to name it.
std::optional<std::vector<TokenId>> PlainInts(const py::object& tokens) {
  PyObject* const sequence = tokens.ptr();
  const Py_ssize_t size = PySequence_Fast_GET_SIZE(sequence);
  PyObject** const items = PySequence_Fast_ITEMS(sequence);
  std::vector<TokenId> out;
  out.reserve(static_cast<std::size_t>(size));
  for (Py_ssize_t i = 0; i < size; ++i) {
    PyObject* item = items[i];
    if (!PyLong_CheckExact(item)) return std::nullopt;
    const unsigned long value = PyLong_AsUnsignedLong(item);
    if (value > std::numeric_limits<TokenId>::max()) {  // -1 on errors too
      PyErr_Clear();
      return std::nullopt;
    }
    out.push_back(static_cast<TokenId>(value));
  }
  return out;
}

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
  if (PyList_Check(tokens.ptr()) || PyTuple_Check(tokens.ptr())) {
    if (std::optional<std::vector<TokenId>> fast = PlainInts(tokens)) {
      return *std::move(fast);
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

// A tagged tuple as Python writes it: ("lora", name, path), ("mm",
// identifier, offset), ("cache_salt", salt), ("prompt_embeds", digest).
py::tuple AsTuple(const ExtraKey& key) {
  const py::str tag(std::string(ExtraKeyTag(key.kind)));
  switch (key.kind) {
    case ExtraKeyKind::kLora:
      return py::make_tuple(tag, key.name, key.path);
    case ExtraKeyKind::kMultimodal:
      return py::make_tuple(tag, key.name, key.offset);
    case ExtraKeyKind::kPromptEmbeds:
      return py::make_tuple(tag, AsBytes(key.digest));
    case ExtraKeyKind::kCacheSalt:
      break;
  }
  return py::make_tuple(tag, key.name);
}

EmbedsDigest DigestOf(const py::bytes& bytes) {
  const std::string_view view(bytes);
  if (view.size() != EmbedsDigest{}.size()) {
    throw UsageError("a prompt_embeds digest is 32 bytes, not " +
                     std::to_string(view.size()));
  }
  EmbedsDigest digest;
  std::copy(view.begin(), view.end(), digest.begin());
  return digest;
}

void BindExtraKey(py::module_& m) {
  py::enum_<ExtraKeyKind>(m, "ExtraKeyKind")
      .value("LORA", ExtraKeyKind::kLora)
      .value("MULTIMODAL", ExtraKeyKind::kMultimodal)
      .value("CACHE_SALT", ExtraKeyKind::kCacheSalt)
      .value("PROMPT_EMBEDS", ExtraKeyKind::kPromptEmbeds);
  py::class_<ExtraKey>(m, "ExtraKey")
      .def_static("lora", &ExtraKey::Lora, py::arg("name"),
                  py::arg("path") = "")
      .def_static("multimodal", &ExtraKey::Multimodal, py::arg("identifier"),
                  py::arg("offset"))
      .def_static("cache_salt", &ExtraKey::CacheSalt, py::arg("salt"))
      .def_static(
          "prompt_embeds",
          [](const py::bytes& digest) {
            return ExtraKey::PromptEmbeds(DigestOf(digest));
          },
          py::arg("digest"))
      .def_readonly("kind", &ExtraKey::kind)
      .def_readonly("name", &ExtraKey::name)
      .def_readonly("path", &ExtraKey::path)
      .def_readonly("offset", &ExtraKey::offset)
      .def_property_readonly(
          "digest", [](const ExtraKey& e) { return AsBytes(e.digest); })
      .def("as_tuple", &AsTuple)
      .def(py::self == py::self)
      .def("__repr__", [](const ExtraKey& e) {
        return "ExtraKey" + py::repr(AsTuple(e)).cast<std::string>();
      });
}

void BindExtras(py::module_& m) {
  BindExtraKey(m);
  py::class_<MultimodalItem>(m, "MultimodalItem")
      .def(py::init<std::string, std::uint32_t, std::uint32_t>(),
           py::arg("identifier"), py::arg("offset"), py::arg("length"))
      .def_readwrite("identifier", &MultimodalItem::identifier)
      .def_readwrite("offset", &MultimodalItem::offset)
      .def_readwrite("length", &MultimodalItem::length);
  py::class_<PromptEmbeds>(m, "PromptEmbeds")
      .def(py::init([](const py::bytes& data, std::uint32_t bytes_per_token) {
             const std::string_view view(data);
             return PromptEmbeds{.bytes = {view.begin(), view.end()},
                                 .bytes_per_token = bytes_per_token};
           }),
           py::arg("data"), py::arg("bytes_per_token"))
      .def_property_readonly(
          "data", [](const PromptEmbeds& e) { return AsBytes(e.bytes); })
      .def_readonly("bytes_per_token", &PromptEmbeds::bytes_per_token)
      .def(py::self == py::self);
  py::class_<KeyExtras>(m, "KeyExtras")
      .def(py::init<std::string, std::string, std::vector<MultimodalItem>,
                    std::string, PromptEmbeds>(),
           py::arg("lora_name") = "", py::arg("lora_path") = "",
           py::arg("multimodal") = std::vector<MultimodalItem>{},
           py::arg("cache_salt") = "",
           py::arg("prompt_embeds") = PromptEmbeds{})
      .def_readwrite("lora_name", &KeyExtras::lora_name)
      .def_readwrite("lora_path", &KeyExtras::lora_path)
      .def_readwrite("multimodal", &KeyExtras::multimodal)
      .def_readwrite("cache_salt", &KeyExtras::cache_salt)
      .def_readwrite("prompt_embeds", &KeyExtras::prompt_embeds)
      .def("validate", [](const KeyExtras& e) { ValueOrThrow(e.Validate()); });
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
      .def_static(
          "with_caller_keys",
          [](RequestId id, std::uint32_t num_prompt_tokens,
             const py::handle& keys, const KeyScheme& scheme,
             CacheRead cache_read, std::optional<std::uint32_t> lora,
             EventReport report) {
            return Request::KeyedByCaller(
                {.id = id,
                 .cache_read = cache_read,
                 .lora_id = lora,
                 .event_report = report},
                num_prompt_tokens,
                CallerKeys(keys, 0, "with_caller_keys(): keys"), scheme);
          },
          py::arg("id"), py::arg("num_prompt_tokens"), py::arg("keys"),
          py::arg("scheme"), py::arg("cache_read") = CacheRead::kAllowed,
          py::arg("lora_id") = py::none(),
          py::arg("event_report") = EventReport::kIncremental)
      .def("append_tokens",
           [](Request& r, const py::object& tokens) {
             const std::vector<TokenId> t =
                 Tokens(tokens, "append_tokens(): tokens");
             py::gil_scoped_release release;
             r.AppendTokens(t);
           })
      .def(
          "append_keyed_tokens",
          [](Request& r, std::uint32_t num_new_tokens, const py::handle& keys,
             std::size_t start) {
            r.AppendKeyedTokens(
                num_new_tokens,
                CallerKeys(keys, start, "append_keyed_tokens(): keys"));
          },
          py::arg("num_new_tokens"), py::arg("keys"), py::arg("start") = 0,
          "Appends num_new_tokens tokens and the keys keys[start:] of the "
          "units they complete (a request keyed by its caller).")
      .def_property_readonly("keyed_by_caller", &Request::keyed_by_caller)
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

void ConvertKeys(PyObject* const* items, std::size_t first,
                 std::span<BlockHash> out, const char* what) {
  // The unchecked macros once PyBytes_Check passed: ~8,000 keys per long
  // prompt. Each key is its own bytes object, so the objects a few keys
  // ahead are loaded early, and a whole 32-byte digest is one fixed-size
  // copy.
  constexpr std::size_t kAhead = 8;
  const std::size_t end = first + out.size();
  for (std::size_t i = first; i < end; ++i) {
    if (i + kAhead < end) __builtin_prefetch(items[i + kAhead]);
    PyObject* const item = items[i];
    const Py_ssize_t length = PyBytes_Check(item) ? PyBytes_GET_SIZE(item) : 0;
    BlockHash& key = out[i - first];
    if (length == static_cast<Py_ssize_t>(sizeof(BlockHash::bytes))) {
      std::memcpy(key.bytes.data(), PyBytes_AS_STRING(item),
                  sizeof(BlockHash::bytes));
      continue;
    }
    if (length < 1 ||
        length > static_cast<Py_ssize_t>(sizeof(BlockHash::bytes))) {
      throw UsageError(std::string(what) + "[" + std::to_string(i) +
                       "] must be bytes of 1 to 32 bytes, got " +
                       ShortRepr(py::reinterpret_borrow<py::object>(item)));
    }
    key = BlockHash{};
    std::memcpy(key.bytes.data(), PyBytes_AS_STRING(item),
                static_cast<std::size_t>(length));
  }
}

std::size_t NumCallerKeys(const py::handle& keys, const char* what) {
  if (!PyList_Check(keys.ptr()) && !PyTuple_Check(keys.ptr())) {
    throw UsageError(std::string(what) + " must be a list of bytes, got " +
                     ShortRepr(py::reinterpret_borrow<py::object>(keys)));
  }
  return static_cast<std::size_t>(PySequence_Fast_GET_SIZE(keys.ptr()));
}

std::vector<BlockHash> CallerKeys(const py::handle& keys, std::size_t start,
                                  const char* what) {
  const std::size_t size = NumCallerKeys(keys, what);
  if (start > size) {
    throw UsageError(std::string(what) + " has " + std::to_string(size) +
                     " keys, fewer than the " + std::to_string(start) +
                     " already given");
  }
  std::vector<BlockHash> out(size - start);
  ConvertKeys(PySequence_Fast_ITEMS(keys.ptr()), start, out, what);
  return out;
}

void BindRequest(py::module_& m) {
  BindKeys(m);
  BindExtras(m);
  BindRequestClass(m);
}

}  // namespace hkv::python
