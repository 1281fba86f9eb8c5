"""KVCacheManager: the reference engine's KV-cache manager (vLLM at
28be48fa), its constructor, calls, attributes and results, over hkv's C++
cache.

The engine keys its requests (``request.block_hashes``, one digest per
``hash_block_size`` tokens); hkv takes those keys as they are and never
sees a token id. Each call is one C++ call plus the conversion of its
result into the engine's classes (hkv.vllm.engine), but for a decode step
that crosses no block boundary of any group: allocate_slots then knows
nothing would change and returns at once. The two calls the scheduler
makes per request, allocate_slots and get_computed_blocks, are C methods
of the base class (_hkv.VllmManagerCore, python/src/vllm_core.h); they
take the common cases themselves and hand the rest to
``_allocate_slots`` and ``_get_computed_blocks`` here.
Defaults are the engine's: its free order (every freed block appended to
the free queue), its hit rules (no partial-block hits), its statistics
(one record per lookup). docs/python.md lists what hkv does differently
and the opt-ins.

Not thread-safe: one scheduler thread drives a manager.
"""

from hkv import _hkv
from hkv.kv_cache_manager import _FREE_ORDERS, _choice
from hkv.manager import make_groups, whole
from hkv.vllm import engine
from hkv.vllm.blocks import BlockPool, Coordinator
from hkv.vllm.config import group_specs, groups_from_config
# The engine zeroes new blocks of exactly these spec types (not MLA).
_ZEROED_SPECS = ("FullAttentionSpec", "TQFullAttentionSpec")
_MEDIUM_GPU = "GPU"
# hkv needs one key per complete unit; with caching off the engine hashes
# nothing, and any key will do.
_PLACEHOLDER_KEY = b"\0"


