"""Stand-ins for the engine modules that cannot import here (the configs
are in `vllm_config.py`).

`STANDINS` maps each engine module to (why the real module cannot import,
the definitions taken from the engine's own source file, hand-written
attributes). A stand-in holds only what the manager, the scheduler and
their tests use.

Taken definitions are the engine's own code: `engine_definitions()` parses
the module's source file and executes only the named top-level functions,
classes and assignments, with the module-level imports and definitions they
name, so a helper such as `ConstantList` or `get_dtype_size` behaves as in
the engine while the rest of its module (an unavailable import, a newer
torch type in an annotation) is never run. Hand-written attributes stand in
where the engine's definition itself cannot run here.
"""
import ast
import sys
import types

from . import vllm_config


class PydanticMsgspecMixin:
    """vllm.v1.serial_utils.PydanticMsgspecMixin: lets pydantic validate a
    msgspec Struct; without pydantic there is nothing to add."""


class ModelMetrics:
    """vllm.v1.metrics.perf.ModelMetrics: the MFU estimator, which reads
    the model's Hugging Face config; not available here."""

    def __init__(self, vllm_config):
        del vllm_config
        raise NotImplementedError(
            "MFU metrics (observability_config.enable_mfu_metrics) need the "
            "model's Hugging Face config, which the stand-in ModelConfig "
            "does not have")


class ReasoningParserManager:
    """vllm.reasoning.ReasoningParserManager: the registry of reasoning
    parsers; none is available here."""

    @classmethod
    def get_reasoning_parser(cls, name):
        """The parser class registered as `name`: none here."""
        raise NotImplementedError(f"no reasoning parser {name!r} here")

    @classmethod
    def import_reasoning_parser(cls, plugin_path):
        """Import a parser plugin: none here."""
        raise NotImplementedError(
            f"no reasoning parser plugin {plugin_path!r} here")


class NoTokenizer:
    """What `cached_tokenizer_from_config` gives here. The engine loads the
    model's Hugging Face tokenizer (transformers and a download); the
    scheduler only keeps it, for structured-output grammars and reasoning
    parsers, so any use of it fails."""

    def __init__(self, model):
        self.model = model

    def __getattr__(self, attr):
        raise NotImplementedError(
            f"no tokenizer for {self.model!r} here (tokenizer.{attr})")


def cached_tokenizer_from_config(model_config, **kwargs):
    """vllm.tokenizers.cached_tokenizer_from_config: a `NoTokenizer`."""
    del kwargs
    return NoTokenizer(model_config.tokenizer)


class _GrammarBackend:
    """A structured-output grammar backend whose library is not installed
    (subclasses name the library)."""

    library = None

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise NotImplementedError(f"{self.library} is not installed")


class GuidanceBackend(_GrammarBackend):
    """vllm.v1.structured_output.backend_guidance.GuidanceBackend."""

    library = "llguidance"


class XgrammarBackend(_GrammarBackend):
    """vllm.v1.structured_output.backend_xgrammar.XgrammarBackend."""

    library = "xgrammar"


class AttentionBackend:
    """vllm.v1.attention.backend.AttentionBackend: the base of the
    attention backends, which the KV connectors name in annotations; no
    backend is loaded here."""


class MLACommonMetadata:
    """vllm.model_executor.layers.attention.mla_attention.MLACommonMetadata:
    named by the example KV connector's worker side only."""


class TritonAttentionMetadata:
    """vllm.v1.attention.backends.triton_attn.TritonAttentionMetadata:
    named by the example KV connector's worker side only."""


class RoutedExpertsManager:
    """vllm.model_executor.layers.fused_moe.routed_experts_capturer
    .RoutedExpertsManager: records MoE routing for
    `enable_return_routed_experts`, which needs the tensor-parallel group;
    not available here."""

    def __init__(self, *args, **kwargs):
        del args, kwargs
        raise NotImplementedError(
            "enable_return_routed_experts needs torch.distributed's "
            "tensor-parallel group")


