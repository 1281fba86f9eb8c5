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
    """Skip the engine tests listed in NOT_RUNNABLE, and in SLOW unless
    HKV_VLLM_SLOW=1."""
    skipped = dict(NOT_RUNNABLE)
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
