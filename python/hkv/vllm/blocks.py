"""Views of hkv's blocks shaped like the reference engine's: a block
(``KVCacheBlock``: ``block_id``, ``ref_cnt``, ``block_hash``, ``is_null``,
its free-queue neighbours), the block pool (``BlockPool``: counts, usage,
the free queue with its sentinels, cached lookups, eviction) and the
coordinator's per-group managers (``Coordinator``: each group's
``req_to_blocks`` and ``num_cached_block``), read live from the C++ cache.
The engine's scheduler, connectors, metrics and tests read these; they
hold no state of their own and change nothing.
"""

class KVCacheBlock:
    """Block ``block_id`` of the pool; block 0 is the null block."""

    __slots__ = ("block_id", "is_null", "_pool")

    def __init__(self, pool, block_id):
        self.block_id = block_id
        self.is_null = block_id == 0
        self._pool = pool

    @property
    def ref_cnt(self):
        """Block tables holding the block."""
        return self._pool.cache.ref_count(self.block_id)

    @property
    def block_hash(self):
        """The key the block is cached under with its group (the engine's
        BlockHashWithGroupId: digest, then the group as 4 bytes big-endian),
        or None."""
        found = self._pool.cache.block_key(self.block_id)
        if found is None:
            return None
        group, key = found
        return self._pool.engine_key(key) + group.to_bytes(4, "big")

    @property
    def next_free_block(self):
        """The block after this one in the free queue (the tail sentinel
        after the last), None when the block is not free."""
        return self._pool.free_block_queue.neighbour(self.block_id, +1)

    @property
    def prev_free_block(self):
        """The block before this one in the free queue (the head sentinel
        before the first), None when the block is not free."""
        return self._pool.free_block_queue.neighbour(self.block_id, -1)

    def __repr__(self):
        return f"KVCacheBlock(block_id={self.block_id}, ref_cnt={self.ref_cnt})"


class _Sentinel:
    """An end of the free queue (the engine's fake_free_list_head and
    _tail): the first free block after the head, the last before the tail,
    the other sentinel when the queue is empty."""

    __slots__ = ("_queue", "_head")

    def __init__(self, queue, head):
        self._queue = queue
        self._head = head

    @property
    def next_free_block(self):
        if not self._head:
            return None
        free = self._queue.get_all_free_blocks()
        return free[0] if free else self._queue.fake_free_list_tail

    @property
    def prev_free_block(self):
        if self._head:
            return None
        free = self._queue.get_all_free_blocks()
        return free[-1] if free else self._queue.fake_free_list_head


class FreeBlockQueue:
    """The free queue, the next block to be allocated first."""

    __slots__ = ("_pool", "fake_free_list_head", "fake_free_list_tail")

    def __init__(self, pool):
        self._pool = pool
        self.fake_free_list_head = _Sentinel(self, head=True)
        self.fake_free_list_tail = _Sentinel(self, head=False)

    @property
    def num_free_blocks(self):
        return self._pool.cache.num_free_blocks

    def get_all_free_blocks(self):
        blocks = self._pool.blocks
        return [blocks[i] for i in self._pool.cache.free_queue()]

    def neighbour(self, block_id, step):
        """The free block `step` (+1 or -1) places from block_id, a
        sentinel past an end; None when block_id is not free."""
        order = self._pool.cache.free_queue()
        if block_id not in order:
            return None
        i = order.index(block_id) + step
        if i < 0:
            return self.fake_free_list_head
        if i >= len(order):
            return self.fake_free_list_tail
        return self._pool.blocks[order[i]]


class CachedBlocks:
    """The prefix index: its size and truthiness (the engine's
    ``cached_block_hash_to_block``)."""

    __slots__ = ("_pool",)

    def __init__(self, pool):
        self._pool = pool

    def __len__(self):
        return self._pool.cache.num_cached_entries

    def __bool__(self):
        return len(self) > 0

    @property
    def _cache(self):
        """A snapshot of the map as the engine keeps it (its key, the block
        hash with the group, to {block id: block}), built by a walk of
        every block: for readers of the engine's map, such as its tests.
        Editing it changes nothing."""
        snapshot = {}
        for block in self._pool.blocks:
            key = block.block_hash
            if key is not None:
                snapshot.setdefault(key, {})[block.block_id] = block
        return snapshot


