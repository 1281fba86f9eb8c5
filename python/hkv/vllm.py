"""hkv's cache manager behind the reference engine's KVCacheManager calls.

``hkv.vllm.KVCacheManager`` takes the engine's KV cache config and its
requests and answers the calls its scheduler makes, with the engine's
argument order and return shapes; underneath is hkv.KVCacheManager. A
scheduler step drives it as::

    kv.new_step_starts()
    new = kv.allocate_slots(running_request, num_new_tokens)  # None: no room
    blocks, hit = kv.get_computed_blocks(waiting_request)
    new = kv.allocate_slots(waiting_request, num_new_tokens, hit, blocks)
    copies, _ = kv.take_kv_cache_block_copies()   # run before the model
    ... the model runs; finished requests:
    kv.free(request)

``allocate_slots`` registers the reusable prefix itself, up to
``min(computed + hit + external + new tokens, request's tokens)``, as the
engine does, so there is no commit call. hkv keys each request itself: it
mirrors the request's token ids (they only grow; a preempted request is
keyed again at its next lookup) and its key extras (``lora_request``,
``cache_salt``, ``mm_features``, ``prompt_embeds`` as a 2-D buffer).
docs/python.md lists what differs from the engine's manager.

Not thread-safe: one scheduler thread drives a manager.
"""

import dataclasses

import hkv

if hkv._MISSING is not None:
    raise hkv._missing_extension("hkv.vllm") from hkv._MISSING

from hkv import _hkv  # noqa: E402
from hkv.kv_cache_manager import KVCacheManager as _Manager  # noqa: E402
from hkv.manager import KVCacheBlocks as _Found, whole  # noqa: E402
from hkv.vllm_config import (  # noqa: E402,F401
    ChunkedLocalAttentionSpec,
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    MLAAttentionSpec,
    MambaSpec,
    SlidingWindowSpec,
    groups_from_config,
)
from hkv.vllm_request import (  # noqa: E402,F401
    Request,
    RequestStatus,
    key_options,
    num_prompt_tokens,
)


@dataclasses.dataclass(frozen=True)
class KVCacheBlock:
    """One block of a table; block 0 is the null block (a position the
    group does not need)."""
    block_id: int

    @property
    def is_null(self):
        return self.block_id == 0


@dataclasses.dataclass(frozen=True)
class KVCacheBlockCopy:
    """Copy block ``src_block_id`` into ``dst_block_id`` (of group
    ``group_id``) before the step's model runs."""
    src_block_id: int
    dst_block_id: int
    group_id: int


class KVCacheBlocks:
    """Blocks per cache group: a lookup's hit, an allocation's new blocks or
    a request's table. ``blocks[g]`` lists group g's KVCacheBlocks."""

    __slots__ = ("_ids", "_hit", "state_exports")

    def __init__(self, block_ids, hit=None, state_exports=()):
        self._ids = tuple(list(group) for group in block_ids)
        self._hit = hit  # the CacheHit behind a lookup's blocks
        # States the step's recurrent kernel must leave (new blocks only).
        self.state_exports = list(state_exports)

    @property
    def blocks(self):
        return tuple([KVCacheBlock(i) for i in group] for group in self._ids)

    def get_block_ids(self, allow_none=False):
        """One list of block ids per group; None for no blocks at all when
        ``allow_none``."""
        if allow_none and not any(self._ids):
            return None
        return tuple(list(group) for group in self._ids)

    def new_empty(self):
        return KVCacheBlocks([] for _ in self._ids)

    def __add__(self, other):
        return KVCacheBlocks(a + b for a, b in zip(self._ids, other._ids))

    def __eq__(self, other):
        return isinstance(other, KVCacheBlocks) and self._ids == other._ids

    def __repr__(self):
        return f"KVCacheBlocks({list(self._ids)})"


