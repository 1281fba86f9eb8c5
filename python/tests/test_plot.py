"""python3 -m hkv.plot draws non-empty PNG and SVG files from plan output,
from runs in the plot schema (here the engine example's), from simulator
reports and from sweeps; the series each chart plots are checked on
hand-written input (data/sweep_budget.json) against values worked out by
hand. data/compare_limit150.json is `hkv compare --json --limit 150` with
each report's "residency" dropped (to keep it small)."""
import json
import os
import subprocess
import sys

import pytest

import hkv
from conftest import INSTALLED, ROOT, python_env
from hkv import reports

DATA = ROOT / "python" / "tests" / "data"
GOLDEN = DATA / "compare_limit150.json"
SWEEP = DATA / "sweep_budget.json"
CAUSES = ["draft rewind: last unit recomputed",
          "no recurrent checkpoint at the boundary",
          "sliding window not cached", "evicted before reuse"]


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
        env=python_env(), capture_output=True, text=True, check=True)
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
        env=python_env(), capture_output=True, text=True)
    assert result.returncode == 1
    assert "no plans, runs, reports or sweeps" in result.stderr


def test_compare_geometries_writes_results_and_charts(tmp_path):
    script = ROOT / "python" / "examples" / "compare_geometries.py"
    subprocess.run(
        [sys.executable, str(script), "-o", str(tmp_path),
         "--trace-requests", "20", "--geometry", "256/256/256",
         "--geometry", "2048/256/256"],
        env=python_env(), capture_output=True, text=True, check=True)
    results = json.loads((tmp_path / "results.json").read_text())
    assert [p["geometry"] for p in results["plans"]] == [
        "256/256/256", "2048/256/256"]
    assert [r["geometry"] for r in results["runs"]] == [
        "256/256/256", "2048/256/256"]
    assert (tmp_path / "hit_ratio.png").stat().st_size > 1000


def pure_run(args, cwd):
    """python3 -m hkv.plot with python/ alone on the path: no extension (the
    installed package in an installed run: the charts are the same)."""
    e = python_env()
    if not INSTALLED:
        e["PYTHONPATH"] = str(ROOT / "python")
    return subprocess.run([sys.executable, "-m", "hkv.plot", *args],
                          env=e, cwd=cwd, capture_output=True, text=True)


def load_json(path):
    return json.loads(path.read_text(encoding="utf-8"))


def point(value):
    sweep = load_json(SWEEP)["sweep"]
    return next(p for p in sweep["points"] if p["value"] == value)


def report(value, label):
    return next(r for r in point(value)["reports"] if r["label"] == label)


@pytest.mark.skipif(INSTALLED, reason="checks python/ without the compiled "
                    "module; the installed package has it")
def test_package_imports_without_the_extension(tmp_path):
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT / "python")
    code = ("import hkv, hkv.plot\n"
            "assert hkv.plot_runs([]) == {'runs': []}\n"
            "try:\n    hkv.KVCacheManager\n"
            "except ImportError as err:\n    print(err)\n")
    result = subprocess.run([sys.executable, "-c", code], env=e,
                            cwd=tmp_path, capture_output=True, text=True,
                            check=True)
    assert "hkv._hkv" in result.stdout and "hkv_py" in result.stdout


@pytest.mark.parametrize("wrap", ["list", "configurations", "reports"])
def test_golden_compare_draws_without_the_extension(tmp_path, wrap):
    found = load_json(GOLDEN)
    data = found if wrap == "list" else {wrap: found, "workload": "trace"}
    path = write(tmp_path / "compare.json", data)
    result = pure_run([path, "-o", str(tmp_path / "out")], tmp_path)
    assert result.returncode == 0, result.stderr
    for name in ["engine_capacity", "hit_ratio", "kv_usage", "ttft",
                 "miss_causes"]:
        for ext in ("png", "svg"):
            assert (tmp_path / "out" / f"{name}.{ext}").stat().st_size > 1000
    assert not (tmp_path / "out" / "capacity.png").exists()
    svg = (tmp_path / "out" / "miss_causes.svg").read_text(encoding="utf-8")
    assert "no recurrent checkpoint at the boundary" in svg
    svg = (tmp_path / "out" / "engine_capacity.svg").read_text(
        encoding="utf-8")
    assert "hkv: whole requests that fit" in svg
    assert "engine: maximum concurrency (logged)" in svg


