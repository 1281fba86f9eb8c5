"""hkv's KV-cache manager against the reference engine's, side by side in
one run: every row of docs/perf.md's comparison table.

Both managers are driven through the engine's own API (hkv.vllm's
KVCacheManager is a drop-in for the engine's) with the same engine
Request objects, keyed before any clock starts with the engine's default
``sha256``. Each call is timed alone (time.perf_counter); rows give the
median of each side and the ratio reference / hkv. Rows:

- lookup: a warm ``get_computed_blocks`` hitting a 131,072-token prompt
  that was allocated, cached and freed; full attention at block 16, and
  the hybrid (full attention, Mamba in align mode, a 4096-token window) at
  block 256; for a request never seen before (what a scheduler asks once
  per new request: hkv takes in its block hashes) and for the same request
  again;
- chunk: ``allocate_slots`` of a cold 8,192-token chunk at block 16 in a
  pool full of cached blocks (512 evictions), then the same chunk with
  nothing to evict (the prefix cache reset first, untimed), at 10^4 blocks
  and, with ``--scale``, at 10^6;
- decode: ``allocate_slots`` of one token for each of 256 running requests
  (2,048-token prompts sharing 1,024) over 200 steps; full and hybrid at
  block 16; the request's token and its keys are appended untimed;
- admission: ``get_computed_blocks`` and the first ``allocate_slots`` of
  each of 300 new 2,048-token requests sharing their first 1,024 tokens
  (the whole sequence to fit, as the engine's scheduler asks), full and
  hybrid at block 16; and the same two calls for a request the full pool
  refuses, retried as the scheduler retries its waiting queue's head;
- free: ``free`` of a cached 131,072-token request at block 16 (it is
  looked up and re-admitted, untimed, between frees);
- keying: a 131,072-token prompt's block hashes at unit 16, the engine's
  hasher with its ``sha256`` (pickle, its default), ``sha256_cbor`` and
  ``xxhash_cbor``, against hkv's C++ keying through the binding (the token
  list converted included) and, given ``--hkv-bench``, hkv_bench's keying
  and digest-alone figures;
- step: the engine's Scheduler on each manager (bench_scheduler_step.py),
  hybrid, long and decode workloads; the manager's calls inside a step.

Needs the engine's source tree (HKV_VLLM_SRC, else
../shared/reference/vllm-28be48fa). Prints a Markdown table; progress on
stderr.

    PYTHONPATH=build/release/python:python:python/tests:python/bench \\
        /usr/bin/python3 python/bench/bench_vs_reference.py \\
        --hkv-bench build/release/bench/hkv_bench [--scale]
"""

import argparse
import gc
import json
import logging
import random
import statistics
import subprocess
import sys
import time

from vllm_compat import reference

TREE, REASON = reference.load()
if TREE is None:
    sys.exit(f"bench_vs_reference: {REASON}")

import torch  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.utils.hashing import sha256, sha256_cbor, xxhash_cbor  # noqa: E402
from vllm.v1.core.kv_cache_utils import (get_request_block_hasher,  # noqa: E402
                                         init_none_hash)
from vllm.v1.kv_cache_interface import (FullAttentionSpec,  # noqa: E402
                                        KVCacheConfig, KVCacheGroupSpec,
                                        MambaSpec, SlidingWindowSpec)
from vllm.v1.request import Request  # noqa: E402

import hkv  # noqa: E402
from hkv import _hkv  # noqa: E402
import hkv.vllm  # noqa: E402
from hkv.vllm import plugin  # noqa: E402

VOCAB = 151936
WINDOW = 4096
EOS = VOCAB  # never sampled


# The engine logs each prefix-cache reset at INFO, on stdout.
logging.getLogger("vllm").setLevel(logging.WARNING)


def log(message):
    print(message, file=sys.stderr, flush=True)


def tokens(rng, n):
    return [rng.randrange(VOCAB) for _ in range(n)]


def request(rid, prompt, hash_block, max_tokens=1 << 20, hash_fn=sha256):
    params = SamplingParams(ignore_eos=True, max_tokens=max_tokens)
    params.update_from_generation_config({}, EOS)
    return Request(request_id=rid, prompt_token_ids=prompt,
                   sampling_params=params, pooling_params=None,
                   block_hasher=get_request_block_hasher(hash_block, hash_fn))


def config(kinds, block, num_blocks):
    def spec(kind):
        common = dict(block_size=block, num_kv_heads=1, head_size=1,
                      dtype=torch.float32)
        if kind == "full":
            return FullAttentionSpec(**common)
        if kind == "swa":
            return SlidingWindowSpec(**common, sliding_window=WINDOW)
        return MambaSpec(block_size=block, shapes=((1,),),
                         dtypes=(torch.float32,), mamba_cache_mode="align")
    return KVCacheConfig(
        num_blocks=num_blocks, kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec([f"layer{i}"], spec(k))
                         for i, k in enumerate(kinds)])


