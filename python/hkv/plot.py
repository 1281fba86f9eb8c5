"""Charts of plans, runs, simulator reports and sweeps, with matplotlib
(Agg): PNG and SVG. Pure Python: no compiled extension needed.

    python3 -m hkv.plot results.json [more.json ...] -o out/

Inputs (docs/python.md, "Charts"): ``hkv plan --json`` output (or
hkv.plan_report), whose "plans" give the capacity chart; "runs" (the charts'
schema, e.g. python/examples/engine_loop.py --json); ``hkv simulate`` /
``hkv compare --json`` reports (a list, or an object listing them under
"configurations" or "reports"), converted by hkv.reports; and sweep JSON
({"sweep": {"parameter", "points": [{"value", "reports"}]}}). One series
per configuration label. Several files are merged; charts without data are
skipped.

Writes ``capacity``, ``engine_capacity``, ``routers`` (cluster runs),
``hit_ratio``, ``kv_usage``, ``ttft``, ``miss_causes`` and
``hit_ratio_by_budget`` as .png and .svg and prints their paths.
"""

import argparse
import json
import pathlib
import sys
import textwrap

import matplotlib

from hkv import reports

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CAPACITY_PANELS = (  # (key in a pool's figures, axis label, scale)
    ("tokens", "tokens held at the context length", 1),
    ("concurrency", "whole requests at the context length", 1),
    ("waste", "bytes holding no data (%)", 100),
)
POOLS = (("shared", "shared pool"), ("per_group", "per-group pools"))


def _merge(merged, data):
    """Adds one file's charts data to `merged`."""
    sweep = reports.sweep_in(data)
    if sweep is not None:
        merged["sweeps"].append(sweep)
        return
    found = reports.reports_in(data)
    if found is not None:  # hkv simulate/compare --json
        merged["reports"] += found
        merged["runs"] += [reports.plot_run(r) for r in found]
        return
    if not isinstance(data, dict):
        raise ValueError("want a JSON object, a list of reports or a sweep")
    merged["plans"] += data.get("plans", [])
    merged["runs"] += data.get("runs", [])
    if data.get("model") and not merged["title"]:
        merged["title"] = _title(data)


def load(paths):
    """Merges the files: {"title", "plans", "runs", "reports", "sweeps"}."""
    merged = {"title": "", "plans": [], "runs": [], "reports": [],
              "sweeps": []}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        try:
            _merge(merged, data)
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None
    return merged


def _title(data):
    parts = [str(data["model"])]
    if "tp" in data:
        parts.append(f"TP{data['tp']}")
    if "budget_bytes" in data:
        parts.append(f"{data['budget_bytes'] / 2**30:.1f} GiB")
    if "context_tokens" in data:
        parts.append(f"{data['context_tokens']} tokens")
    return ", ".join(parts)


def _save(fig, out, name, formats):
    paths = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        fig.savefig(path, format=fmt, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _category_ticks(ax, labels):
    """Configuration names under bars, legible at eight or more: wrapped
    at spaces, upright when there are more than three."""
    ax.set_xticks(range(len(labels)))
    wrapped = [textwrap.fill(label, 16) for label in labels]
    if len(labels) > 3:
        ax.set_xticklabels(wrapped, rotation=90, fontsize="small")
    else:
        ax.set_xticklabels(wrapped)


def _legend_outside(ax, **options):
    """The legend to the right of the axes, so no line or bar hides."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
              **options)


def _bars(ax, categories, series):
    """Grouped bars: one bar series per (label, values) of `series`."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width
              for x in range(len(categories))]
        ax.bar(xs, values, width, label=label)
    _category_ticks(ax, categories)


