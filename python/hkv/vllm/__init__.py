"""hkv's cache manager as the reference engine's (vLLM at 28be48fa).

``hkv.vllm.KVCacheManager`` takes the engine's constructor arguments and
answers every call its scheduler, connectors and metrics make, with the
engine's result classes (its KVCacheBlocks, KV events and stats when the
engine is importable, hkv.vllm.engine's stand-ins with the same fields when
not). The engine picks it up through the plugin (hkv.vllm.plugin,
``HKV_KV_CACHE_MANAGER=1``). The spec and request classes here let code
without the engine build a config and drive the manager.
"""

import hkv

if hkv._MISSING is not None:
    raise hkv._missing_extension("hkv.vllm") from hkv._MISSING

from hkv.vllm.config import (  # noqa: E402,F401
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    MLAAttentionSpec,
    MambaSpec,
    SlidingWindowSpec,
    groups_from_config,
)
from hkv.vllm.manager import KVCacheManager  # noqa: E402,F401
from hkv.vllm.request import Request, RequestStatus  # noqa: E402,F401

__all__ = [
    "ChunkedLocalAttentionSpec",
    "FullAttentionSpec",
    "KVCacheConfig",
    "KVCacheGroupSpec",
    "KVCacheManager",
    "MLAAttentionSpec",
    "MambaSpec",
    "Request",
    "RequestStatus",
    "SlidingWindowSpec",
    "groups_from_config",
]
