"""Compares page geometries of one model and writes the charts.

Plans each geometry (hkv.plan_report: capacity, concurrency, waste in both
layouts) and, with --trace-requests N, replays the first N requests of a
Mooncake trace through hkv.KVCacheManager with the geometry's groups
(full:T,recurrent:R, hash unit U; python/examples/engine_loop.py's loop) for
hit ratio and KV usage over time and the miss causes. Writes
OUT/results.json (docs/python.md's schema) and the charts of hkv.plot.

    PYTHONPATH=build/release/python:python /usr/bin/python3 \
        python/examples/compare_geometries.py -o out/compare \
        --geometry 256/256/256 --geometry 2048/2048/2048 \
        --geometry 2048/256/256 --trace-requests 200
"""

import argparse
import json
import pathlib
import sys

import hkv
import hkv.plot

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import engine_loop  # noqa: E402


def run_geometry(trace, geometry, args):
    """The engine loop with the geometry's groups; its run, labelled."""
    t, r, u = (int(x) for x in geometry.split("/"))
    loop_args = engine_loop.parse_args(
        ["--groups", f"full:{t},recurrent:{r}", "--hash-unit", str(u),
         "--key-function", "xxh3_128_cbor", "--decode-tokens", "0",
         "--capacity-tokens", str(args.capacity_tokens), "--quiet"])
    _, run = engine_loop.run(trace, loop_args)
    run["geometry"] = geometry
    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="glm53-flash-like")
    p.add_argument("--tp", type=int, default=4)
    p.add_argument("--budget", default="33GiB")
    p.add_argument("--context", type=int, default=262144)
    p.add_argument("--geometry", action="append",
                   help="T/R/U; repeat (default: three GLM-5.3 geometries)")
    p.add_argument("--trace", default=str(engine_loop.TRACE))
    p.add_argument("--trace-requests", type=int, default=0)
    p.add_argument("--capacity-tokens", type=int, default=0,
                   help="pool size for the replay (0: no eviction)")
    p.add_argument("-o", "--out", default="out/compare")
    args = p.parse_args(argv)
    geometries = args.geometry or ["256/256/256", "2048/2048/2048",
                                   "2048/256/256"]
    results = hkv.plan_report(args.model, tp=args.tp, budget=args.budget,
                              context=args.context, geometries=geometries)
    results["runs"] = []
    if args.trace_requests:
        trace = hkv.read_mooncake_trace(args.trace)[:args.trace_requests]
        results["runs"] = [run_geometry(trace, g, args) for g in geometries]
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.json", "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    for row in results["plans"]:
        print(f"{row['geometry']:<16} shared {row['shared']['tokens']:>9} "
              f"tokens ({row['shared']['concurrency']} requests), per-group "
              f"{row['per_group']['tokens']:>9} tokens")
    for path in hkv.plot.plot(hkv.plot.load([out / "results.json"]), out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
