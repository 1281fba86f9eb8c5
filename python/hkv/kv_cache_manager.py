"""KVCacheManager: hkv's CacheManager with the engine scheduler's calls.

A scheduler step drives it as::

    blocks, hit = kv.get_computed_blocks(r)      # new or preempted requests
    new = kv.allocate_slots(r, num_new_tokens)   # None: no room, nothing taken
    copies = kv.take_copies()                    # run them before the model
    ... run the model ...
    kv.commit(r, r.num_computed_tokens + num_new_tokens)  # now reusable
    kv.finish_step()
    kv.free(r)                                   # when the request finishes

See include/hkv/cache_manager.h for the contract of each C++ call.
"""

from hkv import _hkv
from hkv.manager import (KVCacheBlocks, Request, make_groups, optional_whole,
                         whole)


def _key_function(value):
    if isinstance(value, str):
        return _hkv.parse_key_function(value)
    if not isinstance(value, _hkv.KeyFunction):
        raise _hkv.UsageError(
            "key_function must be a str (sha256_cbor, xxh3_128_cbor) or a "
            f"KeyFunction, got {value!r}")
    return value


_FREE_ORDERS = {"prepend_uncached": _hkv.FreeOrder.PREPEND_UNCACHED,
                "append_all": _hkv.FreeOrder.APPEND_ALL}


_RETENTIONS = {"reference": _hkv.Retention.REFERENCE,
               "placement": _hkv.Retention.PLACEMENT}


def _choice(name, value, enum, names):
    """``value`` as a member of ``enum``: the member itself or its name in
    ``names``; hkv.UsageError naming ``name`` otherwise."""
    if isinstance(value, enum):
        return value
    if value not in names:
        raise _hkv.UsageError(f"{name} {value!r} is not one of "
                              f"{sorted(names)}")
    return names[value]


