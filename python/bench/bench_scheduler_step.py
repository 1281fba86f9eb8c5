"""One step of the reference engine's own Scheduler (schedule() then
update_from_output()) on the engine's KVCacheManager and on hkv's.

Needs the engine's source tree (HKV_VLLM_SRC, else
../shared/reference/vllm-28be48fa), imported as python/tests/vllm_compat
does. Two workloads, each on full attention and on a hybrid (full
attention, Mamba in align mode, sliding window of 4096), block 16, prefix
caching on, 8192 tokens per step:

- long: 4 requests of 131072 tokens sharing their first 65536, prefilled
  in 8192-token chunks, then 32 decode steps;
- decode: 256 requests of 2048 tokens (sharing 1024) prefilled, then 200
  decode steps of all 256.

Prints, per workload, model and manager, the median and worst step time
(time.perf_counter around schedule() + update_from_output()) and of the
time spent in the manager's calls within the step (each call timed, less
the probe's own time per call, measured on a method that does nothing:
about 0.16 µs, a third of a quiet decode call of hkv's), and the
engine/hkv ratios of the medians. Requests are built (and their block hashes
computed) before the clock starts.

    PYTHONPATH=build/release/python:python:python/tests /usr/bin/python3 \\
        python/bench/bench_scheduler_step.py
"""

import argparse
import random
import statistics
import sys
import time

from vllm_compat import reference

TREE, REASON = reference.load()
if TREE is None:
    sys.exit(f"bench_scheduler_step: {REASON}")

from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm_compat import differential as d  # noqa: E402

import hkv.vllm  # noqa: E402
from hkv.vllm import plugin  # noqa: E402

MODELS = {"full": ["full"], "hybrid": ["full", "mamba_align", "swa"]}


def workload(kinds, name):
    rng = random.Random(0)
    if name == "long":
        shared = [rng.randrange(1, 30000) for _ in range(65536)]
        arrivals = [(0, f"r{i}", shared + [rng.randrange(1, 30000)
                                            for _ in range(65536)], 32)
                    for i in range(4)]
        num_blocks = 40000
    else:
        shared = [rng.randrange(1, 30000) for _ in range(1024)]
        arrivals = [(0, f"r{i}", shared + [rng.randrange(1, 30000)
                                            for _ in range(1024)], 200)
                    for i in range(256)]
        num_blocks = 3 * 256 * (2048 + 200) // 16 + 64
    w = d.Workload(seed=0, block_size=16, kinds=list(kinds),
                   eagle_groups=[False] * len(kinds), num_blocks=num_blocks,
                   caching=True, spec_method=None, num_spec_tokens=0,
                   max_num_batched_tokens=8192, max_num_seqs=256,
                   arrivals=arrivals, resets={}, steps=100000,
                   max_model_len=140000)
    return w


def output(out, scheduler):
    ids, sampled = [], []
    for rid, n in out.num_scheduled_tokens.items():
        request = scheduler.requests[rid]
        ids.append(rid)
        # schedule() counted the step's tokens as computed already.
        done = request.num_computed_tokens >= request.num_tokens
        sampled.append([7] if done else [])
    return ModelRunnerOutput(req_ids=ids,
                             req_id_to_index={r: i for i, r in enumerate(ids)},
                             sampled_token_ids=sampled, logprobs=None,
                             prompt_logprobs_dict={}, pooler_output=[])


# The manager calls a scheduler step makes, timed one by one.
CALLS = ("get_computed_blocks", "allocate_slots", "free", "get_blocks",
         "get_block_ids", "get_num_common_prefix_blocks", "take_events",
         "make_prefix_cache_stats", "new_step_starts", "take_new_block_ids",
         "remove_skipped_blocks", "cache_blocks")


def timed(method, clock):
    """``method`` adding its time to ``clock[0]`` and one to ``clock[1]``."""
    def call(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(self, *args, **kwargs)
        finally:
            clock[0] += time.perf_counter() - start
            clock[1] += 1
    return call


def timed_class(manager_class, clock):
    """``manager_class`` with each of CALLS timed into ``clock``."""
    return type("Timed" + manager_class.__name__, (manager_class,),
                {name: timed(getattr(manager_class, name), clock)
                 for name in CALLS})


def probe_seconds(calls=20000, runs=5):
    """What the probe adds to the time of one call it times: the median
    over ``runs`` of the time it gives a method that does nothing, called
    as the scheduler calls allocate_slots."""
    class Empty:
        def allocate_slots(self, request, num_new_tokens,
                           num_lookahead_tokens=0):
            return None
    figures = []
    for _ in range(runs):
        clock = [0.0, 0]
        probed = type("Probed", (Empty,), {
            "allocate_slots": timed(Empty.allocate_slots, clock)})()
        for _ in range(calls):
            probed.allocate_slots(None, 1, num_lookahead_tokens=0)
        figures.append(clock[0] / clock[1])
    return statistics.median(figures)


def run(w, manager_class, probe):
    """Per step: its time, and the time in the manager's calls less
    ``probe`` seconds a call (each timed by the probe)."""
    clock = [0.0, 0]
    scheduler = d.make_scheduler(w, timed_class(manager_class, clock))
    requests = [d._request(w, rid, prompt, n)
                for _, rid, prompt, n in w.arrivals]
    for r in requests:
        scheduler.add_request(r)
    samples, in_manager = [], []
    while scheduler.has_unfinished_requests():
        clock[:] = [0.0, 0]
        start = time.perf_counter()
        out = scheduler.schedule()
        model = output(out, scheduler)  # built inside: both pay the same
        scheduler.update_from_output(out, model)
        samples.append(time.perf_counter() - start)
        in_manager.append(clock[0] - clock[1] * probe)
    return samples, in_manager


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="long,decode")
    args = parser.parse_args(argv)
    d.init_none_hash(d.sha256)
    engine = plugin.engine_manager_class()
    probe = probe_seconds()
    print(f"the probe's own time per call: {probe * 1e9:.0f} ns "
          "(taken off each call's time)", flush=True)
    for name in args.workloads.split(","):
        for model, kinds in MODELS.items():
            w = workload(kinds, name)
            medians, managers = {}, {}
            for label, cls in (("engine", engine),
                               ("hkv", hkv.vllm.KVCacheManager)):
                samples, in_manager = run(w, cls, probe)
                medians[label] = statistics.median(samples)
                managers[label] = statistics.median(in_manager)
                print(f"{name:6s} {model:6s} {label:6s} {len(samples):4d} "
                      f"steps: median {medians[label] * 1e3:8.3f} ms "
                      f"(manager {managers[label] * 1e3:8.3f} ms), worst "
                      f"{max(samples) * 1e3:8.3f} ms (manager "
                      f"{max(in_manager) * 1e3:8.3f} ms)", flush=True)
            print(f"{name:6s} {model:6s} engine/hkv median step: "
                  f"{medians['engine'] / medians['hkv']:.2f}x, in the "
                  f"manager: {managers['engine'] / managers['hkv']:.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
