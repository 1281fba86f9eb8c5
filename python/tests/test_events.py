"""KV events, copies and prefix-cache stats through the Python API."""
import dataclasses
import hashlib

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


def test_events_carry_untagged_extra_keys():
    """Events report extras as spec §6.1 has them: untagged, in the keys'
    order, without the LoRA path."""
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11,
                            enable_kv_cache_events=True)
    embeds = bytes(range(80))  # 40 tokens x 2 bytes
    r = kv.make_request("r", list(range(40)), lora_name="x",
                        lora_path="/a/x", cache_salt="s",
                        mm_features=[("img", 10, 10)],
                        prompt_embeds=(embeds, 2))
    kv.get_computed_blocks(r)
    kv.allocate_slots(r, 40)
    kv.commit(r, 40)
    stored, = kv.take_events()
    assert stored.lora_name == "x"
    assert stored.extra_keys == [
        ["x", ("img", 10), "s", hashlib.sha256(embeds[0:32]).digest()],
        ["x", ("img", -6), hashlib.sha256(embeds[32:64]).digest()],
    ]
    plain = kv.make_request("p", list(range(100, 116)))
    kv.get_computed_blocks(plain)
    kv.allocate_slots(plain, 16)
    kv.commit(plain, 16)
    stored, = kv.take_events()
    assert stored.extra_keys == [None]


def test_usage_and_block_tables():
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11)
    r = kv.make_request("r", list(range(40)))
    kv.get_computed_blocks(r)
    new = kv.allocate_slots(r, 40, num_lookahead_tokens=8)
    assert new.get_block_ids() == ([1, 2, 3],)
    assert kv.get_block_ids(r) == ([1, 2, 3],)
    assert kv.usage == pytest.approx(0.3) and kv.num_free_blocks == 7
    assert kv.take_copies() == []
