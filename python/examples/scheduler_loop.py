"""A small scheduler written against the reference engine's KVCacheManager
contract, driving hkv.vllm.KVCacheManager.

Each step, in the engine scheduler's order:

    new_step_starts
    running requests, first come first served: the rest of the prompt in a
      chunk, or one decode token, within the step's token budget and split
      where recurrent states must land (the engine scheduler's Mamba
      block-aligned split: chunks end on block boundaries, the last one at
      the last whole block); allocate_slots; while it returns None, the
      last running request is preempted (freed, back to the front of the
      queue, recomputed later)
    waiting requests, unless one was preempted: get_computed_blocks, a
      chunk, allocate_slots with the hit; None stops admission

Then a stand-in model samples one token for each request whose prompt is
done, and a request with max_tokens outputs finishes and is freed. The
workload: users sharing a system prompt, each asking twice; the second turn
resends the first turn's prompt with a new question. The model is hybrid
(full attention, Mamba in align mode, sliding window), with hash units
finer than blocks. Requests are hkv.vllm.Request, which keys its blocks as
the engine's requests do (block_hashes).

    PYTHONPATH=build/release/python:python /usr/bin/python3 \\
        python/examples/scheduler_loop.py
"""

import argparse
import collections
import dataclasses
import random
import sys

import hkv.vllm
from hkv.vllm import (FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec,
                      MambaSpec, Request, RequestStatus, SlidingWindowSpec)


@dataclasses.dataclass
class Step:
    """What one step scheduled, by request id."""
    num_scheduled_tokens: dict = dataclasses.field(default_factory=dict)
    hits: dict = dataclasses.field(default_factory=dict)  # admissions
    preempted: list = dataclasses.field(default_factory=list)
    finished: list = dataclasses.field(default_factory=list)
    block_ids: dict = dataclasses.field(default_factory=dict)  # scheduled
    usage: float = 0.0  # the manager's, once scheduled


class Scheduler:
    """Waiting and running queues over a manager with the reference
    contract; ``max_num_batched_tokens`` tokens per step."""

    def __init__(self, kv, max_num_batched_tokens=256, max_num_running_reqs=8,
                 block_size=32):
        self.kv = kv
        self.block_size = block_size
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_running_reqs = max_num_running_reqs
        self.waiting = collections.deque()
        self.running = []
        self.requests = {}  # request_id -> unfinished Request

    def add_request(self, request):
        self.waiting.append(request)
        self.requests[request.request_id] = request

    def has_unfinished_requests(self):
        return bool(self.requests)

    def schedule(self):
        """One step's schedule; the scheduled requests' computed counts
        include it on return."""
        self.kv.new_step_starts()
        step = Step()
        budget = self._schedule_running(step, self.max_num_batched_tokens)
        if not step.preempted:
            self._schedule_waiting(step, budget)
        for rid, n in step.num_scheduled_tokens.items():
            self.requests[rid].num_computed_tokens += n
            step.block_ids[rid] = self.kv.get_block_ids(rid)
        step.usage = self.kv.usage
        return step

    def update_from_output(self, step, sample):
        """The step ran: each scheduled request whose prompt is done gets
        the token ``sample(request)``; one with max_tokens outputs
        finishes and is freed."""
        for rid in step.num_scheduled_tokens:
            request = self.requests[rid]
            if request.num_computed_tokens < request.num_tokens:
                continue  # mid-prefill
            request.append_output_token_ids(sample(request))
            if request.num_output_tokens >= request.max_tokens:
                request.status = RequestStatus.FINISHED_LENGTH_CAPPED
                self.kv.free(request)
                self.running.remove(request)
                del self.requests[rid]
                step.finished.append(rid)

    def _chunk(self, request, budget, hit=0):
        """The request's next chunk within ``budget``, split where
        recurrent states must land; 0: nothing to schedule now."""
        n = min(request.num_tokens - request.num_computed_tokens - hit,
                budget)
        if n <= 0:
            return 0
        computed = request.num_computed_tokens + hit
        if computed >= max(request.num_prompt_tokens, request.num_tokens - 1):
            return n  # decoding
        b = self.block_size
        last_state = request.num_tokens - request.num_tokens % b
        if computed + n < last_state:
            return n // b * b
        if computed < last_state < computed + n:
            return last_state - computed
        return n

    def _schedule_running(self, step, budget):
        """Schedules running requests in order; returns the budget left."""
        i = 0
        while i < len(self.running) and budget > 0:
            request = self.running[i]
            n = self._chunk(request, budget)
            if n and not self._allocate_or_preempt(request, n, step):
                break
            if n:
                step.num_scheduled_tokens[request.request_id] = n
                budget -= n
            i += 1
        return budget

    def _allocate_or_preempt(self, request, n, step):
        """allocate_slots for a running request, preempting the last
        running request while it returns None. False when the request
        preempted itself."""
        while self.kv.allocate_slots(request, n) is None:
            victim = self.running.pop()
            self.kv.free(victim)
            victim.status = RequestStatus.PREEMPTED
            victim.num_computed_tokens = 0
            victim.num_preemptions += 1
            self.waiting.appendleft(victim)
            step.preempted.append(victim.request_id)
            if victim is request:
                return False
        return True

    def _schedule_waiting(self, step, budget):
        """Admits waiting requests in order while they fit."""
        while (self.waiting and budget > 0
               and len(self.running) < self.max_num_running_reqs):
            request = self.waiting[0]
            blocks, hit = self.kv.get_computed_blocks(request)
            n = self._chunk(request, budget, hit)
            if n == 0 or self.kv.allocate_slots(request, n, hit,
                                                blocks) is None:
                return
            self.waiting.popleft()
            self.running.append(request)
            request.status = RequestStatus.RUNNING
            request.num_computed_tokens = hit
            step.hits[request.request_id] = hit
            step.num_scheduled_tokens[request.request_id] = n
            budget -= n


