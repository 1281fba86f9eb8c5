"""A warm 128k-token get_computed_blocks through the bindings.

A 131072-token request (random token ids below 151,936, fixed seed;
sha256_cbor keys, block and hash unit 16) is allocated, committed and freed,
so all its blocks stay cached; then an identical request is looked up many
times. Prints the median and p99 of each call (time.perf_counter), for
KVCacheManager.get_computed_blocks, the bound CacheManager.lookup under it,
and converting the hit's block ids to Python lists (get_block_ids).

    PYTHONPATH=build/release/python:python /usr/bin/python3 \
        python/bench/bench_lookup.py
"""

import argparse
import random
import statistics
import time

import hkv

TOKENS = 131072
BLOCK = 16


def timed(call, runs):
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples), samples[int(0.99 * (len(samples) - 1))]


def warm_manager():
    rng = random.Random(42)
    prompt = [rng.randrange(151936) for _ in range(TOKENS)]
    kv = hkv.KVCacheManager(groups=f"full:{BLOCK}",
                            num_blocks=TOKENS // BLOCK + 16)
    first = kv.make_request("first", prompt)
    kv.get_computed_blocks(first)
    kv.allocate_slots(first, TOKENS)
    kv.commit(first, TOKENS)
    kv.finish_step()
    kv.free(first)
    return kv, kv.make_request("second", prompt)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=2000)
    args = p.parse_args()
    kv, r = warm_manager()
    blocks, hit = kv.get_computed_blocks(r)
    assert hit == TOKENS - BLOCK, hit  # the last token is recomputed
    rows = [
        ("KVCacheManager.get_computed_blocks",
         lambda: kv.get_computed_blocks(r)),
        ("CacheManager.lookup (bound C++)", lambda: kv.cache.lookup(r)),
        ("KVCacheBlocks.get_block_ids", blocks.get_block_ids),
    ]
    print(f"warm hit of {hit} tokens ({hit // BLOCK} blocks), "
          f"{args.runs} runs each")
    for name, call in rows:
        for _ in range(50):  # warm-up
            call()
        median, p99 = timed(call, args.runs)
        print(f"{name:<36} median {median * 1e6:8.1f} us   "
              f"p99 {p99 * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