def plot_capacity(plans, title, out, formats):
    """Tokens, concurrency and waste of each geometry in both layouts."""
    fig, axes = plt.subplots(1, len(CAPACITY_PANELS),
                             figsize=(5 * len(CAPACITY_PANELS), 4.2))
    for ax, (key, label, scale) in zip(axes, CAPACITY_PANELS):
        series = [(p["geometry"], [p[pool][key] * scale for pool, _ in POOLS])
                  for p in plans]
        _bars(ax, [name for _, name in POOLS], series)
        ax.set_xlabel("layout")
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, title="geometry T/R/U", loc="lower center",
               ncol=min(len(labels), 6), bbox_to_anchor=(0.5, -0.12))
    fig.suptitle(f"Capacity per geometry ({title})" if title
                 else "Capacity per geometry")
    return _save(fig, out, "capacity", formats)


def plot_timeline(runs, key, label, out, formats):
    """`key` of each run's timeline over time, one line per geometry."""
    runs = [r for r in runs if r.get("timeline", {}).get(key)]
    if not runs:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in runs:
        t = r["timeline"]
        ax.plot(t["t_s"], [100 * v for v in t[key]], label=r["geometry"])
    ax.set_xlabel("time (s)")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
    _legend_outside(ax, title="configuration", fontsize="small")
    ax.set_title(f"{label} over time")
    return _save(fig, out, key, formats)


def _wide(values):
    """True when positive `values` span more than two decades."""
    low = min((v for v in values if v > 0), default=0)
    return low > 0 and max(values) / low > 100


def plot_ttft(runs, out, formats):
    """Empirical CDF of each configuration's time to first token."""
    runs = [r for r in runs if r.get("ttft_ms")]
    if not runs:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    seconds = [[ms / 1000 for ms in r["ttft_ms"]] for r in runs]
    for r, values in zip(runs, seconds):
        xs, ys = reports.cdf(values)
        ax.step(xs, ys, where="post", label=r["geometry"])
    unit = "s"
    if _wide([v for values in seconds for v in values]):
        ax.set_xscale("log")
        unit = "s, log scale"
    ax.set_xlabel(f"time to first token ({unit})")
    ax.set_ylabel("fraction of requests served by then")
    ax.grid(alpha=0.3)
    _legend_outside(ax, title="configuration", fontsize="small")
    ax.set_title("Time to first token, per request")
    return _save(fig, out, "ttft", formats)


def plot_miss_causes(runs, out, formats):
    """Tokens each cause kept hits below the full-attention chain, stacked
    per configuration."""
    runs = [r for r in runs if r.get("miss_causes")]
    if not runs:
        return []
    fig, ax = plt.subplots(figsize=(8, 4.2))
    labels = [r["geometry"] for r in runs]
    bottoms = [0] * len(runs)
    for words in reports.MISS_CAUSE_WORDS.values():
        tokens = [reports.miss_cause_tokens(r["miss_causes"])[words]
                  for r in runs]
        ax.bar(range(len(runs)), tokens, 0.6, bottom=bottoms, label=words)
        bottoms = [b + t for b, t in zip(bottoms, tokens)]
    _category_ticks(ax, labels)
    ax.set_xlabel("configuration")
    ax.set_ylabel("prompt tokens recomputed")
    ax.grid(axis="y", alpha=0.3)
    _legend_outside(ax, title="why the cached prefix was not used",
                    fontsize="small")
    ax.set_title("Cache misses by cause")
    return _save(fig, out, "miss_causes", formats)


def plot_engine_capacity(found, out, formats):
    """Per configuration: the engine's logged pool tokens, and its maximum
    concurrency beside hkv's whole requests at the model length."""
    rows = reports.capacity_bars(found)
    if not rows:
        return []
    labels = [label for label, _ in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    _bars(left, labels, [("engine: GPU KV cache size (logged)",
                          [c["engine_pool_tokens"] for _, c in rows])])
    left.set_ylabel("tokens")
    left.set_title("KV pool size the engine logs")
    _bars(right, labels, [
        ("engine: maximum concurrency (logged)",
         [c["engine_max_concurrency"] for _, c in rows]),
        ("hkv: whole requests that fit",
         [c["whole_requests"] for _, c in rows])])
    right.set_ylabel("requests at the full model length")
    right.set_title("Requests that fit at once")
    _legend_outside(right, fontsize="small")
    for ax in (left, right):
        ax.set_xlabel("configuration")
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, out, "engine_capacity", formats)


