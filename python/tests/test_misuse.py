"""Misuse raises a ValueError subclass (hkv.UsageError for caller bugs,
hkv.Error for bad input) and leaves the manager usable."""
import pytest

import hkv


@pytest.fixture
def kv():
    return hkv.KVCacheManager(groups="full:16", num_blocks=11)


def test_exceptions_are_value_errors():
    assert issubclass(hkv.UsageError, ValueError)
    assert issubclass(hkv.Error, ValueError)


def test_free_of_a_request_holding_nothing(kv):
    r = kv.make_request("r", list(range(20)))
    with pytest.raises(hkv.UsageError, match="holds no blocks"):
        kv.free(r)


def test_double_free(kv):
    r = kv.make_request("r", list(range(20)))
    kv.get_computed_blocks(r)
    kv.allocate_slots(r, 20)
    kv.free(r)
    with pytest.raises(hkv.UsageError):
        kv.free(r)
    assert kv.num_free_blocks == 10


def test_commit_beyond_the_blocks_held(kv):
    r = kv.make_request("r", list(range(40)))
    kv.get_computed_blocks(r)
    kv.allocate_slots(r, 16)
    with pytest.raises(hkv.UsageError):
        kv.commit(r, 40)


def test_commit_beyond_the_requests_tokens_changes_nothing(kv):
    r = kv.make_request("r", list(range(80)))
    kv.get_computed_blocks(r)
    kv.allocate_slots(r, 80)
    with pytest.raises(hkv.UsageError, match="which has 80"):
        kv.commit(r, 1000)
    assert r.num_computed_tokens == 0
    kv.commit(r, 80)
    assert r.num_computed_tokens == 80


def test_request_keyed_with_another_scheme(kv):
    other = hkv.KVCacheManager(groups="full:32", num_blocks=11)
    r = other.make_request("r", list(range(40)))
    with pytest.raises(hkv.UsageError):
        kv.allocate_slots(r, 40)
    assert kv.num_free_blocks == 10


def test_request_needs_a_key_scheme():
    with pytest.raises(hkv.UsageError):
        hkv.Request("r", [1, 2, 3])


def test_bad_configs():
    with pytest.raises(hkv.Error, match="sliding needs window"):
        hkv.KVCacheManager(groups="full:16,sliding:16", num_blocks=11)
    with pytest.raises(hkv.Error):
        hkv.KVCacheManager(groups="full:16", num_blocks=11, hash_unit=5)
    with pytest.raises(hkv.UsageError, match="unknown group field"):
        hkv.KVCacheManager(groups=[{"kind": "full", "bloc_size": 16}],
                           num_blocks=11)
    with pytest.raises(hkv.UsageError, match="unknown group kind"):
        hkv.make_group({"kind": "fulll"})
    with pytest.raises(ValueError):
        hkv.KVCacheManager(groups="full:16", num_blocks=11,
                           key_function="md5")
    with pytest.raises(hkv.UsageError, match="free_order 'lifo'"):
        hkv.KVCacheManager(groups="full:16", num_blocks=11, free_order="lifo")


def test_short_pool_is_a_value_not_an_error(kv):
    r = kv.make_request("r", list(range(200)))
    kv.get_computed_blocks(r)
    assert kv.allocate_slots(r, 200) is None
    assert kv.num_free_blocks == 10


def test_plan_misuse():
    with pytest.raises(hkv.UsageError, match="bad geometry"):
        hkv.plan("llama-3.1-8b", budget="8GiB", context=8192,
                 geometries=["16/16"])
    with pytest.raises(hkv.Error, match="infeasible"):
        hkv.plan("glm53-flash-like", tp=2, budget="1GiB", context=262144,
                 geometries=["2048/256/256"])
    with pytest.raises(hkv.Error, match="not_found"):
        hkv.plan("no-such-model", budget="8GiB", context=8192)
    with pytest.raises(hkv.Error):
        hkv.plan("llama-3.1-8b", budget="8 parsecs", context=8192)


def test_extra_keys_isolate_requests(kv):
    prompt = list(range(40))
    base = kv.make_request("a", prompt)
    kv.get_computed_blocks(base)
    kv.allocate_slots(base, 40)
    kv.commit(base, 40)
    same = kv.make_request("b", prompt)
    salted = kv.make_request("c", prompt, cache_salt="tenant-2")
    lora = kv.make_request("d", prompt, lora_name="adapter")
    image = kv.make_request("e", prompt,
                            mm_features=[hkv.MultimodalItem("img", 4, 8)])
    assert kv.get_computed_blocks(same)[1] == 32
    for r in (salted, lora, image):
        assert kv.get_computed_blocks(r)[1] == 0
        kv.free(r)  # looked up, never admitted: forgotten


def test_salt_and_lora_of_one_name_are_isolated():
    """Untagged, a salt "x" and an adapter "x" gave the same first key: a
    salted request reused 16 of an adapter request's 40 tokens."""
    prompt = list(range(40))
    for writer, reader in (({"cache_salt": "x"}, {"lora_name": "x"}),
                           ({"lora_name": "x"}, {"cache_salt": "x"})):
        kv = hkv.KVCacheManager(groups="full:16", num_blocks=11)
        w = kv.make_request("w", prompt, **writer)
        kv.get_computed_blocks(w)
        kv.allocate_slots(w, 40)
        kv.commit(w, 40)
        kv.free(w)
        assert kv.get_computed_blocks(
            kv.make_request("same", prompt, **writer))[1] == 32
        assert kv.get_computed_blocks(
            kv.make_request("other", prompt, **reader))[1] == 0


