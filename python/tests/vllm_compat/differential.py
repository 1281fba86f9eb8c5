"""The engine's Scheduler on the engine's KVCacheManager and on hkv's, side
by side, on one seeded random workload: the same requests, model outputs,
drafts and prefix-cache resets go to both; every step's SchedulerOutput
(scheduled requests, token counts, new block ids, preemptions, finished
requests, common prefix blocks, blocks to zero), every running request's
block table, the free-block count and the prefix-cache stats must agree.

``workload(seed)`` draws a model shape (one to three groups of full
attention, MLA, sliding window, chunked local attention, recurrent state in
"align" or "none" mode, EAGLE draft groups or n-gram drafts; windows and
chunks on and off the block offsets), a pool from
tight to ample, prefix caching on or off, and requests sharing a few
prefixes. ``run(seed)`` returns the steps compared, or raises Mismatch
naming the seed, the step and the field, or EngineFailed when the engine's
own manager fails one of its assertions (with aligned recurrent state and
rejected drafts, "num_required_blocks < len(req_blocks)").
"""
import dataclasses
import random

import torch

from vllm.config import (CacheConfig, ModelConfig, SchedulerConfig,
                         SpeculativeConfig, VllmConfig)
from vllm.sampling_params import SamplingParams
from vllm.utils.hashing import sha256
from vllm.v1.core.kv_cache_utils import (get_request_block_hasher,
                                         init_none_hash)
from vllm.v1.core.sched import scheduler as scheduler_module
from vllm.v1.kv_cache_interface import (ChunkedLocalAttentionSpec,
                                        FullAttentionSpec, KVCacheConfig,
                                        KVCacheGroupSpec, MambaSpec,
                                        MLAAttentionSpec, SlidingWindowSpec)
from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput
from vllm.v1.request import Request
from vllm.v1.structured_output import StructuredOutputManager

import hkv.vllm
from hkv.vllm import plugin

EOS = 50000  # never sampled: requests end at max_tokens


class Mismatch(AssertionError):
    """hkv's side differs from the engine's."""


class EngineFailed(Exception):
    """The engine's own manager failed an assertion of its own on the
    workload (so there is nothing to compare with)."""


@dataclasses.dataclass
class Workload:
    seed: int
    block_size: int
    kinds: list  # group kinds, in order
    eagle_groups: list  # is_eagle_group per group
    num_blocks: int
    caching: bool
    spec_method: str | None  # None, "ngram" or "eagle"
    num_spec_tokens: int
    max_num_batched_tokens: int
    max_num_seqs: int
    arrivals: list  # (step, request_id, prompt, max_tokens)
    # step -> reset_running_requests: steps that reset the prefix cache
    # (preempting the running requests first, or only when none holds
    # blocks)
    resets: dict
    steps: int
    max_model_len: int = 2048
    sliding_window: int | None = None  # None: 2 * block_size + 1
    attention_chunk_size: int | None = None  # None: 4 * block_size
    hash_block_size: int | None = None  # None: block_size