def managers(kinds, block, num_blocks, max_model_len=1 << 20):
    """Yields (label, manager) for the engine's and then hkv's, same
    config. Each side runs with the cyclic collector off after a collection,
    so that neither pays inside a timed call for garbage the other left."""
    for label, cls in (("engine", plugin.engine_manager_class()),
                       ("hkv", hkv.vllm.KVCacheManager)):
        gc.collect()
        gc.disable()
        try:
            yield label, cls(config(kinds, block, num_blocks),
                             max_model_len=max_model_len,
                             hash_block_size=block,
                             max_num_batched_tokens=8192)
        finally:
            gc.enable()


def timed(call):
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def median_us(samples):
    return statistics.median(samples) * 1e6


def cache(manager, r):
    """Runs ``r`` through ``manager`` whole and frees it: its blocks stay
    cached."""
    assert manager.allocate_slots(r, r.num_tokens) is not None
    manager.free(r)
    manager.take_new_block_ids()


# Rows ------------------------------------------------------------------


def warm_lookup(kinds, block, runs, first_seen):
    """The second prompt extends the first by a block, so the hit is the
    whole first prompt: recurrent state exists only where a prefill
    ended. ``first_seen``: the request is freed (untimed) after each
    lookup, so each is its first (hkv takes in its block hashes then);
    else the same request is looked up again and again."""
    rng = random.Random(1)
    prompt = tokens(rng, 131072)
    first = request("r0", prompt, block)
    second = request("r1", prompt + tokens(rng, block), block)
    out = {}
    for label, m in managers(kinds, block, 131072 // block * len(kinds) + 64):
        cache(m, first)
        samples, hits = [], set()
        for i in range(runs + 10):  # 10 to warm up
            t, (_, hit) = timed(lambda: m.get_computed_blocks(second))
            if i >= 10:
                samples.append(t)
            hits.add(hit)
            if first_seen:
                m.free(second)
        out[label] = (median_us(samples), hits)
    assert out["engine"][1] == out["hkv"][1], out
    return {k: v[0] for k, v in out.items()}, f"hit {out['hkv'][1].pop()}"


def chunk(num_blocks, rounds, evicting):
    """allocate_slots of cold 8192-token chunks, each freed (cached)
    after; with ``evicting`` false the prefix cache is reset in between."""
    rng = random.Random(2)
    fill = (num_blocks - 1) // 512
    out = {}
    for label, m in managers(["full"], 16, num_blocks):
        rng.seed(2)
        for i in range(fill):
            cache(m, request(f"fill{i}", tokens(rng, 8192), 16))
        samples = []
        # The first rounds are not timed: a process's first touches of
        # fresh memory fault pages in (tens of µs a call here).
        for i in range(rounds + 8):
            if not evicting:
                assert m.reset_prefix_cache()
            r = request(f"c{i}", tokens(rng, 8192), 16)
            t, blocks = timed(lambda: m.allocate_slots(r, 8192))
            assert blocks is not None
            if i >= 8:
                samples.append(t)
            m.free(r)
            m.take_new_block_ids()  # as the scheduler does every step
        out[label] = median_us(samples)
        del m
    return out


def decode(kinds, steps):
    rng = random.Random(3)
    shared = tokens(rng, 1024)
    prompts = [shared + tokens(rng, 1024) for _ in range(256)]
    num_blocks = len(kinds) * 256 * (2048 + steps) // 16 + 512
    out = {}
    for label, m in managers(kinds, 16, num_blocks):
        requests = [request(f"d{i}", p, 16) for i, p in enumerate(prompts)]
        for r in requests:
            blocks, hit = m.get_computed_blocks(r)
            assert m.allocate_slots(r, r.num_tokens - hit, hit,
                                    blocks) is not None
            r.num_computed_tokens = r.num_tokens
            r.append_output_token_ids(7)
        samples = []
        for _ in range(steps):
            if hasattr(m, "new_step_starts"):
                m.new_step_starts()
            for r in requests:
                t, blocks = timed(lambda: m.allocate_slots(r, 1))
                assert blocks is not None
                samples.append(t)
            for r in requests:
                r.num_computed_tokens += 1
                r.append_output_token_ids(7)
        out[label] = median_us(samples) * 1e3  # ns
    return out


def admission(kinds, count=300):
    """A new request's lookup and first allocate_slots, as the engine's
    scheduler makes them (its lookup's blocks passed back, the whole
    sequence to fit): 2,048-token prompts sharing their first 1,024, each
    admitted after the one before (the shared blocks its hit)."""
    rng = random.Random(6)
    shared = tokens(rng, 1024)
    prompts = [shared + tokens(rng, 1024) for _ in range(count)]
    out = {}
    for label, m in managers(kinds, 16, len(kinds) * count * 2048 // 16):
        requests = [request(f"a{i}", p, 16) for i, p in enumerate(prompts)]
        samples = []
        for i, r in enumerate(requests):
            def admit():
                blocks, hit = m.get_computed_blocks(r)
                return m.allocate_slots(r, r.num_tokens - hit, hit, blocks,
                                        full_sequence_must_fit=True)
            t, placed = timed(admit)
            assert placed is not None
            if i >= 8:
                samples.append(t)
            m.take_new_block_ids()
        out[label] = median_us(samples)
    return out


def refused_retry(kinds, runs):
    """The waiting queue's head retried while the pool is full, as the
    scheduler does each step under memory pressure: a 2,048-token
    request's lookup and allocate_slots (whole sequence), refused."""
    rng = random.Random(7)
    out = {}
    for label, m in managers(kinds, 16, len(kinds) * 300):
        rng.seed(7)
        i = 0
        while m.allocate_slots(request(f"held{i}", tokens(rng, 1024), 16),
                               1024) is not None:
            i += 1
        waiting = request("waiting", tokens(rng, 2048), 16)
        samples = []
        for i in range(runs + 10):
            def retry():
                blocks, hit = m.get_computed_blocks(waiting)
                return m.allocate_slots(waiting, waiting.num_tokens - hit,
                                        hit, blocks,
                                        full_sequence_must_fit=True)
            t, placed = timed(retry)
            assert placed is None
            if i >= 10:
                samples.append(t)
        out[label] = median_us(samples)
    return out


def free_128k(runs):
    rng = random.Random(4)
    prompt = tokens(rng, 131072)
    out = {}
    for label, m in managers(["full"], 16, 131072 // 16 + 64):
        first = request("first", prompt, 16)
        cache(m, first)
        samples = []
        for i in range(runs):
            r = request("again", prompt, 16) if i == 0 else r
            blocks, hit = m.get_computed_blocks(r)
            assert m.allocate_slots(r, r.num_tokens - hit, hit, blocks)
            t, _ = timed(lambda: m.free(r))
            samples.append(t)
        out[label] = median_us(samples)
    return out


def keying(runs, hkv_bench):
    rng = random.Random(5)
    prompt = tokens(rng, 131072)
    rows = {}
    for name, fn in (("sha256", sha256), ("sha256_cbor", sha256_cbor),
                     ("xxhash_cbor", xxhash_cbor)):
        hasher = get_request_block_hasher(16, fn)
        samples = []
        for _ in range(runs):
            r = request("k", prompt, 16, hash_fn=fn)
            r.block_hashes.clear()
            samples.append(timed(lambda: hasher(r))[0])
        rows[name] = median_us(samples)
    for name in ("sha256_cbor", "xxh3_128_cbor"):
        scheme = _hkv.make_key_scheme(_hkv.KeySchemeOptions(
            _hkv.parse_key_function(name), 16, None))
        samples = [timed(lambda: hkv.Request("k", prompt, key_scheme=scheme))[0]
                   for _ in range(runs)]
        rows[f"hkv {name}"] = median_us(samples)
    if hkv_bench:
        result = subprocess.run(
            [hkv_bench, "--benchmark_filter=(Keys|Digest).*unit:16$",
             "--benchmark_format=json", "--benchmark_repetitions=5",
             "--benchmark_report_aggregates_only=true"],
            check=True, capture_output=True, text=True)
        for b in json.loads(result.stdout)["benchmarks"]:
            if b.get("aggregate_name") == "median":
                rows[b["run_name"]] = b["real_time"] * 1e3  # ms -> µs
    return rows


def steps():
    import bench_scheduler_step as s
    out = {}
    engine = plugin.engine_manager_class()
    probe = s.probe_seconds()
    for name in ("long", "decode"):
        w = s.workload(s.MODELS["hybrid"], name)
        for label, cls in (("engine", engine), ("hkv", hkv.vllm.KVCacheManager)):
            samples, in_manager = s.run(w, cls, probe)
            out[(name, label)] = (median_us(samples), median_us(in_manager))
    return out


def ratio(engine, ours):
    return f"{engine / ours:.1f}x"


def one_round(args):
    """Every row once: {path: (engine, hkv, unit)} and the keying figures."""
    rows = {}

    def add(path, figures, unit):
        rows[path] = (figures["engine"], figures["hkv"], unit)

    log("warm lookups")
    for first_seen in (True, False):
        what = ("a new request's" if first_seen else
                "the same request's again")
        full, hit = warm_lookup(["full"], 16, args.runs, first_seen)
        add(f"warm lookup, 128k tokens, block 16, {what} ({hit})", full, "µs")
        hybrid, hit = warm_lookup(["full", "mamba_align", "swa"], 256,
                                  args.runs, first_seen)
        add(f"warm lookup, hybrid, block 256, {what} ({hit})", hybrid, "µs")
    sizes = [10 ** 4] + ([10 ** 6] if args.scale else [])
    for n in sizes:
        for evicting in (True, False):
            log(f"chunk at {n} blocks, evicting={evicting}")
            what = "that evicts 512 blocks" if evicting else "nothing to evict"
            add(f"prefill chunk of 8,192 tokens, {what}, {n:,} blocks",
                chunk(n, 40, evicting), "µs")
    for kinds, label in ((["full"], "full"),
                         (["full", "mamba_align", "swa"], "hybrid")):
        log(f"decode {label}")
        add(f"decode allocate + commit, {label}, one request",
            decode(kinds, 200), "ns")
    for kinds, label in ((["full"], "full"),
                         (["full", "mamba_align", "swa"], "hybrid")):
        log(f"admission {label}")
        add(f"admission: lookup + first allocate_slots, 2,048 tokens "
            f"sharing 1,024, {label}", admission(kinds), "µs")
        add(f"refused retry of the waiting head (lookup + allocate_slots), "
            f"{label}", refused_retry(kinds, args.runs), "µs")
    log("free")
    add("free of a 128k request (8,192 cached blocks)",
        free_128k(args.runs // 5), "µs")
    log("keying")
    k = keying(7, args.hkv_bench)
    for name, ours in (("sha256_cbor", "sha256_cbor"),
                       ("xxhash_cbor", "xxh3_128_cbor")):
        rows[f"keying 128k tokens at unit 16, engine {name} / hkv {ours} "
             "through the binding"] = (k[name], k[f"hkv {ours}"], "µs")
    rows["keying 128k tokens at unit 16, engine sha256 (pickle, its "
         "default) / hkv sha256_cbor"] = (k["sha256"], k["hkv sha256_cbor"],
                                          "µs")
    if not args.skip_steps:
        log("scheduler steps")
        st = steps()
        for name in ("long", "decode"):
            e, h = st[(name, "engine")], st[(name, "hkv")]
            rows[f"engine's scheduler step, hybrid, {name}: whole step"] = (
                e[0], h[0], "µs")
            rows[f"engine's scheduler step, hybrid, {name}: manager "
                 "calls"] = (e[1], h[1], "µs")
    return rows, k


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=500)
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds of every row; each side's median over them")
    p.add_argument("--scale", action="store_true",
                   help="add the evicting chunk at 10^6 blocks (minutes)")
    p.add_argument("--hkv-bench", help="hkv_bench binary: adds the C++ "
                   "keying and digest-alone figures")
    p.add_argument("--skip-steps", action="store_true")
    args = p.parse_args(argv)
    init_none_hash(sha256)
    rounds = []
    for r in range(args.rounds):
        log(f"round {r + 1} of {args.rounds}")
        rounds.append(one_round(args))

    print(f"| path | reference | hkv | reference / hkv (min-max over "
          f"{args.rounds} rounds) |")
    print("|---|---:|---:|---:|")
    for path, (_, _, unit) in rounds[0][0].items():
        engine = statistics.median(r[path][0] for r, _ in rounds)
        ours = statistics.median(r[path][1] for r, _ in rounds)
        each = [r[path][0] / r[path][1] for r, _ in rounds]
        print(f"| {path} | {engine:,.1f} {unit} | {ours:,.1f} {unit} | "
              f"{ratio(engine, ours)} ({min(each):.1f}-{max(each):.1f}) |")
    cxx = {n: statistics.median(k[n] for _, k in rounds)
           for n in rounds[0][1] if n.startswith("BM_")}
    if cxx:
        print()
        print("| hkv_bench (C++), 128k tokens, unit 16 | median | over the "
              "digest alone |")
        print("|---|---:|---:|")
        for keys, digest in (("BM_Keys_Sha256Cbor/unit:16",
                              "BM_Digest_Sha256/unit:16"),
                             ("BM_Keys_Xxh3Cbor/unit:16",
                              "BM_Digest_Xxh3/unit:16")):
            print(f"| {keys} | {cxx[keys]:,.1f} µs | "
                  f"{cxx[keys] / cxx[digest]:.2f}x |")
            print(f"| {digest} | {cxx[digest]:,.1f} µs | 1.00x |")


if __name__ == "__main__":
    main()
