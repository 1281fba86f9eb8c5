"""hkv's offload tiers in the reference engine: ``HkvConnector``, a KV
connector (``KVConnectorBase_V1`` with hybrid-allocator support) that
stores every group of a prefix boundary as one object group in hkv's tier
chain (host memory, files, Redis) and loads it back, all groups or none.

Run the engine with

    --kv-transfer-config '{"kv_connector": "HkvConnector",
      "kv_connector_module_path": "hkv.vllm.connector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"tiers": "host:8GiB,redis://127.0.0.1:6379"}}'

How a request goes (docs/tiers.md, "In the reference engine"):

- **Store as computed** (``"store": "computed"``, the default). Each
  step's metadata names the blocks that step fills (a page, or a recurrent
  state at the block's end); the worker reads them after the forward
  (``wait_for_save``) and writes one object group per boundary through
  every tier. Blocks are held by their request while the step runs, so
  nothing is read after reuse.
- **Store on eviction** (``"store": "eviction"``). The scheduler remembers
  which boundary each computed block holds; when the engine allocates such
  a block afresh (evicting it from its prefix cache, or reusing a freed
  one), the object group of every boundary it was part of is written, all
  groups at once, read in ``handle_preemptions``: before the step zeroes or
  overwrites anything. Only what the GPU drops is written; what it still
  holds at shutdown is not.
- **Look up, stage, then claim.** ``get_num_new_matched_tokens`` computes
  the deepest boundary the tiers' directory reaches past the local hit by
  the engine's own block rules (``tier_plan``). It claims nothing yet: it
  asks the worker to read those object groups into host memory (checked:
  namespace, key, checksums, each part's size against this engine's
  pages) and answers "ask again". Once the worker has reported what it
  holds, the answer is the reach over the staged groups alone, so a claimed
  token is one whose bytes are already in hand: a dead Redis, a flipped
  byte, a foreign or differently shaped object shortens the claim (the
  engine computes the rest) and is never loaded.
- **Load.** ``update_state_after_alloc`` maps each staged part to the block
  the engine allocated for it; the worker copies them in ``start_load_kv``
  before the forward (``"load": "sync"``, the default), or on a thread of
  its own while the engine runs other requests (``"load": "async"``: the
  request waits in the engine's WAITING_FOR_REMOTE_KVS until
  ``get_finished`` reports it received).
- **Tails.** A request that finishes inside a block stores its partial
  blocks (pages and the recurrent state after exactly its tokens) as one
  tail object, its blocks held (delay free) until the worker has read them;
  a next turn that extends it resumes at its final token.

Keys are the engine's own block hashes (``request.block_hashes``): set
``PYTHONHASHSEED`` to one value on every engine, or the engine roots them
in a random value per process and a restart or another instance never finds
the file or Redis tiers' objects again (the connector warns).

The namespace of every object is derived from the configuration: model,
each group's spec and page bytes, hash unit and key function, cache dtype,
TP and DCP rank, and ``kv_connector_extra_config["salt_domain"]``; two
engines that differ in any of them never read each other's objects.

Not done: Mamba "align" mode (the engine at 28be48fa asserts that
no external tokens reach its aligned split); blocks filled by accepted
draft tokens are not stored.
"""

import array
import collections
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import logging
import os
import time

import torch

from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1, KVConnectorMetadata, KVConnectorRole,
    KVConnectorWorkerMetadata, SupportsHMA)
from vllm.v1.core import kv_cache_utils

from hkv import _hkv
from hkv.vllm import config as hkv_config
from hkv.vllm import tier_config, tier_plan, tier_worker

# Seconds a lookup waits for the worker's staging report (or the first
# report after start) before it gives up
# and claims nothing (a worker that never answers cannot stall a request).
STAGING_TIMEOUT_S = 10.0
# Times one lookup asks the worker to stage (again, when the directory grew
# while it waited).
MAX_STAGING_ROUNDS = 2
NULL_BLOCK = 0
# Tail objects the scheduler remembers (the oldest forgotten beyond it).
MAX_TAILS = 1 << 16
# Finish states after which a request's cache holds exactly its tokens but
# the last (an abort may come with a step in flight).
_TAIL_STATUSES = ("FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED")
# What kv_connector_extra_config may hold (docs/tiers.md has each).
EXTRA_CONFIG_KEYS = ("tiers", "salt_domain", "hash_block_size", "tier_io",
                     "staging_timeout_s", "store", "load")