def workload(seed):
    rng = random.Random(seed)
    b = rng.choice([4, 8, 16])
    kinds = rng.choice([
        ["full"], ["mla"], ["swa"], ["chunked"], ["full", "swa"],
        ["full", "mamba_align"], ["mla", "mamba_align"],
        ["full", "mamba_none"], ["full", "swa", "mamba_align"],
        ["mla", "mamba_align", "swa"], ["full", "chunked"], ["swa", "full"],
    ])
    align = "mamba_align" in kinds
    spec_method = rng.choice([None, None, "ngram", "eagle"])
    # The engine refuses EAGLE with chunked local attention (at its first
    # lookup) and n-gram drafts with aligned recurrent state.
    if (align and spec_method == "ngram") or (
            "chunked" in kinds and spec_method == "eagle"):
        spec_method = None
    eagle_groups = [False] * len(kinds)
    # A draft model's own group (flagged is_eagle_group, as the engine's
    # config builder flags the draft layers' group): a sliding window, as
    # the MTP/EAGLE heads of hybrid models often are, or full attention.
    # With recurrent state always: with no group flagged the engine
    # treats every group as a draft group, and its lookup then lets the
    # recurrent group extend a hit past what full attention verified (a hit
    # whose last block has no KV; docs/python.md), which hkv does not copy.
    # Not full attention beside MLA: the engine trims only the first
    # full-attention group's hit blocks to the hit, and a second keeps
    # blocks past it (recomputed into, harmless, but other tables).
    recurrent = any(k.startswith("mamba") for k in kinds)
    if spec_method == "eagle" and (recurrent or rng.random() < 0.5):
        draft = "swa" if "mla" in kinds else rng.choice(["swa", "full"])
        if draft not in kinds:  # equal specs would share one group
            kinds.append(draft)
            eagle_groups.append(True)
        else:
            eagle_groups[kinds.index(draft)] = True
    num_spec = rng.randint(1, 3) if spec_method else 0
    caching = align or rng.random() < 0.8
    prefixes = [[rng.randrange(1, 1000) for _ in range(rng.randint(1, 6) * b)]
                for _ in range(3)]
    arrivals = []
    for i in range(rng.randint(3, 14)):
        prompt = list(rng.choice(prefixes)) if rng.random() < 0.7 else []
        prompt += [rng.randrange(1, 1000) for _ in range(rng.randint(1, 60))]
        arrivals.append((rng.randint(0, 25), f"r{i}", prompt,
                         rng.randint(1, 40)))
    longest = max(len(p) for _, _, p, _ in arrivals) + 16 + num_spec
    per_request = -(-longest // b) + 2 + num_spec
    groups = len(kinds)
    num_blocks = 1 + int(groups * per_request * rng.choice([1, 1.5, 2, 4]))
    # Windows and chunks off the block offsets too (the defaults, 2b + 1
    # and 4b, fall on them), each from an RNG of its own, so that every
    # other draw stays as it was.
    window = random.Random(seed).choice(
        [b + 3, 2 * b - 5, 3 * b, 4 * b + 7, 5 * b - 1])
    chunk = random.Random(seed).choice([2 * b + 3, 3 * b - 1, 5 * b])
    return Workload(
        seed=seed, block_size=b, kinds=kinds, eagle_groups=eagle_groups,
        num_blocks=num_blocks, caching=caching, spec_method=spec_method,
        num_spec_tokens=num_spec,
        max_num_batched_tokens=rng.choice([32, 64, 256]),
        max_num_seqs=rng.choice([2, 4, 16]),
        arrivals=sorted(arrivals),
        resets={rng.randint(3, 40): rng.random() < 0.5
                for _ in range(rng.choice([0, 0, 1, 3]))}, steps=400,
        sliding_window=window if "swa" in kinds else None,
        attention_chunk_size=chunk if "chunked" in kinds else None)


def _spec(kind, b, num_spec_tokens, sliding_window=None,
          attention_chunk_size=None):
    common = dict(block_size=b, num_kv_heads=1, head_size=1,
                  dtype=torch.float32)
    if kind == "full":
        return FullAttentionSpec(**common)
    if kind == "mla":
        return MLAAttentionSpec(**common)
    if kind == "swa":
        return SlidingWindowSpec(**common,
                                 sliding_window=sliding_window or 2 * b + 1)
    if kind == "chunked":
        return ChunkedLocalAttentionSpec(
            **common, attention_chunk_size=attention_chunk_size or 4 * b)
    mode = "align" if kind == "mamba_align" else "none"
    # The engine's model config gives recurrent layers a state block per
    # draft token.
    return MambaSpec(block_size=b, shapes=((1,),), dtypes=(torch.float32,),
                     mamba_cache_mode=mode,
                     num_speculative_blocks=num_spec_tokens)


def make_scheduler(w, manager_class=None):
    """The engine's Scheduler for workload ``w``, building
    ``manager_class`` as its manager (None: whichever KVCacheManager the
    engine's scheduler module names)."""
    mamba_mode = next((k.split("_")[1] for k in w.kinds
                       if k.startswith("mamba")), "none")
    model = ModelConfig(model="facebook/opt-125m", dtype="float16", seed=42,
                        max_model_len=w.max_model_len)
    scheduler_config = SchedulerConfig(
        max_num_seqs=w.max_num_seqs,
        max_num_batched_tokens=w.max_num_batched_tokens,
        max_model_len=w.max_model_len,
        enable_chunked_prefill=True, is_encoder_decoder=False)
    cache_config = CacheConfig(block_size=w.block_size,
                               gpu_memory_utilization=0.9, cache_dtype="auto",
                               enable_prefix_caching=w.caching,
                               mamba_cache_mode=mamba_mode)
    speculative = None
    if w.spec_method == "ngram":
        speculative = SpeculativeConfig(model="ngram",
                                        num_speculative_tokens=w.num_spec_tokens)
    elif w.spec_method == "eagle":
        speculative = SpeculativeConfig(method="eagle",
                                        num_speculative_tokens=w.num_spec_tokens)
    vllm_config = VllmConfig(scheduler_config=scheduler_config,
                             model_config=model, cache_config=cache_config,
                             speculative_config=speculative)
    kv_cache_config = KVCacheConfig(
        num_blocks=w.num_blocks, kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec([f"layer{i}"],
                             _spec(kind, w.block_size, w.num_spec_tokens,
                                   w.sliding_window, w.attention_chunk_size),
                             is_eagle_group=eagle)
            for i, (kind, eagle) in enumerate(zip(w.kinds, w.eagle_groups))])
    cache_config.num_gpu_blocks = w.num_blocks
    saved = scheduler_module.KVCacheManager
    scheduler_module.KVCacheManager = manager_class or saved
    try:
        return scheduler_module.Scheduler(
            vllm_config=vllm_config, kv_cache_config=kv_cache_config,
            block_size=w.block_size, hash_block_size=w.hash_block_size,
            log_stats=True,
            structured_output_manager=StructuredOutputManager(vllm_config))
    finally:
        scheduler_module.KVCacheManager = saved


