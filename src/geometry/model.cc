// ModelSpec validation and the JSON model format of data/models/.
#include "hkv/model.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "geometry/presets.h"
#include "hkv/limits.h"
#include "text.h"

namespace hkv {
namespace {

using internal::Cat;
using internal::Str;
using Json = nlohmann::json;

constexpr struct {
  LayerKind kind;
  std::string_view name;
} kKindNames[] = {{LayerKind::kFullAttention, "full"},
                  {LayerKind::kSlidingWindow, "sliding"},
                  {LayerKind::kChunkedLocal, "chunked"},
                  {LayerKind::kMla, "mla"},
                  {LayerKind::kRecurrent, "recurrent"}};

bool IsPagedAttention(LayerKind kind) {
  return kind == LayerKind::kFullAttention ||
         kind == LayerKind::kSlidingWindow || kind == LayerKind::kChunkedLocal;
}

// What the layer lacks or carries wrongly for its kind; empty when valid.
std::string LayerProblem(const LayerSpec& layer) {
  if (layer.count == 0) return "count must be positive";
  const bool paged = IsPagedAttention(layer.kind);
  if (paged && (layer.num_kv_heads == 0 || layer.head_size == 0 ||
                layer.dtype_bytes == 0)) {
    return "attention needs kv_heads, head_size and dtype";
  }
  if (layer.kind == LayerKind::kMla && layer.record_bytes_per_token == 0) {
    return "mla needs record_bytes_per_token";
  }
  if ((layer.kind == LayerKind::kSlidingWindow) != (layer.window > 0)) {
    return "window W is required on sliding layers and only there";
  }
  if ((layer.kind == LayerKind::kChunkedLocal) != (layer.chunk > 0)) {
    return "chunk C is required on chunked layers and only there";
  }
  const bool has_state = !layer.state.empty() || layer.state_bytes > 0;
  if ((layer.kind == LayerKind::kRecurrent) != has_state) {
    return "a state is required on recurrent layers and only there";
  }
  if (!layer.state.empty() && layer.state_bytes > 0) {
    return "give state tensors or state_bytes, not both";
  }
  for (const StateTensor& tensor : layer.state) {
    if (tensor.shape.empty() || tensor.dtype_bytes == 0) {
      return "a state tensor needs a shape and a dtype";
    }
    if (std::find(tensor.shape.begin(), tensor.shape.end(), 0u) !=
        tensor.shape.end()) {
      return "a state tensor's dimensions must be positive";
    }
  }
  return {};
}

// Layers of the model and its draft, which the planner sums per bucket.
std::uint64_t TotalLayers(const ModelSpec& model) {
  std::uint64_t total = 0;
  for (const auto* layers : {&model.layers, &model.draft.layers}) {
    for (const LayerSpec& layer : *layers) total += layer.count;
  }
  return total;
}

Result<void> ValidateLayers(const std::vector<LayerSpec>& layers,
                            std::string_view where) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string problem = LayerProblem(layers[i]);
    if (!problem.empty()) {
      return Fail(ErrorCode::kInvalidArgument,
                  Cat(where, " layer ", i, ": ", problem));
    }
  }
  return {};
}

// Where a value sits in the file, for messages: "layers[2].count".
std::string Field(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key) : Cat(parent, ".", key);
}
std::string Element(std::string_view array, std::size_t index) {
  return Cat(array, "[", index, "]");
}

[[noreturn]] void Bad(std::string_view field, std::string_view problem) {
  throw std::invalid_argument(field.empty() ? Str(problem)
                                            : Cat(field, ": ", problem));
}

// "a number", "a list", ...: what a value is, for messages.
std::string Kind(const Json& value) {
  if (value.is_number()) return "a number";
  if (value.is_array()) return "a list";
  if (value.is_object()) return "an object";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  return "null";
}

// A JSON number that is an integer in [0, max of T]; anything else (a
// negative or fractional number, one beyond T, another JSON type) is an
// error naming the field, before any conversion could wrap or be undefined.
// (The parser itself refuses NaN, infinities and numbers beyond a double.)
template <typename T>
T Unsigned(const Json& value, std::string_view field) {
  constexpr std::uint64_t kMax = std::numeric_limits<T>::max();
  const std::string want = Cat("must be an integer from 0 to ", kMax, ", got ");
  if (value.is_number_unsigned()) {
    const auto n = value.get<std::uint64_t>();
    if (n > kMax) Bad(field, want + value.dump());
    return static_cast<T>(n);
  }
  Bad(field, want + (value.is_number() ? value.dump() : Kind(value)));
}

const std::string& Text(const Json& value, std::string_view field) {
  if (!value.is_string()) Bad(field, "must be a string, got " + Kind(value));
  return value.get_ref<const std::string&>();
}

