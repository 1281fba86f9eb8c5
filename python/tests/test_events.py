"""KV events, copies and prefix-cache stats through the Python API."""
import dataclasses

import pytest

import hkv


@dataclasses.dataclass
class Group:  # any object with GroupSpec's fields works as a group
    kind: str = "full"
    block_size: int = 16


def test_events_and_stats():
    kv = hkv.KVCacheManager(groups=[Group()], num_blocks=11,
                            enable_kv_cache_events=True)
    r = kv.make_request("r", list(range(40)), lora_id=7)
    kv.get_computed_blocks(r)
    kv.allocate_slots(r, 40)
    kv.commit(r, 40)
    stored, = kv.take_events()
    assert isinstance(stored, hkv.BlockStored)
    assert stored.block_hashes == r.keys and len(r.keys) == 2
    assert stored.parent_block_hash is None
    assert stored.token_ids == list(range(32))
    assert (stored.block_size, stored.lora_id, stored.group) == (16, 7, 0)
    stats = kv.make_prefix_cache_stats()
    assert (stats.requests, stats.queries, stats.hits) == (1, 40, 0)
    assert not kv.reset_prefix_cache()  # r holds blocks
    kv.free(r)
    assert kv.reset_prefix_cache()
    events = kv.take_events()
    assert isinstance(events[-1], hkv.AllBlocksCleared)
    assert kv.make_prefix_cache_stats().reset
    assert kv.cached_blocks_per_group() == [0]


def test_usage_and_block_tables():
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11)
    r = kv.make_request("r", list(range(40)))
    kv.get_computed_blocks(r)
    new = kv.allocate_slots(r, 40, num_lookahead_tokens=8)
    assert new.get_block_ids() == ([1, 2, 3],)
    assert kv.get_block_ids(r) == ([1, 2, 3],)
    assert kv.usage == pytest.approx(0.3) and kv.num_free_blocks == 7
    assert kv.take_copies() == []
