// ModelSpec validation and the JSON model format of data/models/.
#include "hkv/model.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "geometry/presets.h"
#include "geometry/text.h"

namespace hkv {
namespace {

using internal::Cat;
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
  }
  return {};
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

std::uint32_t DtypeBytes(const Json& value) {
  const std::string name = value.get<std::string>();
  if (name == "fp32") return 4;
  if (name == "bf16" || name == "fp16") return 2;
  if (name == "fp8") return 1;
  throw std::invalid_argument("unknown dtype \"" + name + "\"");
}

LayerKind KindOf(const std::string& name) {
  for (const auto& entry : kKindNames) {
    if (entry.name == name) return entry.kind;
  }
  throw std::invalid_argument("unknown layer kind \"" + name + "\"");
}

StateTensor TensorFromJson(const Json& j) {
  StateTensor t;
  for (const auto& [key, value] : j.items()) {
    if (key == "shape") {
      t.shape = value.get<std::vector<std::uint64_t>>();
    } else if (key == "dtype") {
      t.dtype_bytes = DtypeBytes(value);
    } else if (key == "tp_dim") {
      t.tp_dim = value.get<std::uint32_t>();
    } else if (key == "speculative_rows") {
      t.speculative_rows = value.get<bool>();
    } else {
      throw std::invalid_argument("unknown state tensor field \"" + key + "\"");
    }
  }
  return t;
}

// One field of a layer object; false when `key` is unknown.
bool SetLayerField(LayerSpec& l, const std::string& key, const Json& value) {
  if (key == "kind") {
    l.kind = KindOf(value.get<std::string>());
  } else if (key == "count") {
    l.count = value.get<std::uint32_t>();
  } else if (key == "kv_heads") {
    l.num_kv_heads = value.get<std::uint32_t>();
  } else if (key == "head_size") {
    l.head_size = value.get<std::uint32_t>();
  } else if (key == "head_size_v") {
    l.head_size_v = value.get<std::uint32_t>();
  } else if (key == "dtype") {
    l.dtype_bytes = DtypeBytes(value);
  } else if (key == "record_bytes_per_token") {
    l.record_bytes_per_token = value.get<std::uint64_t>();
  } else if (key == "tail_bytes_per_token") {
    l.tail_bytes_per_token = value.get<std::uint64_t>();
  } else if (key == "record_alignment") {
    l.record_alignment = value.get<std::uint64_t>();
  } else if (key == "window") {
    l.window = value.get<std::uint32_t>();
  } else if (key == "chunk") {
    l.chunk = value.get<std::uint32_t>();
  } else if (key == "state_bytes") {
    l.state_bytes = value.get<std::uint64_t>();
  } else if (key == "state") {
    for (const Json& t : value) l.state.push_back(TensorFromJson(t));
  } else {
    return false;
  }
  return true;
}

std::vector<LayerSpec> LayersFromJson(const Json& j) {
  std::vector<LayerSpec> layers;
  for (const Json& item : j) {
    LayerSpec layer;
    for (const auto& [key, value] : item.items()) {
      if (!SetLayerField(layer, key, value)) {
        throw std::invalid_argument("unknown layer field \"" + key + "\"");
      }
    }
    layers.push_back(std::move(layer));
  }
  return layers;
}

DraftSpec DraftFromJson(const Json& j) {
  DraftSpec d;
  for (const auto& [key, value] : j.items()) {
    if (key == "speculative_tokens") {
      d.speculative_tokens = value.get<std::uint32_t>();
    } else if (key == "layers") {
      d.layers = LayersFromJson(value);
    } else {
      throw std::invalid_argument("unknown draft field \"" + key + "\"");
    }
  }
  return d;
}

Layout LayoutOf(const std::string& name) {
  if (name == "coupled") return Layout::kCoupled;
  if (name == "split") return Layout::kSplit;
  throw std::invalid_argument("unknown layout \"" + name + "\"");
}

ModelSpec ModelFromJson(const Json& j) {
  ModelSpec m;
  for (const auto& [key, value] : j.items()) {
    if (key == "name") {
      m.name = value.get<std::string>();
    } else if (key == "layout") {
      m.layout = LayoutOf(value.get<std::string>());
    } else if (key == "stride_alignment") {
      m.stride_alignment = value.get<std::uint64_t>();
    } else if (key == "kernel_block") {
      m.kernel_block = value.get<std::uint32_t>();
    } else if (key == "layers") {
      m.layers = LayersFromJson(value);
    } else if (key == "draft") {
      m.draft = DraftFromJson(value);
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
  if (Result<void> ok = ValidateLayers(layers, "model " + name); !ok) {
    return ok;
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
