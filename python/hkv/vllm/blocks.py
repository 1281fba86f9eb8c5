"""Views of hkv's blocks shaped like the reference engine's: a block
(``KVCacheBlock``: ``block_id``, ``ref_cnt``, ``block_hash``, ``is_null``)
and the block pool (``BlockPool``: counts, usage, the free queue, cached
lookups, eviction), read live from the C++ cache. The engine's scheduler,
connectors and metrics read these; they hold no state of their own.
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

    def __repr__(self):
        return f"KVCacheBlock(block_id={self.block_id}, ref_cnt={self.ref_cnt})"


class FreeBlockQueue:
    """The free queue, the next block to be allocated first."""

    __slots__ = ("_pool",)

    def __init__(self, pool):
        self._pool = pool

    @property
    def num_free_blocks(self):
        return self._pool.cache.num_free_blocks

    def get_all_free_blocks(self):
        blocks = self._pool.blocks
        return [blocks[i] for i in self._pool.cache.free_queue()]


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
