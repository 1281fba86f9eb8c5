"""The reference engine's scheduler with hkv's connector, and a stand-in
model runner on CPU tensors, for tests/test_connector.py.

The stand-in writes, for every token a step computes, the bytes a real
model's layers would depend on: an attention page slot holds a digest of
the tokens up to and including its position (per layer), and a recurrent
block holds the digest of the tokens up to its state's end (the engine's
"all" mode keeps the state at every block boundary in that block, and the
running state in the last one). Before each forward it checks that every
slot the step reads (the positions below the request's computed count
within each group's reach, and the state the step starts from) holds what
the tokens say (states before the forward, pages after it has written the
step's own, as a real forward writes every request's pages before its
attention reads them): a load or a prefix hit that placed a wrong byte
fails the check, as a real model would produce a wrong answer.
"""
import hashlib

import torch

from vllm.config import (CacheConfig, KVTransferConfig, ModelConfig,
                         SchedulerConfig, VllmConfig)
from vllm.distributed.kv_transfer.kv_connector.factory import \
    KVConnectorFactory
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256
from vllm.v1.core.kv_cache_utils import (get_request_block_hasher,
                                         init_none_hash,
                                         resolve_kv_cache_block_sizes)
from vllm.v1.core.sched import scheduler as scheduler_module
from vllm.v1.kv_cache_interface import (FullAttentionSpec, KVCacheConfig,
                                        KVCacheGroupSpec, MambaSpec,
                                        SlidingWindowSpec)
from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput
from vllm.v1.request import Request, RequestStatus  # noqa: F401
from vllm.v1.structured_output import StructuredOutputManager

EOS = 2
BLOCK = 16
WINDOW = 2 * BLOCK + 1
NUM_BLOCKS = 400
PAGE_WORDS = 4   # float32 words per token slot per layer
STATE_WORDS = 6  # float32 words of a recurrent state per tensor


def kv_cache_config(kinds, blocks=None):
    """One layer per group of `kinds` ("full", "swa", "mamba"), of block
    sizes `blocks` (default BLOCK each)."""
    blocks = blocks or [BLOCK] * len(kinds)
    groups = []
    for i, kind in enumerate(kinds):
        common = dict(block_size=blocks[i], num_kv_heads=1,
                      head_size=PAGE_WORDS, dtype=torch.float32)
        if kind == "full":
            spec = FullAttentionSpec(**common)
        elif kind == "swa":
            spec = SlidingWindowSpec(**common, sliding_window=WINDOW)
        else:
            spec = MambaSpec(block_size=blocks[i],
                             shapes=((STATE_WORDS,), (STATE_WORDS,)),
                             dtypes=(torch.float32, torch.float32),
                             mamba_cache_mode="all")
        groups.append(KVCacheGroupSpec([f"layer{i}"], spec))
    return KVCacheConfig(num_blocks=NUM_BLOCKS, kv_cache_tensors=[],
                         kv_cache_groups=groups)


def make_engine(kinds, extra, manager_class=None, model="facebook/opt-125m",
                blocks=None):
    """(scheduler, worker connector, kv cache config) for `kinds` (of block
    sizes `blocks`) with the connector's extra config `extra`."""
    init_none_hash(sha256)
    model_config = ModelConfig(model=model, dtype="float16", seed=42,
                               max_model_len=4096)
    scheduler_config = SchedulerConfig(
        max_num_seqs=8, max_num_batched_tokens=256, max_model_len=4096,
        enable_chunked_prefill=True, is_encoder_decoder=False)
    cache_config = CacheConfig(
        block_size=BLOCK, gpu_memory_utilization=0.9, cache_dtype="auto",
        enable_prefix_caching=True,
        mamba_cache_mode="all" if "mamba" in kinds else "none")
    transfer = KVTransferConfig(
        kv_connector="HkvConnector",
        kv_connector_module_path="hkv.vllm.connector", kv_role="kv_both",
        kv_connector_extra_config=extra)
    vllm_config = VllmConfig(scheduler_config=scheduler_config,
                             model_config=model_config,
                             cache_config=cache_config,
                             kv_transfer_config=transfer)
    config = kv_cache_config(kinds, blocks)
    cache_config.num_gpu_blocks = NUM_BLOCKS
    # The scheduler's block and the hash unit, as the engine's core resolves
    # them for these groups.
    scheduler_block, hash_unit = resolve_kv_cache_block_sizes(config,
                                                              vllm_config)
    saved = scheduler_module.KVCacheManager
    scheduler_module.KVCacheManager = manager_class or saved
    try:
        scheduler = scheduler_module.Scheduler(
            vllm_config=vllm_config, kv_cache_config=config,
            block_size=scheduler_block, hash_block_size=hash_unit,
            log_stats=True,
            structured_output_manager=StructuredOutputManager(vllm_config))
    finally:
        scheduler_module.KVCacheManager = saved
    worker = KVConnectorFactory.create_connector(
        config=vllm_config, role=KVConnectorRole.WORKER,
        kv_cache_config=config)
    scheduler.hash_unit = hash_unit  # for request()
    return scheduler, worker, config


