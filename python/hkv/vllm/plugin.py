"""The engine's plugin: with ``HKV_KV_CACHE_MANAGER=1`` in the
environment, the engine's scheduler builds hkv.vllm.KVCacheManager in
place of its own.

Installed as the ``vllm.general_plugins`` entry point ``hkv`` (pyproject.toml),
which the engine loads in every process before it builds a scheduler;
``register()`` replaces ``KVCacheManager`` in the two engine modules that
name it. Without the variable (or with ``0``) it changes nothing.
"""

import os

ENV = "HKV_KV_CACHE_MANAGER"
_engine_class = None  # the engine's own KVCacheManager, once replaced


def enabled():
    """Whether the environment asks for hkv's manager."""
    value = os.environ.get(ENV, "0").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"{ENV} must be 1 or 0, got {os.environ[ENV]!r}")


def register():
    """Puts hkv's manager into the engine when enabled(); returns whether
    it did."""
    if not enabled():
        return False
    install()
    return True


def install():
    """Replaces the engine's KVCacheManager with hkv's in the engine's
    manager and scheduler modules (idempotent)."""
    import vllm.v1.core.kv_cache_manager as engine_manager
    import vllm.v1.core.sched.scheduler as engine_scheduler

    from hkv.vllm.manager import KVCacheManager

    global _engine_class
    if engine_manager.KVCacheManager is not KVCacheManager:
        _engine_class = engine_manager.KVCacheManager
    engine_manager.KVCacheManager = KVCacheManager
    engine_scheduler.KVCacheManager = KVCacheManager


def engine_manager_class():
    """The engine's own KVCacheManager, replaced or not."""
    if _engine_class is not None:
        return _engine_class
    import vllm.v1.core.kv_cache_manager as engine_manager

    return engine_manager.KVCacheManager