bool Flag(const Json& value, std::string_view field) {
  if (!value.is_boolean()) {
    Bad(field, "must be true or false, got " + Kind(value));
  }
  return value.get<bool>();
}

const Json& Object(const Json& value, std::string_view field) {
  if (!value.is_object()) Bad(field, "must be an object, got " + Kind(value));
  return value;
}

const Json& Array(const Json& value, std::string_view field) {
  if (!value.is_array()) Bad(field, "must be a list, got " + Kind(value));
  return value;
}

std::uint32_t DtypeBytes(const Json& value, std::string_view field) {
  const std::string& name = Text(value, field);
  if (name == "fp32") return 4;
  if (name == "bf16" || name == "fp16") return 2;
  if (name == "fp8") return 1;
  Bad(field, "unknown dtype \"" + name + "\" (fp32, bf16, fp16, fp8)");
}

LayerKind KindOf(const Json& value, std::string_view field) {
  const std::string& name = Text(value, field);
  for (const auto& entry : kKindNames) {
    if (entry.name == name) return entry.kind;
  }
  Bad(field, "unknown layer kind \"" + name + "\"");
}

StateTensor TensorFromJson(const Json& j, const std::string& where) {
  StateTensor t;
  for (const auto& [key, value] : Object(j, where).items()) {
    const std::string field = Field(where, key);
    if (key == "shape") {
      for (const Json& extent : Array(value, field)) {
        t.shape.push_back(
            Unsigned<std::uint64_t>(extent, Element(field, t.shape.size())));
      }
    } else if (key == "dtype") {
      t.dtype_bytes = DtypeBytes(value, field);
    } else if (key == "tp_dim") {
      t.tp_dim = Unsigned<std::uint32_t>(value, field);
    } else if (key == "speculative_rows") {
      t.speculative_rows = Flag(value, field);
    } else {
      Bad(where, "unknown state tensor field \"" + key + "\"");
    }
  }
  return t;
}

// The layer field's member, for the plain numbers.
std::uint32_t* Count32(LayerSpec& l, const std::string& key) {
  if (key == "count") return &l.count;
  if (key == "kv_heads") return &l.num_kv_heads;
  if (key == "head_size") return &l.head_size;
  if (key == "head_size_v") return &l.head_size_v;
  if (key == "window") return &l.window;
  if (key == "chunk") return &l.chunk;
  return nullptr;
}
std::uint64_t* Count64(LayerSpec& l, const std::string& key) {
  if (key == "record_bytes_per_token") return &l.record_bytes_per_token;
  if (key == "tail_bytes_per_token") return &l.tail_bytes_per_token;
  if (key == "record_alignment") return &l.record_alignment;
  if (key == "state_bytes") return &l.state_bytes;
  return nullptr;
}

// One field of a layer object; false when `key` is unknown.
bool SetLayerField(LayerSpec& l, const std::string& key, const Json& value,
                   const std::string& field) {
  if (std::uint32_t* n = Count32(l, key)) {
    *n = Unsigned<std::uint32_t>(value, field);
  } else if (std::uint64_t* m = Count64(l, key)) {
    *m = Unsigned<std::uint64_t>(value, field);
  } else if (key == "kind") {
    l.kind = KindOf(value, field);
  } else if (key == "dtype") {
    l.dtype_bytes = DtypeBytes(value, field);
  } else if (key == "state") {
    for (const Json& t : Array(value, field)) {
      l.state.push_back(TensorFromJson(t, Element(field, l.state.size())));
    }
  } else {
    return false;
  }
  return true;
}