class KVCacheManager:
    """The engine's KVCacheManager over hkv.

    ``kv_cache_config``: the engine's KVCacheConfig, hkv.vllm's, or a dict
    of the same shape (hkv.vllm_config maps its groups). ``hash_block_size``:
    tokens per prefix key (None: the smallest group block, DCP-scaled).
    ``use_eagle``: hits drop their last unit in attention groups.
    ``log_stats``: whether make_prefix_cache_stats returns counters.
    ``options``: hkv.KVCacheManager's keyword options (``key_function``,
    ``seed``, ``free_order``, ``max_in_flight_tokens``,
    ``retention_interval``). Raises hkv.UsageError for a malformed config
    (naming the field) or what hkv lacks (``pcp_world_size`` above 1, a
    ``metrics_collector``), hkv.Error for a config hkv rejects.
    """

    def __init__(self, kv_cache_config, max_model_len, hash_block_size=None,
                 enable_caching=True, use_eagle=False, log_stats=False,
                 enable_kv_cache_events=False, dcp_world_size=1,
                 pcp_world_size=1, metrics_collector=None, **options):
        if pcp_world_size != 1:
            raise _hkv.UsageError(
                f"pcp_world_size must be 1 (hkv has no prefill context "
                f"parallelism), got {pcp_world_size!r}")
        if metrics_collector is not None:
            raise _hkv.UsageError(
                "metrics_collector must be None: hkv's counters come from "
                "make_prefix_cache_stats()")
        num_blocks, groups = groups_from_config(kv_cache_config, use_eagle)
        # The hkv manager underneath, its calls documented in docs/python.md.
        self.kv = _Manager(groups, num_blocks, hash_unit=hash_block_size,
                           dcp=dcp_world_size, enable_caching=enable_caching,
                           enable_kv_cache_events=enable_kv_cache_events,
                           max_model_len=max_model_len, **options)
        self.kv_cache_config = kv_cache_config
        self.max_model_len = max_model_len
        self.enable_caching = enable_caching
        self.use_eagle = use_eagle
        self.log_stats = log_stats
        self.num_kv_cache_groups = len(groups)
        self.empty_kv_cache_blocks = KVCacheBlocks([] for _ in groups)
        # request_id -> the hkv Request mirroring the engine's, for exactly
        # the requests self.kv tracks (looked up or holding blocks).
        self._mirrors = {}
        self._held = set()  # request_ids holding blocks

    # A scheduler step -----------------------------------------------------

    def new_step_starts(self):
        """A scheduler step starts, so the previous one ran: the copies
        taken then are released, and recurrent states registered then can
        be hit (until then, an allocation adopting one returns None). Call
        it once per step, before the step's first allocation."""
        self.kv.finish_step()

    def get_computed_blocks(self, request):
        """The longest cached prefix of a new or preempted request:
        ``(KVCacheBlocks, num_computed_tokens)``, at most num_tokens - 1
        tokens; none with caching off or ``skip_reading_prefix_cache``.
        Counts nothing: the request's next allocate_slots adopts the hit
        when given both."""
        mirror = self._mirror(request)
        found, num_tokens = self.kv.get_computed_blocks(mirror)
        self._mirrors[request.request_id] = mirror
        hit = found.raw
        return KVCacheBlocks(hit.blocks, hit), num_tokens

    def allocate_slots(self, request, num_new_tokens,
                       num_new_computed_tokens=0, new_computed_blocks=None,
                       num_lookahead_tokens=0, num_external_computed_tokens=0,
                       delay_cache_blocks=False, num_encoder_tokens=0,
                       full_sequence_must_fit=False):
        """Blocks for ``num_new_tokens`` (plus ``num_lookahead_tokens``
        slots) after the request's ``num_computed_tokens``, the hit's
        ``num_new_computed_tokens`` and ``num_external_computed_tokens``
        loaded by a connector, in every group; None when free blocks are
        short (nothing changes then but releasing blocks out of windows).

        A request's first allocation adopts its lookup's hit as
        get_computed_blocks returned it (a smaller count cuts it at a
        scheduler block; 0 adopts nothing). Then registers the reusable
        prefix up to min(computed + hit + external + new tokens, the
        request's tokens), unless ``delay_cache_blocks`` (cache_blocks does
        it once the load is done). ``full_sequence_must_fit`` refuses
        unless the request's whole sequence fits now (window groups counted
        at what one request holds). Raises hkv.UsageError for no new nor
        external tokens, encoder tokens, a hit for a request that holds
        blocks or was not looked up, or computed tokens without blocks."""
        rid = request.request_id
        new_tokens = whole("num_new_tokens", num_new_tokens)
        hit_tokens = whole("num_new_computed_tokens", num_new_computed_tokens)
        external = whole("num_external_computed_tokens",
                         num_external_computed_tokens)
        computed = whole("request.num_computed_tokens",
                         request.num_computed_tokens)
        _check_counts(new_tokens, external, num_encoder_tokens)
        hit = self._check_hit(rid, computed, hit_tokens, new_computed_blocks)
        looked_up = rid in self._mirrors and rid not in self._held
        mirror = self._mirror(request)
        new = self.kv.allocate_slots(
            mirror, new_tokens, num_lookahead_tokens,
            num_computed_tokens=computed,
            num_new_computed_tokens=hit_tokens if looked_up else None,
            new_computed_blocks=None if hit is None else _Found(hit),
            num_external_computed_tokens=external,
            num_in_flight_tokens=getattr(request, "num_in_flight_tokens", 0),
            whole_sequence=full_sequence_must_fit)
        if new is None:
            return None
        self._mirrors[rid] = mirror
        self._held.add(rid)
        if not delay_cache_blocks:
            self._commit(mirror, computed + hit_tokens + external + new_tokens)
        return KVCacheBlocks(new.raw.blocks,
                             state_exports=new.raw.state_exports)

    def cache_blocks(self, request, num_computed_tokens):
        """Registers the reusable prefix of the first ``num_computed_tokens``
        tokens (capped at the request's), for an allocation made with
        ``delay_cache_blocks``. Raises hkv.UsageError for a request holding
        no blocks, or blocks not covering the tokens."""
        if request.request_id not in self._held:
            raise _hkv.UsageError(
                f"cache_blocks for request {request.request_id!r}, which "
                "holds no blocks")
        self._commit(self._mirror(request),
                     whole("num_computed_tokens", num_computed_tokens))

    def free(self, request):
        """Releases the request's blocks, last first (cached ones stay
        findable until evicted), and forgets its lookup. A no-op for a
        request holding nothing."""
        rid = request.request_id
        mirror = self._mirrors.pop(rid, None)
        self._held.discard(rid)
        if mirror is not None:
            self.kv.free(mirror)

    def take_kv_cache_block_copies(self):
        """``(copies, retained)``: the copy-on-write copies (of a hit's
        partial last block) queued since the last call, to run before the
        step's model, and an empty list: hkv itself holds the copies'
        blocks until the next new_step_starts."""
        copies = [KVCacheBlockCopy(c.source, c.destination, c.group)
                  for c in self.kv.take_copies()]
        return copies, []

    def split_prefill(self, request, num_new_tokens,
                      num_new_local_computed_tokens=0,
                      num_external_computed_tokens=0, *,
                      max_num_scheduled_tokens=8192, long_prefill_threshold=0):
        """How many of ``num_new_tokens`` to schedule so aligned recurrent
        groups keep reusable states: the engine scheduler's Mamba
        block-aligned split, which hkv does in the cache (chunks end on
        block boundaries, at the prompt's checkpoint and at the lookup's
        shared-prefix boundary). Computed tokens are the request's plus
        the other two counts. Pure."""
        computed = (whole("request.num_computed_tokens",
                          request.num_computed_tokens)
                    + whole("num_new_local_computed_tokens",
                            num_new_local_computed_tokens)
                    + whole("num_external_computed_tokens",
                            num_external_computed_tokens))
        return self.kv.split_prefill(
            self._mirror(request), num_new_tokens,
            num_computed_tokens=computed,
            max_num_scheduled_tokens=max_num_scheduled_tokens,
            long_prefill_threshold=long_prefill_threshold)

    def truncate_computed_blocks(self, blocks, num_computed_tokens):
        """A lookup's blocks cut to its first ``num_computed_tokens`` tokens
        (a multiple of the scheduler block), for a connector that loads the
        rest. Pure."""
        if blocks._hit is None:
            raise _hkv.UsageError("truncate_computed_blocks takes blocks "
                                  "that get_computed_blocks returned")
        hit = self.kv.cache.truncate_hit(
            blocks._hit, whole("num_computed_tokens", num_computed_tokens))
        return KVCacheBlocks(hit.blocks, hit)

    # State and counters ----------------------------------------------------

    def get_blocks(self, request_id):
        """The request's block table, per group (empty lists for a request
        holding no blocks)."""
        if request_id not in self._held:
            return self.empty_kv_cache_blocks
        return KVCacheBlocks(self.kv.get_block_ids(self._mirrors[request_id]))

    def get_block_ids(self, request_id):
        """The request's block ids, one list per group."""
        return self.get_blocks(request_id).get_block_ids()

    def get_num_common_prefix_blocks(self, running_request_id):
        """0 per group, which the engine's contract allows (no cascade
        attention): hkv does not expose block reference counts."""
        return [0] * self.num_kv_cache_groups

    @property
    def usage(self):
        """Fraction of usable blocks in use, 0 to 1."""
        return self.kv.usage

    def make_prefix_cache_stats(self):
        """Prefix-cache counters since the last call (hkv.PrefixCacheStats,
        counted at each request's admission), or None without
        ``log_stats``."""
        stats = self.kv.make_prefix_cache_stats()
        return stats if self.log_stats else None

    def reset_prefix_cache(self):
        """Drops every cached prefix; False (and no change) while any
        request holds blocks."""
        return self.kv.reset_prefix_cache()

    def take_events(self):
        """KV events since the last call, oldest first (hkv's BlockStored,
        BlockRemoved and AllBlocksCleared); none unless
        ``enable_kv_cache_events``."""
        return self.kv.take_events()

    # Helpers --------------------------------------------------------------

    def _check_hit(self, rid, computed, hit_tokens, blocks):
        """The CacheHit behind ``blocks`` (None for other blocks), after
        checking that a hit goes only to a looked-up request holding
        nothing, and computed tokens only to one holding blocks."""
        hit = blocks._hit if isinstance(blocks, KVCacheBlocks) else None
        adopting = hit_tokens > 0 or (blocks is not None and any(
            blocks.get_block_ids()))
        if rid in self._held:
            if adopting:
                raise _hkv.UsageError(
                    f"request {rid!r} holds blocks: only its first "
                    "allocation adopts a hit (num_new_computed_tokens, "
                    "new_computed_blocks)")
            return None
        if computed:
            raise _hkv.UsageError(
                f"request {rid!r} holds no blocks, so its "
                f"num_computed_tokens must be 0, got {computed}")
        if adopting and rid not in self._mirrors:
            raise _hkv.UsageError(
                f"a hit for request {rid!r}, which get_computed_blocks has "
                "not looked up")
        return hit

    def _mirror(self, request):
        """The hkv Request tracked for ``request`` with its new token ids
        appended, or a new one keyed from its tokens and extras (the caller
        tracks it once self.kv does). Raises hkv.UsageError when the
        request has fewer tokens than hkv keyed."""
        tokens = request.all_token_ids
        mirror = self._mirrors.get(request.request_id)
        if mirror is None:
            prompt = whole("request.num_prompt_tokens",
                           num_prompt_tokens(request))
            mirror = self.kv.make_request(request.request_id,
                                          list(tokens[:prompt]),
                                          **key_options(request))
        keyed = mirror.num_tokens
        if len(tokens) < keyed:
            raise _hkv.UsageError(
                f"request {request.request_id!r} has {len(tokens)} tokens, "
                f"fewer than the {keyed} already seen: tokens only grow")
        if len(tokens) > keyed:
            mirror.append_output_token_ids(list(tokens[keyed:]))
        return mirror

    def _commit(self, mirror, num_tokens):
        """Registers the mirror's prefix up to ``num_tokens`` (capped at its
        tokens) unless that much is registered already."""
        num_tokens = min(num_tokens, mirror.num_tokens)
        if num_tokens > mirror.num_computed_tokens:
            self.kv.commit(mirror, num_tokens)


def _check_counts(num_new_tokens, num_external_computed_tokens,
                  num_encoder_tokens):
    """Raises hkv.UsageError for an allocation with nothing to compute or
    load, or with encoder tokens (hkv has no cross-attention groups)."""
    if num_new_tokens == 0 and num_external_computed_tokens == 0:
        raise _hkv.UsageError(
            "num_new_tokens must be greater than 0 when there are no "
            "external computed tokens")
    if whole("num_encoder_tokens", num_encoder_tokens) != 0:
        raise _hkv.UsageError(
            f"num_encoder_tokens must be 0 (hkv has no cross-attention "
            f"groups), got {num_encoder_tokens}")


__all__ = [
    "ChunkedLocalAttentionSpec",
    "FullAttentionSpec",
    "KVCacheBlock",
    "KVCacheBlockCopy",
    "KVCacheBlocks",
    "KVCacheConfig",
    "KVCacheGroupSpec",
    "KVCacheManager",
    "MLAAttentionSpec",
    "MambaSpec",
    "Request",
    "RequestStatus",
    "SlidingWindowSpec",
    "groups_from_config",
]