def test_one_simulate_report_draws(tmp_path):
    """`hkv simulate --json` writes one report, not a list: drawn as one."""
    path = write(tmp_path / "sim.json", load_json(GOLDEN)[0])
    result = pure_run([path, "-o", str(tmp_path / "out")], tmp_path)
    assert result.returncode == 0, result.stderr
    for name in ["engine_capacity", "hit_ratio", "kv_usage", "ttft"]:
        assert (tmp_path / "out" / f"{name}.svg").stat().st_size > 1000


def test_golden_compare_series():
    found = reports.reports_in(load_json(GOLDEN))
    labels = ["256/256/256", "2048/2048/2048", "2048/256/256"]
    assert [r["label"] for r in found] == labels
    assert [label for label, _ in reports.capacity_bars(found)] == labels
    for r in found:
        xs, ys = reports.ttft_cdf(r)
        assert len(xs) == len(r["requests"]) == 150
        assert xs == sorted(xs) and xs[0] > 0 and ys[-1] == 1.0
        requests = r["requests"]
        by_request = (sum(q["reused_tokens"] for q in requests)
                      / sum(q["prompt_tokens"] for q in requests))
        assert reports.hit_ratio(r) == pytest.approx(by_request)
        tokens = reports.miss_cause_tokens(r["miss_causes"])
        assert list(tokens) == CAUSES


def test_sweep_draws_hit_ratio_by_budget(tmp_path):
    result = pure_run([str(SWEEP), "-o", str(tmp_path)], tmp_path)
    assert result.returncode == 0, result.stderr
    for ext in ("png", "svg"):
        path = tmp_path / f"hit_ratio_by_budget.{ext}"
        assert path.stat().st_size > 1000 and str(path) in result.stdout
    svg = (tmp_path / "hit_ratio_by_budget.svg").read_text(encoding="utf-8")
    assert "KV-cache budget per rank (GiB)" in svg
    assert "fine" in svg and "coarse" in svg


def test_hit_ratio_by_budget_values():
    # fine: requests only: 500/2000, 2000/4000, 3000/4000.
    # coarse: the table wins over its requests: 0/2000, 512/2048, 1024/2048.
    series = reports.hit_ratio_by_budget(load_json(SWEEP)["sweep"])
    assert series == {"fine": [(16, 0.25), (33, 0.5), (66, 0.75)],
                      "coarse": [(16, 0.0), (33, 0.25), (66, 0.5)]}


def test_ttft_cdf_values():
    # first_token_s - arrival_s: 1.5, 0.25, 3.0; sorted, each a third.
    xs, ys = reports.ttft_cdf(report(66, "fine"))
    assert xs == [0.25, 1.5, 3.0]
    assert ys == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_capacity_bars_values():
    assert reports.capacity_bars(point(16)["reports"]) == [
        ("fine", {"engine_pool_tokens": 100000,
                  "engine_max_concurrency": 2.5, "whole_requests": 2}),
        ("coarse", {"engine_pool_tokens": 400000,
                    "engine_max_concurrency": 8.75, "whole_requests": 8})]
    assert reports.capacity_bars(point(33)["reports"]) == []


def test_miss_causes_in_plain_words():
    fine = reports.miss_cause_tokens(report(16, "fine")["miss_causes"])
    coarse = reports.miss_cause_tokens(report(16, "coarse")["miss_causes"])
    assert list(fine.items()) == list(zip(CAUSES, [0, 768, 0, 256]))
    assert list(coarse.items()) == list(zip(CAUSES, [1024, 0, 128, 0]))


