"""The spec's single-group vectors V-01 ... V-10 (reference-system.md §8.1)
and the hybrid vectors V-56 and V-60 (§8.4) through the Python API, as far
as the public API shows them: block ids, hits, free counts, copies, cached
blocks. The C++ versions (tests/spec_basics_test.cc, recurrent_test.cc)
also check reference counts and the free queue itself."""
import hashlib

import pytest

import hkv


def full16(num_blocks):
    return hkv.KVCacheManager(groups="full:16", num_blocks=num_blocks,
                              hash_unit=16)


def admit(kv, r):
    """Looks up and allocates all uncomputed tokens, then commits them.
    Returns (new block ids of group 0, hit blocks of group 0, hit tokens)."""
    blocks, hit = kv.get_computed_blocks(r)
    new = kv.allocate_slots(r, r.num_tokens - hit)
    if new is None:
        return None, blocks.get_block_ids()[0], hit
    kv.commit(r, r.num_tokens)
    return new.get_block_ids()[0], blocks.get_block_ids()[0], hit


def prefix48():
    return [0] * 16 + [1] * 16 + [2] * 16


def test_v01_allocation_hashes_full_blocks_only():
    kv = full16(11)
    r0 = kv.make_request("r0", prefix48() + [3] * 7)
    new, _, hit = admit(kv, r0)
    assert (new, hit) == ([1, 2, 3, 4], 0)
    assert len(r0.keys) == 3
    assert kv.cached_blocks_per_group() == [3]  # block 4 stays unhashed


def test_v02_to_v05_hits_and_free_queue_order():
    kv = full16(11)
    r0 = kv.make_request("r0", prefix48() + [3] * 7)
    admit(kv, r0)
    r1 = kv.make_request("r1", prefix48() + [3] * 5)
    assert admit(kv, r1) == ([5], [1, 2, 3], 48)  # V-02
    assert kv.num_free_blocks == 5
    kv.free(r0)  # V-03: the queue is [5,4,6,7,8,9,10,3,2,1] (V-05 shows it)
    kv.free(r1)
    r2 = kv.make_request("r2", prefix48() + [3] * 6)  # V-04
    assert admit(kv, r2) == ([5], [1, 2, 3], 48)
    assert kv.num_free_blocks == 6
    kv.free(r2)  # V-05
    r3 = kv.make_request("r3", [99] * 160)
    assert admit(kv, r3) == ([5, 4, 6, 7, 8, 9, 10, 3, 2, 1], [], 0)
    assert kv.num_free_blocks == 0


def test_v02_to_v05_with_the_append_all_free_order():
    """Upstream vLLM's order (spec §1.3's note): every freed block goes to
    the back. free(r0) walks [4, 3, 2, 1]: only 4 reaches 0, queue
    [6..10, 4]; free(r1) walks [5, 3, 2, 1]: [6..10, 4, 5, 3, 2, 1]. r2
    hits [1, 2, 3] and pops 6; free(r2) walks [6, 3, 2, 1]:
    [7..10, 4, 5, 6, 3, 2, 1], the order r3 takes them in."""
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11, hash_unit=16,
                            free_order="append_all")
    r0 = kv.make_request("r0", prefix48() + [3] * 7)
    admit(kv, r0)
    r1 = kv.make_request("r1", prefix48() + [3] * 5)
    assert admit(kv, r1) == ([5], [1, 2, 3], 48)
    kv.free(r0)
    kv.free(r1)
    r2 = kv.make_request("r2", prefix48() + [3] * 6)
    assert admit(kv, r2) == ([6], [1, 2, 3], 48)
    assert kv.num_free_blocks == 6
    kv.free(r2)
    r3 = kv.make_request("r3", [99] * 160)
    assert admit(kv, r3) == ([7, 8, 9, 10, 4, 5, 6, 3, 2, 1], [], 0)


def test_v08_with_the_append_all_free_order():
    """free(r0) walks [6, 5, 4, 3, 2, 1] behind the free block 10, free(r1)
    [9, 8, 7] behind them: r2 hits [1, 2] and pops 10 (the spec's order pops
    6, which it put in front)."""
    kv = hkv.KVCacheManager(groups="full:16", num_blocks=11, hash_unit=16,
                            free_order=hkv.FreeOrder.APPEND_ALL)
    r0 = kv.make_request("r0", list(range(87)))
    r1 = kv.make_request("r1", list(range(87, 135)))
    admit(kv, r0)
    admit(kv, r1)
    kv.free(r0)
    kv.free(r1)
    r2 = kv.make_request("r2", list(range(35)))
    assert admit(kv, r2) == ([10], [1, 2], 32)
    assert kv.num_free_blocks == 7


def test_v06_v07_decode_hashes_blocks_as_they_fill():
    kv = full16(11)
    r = kv.make_request("r", prefix48() + [3] * 7)
    assert admit(kv, r)[0] == [1, 2, 3, 4]
    r.append_output_token_ids([4] * 4)  # 59 tokens
    assert kv.allocate_slots(r, 4).get_block_ids() == ([],)
    kv.commit(r, 59)
    assert kv.cached_blocks_per_group() == [3]  # block 4 not full yet
    r.append_output_token_ids([5] * 19)  # 78 tokens
    assert len(kv.allocate_slots(r, 19).get_block_ids()[0]) == 1
    kv.commit(r, 78)
    assert kv.cached_blocks_per_group() == [4]  # block 4 hashed, 5 not
    assert kv.get_block_ids(r)[0][-1] == 5