class KVCacheManager:
    """The KV-cache manager of one engine.

    ``groups``: a group list (``"full:2048,recurrent:256"``) or a list of
    GroupSpecs/dicts (see make_group). ``num_blocks`` counts the null block.
    ``hash_unit``: tokens per prefix key (None: the smallest group block,
    DCP-scaled). ``key_function``: ``"sha256_cbor"`` (the reference's) or
    ``"xxh3_128_cbor"``; ``seed`` fixes the chain's seed. ``max_model_len``,
    ``max_in_flight_tokens`` and ``retention_interval`` are CacheConfig's.
    ``free_order``: where freed blocks without a key go,
    ``"prepend_uncached"`` (the front of the free queue, the reference
    fork's order) or ``"append_all"`` (the back, upstream vLLM's), or an
    hkv.FreeOrder. ``group_pool_blocks``: None (one pool, the reference's)
    or per-group pools, one block count per group; ``num_blocks`` is then
    1 + their sum (docs/beyond.md). ``pool_slot_bytes``: None (the pools
    keep their blocks) or one slot size in bytes per group: the pools
    rebalance within the bytes they start with, and ``take_pool_moves``
    says which block ids gave up their memory and which took it. ``retention``: ``"reference"`` (the
    reference's retention, as ``retention_interval`` says) or
    ``"placement"`` (one recurrent state per prompt end and per
    shared-prefix junction, where a lookup lands; docs/beyond.md).
    Raises hkv.Error for a config CacheConfig::Validate rejects.
    """

    def __init__(self, groups, num_blocks, hash_unit=None, dcp=1,
                 key_function="sha256_cbor", enable_caching=True,
                 enable_kv_cache_events=False, seed=None,
                 free_order="prepend_uncached", group_pool_blocks=None,
                 pool_slot_bytes=None, retention="reference", **limits):
        config = _hkv.CacheConfig()
        config.groups = make_groups(groups)
        config.num_blocks = whole("num_blocks", num_blocks)
        config.dcp = whole("dcp", dcp)
        if hash_unit is None:
            hash_unit = min(_hkv.tokens_per_block(g, dcp)
                            for g in config.groups) if config.groups else 16
        if seed is not None and not isinstance(seed, str):
            raise _hkv.UsageError(f"seed must be a str or None, got {seed!r}")
        config.keys = _hkv.KeySchemeOptions(_key_function(key_function),
                                            whole("hash_unit", hash_unit),
                                            seed)
        config.caching = (_hkv.PrefixCaching.ENABLED if enable_caching
                          else _hkv.PrefixCaching.DISABLED)
        config.events = (_hkv.KvEventMode.ENABLED if enable_kv_cache_events
                         else _hkv.KvEventMode.DISABLED)
        config.free_order = _choice("free_order", free_order,
                                    _hkv.FreeOrder, _FREE_ORDERS)
        config.retention = _choice("retention", retention, _hkv.Retention,
                                   _RETENTIONS)
        if group_pool_blocks is not None:
            config.group_pool_blocks = [whole("group_pool_blocks", n)
                                        for n in group_pool_blocks]
        if pool_slot_bytes is not None:
            config.pool_slot_bytes = [whole("pool_slot_bytes", n, 2**64 - 1)
                                      for n in pool_slot_bytes]
        for key in ("max_model_len", "max_in_flight_tokens",
                    "retention_interval"):
            if limits.get(key) is not None:
                setattr(config, key, whole(key, limits[key]))
            limits.pop(key, None)
        if limits:
            raise _hkv.UsageError(f"unknown options {sorted(limits)}")
        self.config = config  # what the cache was made from
        self.cache = _hkv.CacheManager(config)  # the C++ API, 1:1
        self._hits = {}  # request_id -> CacheHit awaiting adoption
        self._boundaries = {}  # request_id -> its lookup's shared prefix
        self._held = set()  # request_ids holding blocks
        # request_id -> the live Request (looked up or holding blocks) that
        # uses it: one at a time, so a lookup is adopted by its own request.
        self._owners = {}

    # Requests -------------------------------------------------------------

    @property
    def key_scheme(self):
        return self.cache.key_scheme

    @property
    def num_groups(self):
        return self.cache.num_groups

    def make_request(self, request_id, prompt_token_ids, **options):
        """A Request keyed with this manager's scheme (see Request)."""
        return Request(request_id, prompt_token_ids, self, **options)

    def _check_owner(self, request):
        """Raises UsageError when another live request (looked up or
        holding blocks, not freed yet) uses ``request.request_id``."""
        owner = self._owners.get(request.request_id)
        if owner is not None and owner is not request:
            raise _hkv.UsageError(
                f"request id {request.request_id!r} belongs to another live "
                "request; free that one first")

    # A scheduler step ------------------------------------------------------

    def get_computed_blocks(self, request):
        """The longest cached prefix of a new (or preempted) request:
        ``(blocks, num_computed_tokens)``. The next allocate_slots for the
        request adopts it. Runs without the GIL. Raises UsageError when
        another live request has the same request_id."""
        self._check_owner(request)
        hit = self.cache.lookup(request)
        self._owners[request.request_id] = request
        self._hits[request.request_id] = hit
        self._boundaries[request.request_id] = hit.shared_prefix_boundary
        return KVCacheBlocks(hit), hit.num_tokens

    def allocate_slots(self, request, num_new_tokens, num_lookahead_tokens=0,
                       num_computed_tokens=None, num_new_computed_tokens=None,
                       new_computed_blocks=None,
                       num_external_computed_tokens=0, num_in_flight_tokens=0,
                       whole_sequence=False):
        """Blocks for ``num_new_tokens`` (plus lookahead slots) after what
        the request computed, in every group, or None when free blocks are
        short (nothing changes then). The first allocation after
        get_computed_blocks adopts its hit (``new_computed_blocks`` or the
        stored one, cut to ``num_new_computed_tokens`` if given).
        ``num_computed_tokens`` defaults to ``request.num_computed_tokens``.
        ``whole_sequence`` refuses unless the whole sequence fits now."""
        self._check_owner(request)
        rid = request.request_id
        num_new_tokens = whole("num_new_tokens", num_new_tokens)
        num_lookahead_tokens = whole("num_lookahead_tokens",
                                     num_lookahead_tokens)
        num_computed_tokens = optional_whole("num_computed_tokens",
                                             num_computed_tokens)
        num_new_computed_tokens = optional_whole("num_new_computed_tokens",
                                                 num_new_computed_tokens)
        num_external_computed_tokens = whole("num_external_computed_tokens",
                                             num_external_computed_tokens)
        num_in_flight_tokens = whole("num_in_flight_tokens",
                                     num_in_flight_tokens)
        hit = None
        if rid not in self._held:
            hit = (new_computed_blocks.raw if new_computed_blocks is not None
                   else self._hits.get(rid))
        computed = 0
        if hit is not None:
            if (num_new_computed_tokens is not None
                    and num_new_computed_tokens != hit.num_tokens):
                hit = self.cache.truncate_hit(hit, num_new_computed_tokens)
        else:
            computed = (request.num_computed_tokens
                        if num_computed_tokens is None else num_computed_tokens)
        gate = (_hkv.AdmissionGate.WHOLE_SEQUENCE if whole_sequence
                else _hkv.AdmissionGate.NEXT_CHUNK)
        new = self.cache.allocate(
            request, num_new_tokens, computed, hit,
            num_lookahead_tokens=num_lookahead_tokens,
            num_external_computed_tokens=num_external_computed_tokens,
            num_in_flight_tokens=num_in_flight_tokens, gate=gate)
        if new is None:
            return None
        if hit is not None:
            request.num_computed_tokens = hit.num_tokens
            self._hits.pop(rid, None)
        self._held.add(rid)
        self._owners[rid] = request
        return KVCacheBlocks(new)

    def split_prefill(self, request, num_new_tokens, num_computed_tokens=None,
                      max_num_scheduled_tokens=8192, long_prefill_threshold=0):
        """How many of ``num_new_tokens`` to schedule so aligned recurrent
        groups keep usable states (chunks end on block boundaries, at the
        prompt's checkpoint and at the lookup's shared-prefix boundary)."""
        self._check_owner(request)
        rid = request.request_id
        num_new_tokens = whole("num_new_tokens", num_new_tokens)
        num_computed_tokens = optional_whole("num_computed_tokens",
                                             num_computed_tokens)
        max_num_scheduled_tokens = whole("max_num_scheduled_tokens",
                                         max_num_scheduled_tokens)
        long_prefill_threshold = whole("long_prefill_threshold",
                                       long_prefill_threshold)
        if num_computed_tokens is None:
            pending = self._hits.get(rid) if rid not in self._held else None
            num_computed_tokens = (pending.num_tokens if pending is not None
                                   else request.num_computed_tokens)
        return self.cache.split_prefill(
            request, num_computed_tokens, num_new_tokens,
            max_num_scheduled_tokens=max_num_scheduled_tokens,
            long_prefill_threshold=long_prefill_threshold,
            shared_prefix_boundary=self._boundaries.get(rid, 0))

    def commit(self, request, num_computed_tokens):
        """The first ``num_computed_tokens`` tokens are computed: their full
        blocks (and recurrent states at this boundary) become reusable.
        Raises hkv.UsageError for more tokens than the request has (nothing
        changes)."""
        self._check_owner(request)
        num_computed_tokens = whole("num_computed_tokens", num_computed_tokens)
        if num_computed_tokens > request.num_tokens:
            raise _hkv.UsageError(
                f"commit of {num_computed_tokens} tokens for request "
                f"{request.request_id!r}, which has {request.num_tokens}")
        self.cache.commit(request, num_computed_tokens)
        request.num_computed_tokens = num_computed_tokens

    def free(self, request):
        """Releases the request's blocks (cached ones stay findable) and
        forgets a lookup it never adopted. Raises hkv.UsageError for a
        request holding nothing."""
        self._check_owner(request)
        rid = request.request_id
        if rid not in self._held and rid in self._hits:
            del self._hits[rid]  # looked up, never admitted
            self._boundaries.pop(rid, None)
            self._owners.pop(rid, None)
            return
        self.cache.free(request.id)  # UsageError when it holds nothing
        self._owners.pop(rid, None)
        self._held.discard(rid)
        self._hits.pop(rid, None)
        self._boundaries.pop(rid, None)
        request.num_computed_tokens = 0

    def take_copies(self):
        """Copy-on-write copies the engine runs before the step."""
        return self.cache.take_copies()

    def take_pool_moves(self):
        """Rebalancing pools: hkv.PoolMoves since the last call, the ids
        whose memory the engine unmaps (parked) and maps (unparked) before
        the step."""
        return self.cache.take_pool_moves()

    def finish_step(self):
        """The step that ran the taken copies is done."""
        self.cache.finish_step()

    def take_events(self):
        """KV events since the last call (BlockStored, BlockRemoved,
        AllBlocksCleared), oldest first."""
        return self.cache.take_events()

    # State and counters ----------------------------------------------------

    @property
    def usage(self):
        """Fraction of usable blocks in use."""
        return self.cache.usage

    @property
    def num_free_blocks(self):
        return self.cache.num_free_blocks

    def make_prefix_cache_stats(self):
        """Prefix-cache counters since the last call (PrefixCacheStats)."""
        return self.cache.take_stats()

    def reset_prefix_cache(self):
        """Drops every cached prefix; False (and no change) while any
        request holds blocks."""
        return self.cache.reset_prefix_cache()

    def get_block_ids(self, request):
        """The request's block table, one list per group."""
        self._check_owner(request)
        return tuple(self.cache.block_table(request.id, g)
                     for g in range(self.num_groups))

    def cached_blocks_per_group(self):
        return self.cache.cached_blocks_per_group()