def test_bad_key_extras_are_refused():
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11)
    with pytest.raises(hkv.UsageError, match="lora_path"):
        kv.make_request("a", [1, 2], lora_path="/a")
    with pytest.raises(hkv.UsageError, match="not sorted by offset"):
        kv.make_request("b", list(range(20)),
                        mm_features=[("b", 8, 2), ("a", 2, 2)])
    with pytest.raises(hkv.UsageError, match="prompt_embeds: 3 bytes"):
        kv.make_request("c", [1, 2], prompt_embeds=(b"abc", 2))
    with pytest.raises(hkv.UsageError, match="2-D"):
        kv.make_request("d", [1, 2], prompt_embeds=b"abcd")
    with pytest.raises(hkv.UsageError, match="32 bytes"):
        hkv.ExtraKey.prompt_embeds(b"short")


def test_unknown_manager_option():
    with pytest.raises(hkv.UsageError, match="unknown options"):
        hkv.KVCacheManager(groups="full:16", num_blocks=11, max_len=None)
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11,
                            max_model_len=64, retention_interval=None)
    assert kv.num_free_blocks == 10


def test_two_live_requests_cannot_share_an_id(kv):
    base = kv.make_request("a", list(range(40)))
    kv.get_computed_blocks(base)
    kv.allocate_slots(base, 40)
    kv.commit(base, 40)
    kv.free(base)
    first = kv.make_request("x", list(range(40)))
    twin = kv.make_request("x", list(range(100, 140)))
    assert kv.get_computed_blocks(first)[1] == 32
    free_before = kv.num_free_blocks
    # The twin would adopt (or overwrite) the first one's lookup.
    for call in (lambda: kv.get_computed_blocks(twin),
                 lambda: kv.allocate_slots(twin, 40),
                 lambda: kv.commit(twin, 16),
                 lambda: kv.free(twin)):
        with pytest.raises(hkv.UsageError, match="belongs to another live"):
            call()
    assert kv.num_free_blocks == free_before
    assert kv.allocate_slots(first, 8) is not None
    assert first.num_computed_tokens == 32
    kv.free(first)
    # Freed, the id is free for another request.
    assert kv.get_computed_blocks(twin)[1] == 0
    assert kv.allocate_slots(twin, 40) is not None


def test_a_lookup_of_another_request_is_refused(kv):
    base = kv.make_request("a", list(range(40)))
    kv.get_computed_blocks(base)
    kv.allocate_slots(base, 40)
    kv.commit(base, 40)
    r1 = kv.make_request("r1", list(range(40)))
    r2 = kv.make_request("r2", list(range(40)))
    blocks, _ = kv.get_computed_blocks(r2)
    with pytest.raises(hkv.UsageError, match="looked up for request"):
        kv.allocate_slots(r1, 8, new_computed_blocks=blocks)


def test_per_group_pools():
    kv = hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=12,
                            group_pool_blocks=[3, 8])
    r = kv.make_request("r", list(range(16)))
    kv.get_computed_blocks(r)
    # 16 tokens need 4 attention blocks; that pool has 3: nothing is taken.
    assert kv.allocate_slots(r, 16) is None
    assert kv.num_free_blocks == 11
    assert kv.allocate_slots(r, 12) is not None
    attention, states = kv.get_block_ids(r)
    assert attention == [1, 2, 3]
    assert all(b >= 4 for b in states if b != 0)
    with pytest.raises(hkv.Error, match="not 1 \\+ the per-group pools"):
        hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=11,
                           group_pool_blocks=[3, 8])
    with pytest.raises(hkv.UsageError, match="group_pool_blocks"):
        hkv.KVCacheManager(groups="full:4", num_blocks=4,
                           group_pool_blocks=[-3])


def test_rebalancing_pools():
    # The same allocation succeeds once the pools share their bytes: a
    # state slot is worth two attention slots, and one moves.
    kv = hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=8,
                            group_pool_blocks=[3, 4], pool_slot_bytes=[1, 2])
    assert kv.cache.num_block_ids == 1 + 11 + 5
    r = kv.make_request("r", list(range(16)))
    kv.get_computed_blocks(r)
    assert kv.allocate_slots(r, 16) is not None
    attention, _ = kv.get_block_ids(r)
    assert attention == [4, 1, 2, 3]
    moves = kv.take_pool_moves()
    assert moves.unparked == [4]
    assert len(moves.parked) == 1 and moves.parked[0] >= 12
    assert not kv.take_pool_moves()
    assert kv.cache.counters.parked_blocks == 1
    with pytest.raises(hkv.Error, match="pool_slot_bytes 0 is outside"):
        hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=8,
                           group_pool_blocks=[3, 4], pool_slot_bytes=[1, 0])
    with pytest.raises(hkv.UsageError, match="pool_slot_bytes"):
        hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=8,
                           group_pool_blocks=[3, 4], pool_slot_bytes=[1, -2])


def test_placement_retention():
    # One recurrent state per boundary, where a lookup lands: a resend of
    # a 33-token prompt resumes at 32 under either retention.
    for retention in ("placement", hkv.Retention.PLACEMENT, "reference"):
        kv = hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=40,
                                retention=retention)
        first = kv.make_request("a", list(range(33)))
        kv.get_computed_blocks(first)
        done = 0
        while done < 33:  # chunks as the split cuts them: [0, 32), [32, 33)
            n = kv.split_prefill(first, 33 - done)
            assert kv.allocate_slots(first, n) is not None
            done += n
            kv.commit(first, done)
        kv.free(first)
        again = kv.make_request("b", list(range(33)))
        _, hit = kv.get_computed_blocks(again)
        assert hit == 32
    with pytest.raises(hkv.Error, match="leave retention_interval unset"):
        hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=40,
                           retention="placement", retention_interval=0)
    with pytest.raises(hkv.UsageError, match="retention 'dense'"):
        hkv.KVCacheManager(groups="full:4", num_blocks=4, retention="dense")