def _request(w, request_id, prompt, max_tokens):
    params = SamplingParams(ignore_eos=True, max_tokens=max_tokens)
    params.update_from_generation_config({}, EOS)
    return Request(request_id=request_id, prompt_token_ids=list(prompt),
                   sampling_params=params, pooling_params=None,
                   block_hasher=get_request_block_hasher(
                       w.hash_block_size or w.block_size, sha256))


def _summary(out):
    """A SchedulerOutput as plain values, in a fixed order."""
    cached = out.scheduled_cached_reqs
    return {
        "new": [(r.req_id, r.block_ids, r.num_computed_tokens)
                for r in out.scheduled_new_reqs],
        "cached": list(zip(cached.req_ids, cached.new_block_ids,
                           cached.num_computed_tokens,
                           [r in cached.resumed_req_ids
                            for r in cached.req_ids])),
        "num_scheduled_tokens": dict(out.num_scheduled_tokens),
        "spec_tokens": {k: list(v) for k, v in
                        out.scheduled_spec_decode_tokens.items()},
        "common_prefix": list(out.num_common_prefix_blocks),
        "preempted": sorted(out.preempted_req_ids or ()),
        "finished": sorted(out.finished_req_ids),
        "zero": out.new_block_ids_to_zero,
    }


def _model_output(rng, out, scheduler):
    """Each scheduled request that ends its prompt samples 1 token plus
    the accepted share of its drafts."""
    ids, sampled = [], []
    for rid, n in out.num_scheduled_tokens.items():
        request = scheduler.requests[rid]
        ids.append(rid)
        # schedule() counted the step's tokens as computed already.
        if request.num_computed_tokens < request.num_tokens:
            sampled.append([])  # mid-prefill
            continue
        drafts = len(out.scheduled_spec_decode_tokens.get(rid, ()))
        sampled.append([rng.randrange(1, 1000)
                        for _ in range(1 + rng.randint(0, drafts))])
    return ModelRunnerOutput(req_ids=ids,
                             req_id_to_index={r: i for i, r in enumerate(ids)},
                             sampled_token_ids=sampled, logprobs=None,
                             prompt_logprobs_dict={}, pooler_output=[])


def _drafts(rng, w, scheduler):
    ids, drafts = [], []
    for request in scheduler.running:
        if request.num_computed_tokens >= request.num_prompt_tokens:
            ids.append(request.request_id)
            drafts.append([rng.randrange(1, 1000)
                           for _ in range(rng.randint(0, w.num_spec_tokens))])
    return DraftTokenIds(req_ids=ids, draft_token_ids=drafts)


def _state(scheduler, out):
    manager = scheduler.kv_cache_manager
    tables = {r.request_id: manager.get_block_ids(r.request_id)
              for r in scheduler.running}
    return {"tables": tables,
            "free": manager.block_pool.get_num_free_blocks(),
            "usage": round(manager.usage, 12),
            "stats": None if out is None else _stats(out)}


def _stats(engine_outputs):
    stats = [o.scheduler_stats for o in engine_outputs.values()
             if o.scheduler_stats is not None]
    return [dataclasses.asdict(s.prefix_cache_stats) for s in stats]


@dataclasses.dataclass
class Coverage:
    """What a run exercised."""
    steps: int = 0
    preemptions: int = 0
    hits: int = 0  # admissions with cached tokens
    resets: int = 0  # reset_prefix_cache calls that dropped the cache
    drafts: int = 0  # requests scheduled with draft tokens

    def add(self, other):
        for field in dataclasses.fields(self):
            setattr(self, field.name, getattr(self, field.name)
                    + getattr(other, field.name))