def watch_fresh_blocks(scheduler):
    """Collects, in ``scheduler.fresh_blocks``, every block the engine's
    own block pool hands out (its get_new_blocks), for step() to scribble
    over before the loads run."""
    pool = scheduler.kv_cache_manager.block_pool
    scheduler.fresh_blocks = []
    handout = pool.get_new_blocks

    def get_new_blocks(num_blocks):
        blocks = handout(num_blocks)
        scheduler.fresh_blocks.extend(b.block_id for b in blocks)
        return blocks

    pool.get_new_blocks = get_new_blocks


def request(request_id, prompt, max_tokens=3, hash_unit=BLOCK):
    params = SamplingParams(ignore_eos=True, max_tokens=max_tokens)
    params.update_from_generation_config({}, EOS)
    return Request(request_id=request_id, prompt_token_ids=list(prompt),
                   sampling_params=params, pooling_params=None,
                   block_hasher=get_request_block_hasher(hash_unit, sha256))


def _digest(tokens, layer, words):
    """`words` float32 values standing for what a layer holds after
    `tokens` (exact in float32: 20-bit integers)."""
    raw = hashlib.sha256(repr((layer, tuple(tokens))).encode()).digest()
    return [float(int.from_bytes(raw[2 * i:2 * i + 3], "little") & 0xFFFFF)
            for i in range(words)]


