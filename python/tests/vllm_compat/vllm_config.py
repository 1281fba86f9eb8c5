"""The `vllm.config` package, as far as the KV-cache manager, the scheduler
and their tests use it.

The engine's `vllm/config/__init__.py` imports every config module, and
`ModelConfig` and `VllmConfig` (model.py, vllm.py) need transformers, a
model's Hugging Face config (a download) and the CUDA platform. So:

- `vllm.config` is registered as a package over the engine's own
  vllm/config folder, without its `__init__`;
- the config modules that import with the pydantic shim of
  `third_party.py` are the engine's own (`REAL_MODULES`: CacheConfig,
  SchedulerConfig, KVTransferConfig, ECTransferConfig, KVEventsConfig,
  ObservabilityConfig, StructuredOutputsConfig, ...);
- `ModelConfig`, `ParallelConfig`, `SpeculativeConfig`, `LoRAConfig` and
  `VllmConfig` are the small dataclasses below, with the engine's field
  names and defaults for the fields the scheduler and the tests read, and
  the derived values the engine's `__post_init__` computes for them.
"""
import dataclasses
import importlib
import sys
import types

from . import third_party

# The engine's config modules that import here, with the pydantic shim.
REAL_MODULES = (
    "utils", "cache", "scheduler", "kv_events", "kv_transfer", "ec_transfer",
    "observability", "structured_outputs", "pooler", "device", "multimodal",
    "attention",
)

# max_position_embeddings (text model) from the Hugging Face config of each
# model the tests name: the engine's ModelConfig derives max_model_len from
# it when none is given.
MAX_POSITION_EMBEDDINGS = {
    "Qwen/Qwen3-0.6B": 40960,
    "Qwen/Qwen1.5-7B": 32768,
    "Qwen/Qwen2.5-VL-3B-Instruct": 128000,
    "facebook/opt-125m": 2048,
    "llava-hf/llava-1.5-7b-hf": 4096,
}

# The multimodal models among them, with the most tokens one image takes
# (what the engine's multimodal processor computes from the model's
# processor config): LLaVA-1.5 has 24 x 24 patches of its 336-pixel CLIP
# tower; Qwen2.5-VL takes up to 12845056 pixels in 28 x 28 merged patches.
# Only images: the tests send no other modality.
MULTIMODAL_MODELS = {
    "Qwen/Qwen2.5-VL-3B-Instruct": {"image": 16384},
    "llava-hf/llava-1.5-7b-hf": {"image": 576},
}


@dataclasses.dataclass
class ModelConfig:
    """vllm.config.ModelConfig without a Hugging Face config.

    `max_model_len` is the argument, else the model's
    `MAX_POSITION_EMBEDDINGS`; the model is a decoder-only text model
    (`is_encoder_decoder` False), multimodal where `MULTIMODAL_MODELS` says
    so, with no MoE layers and no chunked local attention."""

    model: str = "Qwen/Qwen3-0.6B"
    runner: str = "auto"
    tokenizer: str | None = None
    trust_remote_code: bool = False
    dtype: str = "auto"
    seed: int = 0
    max_model_len: int | None = None
    skip_tokenizer_init: bool = False
    enable_return_routed_experts: bool = False
    max_logprobs: int = 20
    enable_prompt_embeds: bool = False
    multimodal_config: object = None
    # Read by the engine's kv_connector test utilities; no model config
    # is loaded, so they change nothing here.
    hf_overrides: dict = dataclasses.field(default_factory=dict)

    is_encoder_decoder = False
    is_moe = False
    attention_chunk_size = None
    uses_mrope = False

    def __post_init__(self):
        if self.tokenizer is None:
            self.tokenizer = self.model
        if self.max_model_len is None:
            if self.model not in MAX_POSITION_EMBEDDINGS:
                raise ValueError(
                    f"stand-in ModelConfig knows no max_model_len for "
                    f"{self.model!r}: pass max_model_len or add the model "
                    "to vllm_config.MAX_POSITION_EMBEDDINGS")
            self.max_model_len = MAX_POSITION_EMBEDDINGS[self.model]
        self.original_max_model_len = self.max_model_len
        if self.is_multimodal_model and self.multimodal_config is None:
            multimodal = sys.modules["vllm.config.multimodal"]
            self.multimodal_config = multimodal.MultiModalConfig()

    @property
    def is_multimodal_model(self):
        """Whether the model takes multimodal inputs."""
        return self.model in MULTIMODAL_MODELS

    def get_multimodal_config(self):
        """The multimodal config of a multimodal model."""
        if self.multimodal_config is None:
            raise ValueError("The model is not multimodal.")
        return self.multimodal_config


@dataclasses.dataclass
class ParallelConfig:
    """vllm.config.ParallelConfig for one process: the sizes and ranks the
    scheduler reads (`world_size` and `data_parallel_index` as the engine's
    `__post_init__` derives them)."""

    pipeline_parallel_size: int = 1
    tensor_parallel_size: int = 1
    prefill_context_parallel_size: int = 1
    data_parallel_size: int = 1
    data_parallel_rank: int = 0
    decode_context_parallel_size: int = 1
    enable_expert_parallel: bool = False
    distributed_executor_backend: str | None = None
    is_moe_model: bool | None = None

    def __post_init__(self):
        self.world_size = (self.pipeline_parallel_size
                           * self.tensor_parallel_size
                           * self.prefill_context_parallel_size)
        self.data_parallel_index = self.data_parallel_rank