# When an object group is written: as its blocks are computed, or when the
# engine reuses one of its blocks.
STORE_POLICIES = ("computed", "eviction")
# How the worker copies a claimed load into the KV tensors: in the step,
# before its forward, or on its own thread (the engine's asynchronous load).
LOAD_MODES = ("sync", "async")
_log = logging.getLogger("hkv.vllm.connector")


@dataclasses.dataclass
class SaveOrder:
    key: bytes
    end_tokens: int
    parts: list  # [(group, block id)]


@dataclasses.dataclass(frozen=True)
class _Tail:
    """A tail object: the tokens from a whole hash block `base` to where a
    request finished, and the key it is stored under."""
    key: bytes
    base: int
    tokens: tuple

    @property
    def end_tokens(self):
        return self.base + len(self.tokens)


def tail_key(base_key, tokens):
    """The object key of the tail of `tokens` past the boundary keyed
    `base_key` (never a block hash's key: another prefix)."""
    return hashlib.sha256(b"hkv-tail" + base_key
                          + array.array("q", tokens).tobytes()).digest()


@dataclasses.dataclass
class HkvConnectorMetadata(KVConnectorMetadata):
    """Scheduler -> worker, one step."""
    prefetch: dict = dataclasses.field(default_factory=dict)  # req: [keys]
    loads: dict = dataclasses.field(default_factory=dict)  # req: [(key, g, b)]
    release: set = dataclasses.field(default_factory=set)  # req ids
    saves: list = dataclasses.field(default_factory=list)  # [SaveOrder]
    # Store on eviction: what blocks allocated afresh this step held, read
    # before the step overwrites them (handle_preemptions).
    evictions: list = dataclasses.field(default_factory=list)  # [SaveOrder]
    # Tails of finished requests, whose blocks the engine holds until the
    # worker reports them sent (read before the forward).
    tail_saves: list = dataclasses.field(default_factory=list)  # [SaveOrder]
    sends: set = dataclasses.field(default_factory=set)  # req ids


@dataclasses.dataclass
class HkvWorkerMetadata(KVConnectorWorkerMetadata):
    """Worker -> scheduler, one step: groups the tiers now hold (key ->
    frozenset of groups), keys they no longer hold, and per staged request
    the groups it holds in host memory."""
    stored: dict = dataclasses.field(default_factory=dict)
    forgotten: set = dataclasses.field(default_factory=set)
    staged: dict = dataclasses.field(default_factory=dict)
    # The first report after register_kv_caches: stored is then everything
    # the tiers held at start.
    ready: bool = False

    def __bool__(self):
        return bool(self.stored or self.forgotten or self.staged
                    or self.ready)

    def aggregate(self, other):
        """Across ranks: a group is held when every rank holds it."""
        stored = {k: v & other.stored[k] for k, v in self.stored.items()
                  if k in other.stored}
        staged = {}
        for req in self.staged.keys() & other.staged.keys():
            mine, theirs = self.staged[req], other.staged[req]
            staged[req] = {k: v & theirs[k] for k, v in mine.items()
                           if k in theirs}
        return HkvWorkerMetadata(
            stored=stored, forgotten=self.forgotten | other.forgotten
            | (self.stored.keys() ^ other.stored.keys()), staged=staged,
            ready=self.ready and other.ready)


class _Staging:
    """A lookup's wait for the worker: the keys asked for, then what came."""

    def __init__(self, keys, end_tokens, rounds=1):
        self.keys = keys
        self.end_tokens = end_tokens  # the reach the keys were asked for
        self.rounds = rounds
        self.staged = None  # key -> frozenset of groups, once reported
        self.since = time.monotonic()