def test_v08_eviction_follows_the_free_queue():
    kv = full16(11)
    r0 = kv.make_request("r0", list(range(87)))
    r1 = kv.make_request("r1", list(range(87, 135)))
    assert len(admit(kv, r0)[0]) == 6
    assert len(admit(kv, r1)[0]) == 3
    assert kv.num_free_blocks == 1
    kv.free(r0)
    kv.free(r1)  # queue [6,10,5,4,3,2,1,9,8,7]
    r2 = kv.make_request("r2", list(range(35)))
    assert admit(kv, r2) == ([6], [1, 2], 32)
    assert kv.num_free_blocks == 7


def test_v09_reused_block_loses_its_key():
    kv = full16(2)
    r0 = kv.make_request("r0", list(range(16)))
    assert admit(kv, r0)[0] == [1]
    assert kv.cached_blocks_per_group() == [1]
    kv.free(r0)
    assert admit(kv, kv.make_request("r1", list(range(15))))[0] == [1]
    assert kv.cached_blocks_per_group() == [0]


def test_v10_hit_block_is_protected_from_its_own_allocation():
    kv = full16(3)
    r0 = kv.make_request("r0", list(range(16)))
    r1 = kv.make_request("r1", list(range(16, 32)))
    assert admit(kv, r0)[0] == [1]
    assert admit(kv, r1)[0] == [2]
    kv.free(r0)
    kv.free(r1)
    assert admit(kv, kv.make_request("r2", list(range(32)))) == ([2], [1], 16)


def next_step(kv):
    kv.take_copies()
    kv.finish_step()


def test_v56_new_request_copies_the_shared_state():
    kv = hkv.KVCacheManager(groups=[{"kind": "full", "block_size": 2},
                                    {"kind": "recurrent", "block_size": 4}],
                            num_blocks=20, hash_unit=2)
    owner = kv.make_request("owner", [0, 0, 1, 1, 2, 2, 3])
    kv.get_computed_blocks(owner)
    assert kv.allocate_slots(owner, 6) is not None
    kv.commit(owner, 6)
    state = kv.get_block_ids(owner)[1][1]
    kv.free(owner)
    next_step(kv)
    r1 = kv.make_request("r1", [0, 0, 1, 1, 2, 2, 3, 3])
    blocks, hit = kv.get_computed_blocks(r1)
    assert hit == 6
    fa, m = blocks.get_block_ids()
    assert len(fa) == 3 and m == [0, state]
    new = kv.allocate_slots(r1, 2).get_block_ids()[1]
    assert len(new) == 1
    assert kv.get_block_ids(r1)[1][1] == new[0]
    assert hkv.BlockCopy(state, new[0], 1) in kv.take_copies()
    kv.commit(r1, 8)
    kv.finish_step()
    # The source keeps its key: a third request hits it again.
    r2 = kv.make_request("r2", [0, 0, 1, 1, 2, 2, 3, 4])
    blocks, hit = kv.get_computed_blocks(r2)
    assert hit == 6 and blocks.get_block_ids()[1] == [0, state]


def test_v60_both_groups_copy_their_partial_blocks():
    kv = hkv.KVCacheManager(groups="full:4,recurrent:4", num_blocks=20,
                            hash_unit=2)
    r0 = kv.make_request("r0", [0, 0, 1, 1, 2, 2, 3])
    kv.get_computed_blocks(r0)
    kv.allocate_slots(r0, 6)
    kv.commit(r0, 6)
    partial = kv.get_block_ids(r0)[0][1]
    kv.free(r0)
    next_step(kv)
    r1 = kv.make_request("r1", [0, 0, 1, 1, 2, 2, 3, 3])
    blocks, hit = kv.get_computed_blocks(r1)
    assert hit == 6
    assert [len(g) for g in blocks.get_block_ids()] == [2, 2]
    new = kv.allocate_slots(r1, 2).get_block_ids()
    assert len(new[0]) == 1 and new[0][0] != partial
    assert len(kv.take_copies()) == 2
    kv.finish_step()


def test_extra_keys_by_hand():
    """Spec §2.4's tagged tuples: unit 0's key from CBOR written out by hand
    (the seed "0", tokens 0..15), hashed with hashlib."""
    numpy = pytest.importorskip("numpy")  # python3-matplotlib brings it

    def sha256(hex_bytes):
        return hashlib.sha256(bytes.fromhex(hex_bytes)).digest()

    kv = full16(11)
    embeds = numpy.arange(32, dtype=numpy.float16).reshape(16, 2)
    r = kv.make_request("r", list(range(16)), lora_name="x",
                        lora_path="/a/x", prompt_embeds=embeds)
    digest = hashlib.sha256(embeds.tobytes()).hexdigest()  # 16 rows, 4 B
    assert r.keys[0] == sha256(
        "83" "5820" + sha256("6130").hex() +   # [seed key,
        "90" + bytes(range(16)).hex() +        #  [0, ..., 15],
        "82"                                   #  [
        "83646c6f72616178642f612f78"           #   ["lora", "x", "/a/x"],
        "826d70726f6d70745f656d62656473"       #   ["prompt_embeds",
        "5820" + digest)                       #    digest]]]
    unit = hkv._hkv.unit_extra_keys(r.extras, 0, 16)
    assert [k.as_tuple() for k in unit] == [
        ("lora", "x", "/a/x"), ("prompt_embeds", bytes.fromhex(digest))]
