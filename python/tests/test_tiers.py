"""The tier layer's bindings: stores, object groups and the chain answer as
the C++ API does, refusing misuse with the same errors."""
import socket

import pytest

from hkv import _hkv

KEY = b"k" * 32


def _group(key=KEY, end=16):
    return _hkv.ObjectGroup(key=key, end_tokens=end,
                            parts=[(0, b"page"), (1, b"state")])


def test_a_host_store_puts_gets_and_refuses_bad_names():
    store = _hkv.host_store(1 << 20)
    assert store.kind == "host"
    assert store.put("hkv-a", b"xyz") == "ok"
    assert store.get("hkv-a") == b"xyz"
    assert store.get("hkv-b") == "absent"
    assert store.put("Not A Name", b"x") == "error"
    assert store.list("hkv-") == ["hkv-a"]
    assert store.counters()["errors"] == 1


def test_the_chain_stores_and_loads_a_group_all_or_nothing(tmp_path):
    chain = _hkv.TierChain(model="m", geometry="g", stores=[
        _hkv.host_store(1 << 20), _hkv.open_file_store(str(tmp_path))])
    assert chain.num_tiers == 2
    assert chain.store([_group()]) == 1
    assert chain.find(KEY)[:2] == (16, [0, 1])
    assert chain.known_keys() == [KEY]
    loaded, missing = chain.load([KEY, b"z" * 32])
    assert loaded.parts == [(0, b"page"), (1, b"state")]
    assert missing is None
    chain.drop(KEY)
    assert chain.find(KEY) is None
    assert chain.load([KEY]) == [None]


def test_a_restarted_chain_relearns_a_file_tier_of_its_namespace(tmp_path):
    first = _hkv.TierChain(model="m", geometry="g",
                           stores=[_hkv.open_file_store(str(tmp_path))])
    first.store([_group()])
    again = _hkv.TierChain(model="m", geometry="g",
                           stores=[_hkv.open_file_store(str(tmp_path))])
    assert again.refresh() == 1
    assert again.load([KEY])[0].parts[1] == (1, b"state")
    other = _hkv.TierChain(model="m", geometry="other",
                           stores=[_hkv.open_file_store(str(tmp_path))])
    assert other.refresh() == 0
    assert other.load([KEY]) == [None]


def test_a_store_handed_to_a_chain_is_spent():
    store = _hkv.host_store(1 << 20)
    _hkv.TierChain(model="m", geometry="g", stores=[store])
    with pytest.raises(_hkv.UsageError, match="handed to a TierChain"):
        store.get("hkv-a")
    with pytest.raises(_hkv.UsageError, match="handed to a TierChain"):
        _hkv.TierChain(model="m", geometry="g", stores=[store])


@pytest.mark.parametrize("call, message", [
    (lambda: _hkv.TierChain(model="m", geometry="g", stores=[]),
     "at least one store"),
    (lambda: _hkv.TierChain(model="m", geometry="g", stores=["host"]),
     "stores must be ObjectStores"),
    (lambda: _hkv.TierChain(model="m", geometry="g", stores=[
        _hkv.host_store(1)]).store([_hkv.ObjectGroup(KEY, 0, [])]),
     "parts"),
    (lambda: _hkv.redis_store(port=0), "port"),
    (lambda: _hkv.redis_store(timeout_s=0), "timeout_s"),
    (lambda: _hkv.open_file_store(""), "directory"),
])
def test_misuse_is_refused_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_an_unreachable_redis_answers_error_and_the_chain_misses():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    chain = _hkv.TierChain(model="m", geometry="g", stores=[
        _hkv.redis_store(port=port, timeout_s=0.1)])
    assert chain.store([_group()]) == 0
    assert chain.load([KEY]) == [None]
    assert chain.counters()[0]["store"]["errors"] >= 1


def test_the_connector_reloads_a_request_through_the_chain():
    """hkv's own manager with the C++ TierConnector: serve, store, drop
    every GPU copy, resend; the load returns each block's bytes for the
    block the resend placed."""
    import hkv
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=64)
    chain = _hkv.TierChain(model="m", geometry="full16",
                           stores=[_hkv.host_store(1 << 20)])
    connector = _hkv.TierConnector(kv.config, chain, part_bytes=[8])
    tokens = list(range(1, 101))
    first = kv.make_request("a", tokens)
    kv.allocate_slots(first, len(tokens))
    kv.commit(first, len(tokens))
    table = kv.get_block_ids(first)[0]
    content = {b: b"blk%05d" % b for b in table}
    assert connector.store(kv.cache, first, lambda g, b: content[b]) > 0
    kv.free(first)
    kv.reset_prefix_cache()
    again = kv.make_request("b", tokens)
    reach = connector.lookup(kv.cache, again)
    assert reach.num_external_tokens == 96
    placed = kv.cache.allocate(
        again, num_new_tokens=len(tokens) - reach.hit.num_tokens
        - reach.num_external_tokens, hit=reach.hit,
        num_external_computed_tokens=reach.num_external_tokens)
    state, parts, _ = connector.load(kv.cache, again, reach, placed)
    assert state == "done"
    assert [(end, data) for _, _, end, data in parts] == \
        [(16 * (j + 1), content[table[j]]) for j in range(6)]
    assert connector.counters()["loads_done"] == 1


def test_the_connectors_read_must_return_bytes():
    import hkv
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=16)
    chain = _hkv.TierChain(model="m", geometry="g",
                           stores=[_hkv.host_store(1 << 20)])
    connector = _hkv.TierConnector(kv.config, chain)
    r = kv.make_request("a", list(range(1, 40)))
    kv.allocate_slots(r, 39)
    kv.commit(r, 39)
    with pytest.raises(_hkv.UsageError, match="must return bytes"):
        connector.store(kv.cache, r, lambda g, b: "text")