std::vector<LayerSpec> LayersFromJson(const Json& j, const std::string& where) {
  std::vector<LayerSpec> layers;
  for (const Json& item : Array(j, where)) {
    const std::string at = Element(where, layers.size());
    LayerSpec layer;
    for (const auto& [key, value] : Object(item, at).items()) {
      if (!SetLayerField(layer, key, value, Field(at, key))) {
        Bad(at, "unknown layer field \"" + key + "\"");
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

DraftSpec DraftFromJson(const Json& j) {
  DraftSpec d;
  for (const auto& [key, value] : Object(j, "draft").items()) {
    const std::string field = Field("draft", key);
    if (key == "speculative_tokens") {
      d.speculative_tokens = Unsigned<std::uint32_t>(value, field);
    } else if (key == "layers") {
      d.layers = LayersFromJson(value, field);
    } else {
      Bad("draft", "unknown draft field \"" + key + "\"");
    }
  }
  return d;
}

// A JSON number, finite and not negative.
double NonNegative(const Json& value, std::string_view field) {
  if (!value.is_number() || value.get<double>() < 0.0) {
    Bad(field, "must be a number of at least 0, got " +
                   (value.is_number() ? value.dump() : Kind(value)));
  }
  return value.get<double>();
}

double* ComputeNumber(ComputeSpec& c, const std::string& key) {
  if (key == "total_params") return &c.total_params;
  if (key == "active_params") return &c.active_params;
  if (key == "routed_params") return &c.routed_params;
  if (key == "routed_bits") return &c.routed_bits;
  if (key == "other_bits") return &c.other_bits;
  if (key == "attention_flops_per_pair") return &c.attention_flops_per_pair;
  if (key == "index_flops_per_pair") return &c.index_flops_per_pair;
  return nullptr;
}
std::uint32_t* ComputeCount(ComputeSpec& c, const std::string& key) {
  if (key == "experts") return &c.experts;
  if (key == "experts_per_token") return &c.experts_per_token;
  if (key == "hidden") return &c.hidden;
  if (key == "attention_topk") return &c.attention_topk;
  return nullptr;
}

ComputeSpec ComputeFromJson(const Json& j) {
  ComputeSpec c;
  for (const auto& [key, value] : Object(j, "compute").items()) {
    const std::string field = Field("compute", key);
    if (double* x = ComputeNumber(c, key)) {
      *x = NonNegative(value, field);
    } else if (std::uint32_t* n = ComputeCount(c, key)) {
      *n = Unsigned<std::uint32_t>(value, field);
    } else if (key != "source") {
      Bad("compute", "unknown compute field \"" + key + "\"");
    }
  }
  return c;
}

Layout LayoutOf(const Json& value) {
  const std::string& name = Text(value, "layout");
  if (name == "coupled") return Layout::kCoupled;
  if (name == "split") return Layout::kSplit;
  Bad("layout", "unknown layout \"" + name + "\" (coupled, split)");
}

ModelSpec ModelFromJson(const Json& j) {
  ModelSpec m;
  for (const auto& [key, value] : Object(j, "").items()) {
    if (key == "name") {
      m.name = Text(value, key);
    } else if (key == "layout") {
      m.layout = LayoutOf(value);
    } else if (key == "stride_alignment") {
      m.stride_alignment = Unsigned<std::uint64_t>(value, key);
    } else if (key == "kernel_block") {
      m.kernel_block = Unsigned<std::uint32_t>(value, key);
    } else if (key == "layers") {
      m.layers = LayersFromJson(value, key);
    } else if (key == "draft") {
      m.draft = DraftFromJson(value);
    } else if (key == "compute") {
      m.compute = ComputeFromJson(value);
    } else if (key != "description" && key != "source" && key != "licence") {
      throw std::invalid_argument("unknown model field \"" + key + "\"");
    }
  }
  return m;
}

}  // namespace

Result<void> ModelSpec::Validate() const {
  if (layers.empty()) {
    return Fail(ErrorCode::kInvalidArgument, "model " + name + ": no layers");
  }
  if (kernel_block == 0) {
    return Fail(ErrorCode::kInvalidArgument,
                "model " + name + ": kernel_block must be positive");
  }
  if (const std::uint64_t total = TotalLayers(*this); total > kMaxModelLayers) {
    return Fail(ErrorCode::kInvalidArgument,
                Cat("model ", name, ": ", total,
                    " layers (counts summed, draft included) exceed the "
                    "limit of ",
                    kMaxModelLayers));
  }
  if (Result<void> ok = ValidateLayers(layers, "model " + name); !ok) {
    return ok;
  }
  if (compute) {
    if (Result<void> ok = compute->Validate(); !ok) {
      return Fail(ErrorCode::kInvalidArgument,
                  "model " + name + " compute: " + ok.error().message);
    }
  }
  return ValidateLayers(draft.layers, "model " + name + " draft");
}

Result<ModelSpec> ParseModelJson(std::string_view text) {
  ModelSpec model;
  try {
    model = ModelFromJson(Json::parse(text));
  } catch (const std::exception& e) {  // nlohmann and ours, both with a what
    return Fail(ErrorCode::kInvalidArgument,
                std::string("model description: ") + e.what());
  }
  if (Result<void> ok = model.Validate(); !ok)
    return tl::unexpected(ok.error());
  return model;
}

std::vector<std::string> PresetNames() {
  std::vector<std::string> names;
  for (const internal::PresetText& preset : internal::Presets()) {
    names.emplace_back(preset.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelSpec> LoadPreset(std::string_view name) {
  for (const internal::PresetText& preset : internal::Presets()) {
    if (preset.name == name) return ParseModelJson(preset.json);
  }
  std::string known;
  for (const std::string& preset : PresetNames()) {
    known += (known.empty() ? "" : ", ") + preset;
  }
  return Fail(ErrorCode::kNotFound,
              Cat("unknown model \"", name, "\" (presets: ", known, ")"));
}

std::string_view LayerKindName(LayerKind kind) {
  for (const auto& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "?";
}

}  // namespace hkv
