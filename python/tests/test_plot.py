"""python3 -m hkv.plot draws non-empty PNG and SVG files from plan output
and from runs in the plot schema (here the engine example's)."""
import json
import os
import subprocess
import sys

import hkv
from conftest import BUILD, ROOT


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(BUILD / "python"),
                                       str(ROOT / "python")])
    return e


def write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def small_run(geometry, scale):
    return {"geometry": geometry,
            "timeline": {"t_s": [0, 1, 2, 3],
                         "hit_ratio": [0, 0.2 * scale, 0.3 * scale, 0.35],
                         "kv_usage": [0.1, 0.5, 0.9 * scale, 0.7]},
            "ttft_ms": [12.0, 30.5 * scale, 80.0, 250.0],
            "miss_causes": {"no_checkpoint": {"requests": 3,
                                              "tokens": int(700 * scale)},
                            "evicted": {"requests": 1, "tokens": 64}}}


def test_plot_writes_every_chart(tmp_path):
    report = hkv.plan_report("glm53-flash-like", tp=4, budget="33GiB",
                             context=262144,
                             geometries=["256/256/256", "2048/256/256"])
    plan = write(tmp_path / "plan.json", report)
    runs = write(tmp_path / "runs.json",
                 {"runs": [small_run("256/256/256", 1.0),
                           small_run("2048/256/256", 0.8)]})
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "hkv.plot", plan, runs, "-o", str(out)],
        env=env(), capture_output=True, text=True, check=True)
    names = ["capacity", "hit_ratio", "kv_usage", "ttft", "miss_causes"]
    for name in names:
        for ext in ("png", "svg"):
            path = out / f"{name}.{ext}"
            assert path.stat().st_size > 1000, path
            assert str(path) in result.stdout
    assert (out / "capacity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (out / "hit_ratio.svg").read_text(encoding="utf-8")
    assert "2048/256/256" in svg and "time (s)" in svg


def test_plot_without_data_fails(tmp_path):
    empty = write(tmp_path / "empty.json", {"runs": []})
    result = subprocess.run(
        [sys.executable, "-m", "hkv.plot", empty, "-o", str(tmp_path)],
        env=env(), capture_output=True, text=True)
    assert result.returncode == 1
    assert "no plans or runs" in result.stderr


def test_compare_geometries_writes_results_and_charts(tmp_path):
    script = ROOT / "python" / "examples" / "compare_geometries.py"
    subprocess.run(
        [sys.executable, str(script), "-o", str(tmp_path),
         "--trace-requests", "20", "--geometry", "256/256/256",
         "--geometry", "2048/256/256"],
        env=env(), capture_output=True, text=True, check=True)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [p["geometry"] for p in results["plans"]] == [
        "256/256/256", "2048/256/256"]
    assert [r["geometry"] for r in results["runs"]] == [
        "256/256/256", "2048/256/256"]
    assert (tmp_path / "hit_ratio.png").stat().st_size > 1000
