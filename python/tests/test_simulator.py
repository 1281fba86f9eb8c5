"""hkv.simulate / hkv.compare run what the CLI runs, and their reports draw
charts through python3 -m hkv.plot."""
import json
import subprocess
import sys

import pytest

import hkv
from conftest import cli as hkv_cli, python_env

FANOUT = dict(workload="fanout:requests=8,prefix=4096",
              groups="full:2048,recurrent:256", hash_unit=256,
              num_blocks=500)


# The reviewers' four geometries, then hkv's four configurations.
DEFAULT_LABELS = ["256/256/256", "2048/2048/2048", "2048/2048/256",
                  "2048/256/256", "2048/2048/2048 placement",
                  "2048/256/256 placement",
                  "2048/2048/2048 rebalanced pools placement",
                  "256/256/256 rebalanced pools placement"]


def cli(*args):
    out = subprocess.run([str(hkv_cli()), *args],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_simulate_matches_the_cli():
    report = hkv.simulate(**FANOUT)
    assert report["table"]["prompt_tokens"] == 36864
    assert report["table"]["reused_tokens"] == 24576
    expected = cli("simulate", "--workload", FANOUT["workload"], "--groups",
                   FANOUT["groups"], "--hash-unit", "256", "--num-blocks",
                   "500", "--json")
    for key in ("reused_tokens", "computed_tokens", "steps", "ttft_s_p50"):
        assert report["table"][key] == expected["table"][key], key
    assert report["times_are_modelled"] is True


def test_compare_without_configurations_is_the_geometry_comparison():
    c = hkv.compare(limit=10)
    assert c["schema"] == "hkv.compare/1"
    labels = [x["label"] for x in c["configurations"]]
    assert labels == DEFAULT_LABELS
    assert c["recommendation"]["winner"] in labels
    beyond = c["beyond_reference"]
    assert beyond is None or beyond["reference_best"] in labels[:4]


def test_compare_runs_configurations_and_varied_flags():
    reports = hkv.compare(configs=["geometry=2048/256/256;label=fine"],
                          geometries=["256/256/256"], limit=40)
    assert [r["label"] for r in reports] == ["fine", "256/256/256"]
    assert all(r["table"]["finished"] == 40 for r in reports)
    varied = hkv.compare(vary="concurrency=1,4", **FANOUT)
    assert [r["label"] for r in varied] == ["concurrency=1", "concurrency=4"]


def test_compare_geometries_returns_the_a_b_with_a_recommendation():
    c = hkv.compare_geometries(limit=10, geometries=["4096/256/256"],
                               objective="reuse")
    assert c["schema"] == "hkv.compare/1"
    labels = [x["label"] for x in c["configurations"]]
    assert labels == DEFAULT_LABELS + ["4096/256/256"]
    assert c["objective"] == "reuse"
    assert c["recommendation"]["winner"] in labels
    assert all(x["trace"]["requests"] == 10 for x in c["configurations"])
    with pytest.raises(hkv.Error, match="unknown objective"):
        hkv.compare_geometries(objective="fastest")


def test_misuse_raises():
    with pytest.raises(hkv.UsageError, match="unknown simulator option"):
        hkv.simulate(bogus=1)
    with pytest.raises(hkv.UsageError,
                       match=r"simulator option num_blocks must be an int in "
                             r"\[0, 4294967295\] or None, got 'many'"):
        hkv.simulate(num_blocks="many")
    with pytest.raises(hkv.Error, match="infeasible: .*cannot start"):
        hkv.simulate(workload="repeat:prompt=5000", groups="full:256",
                     num_blocks=7)


def test_reports_become_charts(tmp_path):
    reports = hkv.compare(configs=[f"geometry={g};label={g}" for g in (
        "256/256/256", "2048/2048/2048", "2048/256/256")], limit=60)
    runs = hkv.plot_runs(reports)
    assert len(runs["runs"]) == 3
    first = runs["runs"][0]
    assert len(first["timeline"]["t_s"]) == len(first["timeline"]["hit_ratio"])
    assert len(first["ttft_ms"]) == 60
    assert all(t >= 0 for t in first["ttft_ms"])
    # The CLI's JSON is valid plot input as it is.
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(reports), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "hkv.plot", str(path), "-o",
                    str(tmp_path / "out")], check=True, env=python_env())
    for name in ("ttft", "miss_causes"):
        for ext in ("png", "svg"):
            files = list((tmp_path / "out").glob(f"*{name}*.{ext}"))
            assert files and all(f.stat().st_size > 0 for f in files), name


def test_preset_and_scenario_figures():
    report = hkv.simulate(preset="glm53-flash-gb10x4",
                          workload="resend:prompt=52445")
    assert report["scenario"]["reused_tokens"] == 51968
    assert report["capacity"]["engine_pool_tokens"] == 4297015
    assert report["table"]["engine_max_concurrency"] == 16.39
    assert "sliding[5]/2048" in report["groups_resolved"]


def test_per_group_pools_hold_more_at_a_small_page():
    shared = hkv.simulate(geometry="256/256/256", limit=20)
    per_group = hkv.simulate(geometry="256/256/256", pools="per-group",
                             limit=20)
    assert per_group["label"] == "256/256/256 per-group"
    assert (per_group["table"]["capacity_tokens"]
            > 2.9 * shared["table"]["capacity_tokens"])
    with pytest.raises(hkv.Error, match="not shared, per-group, workload or rebalanced"):
        hkv.simulate(pools="private", limit=2)


def test_tiers_reuse_what_the_gpu_evicted():
    gpu_only = hkv.simulate(limit=400)
    tiered = hkv.simulate(limit=400, tiers=["host:64GiB", "redis:512GiB"])
    from_tiers = sum(tiered["tier_hit_tokens"].values())
    assert set(tiered["tier_hit_tokens"]) == {"host", "redis"}
    assert from_tiers > 0
    assert (tiered["table"]["reused_tokens"]
            > gpu_only["table"]["reused_tokens"] + from_tiers / 2)
    assert [t["name"] for t in tiered["tiers"]] == ["host", "redis"]
    with pytest.raises(hkv.Error, match="capacity"):
        hkv.simulate(limit=2, tiers=["redis://127.0.0.1:6379"])


def test_progress_is_called_as_requests_finish():
    calls = []
    hkv.simulate(limit=600, progress=lambda *a: calls.append(a))
    assert calls, "no progress call"
    labels = {label for label, _, _ in calls}
    assert len(labels) == 1
    done = [d for _, d, _ in calls]
    assert done == sorted(done)
    assert calls[-1][1:] == (600, 600)


def test_an_exception_in_progress_is_raised_after_the_run():
    def fails(label, done, total):
        raise KeyError("stop")

    with pytest.raises(KeyError, match="stop"):
        hkv.simulate(limit=300, progress=fails)
    with pytest.raises(hkv.UsageError, match="progress must be callable"):
        hkv.simulate(limit=10, progress=3)


def test_compare_leaves_out_what_the_model_cannot_run():
    c = hkv.compare(model="llama-3.1-8b", tp=1, budget_gib=20,
                    context=32768, limit=10)
    assert any("coupled layout" in why for why in c["skipped"])
    assert c["configurations"]
