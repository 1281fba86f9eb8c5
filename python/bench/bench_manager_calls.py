"""hkv.vllm's per-request calls alone, on the hybrid of bench_vs_reference.py
(full attention, Mamba in align mode, a 4096-token window), each timed with
perf_counter_ns in a loop without the scheduler; medians. For A/B runs of
the manager's Python and its C++ calls (docs/perf.md):

- lookup: a new request's warm lookup at block 256 (hit 131,072 tokens),
  get_computed_blocks timed, the request freed after each (untimed);
- decode: 128 requests of 2,048 tokens (sharing 1,024) prefilled at block
  16, then 96 decode steps of allocate_slots(request, 1): the quiet calls
  and those at a block's offsets 15, 0 and 1 (where a group's table or
  cache changes) apart;
- chunk: an 8192-token prompt allocated in one call at block 16 on a pool
  of 30,000 blocks, the prefix cache reset before each (nothing to
  evict); three runs of 60.

    PYTHONPATH=build/release/python:python:python/tests:python/bench \\
        /usr/bin/python3 python/bench/bench_manager_calls.py
"""

import argparse
import gc
import random
import statistics
import sys
import time

import bench_vs_reference as b

import hkv.vllm

HYBRID = ["full", "mamba_align", "swa"]


def manager(block, num_blocks):
    return hkv.vllm.KVCacheManager(
        b.config(HYBRID, block, num_blocks), max_model_len=1 << 20,
        hash_block_size=block, max_num_batched_tokens=8192)


def lookup(runs=2000):
    rng = random.Random(1)
    prompt = b.tokens(rng, 131072)
    m = manager(256, 131072 // 256 * len(HYBRID) + 64)
    b.cache(m, b.request("first", prompt, 256))
    second = b.request("second", prompt + b.tokens(rng, 256), 256)
    samples = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        m.get_computed_blocks(second)
        samples.append(time.perf_counter_ns() - start)
        m.free(second)
    return f"lookup: {statistics.median(samples):.0f} ns"


def decode(num_requests=128, steps=96):
    rng = random.Random(3)
    shared = b.tokens(rng, 1024)
    m = manager(16, len(HYBRID) * num_requests * (2048 + steps) // 16 + 512)
    requests = [b.request(f"d{i}", shared + b.tokens(rng, 1024), 16)
                for i in range(num_requests)]
    for r in requests:
        blocks, hit = m.get_computed_blocks(r)
        assert m.allocate_slots(r, r.num_tokens - hit, hit, blocks)
        r.num_computed_tokens = r.num_tokens
        r.append_output_token_ids(7)
    quiet, boundary = [], []
    for _ in range(steps):
        m.new_step_starts()
        for r in requests:
            start = time.perf_counter_ns()
            assert m.allocate_slots(r, 1) is not None
            elapsed = time.perf_counter_ns() - start
            at_boundary = r.num_computed_tokens % 16 in (15, 0, 1)
            (boundary if at_boundary else quiet).append(elapsed)
        for r in requests:
            r.num_computed_tokens += 1
            r.append_output_token_ids(7)
    return (f"decode: quiet {statistics.median(quiet):.0f} ns "
            f"({len(quiet)} calls), at a boundary "
            f"{statistics.median(boundary):.0f} ns ({len(boundary)} calls)")


def chunk(num_blocks=30000, rounds=60):
    rng = random.Random(2)
    m = manager(16, num_blocks)
    requests = [b.request(f"c{i}", b.tokens(rng, 8192), 16)
                for i in range(rounds + 8)]
    samples = []
    for i, r in enumerate(requests):
        assert m.reset_prefix_cache()
        start = time.perf_counter_ns()
        assert m.allocate_slots(r, 8192) is not None
        if i >= 8:  # the first touch pages memory in
            samples.append(time.perf_counter_ns() - start)
        m.free(r)
        m.take_new_block_ids()
    return statistics.median(samples) / 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--what", default="lookup,decode,chunk")
    args = parser.parse_args(argv)
    b.init_none_hash(b.sha256)
    for what in args.what.split(","):
        gc.collect()
        gc.disable()
        try:
            if what == "chunk":
                runs = [chunk() for _ in range(3)]
                line = "chunk: " + ", ".join(f"{r:.1f}" for r in runs) + " µs"
            else:
                line = {"lookup": lookup, "decode": decode}[what]()
        finally:
            gc.enable()
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