class KVCacheManager(_hkv.VllmManagerCore):
    """The engine's KVCacheManager, with its parameters in its order.

    ``kv_cache_config``: the engine's KVCacheConfig (or hkv.vllm's, or a
    dict of the same shape). ``hash_block_size``: tokens per request block
    hash. ``max_num_batched_tokens``: caps what window groups reserve per
    request at admission (None: ``max_model_len``). ``metrics_collector``
    must be None and ``pcp_world_size`` 1 (hkv has neither; UsageError).

    Keyword-only opt-in: ``free_order`` ``"append_all"`` (the engine's:
    every freed block goes to the back of the free queue) or
    ``"prepend_uncached"`` (later engines': freed blocks without a key go
    to the front). Hits follow the engine's rules (whole blocks, no
    copy-on-write; hkv.KVCacheManager has hkv's own). Raises
    hkv.UsageError naming a malformed field, hkv.Error for a config hkv
    rejects.
    """

    def __init__(self, kv_cache_config, max_model_len, hash_block_size,
                 max_num_batched_tokens=None, enable_caching=True,
                 use_eagle=False, log_stats=False,
                 enable_kv_cache_events=False, dcp_world_size=1,
                 pcp_world_size=1, metrics_collector=None, *,
                 free_order="append_all"):
        if pcp_world_size != 1:
            raise _hkv.UsageError(
                f"pcp_world_size must be 1 (hkv has no prefill context "
                f"parallelism), got {pcp_world_size!r}")
        if metrics_collector is not None:
            raise _hkv.UsageError(
                "metrics_collector must be None: hkv does not sample block "
                "residency (run the engine without --kv-cache-metrics)")
        num_blocks, groups = groups_from_config(kv_cache_config, use_eagle)
        self.max_model_len = whole("max_model_len", max_model_len, minimum=1)
        if max_num_batched_tokens is None:
            max_num_batched_tokens = max_model_len
        config = _hkv.CacheConfig()
        config.groups = make_groups(groups)
        config.num_blocks = num_blocks
        config.dcp = whole("dcp_world_size", dcp_world_size, minimum=1)
        config.keys = _hkv.KeySchemeOptions(
            _hkv.parse_key_function("sha256_cbor"),
            whole("hash_block_size", hash_block_size, minimum=1), None)
        config.caching = (_hkv.PrefixCaching.ENABLED if enable_caching
                          else _hkv.PrefixCaching.DISABLED)
        config.events = (_hkv.KvEventMode.ENABLED if enable_kv_cache_events
                         else _hkv.KvEventMode.DISABLED)
        config.free_order = _choice("free_order", free_order,
                                    _hkv.FreeOrder, _FREE_ORDERS)
        config.behaviour = _hkv.Behaviour.ENGINE
        # The engine has no miss causes: no record of evicted keys to tell
        # an evicted prefix apart (an evicting allocation runs faster).
        config.eviction_record = _hkv.EvictionRecord.OFF
        config.max_model_len = self.max_model_len
        config.max_in_flight_tokens = whole("max_num_batched_tokens",
                                            max_num_batched_tokens)
        self.cache = _hkv.CacheManager(config)  # the C++ cache, 1:1
        self._engine = engine.classes()
        self._scheme = self.cache.key_scheme
        self.hash_block_size = hash_block_size
        self.enable_caching = bool(enable_caching)
        self.use_eagle = use_eagle
        self.log_stats = bool(log_stats)
        self.metrics_collector = None
        self.prefix_cache_stats = self._engine.PrefixCacheStats() if log_stats \
            else None
        self.num_kv_cache_groups = len(groups)
        self.kv_cache_config = kv_cache_config
        specs = group_specs(kv_cache_config)
        self.kv_cache_event_metadata = tuple(engine.spec_kind(s)
                                             for s in specs)
        self._block_sizes = [g.block_size * config.dcp for g in config.groups]
        self._zeroed = tuple(type(s).__name__ in _ZEROED_SPECS for s in specs)
        self._new_block_ids = []
        self.pending_events = []
        self.block_pool = BlockPool(self, num_blocks, enable_caching,
                                    enable_kv_cache_events)
        self._views = self.block_pool.blocks
        self.empty_kv_cache_blocks = self._engine.KVCacheBlocks(
            tuple(() for _ in groups))
        self._tracked = {}  # request_id -> _Tracked
        # Read-only per-group views (the engine's coordinator, for tests and
        # tools that read req_to_blocks / num_cached_block).
        self.coordinator = Coordinator(self, self._block_sizes)
        # The token counts across which an allocation changes nothing.
        self._quiet_cells = _hkv.QuietCells(
            config.groups, self._block_sizes, self.max_model_len)
        # Bumped by every call that changes tables outside allocate_slots.
        self._epoch = 0
        self._next_id = 0
        self._bind_core(self.cache, self._quiet_cells, self._zeroed,
                        self._engine.BlocksOverIds, self._views,
                        self.block_pool, hash_block_size)

    # The calls the engine's scheduler makes ------------------------------

    @property
    def usage(self):
        """Fraction of usable blocks in use, 0 to 1."""
        return self.cache.usage

    def make_prefix_cache_stats(self):
        """The prefix-cache counters since the last call (one record per
        lookup, as the engine counts), or None without ``log_stats``."""
        if not self.log_stats:
            return None
        stats = self.prefix_cache_stats
        self.prefix_cache_stats = self._engine.PrefixCacheStats()
        return stats

    # get_computed_blocks is the core's too: a request's lookup before its
    # first allocation runs in C++ (its keys read as the lookup probes
    # them: a warm 128k-token prompt reads a few hundred of 8,192). Every
    # other lookup comes here.

    def _get_computed_blocks(self, request):
        """get_computed_blocks (the core's docstring) in full."""
        if not self.enable_caching or request.skip_reading_prefix_cache:
            return self.empty_kv_cache_blocks, 0
        tracked = self._entry(request)
        if tracked.holds:
            raise _hkv.UsageError(
                f"get_computed_blocks for request {request.request_id!r}, "
                "which holds blocks: only a new or preempted request looks up")
        if tracked.mirror is None:
            count = request.num_tokens // self.hash_block_size
            hit, num_hits = _hkv.vllm_lookup_keys(
                self.cache, tracked.id, request.num_tokens,
                self._keys(request, count), count)
        else:
            self._sync(tracked)
            hit = _hkv.VllmHit(self.cache.lookup(tracked.mirror))
            num_hits = hit.num_tokens
        tracked.hit = hit
        if self.log_stats:
            self._record_lookup(request, num_hits)
        # A hit of no tokens has no blocks in any group; a VllmHit called
        # gives its ids.
        blocks = (self._engine.BlocksOverIds(hit, self._views)
                  if num_hits else self.empty_kv_cache_blocks)
        tracked.hit_blocks = blocks
        return blocks, num_hits

    def _record_lookup(self, request, num_hits):
        """Counts a lookup in the prefix-cache statistics."""
        self.prefix_cache_stats.record(
            num_tokens=request.num_tokens, num_hits=num_hits,
            preempted=request.num_preemptions > 0)

    # allocate_slots is the core's (_hkv.VllmManagerCore, in C++): a
    # running request's call that changes nothing (its token counts in the
    # cells of its last allocation's quiet record, nothing else changed
    # since) returns at once, and one that allocates or caches without a
    # hit, connector tokens or events runs in C++ too, as does a request's
    # first (its mirror built, its lookup's hit adopted whole). Every other
    # call comes here with the arguments as the scheduler gave them.

    def _allocate_slots(self, request, num_new_tokens,
                        num_new_computed_tokens=0, new_computed_blocks=None,
                        num_lookahead_tokens=0, num_external_computed_tokens=0,
                        delay_cache_blocks=False, num_encoder_tokens=0,
                        full_sequence_must_fit=False):
        """allocate_slots (the core's docstring) in full."""
        if num_new_tokens == 0 and num_external_computed_tokens == 0:
            raise ValueError(
                "num_new_tokens must be greater than 0 when there are no "
                "external computed tokens")
        if num_encoder_tokens:
            raise _hkv.UsageError(
                f"num_encoder_tokens must be 0 (hkv has no cross-attention "
                f"groups), got {num_encoder_tokens!r}")
        tracked = self._track(request, sync=False)
        hit = (None if new_computed_blocks is None
               and not num_new_computed_tokens
               else self._hit(tracked, num_new_computed_tokens,
                              new_computed_blocks))
        computed = request.num_computed_tokens
        total_computed = min(computed + num_new_computed_tokens
                             + num_external_computed_tokens,
                             self.max_model_len)
        commit = None
        if self.enable_caching and not delay_cache_blocks:
            commit = min(total_computed + num_new_tokens, request.num_tokens)
        # The mirror's sync rides in the same call (_sync, one call less).
        num_new, keys, start, count = self._unsynced(tracked)
        try:
            placed = _hkv.vllm_allocate_slots(
                self.cache, tracked.mirror, num_new_tokens, computed, hit,
                num_lookahead_tokens, num_external_computed_tokens,
                full_sequence_must_fit, commit, self._zeroed,
                self._new_block_ids, num_new, keys, start, self._quiet_cells,
                self._epoch, total_computed)
        except Exception:
            if tracked.mirror.num_tokens != tracked.num_tokens:  # synced
                tracked.num_tokens = request.num_tokens
                tracked.num_keys = count
            raise
        if num_new:
            tracked.num_tokens, tracked.num_keys = request.num_tokens, count
        if placed is None:
            return None
        tables, tracked.quiet = placed
        tracked.holds = True
        tracked.hit = tracked.hit_blocks = None
        self.drain_events(tracked)
        return self._blocks(tables)

    def free(self, request):
        """Releases the request's blocks, last first (cached ones stay
        findable until evicted), and forgets it."""
        tracked = self._untrack(request.request_id)
        if tracked is not None and tracked.holds:
            self.cache.free(tracked.id)
            self.drain_events()

    def remove_skipped_blocks(self, request_id, total_computed_tokens):
        """Releases the request's blocks no step reads once
        ``total_computed_tokens`` are computed (out of a window, superseded
        states), replacing them with the null block."""
        self._epoch += 1
        tracked = self._tracked.get(request_id)
        if tracked is not None and tracked.holds:
            self.cache.remove_skipped_blocks(
                tracked.id,
                whole("total_computed_tokens", total_computed_tokens))

    def evict_blocks(self, block_ids):
        """Drops the keys of the blocks (a connector failed to load them)."""
        self._epoch += 1
        self.cache.evict_blocks(sorted(block_ids))  # checks every id first
        self.drain_events()

    def reset_prefix_cache(self):
        """Drops every cached prefix; False (and no change) while any
        request holds blocks."""
        self._epoch += 1
        if not self.cache.reset_prefix_cache():
            return False
        self.drain_events()
        if self.log_stats:
            self.prefix_cache_stats.reset = True
        return True

    # get_num_common_prefix_blocks is the core's: a request holding blocks
    # is answered in one C++ call for every group. Every other comes here.

    def _get_num_common_prefix_blocks(self, running_request_id):
        """get_num_common_prefix_blocks (the core's docstring) in full."""
        if not self.enable_caching:
            return [0] * self.num_kv_cache_groups
        tracked = self._tracked.get(running_request_id)
        if tracked is None or not tracked.holds:
            raise _hkv.UsageError(
                f"request {running_request_id!r} holds no blocks")
        rid = tracked.id
        return [self.cache.num_common_prefix_blocks(rid, g)
                for g in range(self.num_kv_cache_groups)]

    # take_events, take_new_block_ids and new_step_starts are the core's
    # (one C call a step each); with events on, take_events comes here.

    def _take_events(self):
        """take_events (the core's docstring) in full."""
        self.drain_events()
        events, self.pending_events = self.pending_events, []
        metadata = self.kv_cache_event_metadata
        for event in events:
            if not isinstance(event, self._engine.BlockStored) or \
                    event.group_idx is None:
                continue
            if not 0 <= event.group_idx < len(metadata):
                self._engine.logger.warning(
                    "Group index `%s` not in KV cache metadata",
                    event.group_idx)
                continue
            (event.kv_cache_spec_kind,
             event.kv_cache_spec_sliding_window) = metadata[event.group_idx]
        return events

    def get_blocks(self, request_id):
        """The request's block table, per group."""
        tracked = self._tracked.get(request_id)
        if tracked is None or not tracked.holds:
            return self.empty_kv_cache_blocks
        return self._blocks(self.cache.block_tables(tracked.id))

    def holding_request_ids(self):
        """The ids of the requests that hold blocks, in admission order."""
        return [rid for rid, t in self._tracked.items() if t.holds]

    def get_block_ids(self, request_id):
        """The request's block ids, one list per group."""
        return self.get_blocks(request_id).get_block_ids()

    def cache_blocks(self, request, num_computed_tokens):
        """Caches the request's prefix up to ``num_computed_tokens`` (after
        an allocation with ``delay_cache_blocks``); a no-op with caching
        off."""
        if not self.enable_caching:
            return
        tracked = self._tracked.get(request.request_id)
        if tracked is None or not tracked.holds:
            raise _hkv.UsageError(
                f"cache_blocks for request {request.request_id!r}, which "
                "holds no blocks")
        self._epoch += 1
        self._sync(tracked)
        self.cache.commit(tracked.mirror,
                          whole("num_computed_tokens", num_computed_tokens))
        self.drain_events(tracked)

    def create_kv_cache_blocks(self, blocks):
        """The engine's KVCacheBlocks of per-group block lists (the shared
        empty one when there are none)."""
        return (self._engine.KVCacheBlocks(blocks) if any(blocks)
                else self.empty_kv_cache_blocks)

    # Helpers --------------------------------------------------------------

    def _blocks(self, tables):
        """KVCacheBlocks over per-group id lists (their block views built
        when read)."""
        if not any(tables):
            return self.empty_kv_cache_blocks
        return self._engine.BlocksOverIds(tables, self._views)

    def _hit(self, tracked, num_tokens, blocks):
        """The VllmHit to adopt: the request's lookup cut to
        ``num_tokens``, or None. Raises hkv.UsageError for a hit the
        request was not given."""
        own = blocks is not None and blocks is tracked.hit_blocks
        passed = blocks is not None and blocks is not \
            self.empty_kv_cache_blocks and (own or any(blocks.blocks))
        if not num_tokens and not passed:
            return None
        hit = tracked.hit
        if tracked.holds or hit is None:
            raise _hkv.UsageError(
                f"a hit for request {tracked.request.request_id!r}, which "
                + ("holds blocks already" if tracked.holds else
                   "get_computed_blocks has not looked up"))
        if num_tokens != hit.num_tokens:
            hit = _hkv.VllmHit(self.cache.truncate_hit(
                hit.cache_hit(), whole("num_new_computed_tokens", num_tokens)))
        elif own:  # the lookup's own blocks, whole: nothing to compare
            return hit
        if passed and blocks.get_block_ids() != hit():
            raise _hkv.UsageError(
                f"new_computed_blocks for request "
                f"{tracked.request.request_id!r} are not its lookup's "
                f"{num_tokens} tokens")
        return hit

    def _entry(self, request):
        """The _Tracked for ``request``, a new one (its mirror not built)
        if it has none. Raises hkv.UsageError for another live request with
        its id."""
        tracked = self._tracked.get(request.request_id)
        if tracked is None:
            tracked = _hkv.VllmTracked(request, self._next_id)
            self._next_id += 1
            self._tracked[request.request_id] = tracked
        elif tracked.request is not request:
            raise _hkv.UsageError(
                f"request id {request.request_id!r} is in use by another "
                "request, which holds blocks or was looked up and not freed")
        return tracked

    def _track(self, request, sync=True):
        """The _Tracked for ``request`` with its mirror built, keyed up to
        its current tokens (a new mirror always; one built before with
        ``sync``). Raises hkv.UsageError for another live request with its
        id."""
        tracked = self._entry(request)
        if tracked.mirror is None:
            self._build(tracked)
        elif sync:
            self._sync(tracked)
        return tracked

    def _keys(self, request, count):
        """The request's first ``count`` block hashes (placeholders with
        caching off, where the engine hashes nothing)."""
        hashes = request.block_hashes
        if not self.enable_caching:
            return [_PLACEHOLDER_KEY] * count
        if len(hashes) < count:
            raise _hkv.UsageError(
                f"request {request.request_id!r} has {len(hashes)} block "
                f"hashes for {request.num_tokens} tokens; "
                f"{count} expected at hash_block_size {self.hash_block_size}")
        if self.block_pool.digest_size is None and count:
            self.block_pool.digest_size = len(hashes[0])
        return hashes

    def _build(self, tracked):
        """Builds the mirror of ``tracked``'s request: keyed from its
        prompt, then its outputs."""
        request = tracked.request
        unit = self.hash_block_size
        prompt = request.num_prompt_tokens
        keys = self._keys(request, request.num_tokens // unit)
        if len(keys) != prompt // unit:  # else no copy (8,192 keys at 128k)
            keys = keys[:prompt // unit]
        lora = request.lora_request
        tracked.mirror = _hkv.Request.with_caller_keys(
            tracked.id, prompt, keys, self._scheme,
            _hkv.CacheRead.SKIPPED if request.skip_reading_prefix_cache
            else _hkv.CacheRead.ALLOWED,
            None if lora is None else lora.lora_int_id)
        tracked.num_tokens = prompt
        tracked.num_keys = prompt // unit
        self._sync(tracked)

    def _sync(self, tracked):
        """Appends the request's tokens hkv has not seen, with their keys."""
        num_new, keys, start, count = self._unsynced(tracked)
        if num_new:
            tracked.mirror.append_keyed_tokens(num_new, keys, start)
            tracked.num_tokens = tracked.request.num_tokens
            tracked.num_keys = count

    def _unsynced(self, tracked):
        """``(num_new, keys, start, count)``: the request's tokens hkv has
        not seen, the list whose items from ``start`` on are the keys of the
        units they complete, and the units then complete. Raises
        hkv.UsageError for tokens that shrank or keys that are short."""
        request = tracked.request
        num_tokens = request.num_tokens
        num_new = num_tokens - tracked.num_tokens
        if num_new == 0:
            return 0, (), 0, tracked.num_keys
        if num_new < 0:
            raise _hkv.UsageError(
                f"request {request.request_id!r} has {num_tokens} "
                f"tokens, fewer than the {tracked.num_tokens} seen: "
                "tokens only grow")
        count = num_tokens // self.hash_block_size
        keys = self._keys(request, count)
        if self.enable_caching:
            return num_new, keys, tracked.num_keys, count
        return num_new, keys[:count - tracked.num_keys], 0, count

    def drain_events(self, tracked=None):
        """Moves the C++ cache's events into ``pending_events`` as the
        engine's classes; blocks stored are the request ``tracked``'s (its
        tokens and LoRA). The block pool's ``kv_event_queue`` reads them."""
        if not self.block_pool.enable_kv_cache_events:
            return
        for event in self.cache.take_events():
            converted = self._convert(event, tracked)
            if converted is not None:
                self.pending_events.append(converted)

    def _convert(self, event, tracked):
        """One hkv event as the engine's."""
        key = self.block_pool.engine_key
        convert = self._engine.convert_block_hash
        if isinstance(event, _hkv.BlockRemoved):
            return self._engine.BlockRemoved(
                block_hashes=[convert(key(h)) for h in event.block_hashes],
                medium=_MEDIUM_GPU, group_idx=event.group)
        if isinstance(event, _hkv.AllBlocksCleared):
            return self._engine.AllBlocksCleared()
        group = event.group
        block_size = self._block_sizes[group]
        request = tracked.request if tracked is not None else None
        start = event.first_block * block_size
        end = start + len(event.block_hashes) * block_size
        lora = None if request is None else request.lora_request
        parent = event.parent_block_hash
        return self._engine.BlockStored(
            block_hashes=[convert(key(h)) for h in event.block_hashes],
            parent_block_hash=None if parent is None else convert(key(parent)),
            token_ids=[] if request is None
            else list(request.all_token_ids[start:end]),
            block_size=block_size,
            lora_id=None if lora is None else lora.lora_int_id,
            medium=_MEDIUM_GPU,
            lora_name=None if lora is None else lora.lora_name,
            extra_keys=None, group_idx=group)
