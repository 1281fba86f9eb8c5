"""The classes hkv.vllm.KVCacheManager returns: the reference engine's
when its package imports, else hkv's stand-ins with the same fields and
methods.

``classes()`` resolves them when a manager is built (not when hkv.vllm is
imported, which may come before the engine is on the path): a namespace
with ``KVCacheBlocks`` (and ``BlocksOverIds``, its subclass made from
block ids), ``BlockStored``, ``BlockRemoved``,
``AllBlocksCleared``, ``PrefixCacheStats``, ``convert_block_hash`` (the
engine's ``maybe_convert_block_hash``: bytes, or 64-bit integers under
``VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES``), ``logger`` (the engine's manager module's, which its operators watch) and
``engine`` (whether these are the engine's).
"""

import dataclasses
import itertools
import logging
import types


@dataclasses.dataclass
class KVCacheBlocks:
    """Blocks per cache group: ``blocks[g]`` lists group g's blocks
    (objects with ``block_id``, ``block_hash``, ``ref_cnt``, ``is_null``)."""
    blocks: tuple

    def __add__(self, other):
        return KVCacheBlocks(tuple(list(itertools.chain(a, b))
                                   for a, b in zip(self.blocks, other.blocks)))

    def get_block_ids(self, allow_none=False):
        """One list of block ids per group; None for no blocks at all when
        ``allow_none``."""
        if allow_none and all(len(g) == 0 for g in self.blocks):
            return None
        return tuple([b.block_id for b in g] for g in self.blocks)

    def get_unhashed_block_ids(self):
        """The ids of the one group's blocks not cached."""
        if len(self.blocks) != 1:
            raise ValueError("Only one group is supported")
        return [b.block_id for b in self.blocks[0] if b.block_hash is None]

    def get_unhashed_block_ids_all_groups(self):
        """Per group, the ids of its blocks neither cached nor null."""
        return [[b.block_id for b in g
                 if b.block_hash is None and not b.is_null]
                for g in self.blocks]

    def new_empty(self):
        return KVCacheBlocks(tuple(() for _ in self.blocks))


@dataclasses.dataclass
class BlockStored:
    """Blocks newly cached in one group, oldest first."""
    block_hashes: list
    parent_block_hash: object
    token_ids: list
    block_size: int
    lora_id: int | None
    medium: str | None
    lora_name: str | None
    extra_keys: list | None = None
    group_idx: int | None = None
    kv_cache_spec_kind: str | None = None
    kv_cache_spec_sliding_window: int | None = None


@dataclasses.dataclass
class BlockRemoved:
    """Blocks of one group no longer cached."""
    block_hashes: list
    medium: str | None
    group_idx: int | None = None


@dataclasses.dataclass
class AllBlocksCleared:
    """The whole prefix cache was dropped."""


@dataclasses.dataclass
class PrefixCacheStats:
    """Prefix-cache counters since the last make_prefix_cache_stats."""
    reset: bool = False
    requests: int = 0
    queries: int = 0
    hits: int = 0
    preempted_requests: int = 0
    preempted_queries: int = 0
    preempted_hits: int = 0

    def record(self, num_tokens, num_hits, preempted):
        if preempted:
            self.preempted_requests += 1
            self.preempted_queries += num_tokens
            self.preempted_hits += num_hits
        else:
            self.requests += 1
            self.queries += num_tokens
            self.hits += num_hits


# The engine's KVCacheSpecKind values by spec class name, most specific
# first (its get_kv_cache_spec_kind's order).
_SPEC_KINDS = (
    ("SlidingWindowMLASpec", "sliding_window_mla"),
    ("MLAAttentionSpec", "mla_attention"),
    ("SinkFullAttentionSpec", "sink_full_attention"),
    ("FullAttentionSpec", "full_attention"),
    ("ChunkedLocalAttentionSpec", "chunked_local_attention"),
    ("SlidingWindowSpec", "sliding_window"),
    ("MambaSpec", "mamba"),
)


def spec_kind(spec):
    """``(kind, sliding window)`` as the engine annotates stored events:
    its KVCacheSpecKind value for the spec's class (the engine's or hkv's
    namesake, or a dict's ``kind``), and the window of sliding-window
    specs."""
    if isinstance(spec, dict):
        names = {spec.get("kind")}
        window = spec.get("sliding_window")
    else:
        names = {t.__name__ for t in type(spec).__mro__}
        window = getattr(spec, "sliding_window", None)
    kind = next((k for name, k in _SPEC_KINDS if name in names), "unknown")
    if kind not in ("sliding_window", "sliding_window_mla"):
        window = None
    return kind, window


def _blocks_over_ids(base):
    """A subclass of ``base`` (a KVCacheBlocks class) made from block ids:
    ``get_block_ids`` answers from the ids and the block objects of
    ``blocks`` are built on their first read, so a scheduler that only
    passes the result back or asks for ids never builds them."""

    class BlocksOverIds(base):
        def __init__(self, ids, views):
            """``ids``: per-group id lists, or a callable returning them
            (called once, on first need); ``views``: the block objects by
            id."""
            self._ids = ids
            self._views = views
            self._built = None

        def ids(self):
            """The per-group id lists (shared: do not change them)."""
            if callable(self._ids):
                self._ids = self._ids()
            return self._ids

        @property
        def blocks(self):
            if self._built is None:
                views = self._views
                self._built = tuple([views[i] for i in g] for g in self.ids())
            return self._built

        @blocks.setter
        def blocks(self, value):
            self._built = tuple(value)
            self._ids = tuple([b.block_id for b in g] for g in self._built)

        def __eq__(self, other):
            """Equal to any KVCacheBlocks with the same blocks, as results
            built from block objects are."""
            if not isinstance(other, base):
                return NotImplemented
            return self.blocks == other.blocks

        __hash__ = None

        def get_block_ids(self, allow_none=False):
            ids = self.ids()
            if allow_none and not any(ids):
                return None
            return tuple(list(g) for g in ids)

    BlocksOverIds.__name__ = BlocksOverIds.__qualname__ = base.__name__
    return BlocksOverIds


_STAND_INS = types.SimpleNamespace(
    engine=False, KVCacheBlocks=KVCacheBlocks,
    BlocksOverIds=_blocks_over_ids(KVCacheBlocks), BlockStored=BlockStored,
    BlockRemoved=BlockRemoved, AllBlocksCleared=AllBlocksCleared,
    PrefixCacheStats=PrefixCacheStats, convert_block_hash=lambda h: h,
    logger=logging.getLogger("hkv.vllm"))
_resolved = None


def classes():
    """The engine's classes if it imports (looked up until it does), else
    the stand-ins."""
    global _resolved
    if _resolved is not None:
        return _resolved
    try:
        from vllm.distributed import kv_events
        from vllm.v1.core import kv_cache_manager, kv_cache_utils
        from vllm.v1.metrics.stats import PrefixCacheStats as Stats
    except ImportError:
        return _STAND_INS

    _resolved = types.SimpleNamespace(
        engine=True, KVCacheBlocks=kv_cache_manager.KVCacheBlocks,
        BlocksOverIds=_blocks_over_ids(kv_cache_manager.KVCacheBlocks),
        BlockStored=kv_events.BlockStored,
        BlockRemoved=kv_events.BlockRemoved,
        AllBlocksCleared=kv_events.AllBlocksCleared, PrefixCacheStats=Stats,
        convert_block_hash=kv_cache_utils.maybe_convert_block_hash,
        logger=kv_cache_manager.logger)
    return _resolved
