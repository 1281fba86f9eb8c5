"""Runs the reference engine's own KV-cache manager and scheduler tests
(tests/v1/core) from its source tree; see README.md.

The tree is prepared by `reference.load()` when pytest loads this file.
Without a tree every test_ref_*.py module is reported as skipped, with the
reason. Tests that cannot pass here for reasons of environment are listed in
`NOT_RUNNABLE`, and tests too slow for the suite's time budget in `SLOW`
(run them with HKV_VLLM_SLOW=1); both are skipped with their reason.
"""
import os

import pytest

from . import reference

TREE, REASON = reference.load()
# Which manager the engine's tests run on: hkv's (default), put in place by
# hkv's own plugin before any engine test module imports the class, or the
# engine's own (HKV_VLLM_MANAGER=engine, the baseline).
MANAGER = os.environ.get("HKV_VLLM_MANAGER", "hkv")
if MANAGER not in ("hkv", "engine"):
    raise pytest.UsageError(
        f"HKV_VLLM_MANAGER must be hkv or engine, got {MANAGER!r}")
if TREE is not None and MANAGER == "hkv":
    from hkv.vllm import plugin

    plugin.install()

# "<engine test file>::<test name>" (or "...::<test name>[<params>]" for one
# parametrisation) -> why it cannot run on this machine.
NOT_RUNNABLE = {}

_BLAST = ("20000 random scheduler steps over prompts of up to 5000 tokens "
          "(the 'standard' profile): 25-60 s each here, over the suite's "
          "time budget; HKV_VLLM_SLOW=1 runs it")
# Same keys -> why it is left out of a default run.
SLOW = {
    f"test_priority_scheduler_random.py::test_priority_scheduling_blast"
    f"[standard-{spec}-{caching}]": _BLAST
    for spec in ("None", "1", "5") for caching in ("False", "True")
}


_HASH_MAP = ("edits the engine's hash map (block_pool."
             "cached_block_hash_to_block._cache / .pop) to fake misses")
_POOL_CALLS = ("drives the engine's BlockPool directly (get_new_blocks, "
               "cache_full_blocks)")
_CROSS = ("an encoder-decoder model (CrossAttentionSpec): hkv has no "
          "cross-attention groups and refuses the config; the plugin hands "
          "such configs to the engine's own manager")
# With hkv's manager: "<engine test file>::<test name>" -> why the test
# cannot apply to it (it reads or edits the engine manager's internals).
NOT_APPLICABLE = {
    "test_prefix_caching.py::test_prefill_hybrid_model": _HASH_MAP,
    "test_prefix_caching.py::test_prefill_hybrid_model_eagle": _HASH_MAP,
    "test_prefix_caching.py::test_eagle_with_sliding_window": _HASH_MAP,
    "test_prefix_caching.py::test_different_block_size": _HASH_MAP,
    "test_prefix_caching.py::test_block_stored_event_group_idx": _POOL_CALLS,
    "test_prefix_caching.py::"
    "test_block_stored_event_group_idx_multiple_groups": _POOL_CALLS,
    "test_scheduler.py::test_variable_length_cross_attn_block_allocation":
        _CROSS,
    "test_scheduler.py::test_cross_attn_blocks_not_over_allocated": _CROSS,
    "test_scheduler.py::test_cross_attn_blocks_not_under_allocated": _CROSS,
    "test_scheduler.py::test_cross_attn_zero_blocks_without_encoder_inputs":
        _CROSS,
}


class _UnavailableModule(pytest.Module):
    """A collector module that reports the missing engine tree as its
    skip reason instead of importing."""

    def collect(self):
        raise pytest.skip.Exception(REASON, allow_module_level=True)


def pytest_pycollect_makemodule(module_path, parent):
    """Without the engine tree, the collector modules are not imported."""
    if TREE is None and module_path.name.startswith("test_ref_"):
        return _UnavailableModule.from_parent(parent, path=module_path)
    return None


def pytest_configure(config):
    """The engine's test modules mark themselves `cpu_test`."""
    config.addinivalue_line(
        "markers", "cpu_test: an engine test that needs no GPU")


def pytest_collection_modifyitems(items):
    """Skip the engine tests listed in NOT_RUNNABLE, in NOT_APPLICABLE on
    hkv's manager, and in SLOW unless HKV_VLLM_SLOW=1."""
    skipped = dict(NOT_RUNNABLE)
    if MANAGER == "hkv":
        skipped.update({key: f"not applicable to hkv's manager: {why}"
                        for key, why in NOT_APPLICABLE.items()})
    if os.environ.get("HKV_VLLM_SLOW") != "1":
        skipped.update(SLOW)
    for item in items:
        function = getattr(item, "function", None)
        if function is None or not function.__module__.startswith("tests."):
            continue
        engine_file = function.__module__.rpartition(".")[2] + ".py"
        for key in (f"{engine_file}::{item.name}",
                    f"{engine_file}::{item.originalname}"):
            if key in skipped:
                item.add_marker(pytest.mark.skip(reason=skipped[key]))
                break
