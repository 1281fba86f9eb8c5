"""hkv from Python: the KV-cache manager in an engine scheduler's vocabulary,
the capacity planner, the engine simulator, Mooncake traces and the C++
replay, and charts.

The compiled part is ``hkv._hkv`` (target ``hkv_py``), which CMake writes to
``build/<preset>/python/hkv/``; this package lives in ``python/hkv/``. With
both directories on ``PYTHONPATH`` (build directory first)::

    PYTHONPATH=build/release/python:python /usr/bin/python3 -c "import hkv"

or installed with both parts (``pip install --no-build-isolation .``).

Errors: caller bugs (an unknown request, a double free, a bad group list
option) raise ``hkv.UsageError``; bad input (an invalid config, an infeasible
plan, a malformed trace) raises ``hkv.Error``. Both are ``ValueError``s.
"""

import pkgutil

# The compiled module sits in a second hkv/ directory (the build tree).
__path__ = pkgutil.extend_path(__path__, __name__)

try:
    from hkv import _hkv  # noqa: E402
except ImportError as e:  # pure-Python parts (hkv.plot, hkv.reports) work
    # Absent, the error reads as a circular import; a broken build says why.
    _MISSING = e
    _WHY = ("was not found" if "cannot import name '_hkv'" in str(e)
            else f"failed to load ({e})")
else:
    _MISSING = None
    from hkv._hkv import (  # noqa: E402,F401
        BlockCopy,
        EventPublisher,
        PoolMoves,
        BlockRemoved,
        BlockStored,
        AllBlocksCleared,
        CacheHit,
        Error,
        ExtraKey,
        ExtraKeyKind,
        FreeOrder,
        GroupKind,
        GroupSpec,
        KeyFunction,
        MissCause,
        MultimodalItem,
        NewBlocks,
        PrefixCacheStats,
        PromptEmbeds,
        Retention,
        StateExport,
        TraceRequest,
        UsageError,
        mooncake_tokens,
        parse_group_list,
        preset_names,
        read_mooncake_trace,
        replay,
    )
    from hkv.kv_cache_manager import KVCacheManager  # noqa: E402,F401
    from hkv.manager import (  # noqa: E402,F401
        KVCacheBlocks,
        Request,
        make_group,
        make_groups,
    )
    from hkv.planner import plan, plan_report  # noqa: E402,F401
    from hkv.simulator import (  # noqa: E402,F401
        compare,
        compare_geometries,
        simulate,
    )

from hkv.reports import plot_run, plot_runs  # noqa: E402,F401


def _missing_extension(name):
    """The ImportError for ``name`` (a compiled name or a module needing
    one) while hkv._hkv is missing: what happened and how to build it."""
    return ImportError(
        f"{name} needs the compiled extension hkv._hkv, which "
        f"{_WHY}; build it with `cmake --build --preset "
        "release --target hkv_py` and put build/release/python before "
        "python/ on PYTHONPATH, or install the package with `pip "
        "install --no-build-isolation .`")


def __getattr__(name):
    """A compiled name asked for without the compiled module: say so."""
    if _MISSING is not None and name in __all__:
        raise _missing_extension(f"hkv.{name}") from _MISSING
    raise AttributeError(f"module 'hkv' has no attribute {name!r}")


__all__ = [
    "AllBlocksCleared",
    "BlockCopy",
    "EventPublisher",
    "PoolMoves",
    "BlockRemoved",
    "BlockStored",
    "CacheHit",
    "Error",
    "ExtraKey",
    "ExtraKeyKind",
    "GroupKind",
    "GroupSpec",
    "KVCacheBlocks",
    "KVCacheManager",
    "KeyFunction",
    "MissCause",
    "MultimodalItem",
    "NewBlocks",
    "PrefixCacheStats",
    "PromptEmbeds",
    "Retention",
    "Request",
    "StateExport",
    "TraceRequest",
    "UsageError",
    "make_group",
    "make_groups",
    "mooncake_tokens",
    "parse_group_list",
    "plan",
    "plan_report",
    "plot_run",
    "plot_runs",
    "simulate",
    "compare",
    "compare_geometries",
    "preset_names",
    "read_mooncake_trace",
    "replay",
]