def test_reports_found_in_every_compare_shape():
    one = [{"label": "a", "requests": []}]
    assert reports.reports_in(one) == one
    assert reports.reports_in({"configurations": one}) == one
    assert reports.reports_in({"reports": one}) == one
    assert reports.reports_in({"plans": []}) is None
    # One `hkv simulate --json` report: a label and its table.
    single = {"label": "2048/256/256", "table": {"reused_tokens": 1},
              "requests": []}
    assert reports.reports_in(single) == [single]
    assert reports.reports_in([{"geometry": "x"}]) is None
    assert reports.sweep_in({"runs": []}) is None


def compare1_configuration(label, reused):
    """A configuration of `hkv compare --json` ("hkv.compare/1"), cut down
    to what the charts read."""
    return {"label": label, "groups_resolved": "full:256",
            "capacity": {"max_model_len": 1024, "engine_pool_tokens": 4096,
                         "engine_max_concurrency": 4.0,
                         "hkv_whole_requests": 3, "hkv_mean_requests": 3.5},
            "trace": {"requests": 2, "prompt_tokens": 200,
                      "reused_tokens": reused,
                      "miss_causes": {"evicted": {"requests": 1,
                                                  "tokens": 64},
                                      "evicted_chain": {"requests": 1,
                                                        "tokens": 64}},
                      "ttft_sorted_s": [0.5, 2.0],
                      "per_request": [
                          {"arrival_s": 0.0, "first_token_s": 2.0,
                           "prompt_tokens": 100, "reused_tokens": 0},
                          {"arrival_s": 1.0, "first_token_s": 1.5,
                           "prompt_tokens": 100, "reused_tokens": reused}],
                      "kv_usage": [[0.0, 0.1], [1.0, 0.5], [2.0, 0.4]]}}


def compare1():
    return {"schema": "hkv.compare/1", "preset": "p", "cost_model": "c",
            "configurations": [compare1_configuration("256/256/256", 64),
                               compare1_configuration("2048/256/256", 32)],
            "recommendation": {"winner": "256/256/256"}}


def test_compare1_series():
    found = reports.reports_in(compare1())
    assert [r["label"] for r in found] == ["256/256/256", "2048/256/256"]
    assert reports.capacity_bars(found)[0] == ("256/256/256", {
        "engine_pool_tokens": 4096, "engine_max_concurrency": 4.0,
        "whole_requests": 3})
    assert reports.hit_ratio(found[0]) == pytest.approx(64 / 200)
    assert reports.ttft_cdf(found[0]) == ([0.5, 2.0], [0.5, 1.0])
    assert reports.miss_cause_tokens(found[1]["miss_causes"])[
        "evicted before reuse"] == 64
    run = reports.plot_run(found[0])
    assert run["timeline"]["t_s"] == [0.0, 1.0, 2.0]
    assert run["timeline"]["hit_ratio"] == [0.0, 0.0, pytest.approx(0.32)]
    assert reports.reports_in({"schema": "hkv.compare/1",
                               "configurations": [{"x": 1}]}) is None


def test_compare1_draws_without_the_extension(tmp_path):
    path = write(tmp_path / "compare.json", compare1())
    result = pure_run([path, "-o", str(tmp_path / "out")], tmp_path)
    assert result.returncode == 0, result.stderr
    for name in ["engine_capacity", "hit_ratio", "kv_usage", "ttft",
                 "miss_causes"]:
        assert (tmp_path / "out" / f"{name}.svg").stat().st_size > 1000