class _ProcessingInfo:
    """The part of a model's multimodal processing info that the encoder
    budget reads, from `vllm_config.MULTIMODAL_MODELS`."""

    def __init__(self, model_config):
        self._max_tokens = vllm_config.MULTIMODAL_MODELS[model_config.model]
        mm_config = model_config.get_multimodal_config()
        self.supported_mm_limits = dict.fromkeys(self._max_tokens)
        self.allowed_mm_limits = {
            modality: mm_config.get_limit_per_prompt(modality)
            for modality in self._max_tokens}

    def get_mm_max_tokens_per_item(self, seq_len, mm_counts):
        """The most tokens one item of each modality takes."""
        del seq_len, mm_counts
        return dict(self._max_tokens)


class BaseMultiModalProcessor:
    """vllm.multimodal.processing.BaseMultiModalProcessor: here only its
    `info` (the processing info), since no input is processed."""

    def __init__(self, model_config):
        self.info = _ProcessingInfo(model_config)


class MultiModalRegistry:
    """vllm.multimodal.registry.MultiModalRegistry: which models take
    multimodal inputs and how many tokens an item takes, for the
    scheduler's encoder budget, from `vllm_config.MULTIMODAL_MODELS` (the
    engine builds the model's Hugging Face processor)."""

    def supports_multimodal_inputs(self, model_config):
        """Whether the model is multimodal with a modality allowed."""
        if not model_config.is_multimodal_model:
            return False
        info = _ProcessingInfo(model_config)
        return any(info.allowed_mm_limits.values())

    def processor_only_cache_from_config(self, vllm_config):
        """No processor cache: nothing is processed here."""
        del vllm_config

    def create_processor(self, model_config, cache=None):
        """The model's (stand-in) multimodal processor."""
        del cache
        return BaseMultiModalProcessor(model_config)


def supports_xccl():
    """vllm.utils.torch_utils.supports_xccl: no XCCL (Intel GPU
    collectives) here; torch 1.13 cannot tell."""
    return False


STANDINS = {
    "vllm._version": (
        "is written by setuptools-scm at build time (vllm/version.py "
        "warns and falls back to these values without it)",
        (), {"__version__": "dev", "__version_tuple__": (0, 0, "dev")}),
    "vllm.utils.torch_utils": (
        "needs torch >= 2.4 (torch.library.infer_schema, float8 dtypes) "
        "at import; this machine has torch 1.13",
        ("get_dtype_size", "nvfp4_kv_cache_full_dim", "is_quantized_kv_cache",
         "kv_cache_uses_per_token_head_scales",
         "set_default_torch_num_threads"),
        {"supports_xccl": supports_xccl}),
    "vllm.v1.utils": (
        "imports uvloop and the API-server process helpers, and names "
        "torch.SymInt (torch >= 2.0) at import",
        ("ConstantList", "record_function_or_nullcontext", "tensor_data"),
        {}),
    "vllm.compilation.cuda_graph": (
        "imports the CUDA graph wrapper, the NCCL allocator and the "
        "forward context",
        ("CUDAGraphStat",), {}),
    "vllm.v1.serial_utils": (
        "imports pydantic_core, cloudpickle and the ZMQ msgpack codecs",
        ("UtilityResult",), {"PydanticMsgspecMixin": PydanticMsgspecMixin}),
    "vllm.v1.metrics.perf": (
        "imports prometheus_client and defines pydantic models",
        ("PerfStats",), {"ModelMetrics": ModelMetrics}),
    "vllm.v1.attention.backend": (
        "imports the quantization layers (transformers)",
        ("AttentionMetadata",), {"AttentionBackend": AttentionBackend}),
    "vllm.model_executor.layers.attention.mla_attention": (
        "imports the MLA attention layer (CUDA kernels)",
        (), {"MLACommonMetadata": MLACommonMetadata}),
    "vllm.v1.attention.backends.triton_attn": (
        "imports triton",
        (), {"TritonAttentionMetadata": TritonAttentionMetadata}),
    "vllm.model_executor.layers.fused_moe.routed_experts_capturer": (
        "imports the distributed state (torch >= 2.1 collectives)",
        (), {"RoutedExpertsManager": RoutedExpertsManager}),
    "vllm.multimodal.registry": (
        "imports the multimodal processors (transformers)",
        (), {"MultiModalRegistry": MultiModalRegistry,
             "MULTIMODAL_REGISTRY": MultiModalRegistry()}),
    "vllm.multimodal.processing": (
        "imports the Hugging Face processors (transformers)",
        (), {"BaseMultiModalProcessor": BaseMultiModalProcessor}),
    "vllm.v1.worker.utils": (
        "imports the attention layers, the models and triton",
        ("add_kv_sharing_layers_to_kv_cache_groups",), {}),
    "vllm.distributed.parallel_state": (
        "needs torch >= 2.1 collectives (torch.distributed"
        "._functional_collectives); the logger's *_once methods ask it "
        "whether this process is the first rank",
        ("is_global_first_rank", "is_local_first_rank"), {}),
    "vllm.reasoning": (
        "imports the MCP tool server (openai_harmony)",
        (), {"ReasoningParserManager": ReasoningParserManager}),
    "vllm.tokenizers.registry": (
        "imports huggingface_hub and transformers",
        (), {"cached_tokenizer_from_config": cached_tokenizer_from_config}),
    "vllm.v1.structured_output.backend_guidance": (
        "evaluates llguidance types in its dataclass annotations at import",
        (), {"GuidanceBackend": GuidanceBackend}),
    "vllm.v1.structured_output.backend_xgrammar": (
        "evaluates xgrammar types in its dataclass annotations at import",
        (), {"XgrammarBackend": XgrammarBackend}),
}