def _cover(coverage, summary):
    coverage.steps += 1
    coverage.preemptions += len(summary["preempted"])
    coverage.hits += sum(1 for _, _, n in summary["new"] if n > 0)
    coverage.drafts += sum(1 for v in summary["spec_tokens"].values() if v)


class NotBuilt(Exception):
    """Either manager refused the workload's shape when built (the engine
    asserting, hkv raising hkv.Error): nothing to compare."""


def halved_hash_unit(w):
    """``w`` hashed at half its block size (its blocks a multiple of the
    hash unit: a request's own boundaries then fall between blocks), or
    None when its blocks are too small to halve."""
    if w.block_size < 8:
        return None
    return dataclasses.replace(w, hash_block_size=w.block_size // 2)


def run(seed, manager_class=None, shape=None):
    """Runs workload(seed), or ``shape(workload(seed))`` (raising NotBuilt
    when either manager refuses it), on the engine's manager and on
    ``manager_class`` (hkv.vllm.KVCacheManager); returns the Coverage."""
    init_none_hash(sha256)
    w = workload(seed)
    engine_class = plugin.engine_manager_class()
    if shape is None:
        sides = [make_scheduler(w, engine_class),
                 make_scheduler(w, manager_class or hkv.vllm.KVCacheManager)]
    else:
        w = shape(w)
        try:
            sides = [make_scheduler(w, engine_class),
                     make_scheduler(w,
                                    manager_class or hkv.vllm.KVCacheManager)]
        except (AssertionError, hkv.Error) as refused:
            raise NotBuilt(f"seed {seed}: {refused}") from refused
    coverage = Coverage()
    rngs = [random.Random(seed * 7919 + 1) for _ in sides]
    pending = list(w.arrivals)
    for step in range(w.steps):
        while pending and pending[0][0] <= step:
            _, rid, prompt, max_tokens = pending.pop(0)
            for s in sides:
                s.add_request(_request(w, rid, prompt, max_tokens))
        if step in w.resets:
            got = [s.reset_prefix_cache(reset_running_requests=w.resets[step])
                   for s in sides]
            _compare(w, step, "reset_prefix_cache", *got)
            coverage.resets += got[0]
        outs = [_engine_step(w, step, sides[0].schedule), sides[1].schedule()]
        summaries = [_summary(o) for o in outs]
        _compare(w, step, "SchedulerOutput", *summaries)
        _cover(coverage, summaries[0])
        results = [s.update_from_output(o, _model_output(r, o, s))
                   for s, o, r in zip(sides, outs, rngs)]
        _compare(w, step, "state", *[_state(s, res)
                                     for s, res in zip(sides, results)])
        if w.spec_method:
            for s, r in zip(sides, rngs):
                s.update_draft_token_ids(_drafts(r, w, s))
        if not pending and not sides[0].has_unfinished_requests():
            break
    return coverage


def serve(w, scheduler, seed=0):
    """Runs workload ``w`` on one scheduler to the end; returns the
    Coverage."""
    init_none_hash(sha256)
    rng = random.Random(seed)
    coverage = Coverage()
    pending = list(w.arrivals)
    for step in range(w.steps):
        while pending and pending[0][0] <= step:
            _, rid, prompt, max_tokens = pending.pop(0)
            scheduler.add_request(_request(w, rid, prompt, max_tokens))
        out = scheduler.schedule()
        _cover(coverage, _summary(out))
        scheduler.update_from_output(out, _model_output(rng, out, scheduler))
        if w.spec_method:
            scheduler.update_draft_token_ids(_drafts(rng, w, scheduler))
        if not pending and not scheduler.has_unfinished_requests():
            break
    return coverage


def _engine_step(w, step, call):
    try:
        return call()
    except AssertionError as failure:
        raise EngineFailed(f"seed {w.seed}, step {step}: the engine's "
                           f"manager asserts: {failure}") from failure


def _compare(w, step, what, engine, ours):
    if engine == ours:
        return
    if isinstance(engine, dict):
        for key in engine:
            if engine[key] != ours.get(key):
                raise Mismatch(f"seed {w.seed}, step {step}, {what}.{key}: "
                               f"engine {engine[key]!r}, hkv {ours[key]!r}\n"
                               f"workload {w}")
    raise Mismatch(f"seed {w.seed}, step {step}, {what}: engine {engine!r}, "
                   f"hkv {ours!r}\nworkload {w}")
