"""Makes the reference engine's KV-cache manager, scheduler and their unit
tests importable on a machine without a GPU, pydantic or transformers.

`load()` finds the engine's source tree and prepares `sys.modules`:

1. Packages whose `__init__.py` pulls in CUDA platform detection, pydantic
   configs, tokenizers or the model executor (`BARE_PACKAGES`) are
   registered as bare module objects whose `__path__` points into the tree,
   so their `__init__` never runs while their submodules import as usual.
   The few names the engine imports from such a package are resolved
   lazily from the real submodule that defines them.
2. Modules that cannot import here at all get small stand-ins
   (`standins.py`, `vllm_config.py`), and missing third-party libraries get
   shims (`third_party.py`).
3. The tree root goes first on `sys.path`, and the engine's top-level test
   package `tests` is registered the same way (it has no `__init__.py`, and
   `tests` would otherwise be any folder of that name on `sys.path`, hkv's
   own `python/tests` among them).

Nothing under `vllm.v1.core` is imported by `load()`, so a caller can still
replace `vllm.v1.core.kv_cache_manager.KVCacheManager` before the scheduler
and the test modules import it.
"""
import importlib
import os
import pathlib
import sys
import types

from . import standins, third_party, vllm_config

# The checkout this suite was written against.
COMMIT = "28be48fa944d8c58aeffd1ab1b56e27828c6b268"

ENV_VAR = "HKV_VLLM_SRC"
DEFAULT_TREE = (pathlib.Path(__file__).resolve().parents[3].parent / "shared"
                / "reference" / "vllm-28be48fa")

# Package -> why its __init__.py must not run here. Each maps to
# {exported name: defining submodule} for the names that the modules on the
# manager and scheduler path import from the package itself.
BARE_PACKAGES = {
    "vllm": (
        "runs vllm.env_override, which patches torch inductor and sets "
        "environment variables",
        {"SamplingParams": "vllm.sampling_params"}),
    "vllm.distributed": (
        "imports parallel_state and the device communicators (NCCL)", {}),
    "vllm.distributed.kv_transfer": (
        "imports kv_transfer_state, which imports the worker-side "
        "distributed state", {}),
    "vllm.distributed.ec_transfer": (
        "imports ec_transfer_state, which imports the worker-side "
        "distributed state", {}),
    "vllm.multimodal": (
        "imports the multimodal registry, which imports the model "
        "executor and transformers",
        {"MULTIMODAL_REGISTRY": "vllm.multimodal.registry",
         "MultiModalRegistry": "vllm.multimodal.registry"}),
    "vllm.multimodal.media": (
        "imports the audio and video loaders (pybase64, av, librosa)",
        {"MediaWithBytes": "vllm.multimodal.media.base"}),
    "vllm.tokenizers": (
        "imports the Hugging Face tokenizer (transformers)",
        {"TokenizerLike": "vllm.tokenizers.protocol",
         "cached_tokenizer_from_config": "vllm.tokenizers.registry"}),
    "vllm.model_executor": (
        "imports the model executor's parameter types (CUDA kernels)", {}),
    "vllm.model_executor.layers.fused_moe": (
        "imports the fused-MoE layers (triton, CUDA kernels)", {}),
}

# Engine modules that import pydantic, prometheus_client or safetensors
# themselves: imported by load() while the shims of third_party.py are on
# sys.modules.
SHIMMED_IMPORTS = (
    "vllm.sampling_params",
    "vllm.v1.spec_decode.metrics",
    "vllm.distributed.kv_transfer.kv_connector.v1.metrics",
    "vllm.distributed.kv_transfer.kv_connector.v1.example_connector",
    "vllm.distributed.ec_transfer.ec_connector.example_connector",
)


def find_tree(src=None):
    """The engine's source tree: `src`, else $HKV_VLLM_SRC, else the shared
    reference checkout beside the repository. Returns (path, "") or
    (None, reason)."""
    if src is not None:
        origin = "the argument"
    elif os.environ.get(ENV_VAR):
        src, origin = os.environ[ENV_VAR], f"${ENV_VAR}"
    else:
        src, origin = DEFAULT_TREE, "the default location"
    tree = pathlib.Path(src).resolve()
    if not (tree / "vllm" / "v1" / "core" / "kv_cache_manager.py").is_file():
        return None, (f"no reference engine tree at {tree} ({origin}); set "
                      f"{ENV_VAR} to a checkout of vllm commit {COMMIT[:8]}")
    if not (tree / "tests" / "v1" / "core").is_dir():
        return None, f"{tree} ({origin}) has no tests/v1/core"
    return tree, ""


def _bare_package(name, tree, exports):
    """Register `name` as a package object over its folder in `tree`
    without running its `__init__.py`; `exports` maps the names to resolve
    lazily to their defining module."""
    package = types.ModuleType(name, f"bare package over the engine's {name}")
    package.__path__ = [str(tree.joinpath(*name.split(".")))]
    package.__package__ = name

    def __getattr__(attr):
        if attr not in exports:
            raise AttributeError(f"bare package {name} has no attribute "
                                 f"{attr!r}")
        value = getattr(importlib.import_module(exports[attr]), attr)
        setattr(package, attr, value)
        return value

    package.__getattr__ = __getattr__
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, package)


def load(src=None):
    """Prepare `sys.modules` for importing the engine from its tree (see the
    module docstring). Returns (tree, "") or, where no tree is found,
    (None, reason). Calling it again returns the tree already loaded."""
    loaded = getattr(sys.modules.get("vllm"), "__hkv_reference_tree__", None)
    if loaded is not None:
        return loaded, ""
    tree, reason = find_tree(src)
    if tree is None:
        return None, reason
    # The tree is reference material, possibly shared: write no
    # __pycache__ into it (this holds for the whole process).
    sys.dont_write_bytecode = True
    if str(tree) not in sys.path:
        sys.path.insert(0, str(tree))
    third_party.install()
    for name, (_, exports) in BARE_PACKAGES.items():
        _bare_package(name, tree, exports)
    for name in ("tests", "tests.v1"):
        _bare_package(name, tree, {})
    standins.install(tree)
    vllm_config.install(tree)
    with third_party.import_shims():
        for name in SHIMMED_IMPORTS:
            importlib.import_module(name)
    sys.modules["vllm"].__hkv_reference_tree__ = tree
    return tree, ""
