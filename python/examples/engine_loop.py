"""A minimal engine scheduler loop over hkv.KVCacheManager.

Replays the first requests of a Mooncake trace the way `hkv replay` does
(each request alone, in trace order; its prompt prefilled in chunks of at
most --max-batched-tokens, split where recurrent states must land), then
decodes a few tokens, and prints each request's prefix hit:

    admit -> get_computed_blocks -> allocate_slots / take_copies / commit /
    finish_step per chunk -> decode steps -> free

Prompts are the trace's synthetic token ids (hkv.mooncake_tokens: 512 ids
per hash id, derived from it by SplitMix64, as the C++ replay does), so the
hits equal `hkv replay` on the same requests. Decoded tokens are ids above
the trace's vocabulary, so they never create hits of their own.

    PYTHONPATH=build/release/python:python /usr/bin/python3 \
        python/examples/engine_loop.py --limit 200

--json OUT writes the run in the plot schema of docs/python.md.
"""

import argparse
import json
import math
import pathlib
import sys

import hkv

TRACE = (pathlib.Path(__file__).resolve().parents[2] / "data" / "traces" /
         "mooncake_conversation_trace.jsonl")
VOCAB = 151936  # the synthetic prompts' vocabulary (Qwen2's)


def pool_blocks(kv_groups, trace, decode_tokens, capacity_tokens):
    """Blocks (the null block included): `capacity_tokens` per group, or
    room for every request to keep all its blocks (no eviction), as `hkv
    replay` sizes its pool."""
    total = 1
    for g in kv_groups:
        block = hkv._hkv.tokens_per_block(g, 1)
        if capacity_tokens:
            total += capacity_tokens // block
            continue
        for t in trace:
            total += math.ceil((t.input_length + decode_tokens) / block)
            total += g.speculative_blocks + 2
    return total


def run_request(kv, r, hit, args):
    """Prefill in chunks, then decode. Returns False if the pool is short."""
    n = r.num_tokens
    done = hit
    budget = args.max_batched_tokens
    while done < n:
        allowed = min(budget, n - done)
        step = kv.split_prefill(r, allowed,
                                max_num_scheduled_tokens=budget) or allowed
        if kv.allocate_slots(r, step) is None:
            kv.free(r)
            return False
        kv.take_copies()  # an engine runs these, then the model
        kv.commit(r, done + step)
        kv.finish_step()
        done += step
    for k in range(args.decode_tokens):
        r.append_output_token_ids(VOCAB + k)  # the token sampled last step
        if kv.allocate_slots(r, 1) is None:
            break
        kv.take_copies()
        kv.commit(r, r.num_tokens)
        kv.finish_step()
    return True


def run(trace, args, out=None):
    """Drives the loop; returns the totals and the plot-schema run."""
    groups = hkv.make_groups(args.groups or f"full:{args.block_size}")
    kv = hkv.KVCacheManager(
        groups=groups, hash_unit=args.hash_unit or None,
        num_blocks=pool_blocks(groups, trace, args.decode_tokens,
                               args.capacity_tokens),
        key_function=args.key_function)
    totals = {"requests": 0, "prompt_tokens": 0, "hit_tokens": 0,
              "rejected_requests": 0}
    timeline = {"t_s": [], "hit_ratio": [], "kv_usage": []}
    for i, t in enumerate(trace):
        r = kv.make_request(i, hkv.mooncake_tokens(t))
        _, hit = kv.get_computed_blocks(r)
        totals["requests"] += 1
        totals["prompt_tokens"] += t.input_length
        admitted = run_request(kv, r, hit, args)
        timeline["kv_usage"].append(kv.usage)  # at the request's peak
        if admitted:
            totals["hit_tokens"] += hit
            kv.free(r)
        else:
            totals["rejected_requests"] += 1
        timeline["t_s"].append(t.timestamp_ms / 1000)
        timeline["hit_ratio"].append(totals["hit_tokens"] /
                                     totals["prompt_tokens"])
        if out:
            print(f"request {i:5d}: prompt {t.input_length:7d} tokens, "
                  f"hit {hit:7d} ({100 * hit / t.input_length:5.1f}%)",
                  file=out)
    stats = kv.make_prefix_cache_stats()
    causes = {name: {"requests": getattr(stats, name).requests,
                     "tokens": getattr(stats, name).tokens}
              for name in ("speculative_rewind", "no_checkpoint",
                           "window_not_covered", "evicted")}
    label = args.groups or f"full:{args.block_size}"
    return totals, {"geometry": label, "timeline": timeline,
                    "miss_causes": causes}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trace", default=str(TRACE))
    p.add_argument("--limit", type=int, default=200,
                   help="first N requests of the trace")
    p.add_argument("--block-size", type=int, default=16)
    p.add_argument("--groups", default="",
                   help="group list instead of one full group, e.g. "
                   "full:256,recurrent:256")
    p.add_argument("--hash-unit", type=int, default=0)
    p.add_argument("--key-function", default="sha256_cbor")
    p.add_argument("--max-batched-tokens", type=int, default=8192)
    p.add_argument("--decode-tokens", type=int, default=4)
    p.add_argument("--capacity-tokens", type=int, default=0)
    p.add_argument("--json", help="write the run (plot schema) here")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    trace = hkv.read_mooncake_trace(args.trace)[:args.limit]
    totals, run_json = run(trace, args, None if args.quiet else sys.stdout)
    for key, value in totals.items():
        print(f"{key.replace('_', ' '):<18} {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"runs": [run_json]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