class HkvConnector(KVConnectorBase_V1, SupportsHMA):
    """See the module docstring."""

    def __init__(self, vllm_config, role, kv_cache_config=None):
        super().__init__(vllm_config=vllm_config, role=role,
                         kv_cache_config=kv_cache_config)
        if kv_cache_config is None:
            raise _hkv.UsageError("HkvConnector needs the kv_cache_config")
        extra = dict(self._kv_transfer_config.kv_connector_extra_config or {})
        unknown = sorted(set(extra) - set(EXTRA_CONFIG_KEYS))
        if unknown:
            raise _hkv.UsageError(
                f"kv_connector_extra_config: unknown key {unknown[0]!r} (one "
                f"of {', '.join(EXTRA_CONFIG_KEYS)})")
        self._tiers = tier_config.parse_tiers(extra.get("tiers", ""))
        self._store_policy = extra.get("store", "computed")
        if self._store_policy not in STORE_POLICIES:
            raise _hkv.UsageError(
                "kv_connector_extra_config.store must be 'computed' or "
                f"'eviction', got {self._store_policy!r}")
        self._load_mode = extra.get("load", "sync")
        if self._load_mode not in LOAD_MODES:
            raise _hkv.UsageError(
                "kv_connector_extra_config.load must be 'sync' or 'async', "
                f"got {self._load_mode!r}")
        self._salt_domain = str(extra.get("salt_domain", ""))
        _, groups = hkv_config.groups_from_config(kv_cache_config)
        self._rules = tier_plan.rules_from_groups(groups)
        specs = hkv_config.group_specs(kv_cache_config)
        cache = vllm_config.cache_config
        # The unit of request.block_hashes, as the engine resolves it (the
        # GCD of hybrid groups' blocks, the block x DCP x PCP of one group).
        _, unit = kv_cache_utils.resolve_kv_cache_block_sizes(
            kv_cache_config, vllm_config)
        self._hash_unit = int(extra.get("hash_block_size", unit))
        self._usable = all(
            getattr(s, "mamba_cache_mode", "all") != "align"
            for s in specs) and bool(cache.enable_prefix_caching)
        self._groups = groups
        self._hash_algo = str(getattr(cache, "prefix_caching_hash_algo",
                                      "sha256"))
        self._cache_dtype = str(getattr(cache, "cache_dtype", "auto"))
        self._model = str(getattr(vllm_config.model_config, "model", ""))
        # Drafts verified in a step leave a recurrent state past the tokens
        # the engine keeps: no tails then.
        self._speculative = getattr(vllm_config, "speculative_config",
                                    None) is not None
        if role == KVConnectorRole.SCHEDULER:
            self._scheduler_init()
        else:
            self._worker_init(vllm_config)

    # ------------------------------------------------------------------
    # Scheduler side
    # ------------------------------------------------------------------

    def _scheduler_init(self):
        self._directory = {}   # key -> frozenset of groups the tiers hold
        self._requests = {}    # req id -> Request
        self._tables = {}      # req id -> [block ids] per group
        self._saved_upto = {}  # req id -> tokens whose boundaries are stored
        self._staging = {}     # req id -> _Staging
        self._claims = {}      # req id -> (hit tokens, end tokens, tail)
        # Store on eviction: the object groups each block is a part of, not
        # yet written (block id -> [SaveOrder]), and each admission's local
        # hit (its blocks below it are the prefix cache's, not new).
        self._held = {}
        self._local_hit = {}
        # Requests whose asynchronous load the worker has not reported.
        self._loading = set()
        # Tails by the key of their base boundary, and the base key of each.
        self._tails = {}       # base key -> {tail key: _Tail}
        self._tail_base = collections.OrderedDict()  # tail key -> base key
        self._pending = HkvConnectorMetadata()
        # Lookups wait (answer "ask again") until the workers have said what
        # the tiers held at start, at most the staging timeout.
        self._directory_ready = False
        self._ready_since = None
        extra = self._kv_transfer_config.kv_connector_extra_config or {}
        self._timeout_s = float(extra.get("staging_timeout_s",
                                          STAGING_TIMEOUT_S))
        if not 0 <= self._timeout_s <= 3600:
            raise _hkv.UsageError(
                "kv_connector_extra_config.staging_timeout_s must be in "
                f"[0, 3600], got {self._timeout_s}")
        # Tokens claimed and allocated for loads, and loads, since start.
        self.external_tokens = 0
        self.loads = 0
        # Tail objects ordered stored, and object groups written because a
        # block was reused (store on eviction), since start.
        self.tail_saves = 0
        self.eviction_saves = 0

    def _key_at(self, request, end_tokens):
        index = end_tokens // self._hash_unit - 1
        if end_tokens % self._hash_unit or index >= len(request.block_hashes):
            return None
        return tier_config.object_key(request.block_hashes[index])

    def _reach(self, request, hit_tokens, holds):
        """(end, tail): the deepest end the parts ``holds(key, group)`` says
        are there reach, and the tail object it ends in (None at a whole
        block of every group); (hit_tokens, None) when none."""
        if not self._usable or getattr(request, "skip_reading_prefix_cache",
                                       False):
            return hit_tokens, None
        max_tokens = min(request.num_tokens - 1,
                         len(request.block_hashes) * self._hash_unit)

        def has_part(boundary, group):
            key = self._key_at(request, boundary)
            return key is not None and holds(key, group)

        end = tier_plan.reach(self._rules, hit_tokens, max_tokens, has_part)
        if not self._tails:
            return end, None
        return self._tail_reach(request, hit_tokens, (end, None), holds,
                                has_part)

    def _tail_reach(self, request, hit_tokens, best, holds, has_part):
        """`best` or a deeper (end, tail) through a tail object: one whose
        tokens the request's share up to its end (up to any token for
        attention alone), all of whose load's parts are there."""
        unit = self._hash_unit
        last = request.num_tokens - 1
        tokens = request.all_token_ids
        top = min(last, len(request.block_hashes) * unit) // unit * unit
        for base in range(top, unit - 1, -unit):
            if base + unit - 1 <= best[0]:
                break  # a tail from here ends short of best
            entries = self._tails.get(self._key_at(request, base))
            for tail in (entries or {}).values():
                shared = 0
                for mine, theirs in zip(tokens[base:last], tail.tokens):
                    if mine != theirs:
                        break
                    shared += 1
                end = base + shared
                if end <= max(best[0], hit_tokens):
                    continue
                plan = tier_plan.load_blocks(self._rules, hit_tokens, end,
                                             tail.end_tokens)
                if plan is not None and all(
                        holds(tail.key, g) if source == tier_plan.TAIL
                        else has_part(source, g)
                        for g, blocks in enumerate(plan)
                        for _, source in blocks):
                    best = (end, tail)
        return best

    def _keys_for(self, request, hit_tokens, end_tokens, tail):
        """The keys of the objects a load from hit to end reads, each once,
        in order."""
        sources = dict.fromkeys(
            source
            for blocks in tier_plan.load_blocks(
                self._rules, hit_tokens, end_tokens,
                None if tail is None else tail.end_tokens)
            for _, source in blocks)
        return [tail.key if s == tier_plan.TAIL else self._key_at(request, s)
                for s in sources]

    def on_new_request(self, request):
        self._requests[request.request_id] = request

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        rid = request.request_id
        self._requests[rid] = request
        self._local_hit[rid] = num_computed_tokens
        if not self._directory_ready and self._usable:
            now = time.monotonic()
            self._ready_since = self._ready_since or now
            if now - self._ready_since <= self._timeout_s:
                return None, False
            self._directory_ready = True
        known, tail = self._reach(
            request, num_computed_tokens,
            lambda k, g: g in self._directory.get(k, ()))
        staging = self._staging.get(rid)
        if known <= num_computed_tokens:
            self._drop_staging(rid)
            return 0, False
        if staging is None or (staging.staged is not None
                               and known > staging.end_tokens
                               and staging.rounds < MAX_STAGING_ROUNDS):
            # First ask, or the directory has grown since (stores reported
            # after the ask): ask for the deeper reach once more.
            self._staging[rid] = _Staging(
                self._keys_for(request, num_computed_tokens, known, tail),
                known,
                1 if staging is None else staging.rounds + 1)
            self._pending.prefetch[rid] = self._staging[rid].keys
            return None, False
        if staging.staged is None:
            if time.monotonic() - staging.since > self._timeout_s:
                return 0, False
            return None, False
        end, tail = self._reach(
            request, num_computed_tokens,
            lambda k, g: g in staging.staged.get(k, ()))
        if end <= num_computed_tokens:
            self._drop_staging(rid)
            return 0, False
        self._claims[rid] = (num_computed_tokens, end, tail)
        return end - num_computed_tokens, self._load_mode == "async"

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        rid = request.request_id
        tables = [list(ids) for ids in blocks.get_block_ids()]
        self._tables[rid] = tables
        # A request admitted again after its asynchronous load computed
        # (or loaded) its first num_computed_tokens already.
        self._reused(tables, self._local_hit.pop(rid,
                                                 request.num_computed_tokens))
        claim = self._claims.pop(rid, None)
        if num_external_tokens == 0 or claim is None:
            self._drop_staging(rid)
            return
        hit, end, tail = claim
        assert end - hit == num_external_tokens, (claim, num_external_tokens)
        loads = []
        plan = tier_plan.load_blocks(self._rules, hit, end,
                                     None if tail is None else tail.end_tokens)
        for g, placed in enumerate(plan):
            for j, source in placed:
                key = tail.key if source == tier_plan.TAIL \
                    else self._key_at(request, source)
                loads.append((key, g, tables[g][j]))
        self._pending.loads[rid] = loads
        if self._load_mode == "async":
            self._loading.add(rid)
        self.external_tokens += num_external_tokens
        self.loads += 1
        self._staging.pop(rid, None)
        self._saved_upto[rid] = end

    def _drop_staging(self, rid):
        if self._staging.pop(rid, None) is not None:
            self._pending.release.add(rid)
            self._pending.prefetch.pop(rid, None)
        self._claims.pop(rid, None)

    def build_connector_meta(self, scheduler_output):
        for new in scheduler_output.scheduled_new_reqs:
            self._tables[new.req_id] = [list(ids) for ids in new.block_ids]
            self._plan_saves(new.req_id, new.num_computed_tokens,
                             scheduler_output)
        cached = scheduler_output.scheduled_cached_reqs
        for i, rid in enumerate(cached.req_ids):
            added = cached.new_block_ids[i]
            if rid in cached.resumed_req_ids or rid not in self._tables:
                if added is not None:
                    self._tables[rid] = [list(ids) for ids in added]
            elif added is not None:
                for table, ids in zip(self._tables[rid], added):
                    table.extend(ids)
                self._reused(added, None)
            self._plan_saves(rid, cached.num_computed_tokens[i],
                             scheduler_output)
        meta, self._pending = self._pending, HkvConnectorMetadata()
        return meta

    def _plan_saves(self, rid, computed, scheduler_output):
        """Orders the object groups of the boundaries this step completes."""
        request, table = self._requests.get(rid), self._tables.get(rid)
        if request is None or table is None or not self._usable:
            return
        spec = len(scheduler_output.scheduled_spec_decode_tokens.get(rid, ()))
        upto = computed + scheduler_output.num_scheduled_tokens.get(rid, 0) \
            - spec
        after = max(computed, self._saved_upto.get(rid, 0))
        for end, groups in tier_plan.step_boundaries(self._rules, after, upto):
            key = self._key_at(request, end)
            if key is None:
                continue
            parts = []
            for g in groups:
                j = end // self._rules[g].block_size - 1
                if j < len(table[g]) and table[g][j] != NULL_BLOCK:
                    parts.append((g, table[g][j]))
            if parts and not self._stored(key, parts):
                self._save(SaveOrder(key, end, parts))
        self._saved_upto[rid] = max(after, upto)

    def _stored(self, key, parts):
        return {g for g, _ in parts} <= self._directory.get(key, frozenset())

    def _save(self, order):
        """Writes now, or (store on eviction) when a block of it is reused."""
        if self._store_policy == "computed":
            self._pending.saves.append(order)
            return
        for _, block in order.parts:
            self._held.setdefault(block, []).append(order)

    def _reused(self, tables, hit_tokens):
        """Store on eviction: `tables` (block ids per group) were just
        allocated to a request, the first `hit_tokens` tokens' blocks from
        the prefix cache (None: none known); every other block is about to
        be overwritten, so what it held is written first."""
        if not self._held:
            return
        for g, table in enumerate(tables):
            first = 0 if hit_tokens is None else \
                hit_tokens // self._rules[g].block_size
            for block in table[first:]:
                for order in self._held.pop(block, ()):
                    for _, other in order.parts:
                        holders = self._held.get(other)
                        if holders is not None and order in holders:
                            holders.remove(order)
                            if not holders:
                                del self._held[other]
                    if not self._stored(order.key, order.parts):
                        self._pending.evictions.append(order)
                        self.eviction_saves += 1

    def update_connector_output(self, connector_output):
        self._loading -= set(connector_output.finished_recving or ())
        meta = connector_output.kv_connector_worker_meta
        if not isinstance(meta, HkvWorkerMetadata):
            return
        self._directory_ready |= meta.ready
        for key in meta.forgotten:
            self._directory.pop(key, None)
            self._forget_tail(key)
        for key, groups in meta.stored.items():
            self._directory[key] = self._directory.get(key, frozenset()) \
                | groups
        for rid, staged in meta.staged.items():
            if rid in self._staging:
                self._staging[rid].staged = staged

    def request_finished(self, request, block_ids):
        return self.request_finished_all_groups(request, (block_ids,))

    def request_finished_all_groups(self, request, block_ids):
        rid = request.request_id
        self._drop_staging(rid)
        self._pending.loads.pop(rid, None)
        for table in (self._requests, self._tables, self._saved_upto,
                      self._local_hit):
            table.pop(rid, None)
        if rid in self._loading:
            # The worker is writing its blocks: the engine frees them when it
            # reports the load received.
            return True, None
        order = self._tail_order(request, block_ids)
        if order is None:
            return False, None
        self.tail_saves += 1
        if self._store_policy == "eviction":
            # Written when the engine reuses one of its blocks.
            self._save(order)
            return False, None
        # The engine holds the blocks until the worker has read them.
        self._pending.tail_saves.append(order)
        self._pending.sends.add(rid)
        return True, None

    def _tail_order(self, request, block_ids):
        """The save of a finished request's tail: its cache's blocks with
        token T - 1 for T = every token but the last (the one sampled last
        is not computed), when T is not a whole block of every group; None
        when there is nothing to store or its bytes are not exactly the
        tokens' (an abort, drafts, multimodal input)."""
        end = request.num_computed_tokens
        base = end // self._hash_unit * self._hash_unit
        if (not self._usable or self._speculative
                or str(request.status) not in _TAIL_STATUSES
                or end != request.num_tokens - 1
                or getattr(request, "num_output_placeholders", 0)
                or getattr(request, "mm_features", None)
                or getattr(request, "prompt_embeds", None) is not None
                or end % tier_plan.alignment(self._rules) == 0
                or base == 0):
            return None
        base_key = self._key_at(request, base)
        if base_key is None:
            return None
        parts = []
        for g, rule in enumerate(self._rules):
            j = (end - 1) // rule.block_size
            if j >= len(block_ids[g]) or block_ids[g][j] == NULL_BLOCK:
                return None
            parts.append((g, block_ids[g][j]))
        tokens = tuple(request.all_token_ids[base:end])
        tail = _Tail(tail_key(base_key, tokens), base, tokens)
        if tail.key in self._tail_base:
            self._tail_base.move_to_end(tail.key)
            if len(self._directory.get(tail.key, ())) == len(parts):
                return None
        self._tails.setdefault(base_key, {})[tail.key] = tail
        self._tail_base[tail.key] = base_key
        while len(self._tail_base) > MAX_TAILS:
            self._forget_tail(next(iter(self._tail_base)))
        return SaveOrder(tail.key, end, parts)

    def _forget_tail(self, key):
        base_key = self._tail_base.pop(key, None)
        if base_key is not None:
            entries = self._tails[base_key]
            del entries[key]
            if not entries:
                del self._tails[base_key]

    def take_events(self):
        return ()

    def reset_cache(self):
        # The tiers are shared and outlive the GPU cache: a GPU prefix-cache
        # reset keeps them (that is what they are for).
        return True

    # ------------------------------------------------------------------
    # Worker side
    # ------------------------------------------------------------------

    def _worker_init(self, vllm_config):
        parallel = getattr(vllm_config, "parallel_config", None)
        self._rank = (getattr(parallel, "rank", 0) or 0,
                      getattr(parallel, "tensor_parallel_size", 1) or 1,
                      getattr(parallel, "decode_context_parallel_size", 1) or 1)
        extra = self._kv_transfer_config.kv_connector_extra_config or {}
        tier_io = extra.get("tier_io", "thread")
        if tier_io not in ("thread", "inline"):
            raise _hkv.UsageError(
                "kv_connector_extra_config.tier_io must be 'thread' or "
                f"'inline', got {tier_io!r}")
        self._threaded = tier_io == "thread"
        # Asynchronous loads: req id -> the copy's future (its result: the
        # blocks it could not write).
        self._load_thread = (concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="hkv-loads")
            if self._load_mode == "async" else None)
        self._loading = {}
        self._stream = None  # CUDA stream of asynchronous loads (lazily)
        self._tier_io = None   # TierWorker, from register_kv_caches
        self._layers = None    # per group: [(tensor, block dim)]
        self._report = HkvWorkerMetadata()
        self._load_errors = set()
        # Finished requests whose tails were read (their blocks free once
        # get_finished reports them), and which of them the engine has
        # said are finished.
        self._sent = set()
        self._finished = set()

    @property
    def wrong_shape_groups(self):
        """Well-formed object groups refused for another page shape."""
        return 0 if self._tier_io is None else \
            self._tier_io.wrong_shape_groups


    def register_kv_caches(self, kv_caches):
        num_blocks = self._kv_cache_config.num_blocks
        layers = []
        for g, group in enumerate(self._kv_cache_config.kv_cache_groups):
            views = []
            for name in group.layer_names:
                if name not in kv_caches:
                    raise _hkv.UsageError(
                        f"register_kv_caches(): layer {name!r} of group {g} "
                        "has no KV cache tensor")
                entry = kv_caches[name]
                for tensor in (entry if isinstance(entry, (list, tuple))
                               else [entry]):
                    views.append((tensor, _block_dim(tensor, num_blocks,
                                                     name)))
            layers.append(views)
        self._layers = layers
        part_bytes = [
            sum(t.select(d, 0).numel() * t.element_size() for t, d in views)
            for views in layers]
        if os.getenv("PYTHONHASHSEED") is None and any(
                kind != "host" for kind, _ in self._tiers):
            _log.warning(
                "PYTHONHASHSEED is not set: the engine's block hashes start "
                "from a random root in every process, so objects in file "
                "and Redis tiers are not found again after a restart or by "
                "another instance; set it to one value on every engine")
        rank, tp, dcp = self._rank
        ns = tier_config.namespace(
            self._groups, self._hash_unit, model=self._model,
            dtype=self._cache_dtype, page_bytes=part_bytes,
            tp_rank=rank % tp, tp_size=tp, dcp_rank=rank % dcp,
            salt_domain=self._salt_domain,
            key_scheme=f"engine-{self._hash_algo}")
        chain = _hkv.TierChain(**ns,
                               stores=tier_config.open_stores(self._tiers))
        self._tier_io = tier_worker.TierWorker(chain, part_bytes,
                                               threaded=self._threaded)
        self._tier_io.learn_all()
        self._report.ready = True

    def _read_block(self, group, block):
        chunks = [t.select(d, block).contiguous().reshape(-1).view(torch.uint8)
                  for t, d in self._layers[group]]
        return torch.cat(chunks).cpu().numpy().tobytes()

    def _write_block(self, group, block, data):
        source = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        offset = 0
        for t, d in self._layers[group]:
            target = t.select(d, block)
            size = target.numel() * t.element_size()
            chunk = source[offset:offset + size].view(t.dtype)
            target.copy_(chunk.reshape(target.shape))
            offset += size

    def _meta(self):
        if not self.has_connector_metadata():
            return None
        meta = self._get_connector_metadata()
        return meta if isinstance(meta, HkvConnectorMetadata) else None

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._meta()
        if meta is None:
            return
        # Tails first: the engine holds their blocks for this, and steps
        # without a forward call no wait_for_save.
        if self._tier_io is not None and meta.tail_saves:
            self._tier_io.store([self._object_group(order)
                                 for order in meta.tail_saves])
        self._sent |= meta.sends
        if self._tier_io is None:
            return
        for rid in meta.release:
            self._tier_io.release(rid)
        for rid, loads in meta.loads.items():
            staged = self._tier_io.take_staged(rid)
            if self._load_thread is None:
                self._load_errors |= self._load(staged, loads)
            else:
                self._loading[rid] = self._load_thread.submit(
                    self._load, staged, loads)
        for rid, keys in meta.prefetch.items():
            self._tier_io.stage(rid, keys)

    def _load(self, staged, loads):
        """Writes each load's part into its block; returns the blocks with
        no part (staged groups are checked before they are claimed, so
        that is a scheduler/worker disagreement)."""
        errors = set()
        stream = self._load_stream()
        with torch.cuda.stream(stream) if stream is not None \
                else contextlib.nullcontext():
            for key, g, block in loads:
                group = staged.get(key)
                part = None if group is None else dict(group.parts).get(g)
                if part is None:
                    errors.add(block)
                    continue
                self._write_block(g, block, part)
        if stream is not None:
            stream.synchronize()
        return errors

    def _load_stream(self):
        """A CUDA stream of its own for asynchronous loads into GPU
        tensors (None for synchronous loads and CPU tensors)."""
        if self._load_thread is None or not any(
                t.is_cuda for views in self._layers for t, _ in views):
            return None
        if self._stream is None:
            self._stream = torch.cuda.Stream()
        return self._stream

    def handle_preemptions(self, kv_connector_metadata):
        """Store on eviction: copies out what the blocks allocated afresh
        this step held, before the step zeroes or overwrites them."""
        meta = kv_connector_metadata
        if not isinstance(meta, HkvConnectorMetadata) or not meta.evictions \
                or self._tier_io is None:
            return
        self._tier_io.store([self._object_group(order)
                             for order in meta.evictions])

    def wait_for_layer_load(self, layer_name):
        return

    def save_kv_layer(self, layer_name, kv_layer, attn_metadata, **kwargs):
        return

    def wait_for_save(self):
        """Copies the step's completed blocks out of the KV tensors (the
        forward has written them; the next step may reuse them) and hands
        them to the tier thread."""
        meta = self._meta()
        if meta is None or not meta.saves or self._tier_io is None:
            return
        self._tier_io.store([self._object_group(order)
                             for order in meta.saves])

    def _object_group(self, order):
        return _hkv.ObjectGroup(
            key=order.key, end_tokens=order.end_tokens,
            parts=[(g, self._read_block(g, b)) for g, b in order.parts])

    def get_finished(self, finished_req_ids):
        """Finished requests whose tails have been read: the engine may
        free their blocks."""
        self._finished |= self._sent & set(finished_req_ids)
        done, self._sent = self._sent & self._finished, \
            self._sent - self._finished
        self._finished -= done
        received = {rid for rid, job in self._loading.items() if job.done()}
        for rid in received:
            self._load_errors |= self._loading.pop(rid).result()
        return (done or None), (received or None)

    def get_block_ids_with_load_errors(self):
        errors, self._load_errors = self._load_errors, set()
        return errors

    def build_connector_worker_meta(self):
        if self._tier_io is not None:
            self._tier_io.collect(self._report)
        report, self._report = self._report, HkvWorkerMetadata()
        return report if report else None

    def tier_counters(self):
        """The worker's chain counters, by tier, once its jobs so far are
        done (empty before register_kv_caches)."""
        return [] if self._tier_io is None else self._tier_io.counters()

    def drain_tier_io(self):
        """Waits for the tier thread's jobs so far (stores and staging) and
        the asynchronous loads."""
        if self._tier_io is not None:
            self._tier_io.drain()
        concurrent.futures.wait(list(self._loading.values()))

    def shutdown(self):
        if self.role != KVConnectorRole.WORKER:
            return
        if self._load_thread is not None:
            self._load_thread.shutdown(wait=True)
        if self._tier_io is not None:
            self._tier_io.shutdown()


def _block_dim(tensor, num_blocks, name):
    """The dimension that indexes blocks: 0 ((num_blocks, ...) layouts) or 1
    (the (2, num_blocks, ...) layout of K and V)."""
    shape = tuple(tensor.shape)
    if len(shape) >= 1 and shape[0] == num_blocks:
        return 0
    if len(shape) >= 2 and shape[1] == num_blocks:
        return 1
    raise _hkv.UsageError(
        f"register_kv_caches(): layer {name!r} has shape {shape}, with no "
        f"dimension 0 or 1 of num_blocks={num_blocks}")
