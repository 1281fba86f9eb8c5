"""Charts of plans and runs, with matplotlib (Agg): PNG and SVG.

    python3 -m hkv.plot results.json [more.json ...] -o out/

Input: the JSON schema of docs/python.md. ``hkv plan --json`` output (or
hkv.plan_report) is valid input as it is: its "plans" give the capacity
chart. "runs" (the simulator's, or python/examples/engine_loop.py --json)
give hit ratio and KV usage over time, the TTFT distribution and the miss
causes, one series per geometry. Several files are merged. Charts without
data are skipped.

Writes ``capacity``, ``hit_ratio``, ``kv_usage``, ``ttft`` and
``miss_causes`` as .png and .svg and prints their paths.
"""

import argparse
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MISS_CAUSES = ("speculative_rewind", "no_checkpoint", "window_not_covered",
               "evicted")
CAPACITY_PANELS = (  # (key in a pool's figures, axis label, scale)
    ("tokens", "tokens held at the context length", 1),
    ("concurrency", "whole requests at the context length", 1),
    ("waste", "bytes holding no data (%)", 100),
)
POOLS = (("shared", "shared pool"), ("per_group", "per-group pools"))


def _is_simulator_report(data):
    reports = data if isinstance(data, list) else [data]
    return bool(reports) and all(isinstance(r, dict) and "table" in r
                                 and "label" in r for r in reports)


def load(paths):
    """Merges the files: {"title", "plans", "runs"}."""
    merged = {"title": "", "plans": [], "runs": []}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if _is_simulator_report(data):  # hkv simulate/compare --json
            from hkv.simulator import plot_runs
            data = plot_runs(data)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: want a JSON object")
        merged["plans"] += data.get("plans", [])
        merged["runs"] += data.get("runs", [])
        if data.get("model") and not merged["title"]:
            merged["title"] = _title(data)
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


def _bars(ax, categories, series):
    """Grouped bars: one bar series per (label, values) of `series`."""
    width = 0.8 / max(len(series), 1)
    for i, (label, values) in enumerate(series):
        xs = [x + (i - (len(series) - 1) / 2) * width
              for x in range(len(categories))]
        ax.bar(xs, values, width, label=label)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(categories)


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
    ax.legend(title="geometry", fontsize="small")
    ax.set_title(f"{label} over time")
    return _save(fig, out, key, formats)


def plot_ttft(runs, out, formats):
    """Empirical CDF of each geometry's time to first token."""
    runs = [r for r in runs if r.get("ttft_ms")]
    if not runs:
        return []
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in runs:
        xs = sorted(r["ttft_ms"])
        ys = [(i + 1) / len(xs) for i in range(len(xs))]
        ax.step(xs, ys, where="post", label=r["geometry"])
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    ax.grid(alpha=0.3)
    ax.legend(title="geometry", fontsize="small")
    ax.set_title("TTFT distribution")
    return _save(fig, out, "ttft", formats)


def plot_miss_causes(runs, out, formats):
    """Tokens each cause kept hits below the full-attention chain."""
    runs = [r for r in runs if r.get("miss_causes")]
    if not runs:
        return []
    fig, ax = plt.subplots(figsize=(8, 4.2))
    series = [(r["geometry"],
               [r["miss_causes"].get(c, {}).get("tokens", 0)
                for c in MISS_CAUSES]) for r in runs]
    _bars(ax, [c.replace("_", " ") for c in MISS_CAUSES], series)
    ax.set_xlabel("miss cause")
    ax.set_ylabel("tokens short of the full-attention chain")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(title="geometry", fontsize="small")
    ax.set_title("Miss causes")
    return _save(fig, out, "miss_causes", formats)


def plot(data, out, formats=("png", "svg")):
    """Writes every chart `data` (as load returns it) has data for; returns
    the paths."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    if data["plans"]:
        paths += plot_capacity(data["plans"], data["title"], out, formats)
    runs = data["runs"]
    paths += plot_timeline(runs, "hit_ratio", "token hit ratio (%)", out,
                           formats)
    paths += plot_timeline(runs, "kv_usage", "KV blocks in use (%)", out,
                           formats)
    paths += plot_ttft(runs, out, formats)
    paths += plot_miss_causes(runs, out, formats)
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
        print("hkv.plot: no plans or runs to draw", file=sys.stderr)
        return 1
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