def test_compare_sweep_points_hold_compare1_objects(tmp_path):
    """`hkv compare --sweep budget-gib=... --json`: each point's "reports"
    is a whole "hkv.compare/1" object; the ratios are reused / prompt
    tokens of each configuration's trace (200 prompt tokens each)."""
    small = compare1()
    large = compare1()
    large["configurations"][0]["trace"]["reused_tokens"] = 100
    sweep = {"schema": "hkv.compare-sweep/1",
             "sweep": {"parameter": "budget_gib", "points": [
                 {"value": 66, "reports": large},
                 {"value": 16, "reports": small}]}}
    assert reports.hit_ratio_by_budget(reports.sweep_in(sweep)) == {
        "256/256/256": [(16, 64 / 200), (66, 100 / 200)],
        "2048/256/256": [(16, 32 / 200), (66, 32 / 200)]}
    path = write(tmp_path / "sweep.json", sweep)
    result = pure_run([path, "-o", str(tmp_path / "out")], tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "hit_ratio_by_budget.svg").stat().st_size > 1000


def test_malformed_sweep_names_the_field(tmp_path):
    bad = write(tmp_path / "bad.json", {"sweep": {"parameter": "budget_gib",
                "points": [{"value": 16, "reports": [{"table": {}}]}]}})
    result = pure_run([bad, "-o", str(tmp_path)], tmp_path)
    assert result.returncode == 1
    assert "bad.json" in result.stderr
    assert '"sweep.points[0].reports"' in result.stderr
    with pytest.raises(ValueError, match=r'"sweep.points\[1\].value"'):
        reports.sweep_in({"sweep": {"points": [
            {"value": 16, "reports": [{"label": "a"}]},
            {"value": "33GiB", "reports": [{"label": "a"}]}]}})


def test_router_bars_values(tmp_path):
    """Cluster reports give the router chart its percentages; a report
    without a router gives none."""
    table = {"router": "prefix", "prompt_tokens": 2000, "reused_tokens": 500,
             "routed_tokens": 800, "ttft_s_p50": 1.5, "ttft_s_p99": 9.0}
    found = [{"label": "router=prefix", "table": table},
             {"label": "one engine", "table": {"prompt_tokens": 10}}]
    assert reports.router_bars(found) == [
        ("router=prefix", {"hit_percent": 25.0, "routed_percent": 40.0,
                           "ttft_s_p50": 1.5, "ttft_s_p99": 9.0})]
    path = write(tmp_path / "cluster.json", found)
    out = subprocess.run([sys.executable, "-m", "hkv.plot", path, "-o",
                          str(tmp_path / "out"), "--format", "png"],
                         capture_output=True, text=True, env=python_env(),
                         check=True).stdout.split()
    assert str(tmp_path / "out" / "routers.png") in out


EIGHT = ["256/256/256", "2048/2048/2048", "2048/2048/256", "2048/256/256",
         "2048/2048/2048 placement", "2048/256/256 placement",
         "2048/2048/2048 rebalanced pools placement",
         "256/256/256 rebalanced pools placement"]


def _overlap(a, b):
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_charts_stay_legible_with_eight_configurations(tmp_path,
                                                       monkeypatch):
    """The default comparison's eight labels: no two tick labels overlap,
    and no legend covers an axes' plotting area (checked on the drawn
    figures' text extents)."""
    from hkv import plot
    figures = []
    monkeypatch.setattr(plot, "_save",
                        lambda fig, out, name, formats: figures.append(
                            (name, fig)) or [])
    found = [compare1_configuration(label, 10 * i)
             for i, label in enumerate(EIGHT)]
    data = {"schema": "hkv.compare/1", "configurations": found}
    plot.plot(plot.load([write(tmp_path / "c.json", data)]), tmp_path)
    names = {name for name, _ in figures}
    assert {"engine_capacity", "miss_causes", "hit_ratio", "kv_usage",
            "ttft"} <= names
    for name, fig in figures:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            ticks = [t.get_window_extent(renderer)
                     for t in ax.get_xticklabels() if t.get_text()]
            for i, a in enumerate(ticks):
                for b in ticks[i + 1:]:
                    assert not _overlap(a, b), (name, "tick labels overlap")
            legend = ax.get_legend()
            if legend is not None:
                assert not _overlap(legend.get_window_extent(renderer),
                                    ax.get_window_extent(renderer)), (
                    name, "the legend covers the plot")