def plot_routers(found, out, formats):
    """Cluster runs (reports whose table names a router): per
    configuration, the prompt hit ratio beside the tokens the router
    counted on, and TTFT p50 and p99."""
    rows = reports.router_bars(found)
    if not rows:
        return []
    labels = [label.removeprefix("router=") for label, _ in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    _bars(left, labels, [
        ("realised: prompt tokens reused", [r["hit_percent"] for _, r in rows]),
        ("routed: tokens the router counted on",
         [r["routed_percent"] for _, r in rows])])
    left.set_ylabel("% of prompt tokens")
    left.set_title("Cache hits across the cluster")
    left.margins(y=0.3)  # room for the legend above the bars
    left.legend(fontsize="small")
    _bars(right, labels, [("TTFT p50", [r["ttft_s_p50"] for _, r in rows]),
                          ("TTFT p99", [r["ttft_s_p99"] for _, r in rows])])
    right.set_yscale("log")
    right.set_ylabel("seconds (modelled, log scale)")
    right.set_title("Time to first token")
    right.legend(fontsize="small")
    for ax in (left, right):
        ax.set_xlabel("configuration")
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, out, "routers", formats)


def plot_hit_ratio_by_budget(sweeps, out, formats):
    """Hit ratio against the swept parameter, one line per configuration."""
    if not sweeps:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for sweep in sweeps:
        for label, pts in reports.hit_ratio_by_budget(sweep).items():
            ax.plot([v for v, _ in pts], [100 * h for _, h in pts],
                    marker="o", label=label)
    values = sorted({p["value"] for sw in sweeps for p in sw["points"]})
    if values and values[0] > 0 and values[-1] / values[0] >= 4:  # doublings, evenly
        ax.set_xscale("log", base=2)
        ax.set_xticks(values, [f"{v:g}" for v in values])
        ax.minorticks_off()
    param = sweeps[0].get("parameter", "budget_gib")
    ax.set_xlabel("KV-cache budget per rank (GiB)" if param == "budget_gib"
                  else param.replace("_", " "))
    ax.set_ylabel("prompt tokens served from cache (%)")
    ax.grid(alpha=0.3)
    ax.legend(title="configuration", fontsize="small")
    ax.set_title("Cache hit ratio against KV budget"
                 if param == "budget_gib" else "Cache hit ratio")
    return _save(fig, out, "hit_ratio_by_budget", formats)


def plot(data, out, formats=("png", "svg")):
    """Writes every chart `data` (as load returns it) has data for; returns
    the paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if data["plans"]:
        paths += plot_capacity(data["plans"], data["title"], out, formats)
    paths += plot_engine_capacity(data.get("reports", []), out, formats)
    paths += plot_routers(data.get("reports", []), out, formats)
    runs = data["runs"]
    paths += plot_timeline(runs, "hit_ratio", "prompt hit ratio (%)", out,
                           formats)
    paths += plot_timeline(runs, "kv_usage", "KV blocks in use (%)", out,
                           formats)
    paths += plot_ttft(runs, out, formats)
    paths += plot_miss_causes(runs, out, formats)
    paths += plot_hit_ratio_by_budget(data.get("sweeps", []), out, formats)
    return paths


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m hkv.plot",
                                description="Charts of hkv plans and runs")
    p.add_argument("inputs", nargs="+", help="JSON files (docs/python.md)")
    p.add_argument("-o", "--out", default="out", help="output directory")
    p.add_argument("--format", nargs="+", default=["png", "svg"],
                   choices=["png", "svg", "pdf"])
    args = p.parse_args(argv)
    try:
        data = load(args.inputs)
    except (OSError, ValueError) as e:
        print(f"hkv.plot: {e}", file=sys.stderr)
        return 1
    paths = plot(data, args.out, args.format)
    if not paths:
        print("hkv.plot: no plans, runs, reports or sweeps to draw",
              file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
