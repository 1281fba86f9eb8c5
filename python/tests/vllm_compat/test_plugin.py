"""The plugin path: the engine's own plugin loader (vllm.plugins.
load_general_plugins) finds hkv's `vllm.general_plugins` entry point and,
with HKV_KV_CACHE_MANAGER=1, the engine's Scheduler builds hkv's manager
and serves a hybrid model (MLA, recurrent state in align mode, a
sliding-window EAGLE draft group) to the end. Each case runs in a fresh
interpreter, as an engine process starts."""
import importlib.metadata
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, INSTALLED, ROOT

TESTS = pathlib.Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
from vllm_compat import reference
reference.load()
from vllm.plugins import load_general_plugins
load_general_plugins()
from vllm_compat import differential as d
w = d.Workload(
    seed=0, block_size=16, kinds=["mla", "mamba_align", "swa"],
    eagle_groups=[False, False, True], num_blocks=120, caching=True,
    spec_method="eagle", num_spec_tokens=2, max_num_batched_tokens=32,
    max_num_seqs=8, resets={},
    arrivals=[(4 * i, f"r{i}", list(range(1, 97)) + [500 + i] * (20 + 7 * i), 24)
              for i in range(8)], steps=400)
scheduler = d.make_scheduler(w)
# The engine's own manager asserts on this workload (aligned recurrent
# state with rejected drafts): only hkv's serves it.
coverage = d.serve(w, scheduler) if sys.argv[1] == "serve" else d.Coverage()
manager = type(scheduler.kv_cache_manager)
print(json.dumps({"manager": manager.__module__ + "." + manager.__name__,
                  "done": not scheduler.has_unfinished_requests(),
                  "steps": coverage.steps, "hits": coverage.hits,
                  "drafts": coverage.drafts}))
"""


def entry_point_path(tmp_path):
    """A folder whose metadata declares hkv's entry point as `pip install`
    writes it, unless the installed package declares it already."""
    found = importlib.metadata.entry_points(group="vllm.general_plugins")
    if any(e.value == "hkv.vllm.plugin:register" for e in found):
        return []
    if INSTALLED:
        pytest.fail("the installed hkv declares no vllm.general_plugins "
                    "entry point")
    info = tmp_path / "hkv-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hkv\n"
                                   "Version: 0\n")
    (info / "entry_points.txt").write_text(
        "[vllm.general_plugins]\nhkv = hkv.vllm.plugin:register\n")
    return [str(tmp_path)]


def run(tmp_path, enabled, serve):
    paths = entry_point_path(tmp_path) + [str(TESTS)]
    if not INSTALLED:
        paths += [str((BUILD / "python").resolve()), str(ROOT / "python")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths),
               HKV_KV_CACHE_MANAGER=enabled)
    done = subprocess.run([sys.executable, "-c", SCRIPT,
                           "serve" if serve else "build"], env=env,
                          cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_engine_builds_hkvs_manager_through_its_plugin_loader(tmp_path):
    result = run(tmp_path, "1", serve=True)
    assert result["manager"] == "hkv.vllm.manager.KVCacheManager"
    assert result["done"] and result["hits"] >= 6 and result["drafts"] > 0


def test_without_the_variable_the_engine_keeps_its_own(tmp_path):
    result = run(tmp_path, "0", serve=False)
    assert result["manager"] == "vllm.v1.core.kv_cache_manager.KVCacheManager"