class StandInModel:
    """The CPU tensors of every layer and the stand-in forward."""

    def __init__(self, kinds, config):
        self.kinds = kinds
        self.blocks = [g.kv_cache_spec.block_size
                       for g in config.kv_cache_groups]
        self.tensors = {}
        for i, kind in enumerate(kinds):
            name = f"layer{i}"
            if kind == "mamba":
                self.tensors[name] = [
                    torch.zeros(NUM_BLOCKS, STATE_WORDS) for _ in range(2)]
            else:
                # The (2, num_blocks, block, heads, head size) layout of K
                # and V: blocks are dimension 1.
                self.tensors[name] = torch.zeros(2, NUM_BLOCKS,
                                                 self.blocks[i], 1,
                                                 PAGE_WORDS)
        self.tables = {}
        self.bad_reads = []

    def zero(self, blocks):
        """What the engine's runner does to the blocks the scheduler says
        are allocated afresh (new_block_ids_to_zero)."""
        for block in blocks:
            for tensors in self.tensors.values():
                if isinstance(tensors, list):
                    for t in tensors:
                        t[block] = 0
                else:
                    tensors[:, block] = 0

    def scribble(self, blocks):
        """Worse than the engine's zeroing: every block the pool handed
        out this step holds a value no token's digest has (-1), as if
        the step's forward had written it first; what a connector reads
        of them before then is gone."""
        for block in blocks:
            for tensors in self.tensors.values():
                if isinstance(tensors, list):
                    for t in tensors:
                        t[block] = -1
                else:
                    tensors[:, block] = -1

    def _track(self, out):
        for new in out.scheduled_new_reqs:
            self.tables[new.req_id] = [list(b) for b in new.block_ids]
        cached = out.scheduled_cached_reqs
        for i, rid in enumerate(cached.req_ids):
            added = cached.new_block_ids[i]
            if added is None:
                continue
            if rid in cached.resumed_req_ids:
                self.tables[rid] = [list(b) for b in added]
            else:
                for table, ids in zip(self.tables[rid], added):
                    table.extend(ids)

    def _page_expected(self, g, tokens, p):
        return [_digest(tokens[:p + 1], (g, kv), PAGE_WORDS)
                for kv in range(2)]

    def _page_read(self, g, block, slot):
        t = self.tensors[f"layer{g}"]
        return [t[kv, block, slot, 0].tolist() for kv in range(2)]

    def _state_expected(self, g, tokens, end):
        return [_digest(tokens[:end], (g, s), STATE_WORDS) for s in range(2)]

    def _state_read(self, g, block):
        return [t[block].tolist() for t in self.tensors[f"layer{g}"]]

    def check_states(self, out, requests):
        """Before the forward: every recurrent state a step starts from is
        the one its tokens say (the forward then advances it in place)."""
        self._track(out)
        for rid, n in out.num_scheduled_tokens.items():
            req = requests[rid]
            # The scheduler counted the step's tokens as computed already.
            computed = req.num_computed_tokens - n
            for g, kind in enumerate(self.kinds):
                if kind != "mamba" or computed == 0:
                    continue
                block = self.tables[rid][g][(computed - 1)
                                            // self.blocks[g]]
                if self._state_read(g, block) != self._state_expected(
                        g, req.all_token_ids, computed):
                    self.bad_reads.append((rid, g, computed))

    def check_pages(self, out, requests):
        """After the forward has written the step's pages (as a real one
        does for every request before its attention reads): every page slot
        the step reads holds what its tokens say."""
        for rid, n in out.num_scheduled_tokens.items():
            req = requests[rid]
            tokens = req.all_token_ids
            computed = req.num_computed_tokens - n
            table = self.tables[rid]
            for g, kind in enumerate(self.kinds):
                if kind == "mamba":
                    continue
                first = max(0, computed - WINDOW + 1) if kind == "swa" else 0
                for p in range(first, computed):
                    b = self.blocks[g]
                    block = table[g][p // b]
                    if self._page_read(g, block, p % b) != \
                            self._page_expected(g, tokens, p):
                        self.bad_reads.append((rid, g, p))
                        break

    def forward(self, out, requests):
        for rid, n in out.num_scheduled_tokens.items():
            req = requests[rid]
            tokens = req.all_token_ids
            start = req.num_computed_tokens - n
            table = self.tables[rid]
            for g, kind in enumerate(self.kinds):
                t = self.tensors[f"layer{g}"]
                if kind == "mamba":
                    ends = [e for e in range(start + 1, start + n + 1)
                            if e % self.blocks[g] == 0 or e == start + n]
                    for end in ends:
                        block = table[g][(end - 1) // self.blocks[g]]
                        for s, values in enumerate(
                                self._state_expected(g, tokens, end)):
                            t[s][block] = torch.tensor(values)
                    continue
                b = self.blocks[g]
                for p in range(start, start + n):
                    block = table[g][p // b]
                    for kv, values in enumerate(
                            self._page_expected(g, tokens, p)):
                        t[kv, block, p % b, 0] = torch.tensor(values)


def step(scheduler, worker, model, requests, token=7):
    """One engine step: schedule, the worker's connector around the
    stand-in forward, update. Returns the SchedulerOutput."""
    out = scheduler.schedule()
    # The engine's model runner: the connector sees the step's metadata
    # first, then fresh blocks are zeroed (models with recurrent layers),
    # then the loads run and the forward.
    worker.handle_preemptions(out.kv_connector_metadata)
    model.zero(out.new_block_ids_to_zero or ())
    fresh = getattr(scheduler, "fresh_blocks", None)
    if fresh:
        model.scribble(fresh)
        fresh.clear()
    worker.bind_connector_metadata(out.kv_connector_metadata)
    worker.start_load_kv(None)
    model.check_states(out, requests)
    model.forward(out, requests)
    model.check_pages(out, requests)
    worker.wait_for_save()
    sending, recving = worker.get_finished(out.finished_req_ids)
    connector_output = KVConnectorOutput(
        finished_sending=sending, finished_recving=recving,
        invalid_block_ids=worker.get_block_ids_with_load_errors(),
        kv_connector_worker_meta=worker.build_connector_worker_meta())
    worker.clear_connector_metadata()
    ids = list(out.num_scheduled_tokens)
    sampled = []
    for rid in ids:
        req = requests[rid]
        sampled.append([token] if req.num_computed_tokens >= req.num_tokens
                       else [])
    scheduler.update_from_output(out, ModelRunnerOutput(
        req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
        sampled_token_ids=sampled, logprobs=None, prompt_logprobs_dict={},
        pooler_output=[], kv_connector_output=connector_output))
    return out


def settle(scheduler, worker, model):
    """Waits for the worker's tier thread, then runs one step so that what
    it did reaches the scheduler (between two passes of a test)."""
    worker.drain_tier_io()
    step(scheduler, worker, model, {})


def serve(scheduler, worker, model, prompts, prefix, max_steps=2000,
          tokens=None):
    """Serves `prompts` to the end; returns per request the tokens it
    started from (the local hit plus what the connector supplied), and puts
    each request's tokens (prompt and output) in the dict `tokens`."""
    requests = {}
    for i, prompt in enumerate(prompts):
        req = request(f"{prefix}{i}", prompt,
                      hash_unit=getattr(scheduler, "hash_unit", BLOCK))
        requests[req.request_id] = req
        scheduler.add_request(req)
    external = {}
    for _ in range(max_steps):
        if not scheduler.has_requests():
            break
        out = step(scheduler, worker, model, requests)
        if not out.num_scheduled_tokens:
            # Every request waits on the tier thread (staging): a real
            # engine idles until it reports; so does the rig, rather than
            # spending its step bound on how fast the thread runs.
            worker.drain_tier_io()
        for new in out.scheduled_new_reqs:
            external.setdefault(new.req_id, new.num_computed_tokens)
    else:
        raise AssertionError(
            f"the engine did not finish in {max_steps} steps: "
            f"{len(scheduler.waiting)} waiting, {len(scheduler.running)} "
            f"running, {len(scheduler.requests)} held")
    if tokens is not None:
        tokens.update((rid, list(req.all_token_ids))
                      for rid, req in requests.items())
    return external