@dataclasses.dataclass
class SpeculativeConfig:
    """vllm.config.SpeculativeConfig for the methods that need no draft
    model: `model="ngram"` (or `method="ngram"`) gives the n-gram proposer,
    as in the engine's `__post_init__`."""

    num_speculative_tokens: int | None = None
    model: str | None = None
    method: str | None = None
    prompt_lookup_max: int | None = None
    prompt_lookup_min: int | None = None

    def __post_init__(self):
        if self.method is None:
            self.method = ("ngram" if self.model in ("ngram", "[ngram]")
                           else "draft_model")
        if self.method == "ngram":
            self.model = "ngram"
            if self.prompt_lookup_min is None:
                self.prompt_lookup_min = self.prompt_lookup_max or 5
            if self.prompt_lookup_max is None:
                self.prompt_lookup_max = self.prompt_lookup_min

    def use_eagle(self):
        """Whether the drafter is an EAGLE-style head."""
        return self.method in ("eagle", "eagle3", "mtp", "dflash")

    def uses_draft_model(self):
        """Whether the drafter is a separate draft model."""
        return self.method == "draft_model"


@dataclasses.dataclass
class LoRAConfig:
    """vllm.config.LoRAConfig: the adapter limits the scheduler reads (the
    engine's module needs the CUDA platform)."""

    max_lora_rank: int = 16
    max_loras: int = 1
    max_cpu_loras: int | None = None

    def __post_init__(self):
        if self.max_cpu_loras is None:
            self.max_cpu_loras = self.max_loras


def _default(module, name):
    """A default factory for the engine's config class `name`."""
    return dataclasses.field(
        default_factory=lambda: getattr(
            sys.modules[f"vllm.config.{module}"], name)())


@dataclasses.dataclass
class VllmConfig:
    """vllm.config.VllmConfig: the sub-configs, defaulted as the engine
    does, and the part of the engine's `__post_init__` that the scheduler
    depends on: `scheduler_config.disable_hybrid_kv_cache_manager`, left
    None, resolves to True when the KV connector does not support the
    hybrid manager, else False (the engine's rule on a GPU platform)."""

    model_config: ModelConfig = None
    cache_config: object = _default("cache", "CacheConfig")
    parallel_config: ParallelConfig = dataclasses.field(
        default_factory=ParallelConfig)
    scheduler_config: object = dataclasses.field(
        default_factory=lambda: sys.modules[
            "vllm.config.scheduler"].SchedulerConfig.default_factory())
    lora_config: LoRAConfig | None = None
    speculative_config: SpeculativeConfig | None = None
    structured_outputs_config: object = _default(
        "structured_outputs", "StructuredOutputsConfig")
    observability_config: object = _default(
        "observability", "ObservabilityConfig")
    kv_transfer_config: object = None
    kv_events_config: object = None
    ec_transfer_config: object = None
    quant_config: object = None
    additional_config: dict = dataclasses.field(default_factory=dict)
    # Set by the engine's kv_connector test utilities, read by no code the
    # scheduler runs.
    device_config: object = None
    attention_config: object = None

    use_v2_model_runner = False

    def __post_init__(self):
        if self.model_config is not None:
            self.parallel_config.is_moe_model = self.model_config.is_moe
        if self.scheduler_config.disable_hybrid_kv_cache_manager is None:
            self.scheduler_config.disable_hybrid_kv_cache_manager = (
                self.kv_transfer_config is not None
                and not self._connector_supports_hma())

    def _connector_supports_hma(self):
        """Whether the configured KV connector class supports the hybrid
        KV-cache manager (the engine's factory and `supports_hma`)."""
        factory = importlib.import_module(
            "vllm.distributed.kv_transfer.kv_connector.factory")
        base = importlib.import_module(
            "vllm.distributed.kv_transfer.kv_connector.v1.base")
        connector = factory.KVConnectorFactory.get_connector_class(
            self.kv_transfer_config)
        return base.supports_hma(connector)


STANDIN_CLASSES = {
    "model": (ModelConfig,),
    "parallel": (ParallelConfig,),
    "speculative": (SpeculativeConfig,),
    "lora": (LoRAConfig,),
    "vllm": (VllmConfig,),
}


def install(tree):
    """Register `vllm.config`, its real submodules (imported now, with the
    pydantic shim) and stand-in submodules for the rest."""
    package = types.ModuleType("vllm.config", __doc__)
    package.__path__ = [str(tree / "vllm" / "config")]
    package.__package__ = "vllm.config"
    sys.modules["vllm.config"] = package
    sys.modules["vllm"].config = package
    for name, classes in STANDIN_CLASSES.items():
        module = types.ModuleType(f"vllm.config.{name}",
                                  f"stand-in for vllm/config/{name}.py")
        for cls in classes:
            setattr(module, cls.__name__, cls)
            setattr(package, cls.__name__, cls)
        sys.modules[module.__name__] = module
        setattr(package, name, module)
    with third_party.import_shims():
        for name in REAL_MODULES:
            module = importlib.import_module(f"vllm.config.{name}")
            for attr, value in vars(module).items():
                if (isinstance(value, type) and attr.endswith("Config")
                        and value.__module__ == module.__name__):
                    setattr(package, attr, value)
    package.SupportsMetricsInfo = sys.modules[
        "vllm.config.utils"].SupportsMetricsInfo