def sample_token(request):
    """The stand-in model's next token: a function of the position, above
    the prompts' token ids."""
    return 40000 + request.num_tokens % 1000


def hybrid_config(num_blocks, block_size=32, window=64):
    """Full attention, Mamba (align mode) and a sliding window, one pool."""
    return KVCacheConfig(num_blocks=num_blocks, kv_cache_groups=[
        KVCacheGroupSpec(["attn"], FullAttentionSpec(block_size=block_size)),
        KVCacheGroupSpec(["mamba"], MambaSpec(block_size=block_size,
                                              mamba_cache_mode="align")),
        KVCacheGroupSpec(["swa"], SlidingWindowSpec(block_size=block_size,
                                                    sliding_window=window)),
    ])


def workload(num_users=6, system_tokens=300, max_tokens=8, seed=0,
             hash_block_size=16):
    """``(arrival step, Request)`` pairs: each user's first turn (system
    prompt and a question), and its second, resending the first turn's
    prompt with a new question, 12 steps later."""
    rng = random.Random(seed)
    system = list(range(1000, 1000 + system_tokens))
    arrivals = []
    for u in range(num_users):
        first = system + [rng.randrange(2000, 30000)
                          for _ in range(rng.randrange(40, 120))]
        second = first + [rng.randrange(2000, 30000)
                          for _ in range(rng.randrange(40, 120))]
        arrivals.append((2 * u, Request(f"user{u}-turn1", first, max_tokens,
                                        hash_block_size=hash_block_size)))
        arrivals.append((2 * u + 12, Request(f"user{u}-turn2", second,
                                             max_tokens,
                                             hash_block_size=hash_block_size)))
    return sorted(arrivals, key=lambda a: a[0])


def run(kv, arrivals, max_num_batched_tokens=256, sample=sample_token,
        block_size=32):
    """Steps until every request finished; returns their Steps. Raises
    RuntimeError when two steps in a row schedule nothing while requests
    wait and none runs (the pool cannot hold the next request)."""
    scheduler = Scheduler(kv, max_num_batched_tokens, block_size=block_size)
    pending = collections.deque(arrivals)
    steps = []
    while pending or scheduler.has_unfinished_requests():
        while pending and pending[0][0] <= len(steps):
            scheduler.add_request(pending.popleft()[1])
        step = scheduler.schedule()
        scheduler.update_from_output(step, sample)
        stuck = (not step.num_scheduled_tokens and scheduler.waiting
                 and not scheduler.running)
        if stuck and steps and not steps[-1].num_scheduled_tokens:
            raise RuntimeError("the pool cannot hold the next request")
        steps.append(step)
    return steps


def print_step(index, step, out):
    admitted = ", ".join(f"{rid} (hit {hit})"
                         for rid, hit in step.hits.items())
    print(f"step {index:3d}: {len(step.num_scheduled_tokens)} requests, "
          f"{sum(step.num_scheduled_tokens.values()):4d} tokens, "
          f"usage {step.usage:4.2f}"
          + (f"; admitted {admitted}" if admitted else "")
          + (f"; preempted {', '.join(step.preempted)}"
             if step.preempted else ""),
          file=out)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--num-blocks", type=int, default=40)
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--hash-block-size", type=int, default=16)
    p.add_argument("--window", type=int, default=64)
    p.add_argument("--max-num-batched-tokens", type=int, default=256)
    p.add_argument("--users", type=int, default=6)
    return p.parse_args(argv)


def main(argv=None, out=sys.stdout):
    args = parse_args(argv)
    kv = hkv.vllm.KVCacheManager(
        hybrid_config(args.num_blocks, args.block_size, args.window),
        max_model_len=4096, hash_block_size=args.hash_block_size,
        log_stats=True)
    arrivals = workload(args.users, hash_block_size=args.hash_block_size)
    steps = run(kv, arrivals, args.max_num_batched_tokens,
                block_size=args.block_size)
    for i, step in enumerate(steps):
        print_step(i, step, out)
    stats = kv.make_prefix_cache_stats()
    print(f"{len(steps)} steps, {len(arrivals)} requests, "
          f"{sum(len(s.preempted) for s in steps)} preemptions; prefix cache: "
          f"{stats.hits} of {stats.queries} tokens hit", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