def _alias_name(alias):
    """The module-level name an import alias binds."""
    return (alias.asname or alias.name).split(".")[0]


def _is_submodule_import(alias):
    """Whether the alias is an `import a.b`, which binds `a` too."""
    return not alias.asname and "." in alias.name


def _bound_names(node):
    """The module-level names that a top-level statement binds. A dotted
    `import a.b` counts only in `_submodule_imports`, so that a plain
    `import a` is preferred to one that also imports a submodule."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {_alias_name(alias) for alias in node.names
                if not _is_submodule_import(alias)}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets
                if isinstance(target, ast.Name)}
    return set()


def _submodule_imports(node):
    """The top-level names bound by a statement's `import a.b` aliases."""
    if not isinstance(node, ast.Import):
        return set()
    return {_alias_name(alias) for alias in node.names
            if _is_submodule_import(alias)}


def _used_names(node):
    """The names a statement reads (over-approximated: every Name read
    anywhere inside it)."""
    return {sub.id for sub in ast.walk(node)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}


def engine_definitions(path, names):
    """A module AST holding the top-level definitions `names` of the
    source file `path`, preceded by the module-level statements they need:
    imports narrowed to the names used, and other definitions and
    assignments (without their annotations), in source order."""
    tree = ast.parse(path.read_text(), str(path))
    # A module-level `name: T = value` only records T in __annotations__:
    # keep the assignment, so that T need not be defined.
    tree.body = [
        ast.copy_location(ast.Assign([node.target], node.value), node)
        if isinstance(node, ast.AnnAssign) and node.value is not None
        else node for node in tree.body]
    binders, submodule_binders = {}, {}
    for node in tree.body:
        for name in _bound_names(node):
            binders.setdefault(name, []).append(node)
        for name in _submodule_imports(node):
            submodule_binders.setdefault(name, []).append(node)
    for name, nodes in submodule_binders.items():
        binders.setdefault(name, nodes)
    missing = set(names) - binders.keys()
    if missing:
        raise LookupError(f"{path} defines no {sorted(missing)}")
    needed, wanted, pending = set(), set(), list(names)
    while pending:
        name = pending.pop()
        if name in wanted or name not in binders:
            continue
        wanted.add(name)
        for node in binders[name]:
            if id(node) not in needed:
                needed.add(id(node))
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    pending.extend(_used_names(node))
    body = []
    for node in tree.body:
        if id(node) not in needed:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            node.names = [
                alias for alias in node.names
                if _alias_name(alias) in wanted
                and node in binders[_alias_name(alias)]]
        body.append(node)
    return ast.Module(body=body, type_ignores=[])


def install(tree):
    """Register every stand-in on `sys.modules` (and on its parent
    package, where that is loaded)."""
    for name, (why, taken, attrs) in STANDINS.items():
        module = types.ModuleType(name, f"stand-in: the real module {why}")
        sys.modules[name] = module
        if taken:
            path = tree.joinpath(*name.split(".")).with_suffix(".py")
            module.__file__ = str(path)
            code = compile(engine_definitions(path, taken), str(path), "exec")
            exec(code, module.__dict__)  # noqa: S102 (the engine's own code)
        module.__dict__.update(attrs)
        parent, _, child = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)