class BlockPool:
    """The engine's BlockPool calls over hkv's cache. ``digest_size`` is
    the length of the engine's block hashes, learnt from the first request
    (hkv keeps keys zero-padded to 32 bytes)."""

    def __init__(self, manager, num_gpu_blocks, enable_caching,
                 enable_kv_cache_events):
        self._manager = manager
        self.cache = manager.cache
        self.num_gpu_blocks = num_gpu_blocks
        self.enable_caching = enable_caching
        self.enable_kv_cache_events = enable_kv_cache_events
        self.blocks = [KVCacheBlock(self, i) for i in range(num_gpu_blocks)]
        self.null_block = self.blocks[0]
        self.free_block_queue = FreeBlockQueue(self)
        self.cached_block_hash_to_block = CachedBlocks(self)
        self.digest_size = None

    @property
    def kv_event_queue(self):
        """The events not taken yet (the engine's queue: a list)."""
        self._manager.drain_events()
        return self._manager.pending_events

    def engine_key(self, key):
        """hkv's 32-byte key as the engine's digest."""
        return key if self.digest_size is None else key[:self.digest_size]

    def get_cached_block(self, block_hash, kv_cache_group_ids):
        """The cached block of each group for ``block_hash`` (the engine's
        bare digest), or None unless every group has one."""
        found = []
        for group in kv_cache_group_ids:
            block_id = self.cache.find_cached(group, bytes(block_hash))
            if block_id is None:
                return None
            found.append(self.blocks[block_id])
        return found

    def get_num_free_blocks(self):
        return self.cache.num_free_blocks

    def get_usage(self):
        return self.cache.usage

    def evict_blocks(self, block_ids):
        """Drops the blocks' keys (a connector could not load them)."""
        self._manager.evict_blocks(block_ids)

    def reset_prefix_cache(self):
        return self.cache.reset_prefix_cache()

    def take_events(self):
        return self._manager.take_events()


class _ByRequest:
    """A read-only mapping, request id -> `value(request id)`, over the
    requests holding blocks (the engine's per-group dicts)."""

    __slots__ = ("_manager", "_value")

    def __init__(self, manager, value):
        self._manager = manager
        self._value = value

    def keys(self):
        return self._manager.holding_request_ids()

    def __len__(self):
        return len(self.keys())

    def __iter__(self):
        return iter(self.keys())

    def __contains__(self, request_id):
        return request_id in self.keys()

    def __getitem__(self, request_id):
        if request_id not in self:
            raise KeyError(request_id)
        return self._value(request_id)

    def get(self, request_id, default=None):
        return self[request_id] if request_id in self else default

    def items(self):
        return [(r, self._value(r)) for r in self.keys()]


class SingleTypeManager:
    """Group `group` of the coordinator: ``req_to_blocks`` (each request's
    blocks in the group, null blocks included) and ``num_cached_block``
    (the blocks of its table up to its last cached one, the positions the
    engine has cached)."""

    __slots__ = ("req_to_blocks", "num_cached_block", "block_size",
                 "kv_cache_group_id")

    def __init__(self, manager, group, block_size):
        pool = manager.block_pool
        self.kv_cache_group_id = group
        self.block_size = block_size

        def blocks(request_id):
            ids = manager.get_block_ids(request_id)[group]
            return [pool.blocks[i] for i in ids]

        def cached(request_id):
            table = blocks(request_id)
            return max((j + 1 for j, b in enumerate(table)
                        if not b.is_null and b.block_hash is not None),
                       default=0)

        self.req_to_blocks = _ByRequest(manager, blocks)
        self.num_cached_block = _ByRequest(manager, cached)


class Coordinator:
    """The engine's KVCacheCoordinator as far as its tests read it: one
    SingleTypeManager per group."""

    __slots__ = ("single_type_managers",)

    def __init__(self, manager, block_sizes):
        self.single_type_managers = tuple(
            SingleTypeManager(manager, g, b)
            for g, b in enumerate(block_sizes))
