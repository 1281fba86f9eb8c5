"""hkv.vllm.KVCacheManager on its own (the engine's own tests, run on it,
are in vllm_compat/): the engine's signatures, read from its source; its
result shapes with hkv's stand-in classes; null padding; misuse."""
import ast
import inspect
import os
import pathlib
import subprocess
import sys

import pytest

import hkv
import hkv.vllm as v
from conftest import INSTALLED, ROOT, load_example

REFERENCE = pathlib.Path(os.environ.get(
    "HKV_VLLM_SRC", ROOT.parent / "shared" / "reference" / "vllm-28be48fa"))


def config(*specs, num_blocks=32):
    return v.KVCacheConfig(num_blocks=num_blocks, kv_cache_groups=[
        v.KVCacheGroupSpec([f"layer{i}"], spec)
        for i, spec in enumerate(specs)])


def manager(*specs, num_blocks=32, hash_block_size=16, **options):
    specs = specs or (v.FullAttentionSpec(block_size=16),)
    return v.KVCacheManager(config(*specs, num_blocks=num_blocks),
                            max_model_len=4096,
                            hash_block_size=hash_block_size, **options)


def admit(kv, request, num_new_tokens=None):
    blocks, hit = kv.get_computed_blocks(request)
    n = request.num_tokens - hit if num_new_tokens is None else num_new_tokens
    new = kv.allocate_slots(request, n, hit, blocks)
    if new is not None:
        request.num_computed_tokens = hit + n
    return hit, new


def engine_signatures():
    """The engine's KVCacheManager method signatures, from its source:
    name -> (parameter names, defaults as source text)."""
    path = REFERENCE / "vllm" / "v1" / "core" / "kv_cache_manager.py"
    if not path.exists():
        pytest.skip(f"no reference engine tree at {REFERENCE}")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    cls = next(n for n in tree.body
               if isinstance(n, ast.ClassDef) and n.name == "KVCacheManager")
    found = {}
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and (
                not node.name.startswith("_") or node.name == "__init__"):
            args = node.args.args[1:]
            found[node.name] = ([a.arg for a in args],
                                [ast.unparse(d) for d in node.args.defaults])
    return found


def test_every_engine_call_with_its_parameters_and_defaults():
    for name, (params, defaults) in engine_signatures().items():
        function = getattr(v.KVCacheManager, name)
        if isinstance(function, property):
            continue
        # allocate_slots is a C method with a text signature: read both
        # kinds as inspect does.
        ours = list(inspect.signature(function).parameters.values())[1:]
        ours = [p for p in ours if p.kind != p.KEYWORD_ONLY]
        assert [p.name for p in ours] == params, name
        ours_defaults = [repr(p.default) for p in ours
                         if p.default is not p.empty]
        assert ours_defaults == defaults, name


def test_a_shared_prefix_hits_whole_blocks_and_blocks_show_their_state():
    kv = manager(log_stats=True)
    a = v.Request("a", range(50))
    assert admit(kv, a) == (0, kv.get_blocks("a"))
    assert kv.get_block_ids("a") == ([1, 2, 3, 4],)
    b = v.Request("b", list(range(40)) + [9] * 10)
    hit, new = admit(kv, b)
    assert hit == 32 and new.get_block_ids() == ([5, 6],)
    table = kv.get_blocks("b").blocks[0]
    assert [blk.ref_cnt for blk in table] == [2, 2, 1, 1]
    assert table[0].block_hash == b.block_hashes[0] + bytes(4)
    assert table[3].block_hash is None
    assert kv.get_num_common_prefix_blocks("a") == [2]
    stats = kv.make_prefix_cache_stats()
    assert (stats.requests, stats.queries, stats.hits) == (2, 100, 32)
    assert kv.take_new_block_ids() == [1, 2, 3, 4, 5, 6]


def test_recurrent_align_tables_come_back_null_padded():
    kv = manager(v.FullAttentionSpec(block_size=16),
                 v.MambaSpec(block_size=16, mamba_cache_mode="align"))
    a = v.Request("a", range(40))
    _, new = admit(kv, a, 32)
    full, state = new.get_block_ids()
    assert len(full) == 2 and state[:-1] == [0] and state[-1] != 0
    # The next state block goes at the end; the engine returns it alone.
    new = kv.allocate_slots(a, 8)
    assert len(new.get_block_ids()[1]) == 1
    assert kv.get_block_ids("a")[1] == state + new.get_block_ids()[1]
    # Only exact full-attention groups are zeroed.
    assert all(i in kv.get_block_ids("a")[0]
               for i in kv.take_new_block_ids())


def test_preempted_requests_count_apart_and_reset_is_recorded():
    kv = manager(log_stats=True)
    a = v.Request("a", range(32))
    admit(kv, a)
    kv.free(a)
    a.num_preemptions, a.num_computed_tokens = 1, 0
    kv.get_computed_blocks(a)
    assert kv.reset_prefix_cache()
    stats = kv.make_prefix_cache_stats()
    assert (stats.preempted_requests, stats.preempted_queries,
            stats.preempted_hits, stats.reset) == (1, 32, 16, True)


def test_events_are_the_engines_shape():
    kv = manager(enable_kv_cache_events=True, num_blocks=4)
    a = v.Request("a", range(48))
    admit(kv, a)
    # Integers when the engine is loaded (its default), else bytes.
    convert = kv._engine.convert_block_hash
    (stored,) = kv.take_events()
    assert stored.group_idx == 0 and stored.block_size == 16
    assert stored.block_hashes == [convert(h) for h in a.block_hashes]
    assert stored.token_ids == list(range(48))
    assert stored.kv_cache_spec_kind == "full_attention"
    kv.free(a)
    b = v.Request("b", [7] * 16)
    admit(kv, b)
    removed, stored = kv.take_events()
    assert removed.block_hashes == [convert(a.block_hashes[2])]
    assert stored.block_hashes == [convert(h) for h in b.block_hashes]


def test_misuse_is_refused_and_changes_nothing():
    kv = manager()
    a = v.Request("a", range(40))
    with pytest.raises(ValueError, match="num_new_tokens must be greater"):
        kv.allocate_slots(a, 0)
    with pytest.raises(hkv.UsageError, match="num_encoder_tokens"):
        kv.allocate_slots(a, 40, num_encoder_tokens=4)
    with pytest.raises(hkv.UsageError, match="not looked up"):
        kv.allocate_slots(a, 8, 32)
    admit(kv, a)
    usage = kv.usage
    other = v.Request("a", [5] * 40)
    for call in (lambda: kv.get_computed_blocks(other),
                 lambda: kv.allocate_slots(other, 40)):
        with pytest.raises(hkv.UsageError, match="in use by another request"):
            call()
    with pytest.raises(hkv.UsageError, match="holds blocks already"):
        kv.allocate_slots(a, 1, 16, kv.get_blocks("a"))
    with pytest.raises(hkv.UsageError, match="holds no blocks"):
        kv.cache_blocks(v.Request("b", range(8)), 8)
    with pytest.raises(hkv.UsageError, match="block id 99"):
        kv.evict_blocks({1, 99})
    assert kv.usage == usage and kv.get_block_ids("a") == ([1, 2, 3],)


def test_a_lookup_reads_only_the_keys_it_probes():
    # A request not yet admitted is looked up over its block hashes as they
    # are, read as probed: a bad one the lookup never reaches is found when
    # the request is admitted, which refuses it and changes nothing.
    kv = manager(num_blocks=80)
    a = v.Request("a", range(1024))  # 64 block hashes
    admit(kv, a)
    kv.free(a)
    b = v.Request("b", range(1024))
    b.block_hashes[20] = None
    blocks, hit = kv.get_computed_blocks(b)
    assert hit == 1008
    usage, free = kv.usage, kv.block_pool.get_num_free_blocks()
    with pytest.raises(hkv.UsageError, match=r"keys\[20\] must be bytes"):
        kv.allocate_slots(b, 16, hit, blocks)
    assert (kv.usage, kv.block_pool.get_num_free_blocks()) == (usage, free)
    # A bad one the lookup probes (the deepest it may hit) fails it alone.
    c = v.Request("c", range(1024))
    c.block_hashes[62] = b"x" * 33
    with pytest.raises(hkv.UsageError, match=r"keys\[62\] must be bytes"):
        kv.get_computed_blocks(c)
    assert kv.get_computed_blocks(v.Request("d", range(1024)))[1] == 1008


def test_the_per_step_vectorcalls_check_their_arguments():
    # vllm_lookup_keys and vllm_allocate_slots are CPython functions, not
    # pybind11 methods: each argument is converted as pybind11 would, and a
    # bad one is named, before anything changes.
    from hkv import _hkv
    kv = manager(num_blocks=80)
    a = v.Request("a", range(64))
    admit(kv, a)
    tracked = kv._tracked["a"]
    usage = kv.usage
    good = [kv.cache, tracked.mirror, 16, 64, None, 0, 0, False, 80,
            kv._zeroed, [], 0, (), 4, kv._quiet_cells, 0, 64]
    for index, bad, name in ((2, -1, "num_new_tokens"),
                             (3, 2 ** 32, "num_computed_tokens"),
                             (4, "hit", "hit"),
                             (1, kv.cache, "request"),
                             (9, [True], "zeroed_groups"),
                             (10, (), "new_block_ids"),
                             (8, 1.5, "commit_tokens")):
        args = list(good)
        args[index] = bad
        with pytest.raises(hkv.UsageError,
                           match=rf"vllm_allocate_slots\(\): {name} must be"):
            _hkv.vllm_allocate_slots(*args)
    with pytest.raises(hkv.UsageError, match=r"takes 17 arguments, got 16"):
        _hkv.vllm_allocate_slots(*good[:-1])
    with pytest.raises(hkv.UsageError, match=r"num_keys must be an int"):
        _hkv.vllm_lookup_keys(kv.cache, 7, 64, a.block_hashes, -4)
    with pytest.raises(hkv.UsageError, match=r"fewer than the 5 asked for"):
        _hkv.vllm_lookup_keys(kv.cache, 7, 64, a.block_hashes, 5)
    hit, num_hits = _hkv.vllm_lookup_keys(kv.cache, 7, 64, a.block_hashes, 4)
    assert hit.num_tokens == num_hits == 48  # whole blocks, below 64
    assert kv.usage == usage and kv._tracked["a"].mirror.num_tokens == 64


def test_a_refused_allocation_keeps_the_mirror_in_step():
    # The tokens a request gained since hkv last saw it ride in the
    # allocation's call; a refusal after they went in leaves them counted.
    kv = manager()
    a = v.Request("a", range(40))
    admit(kv, a)
    a.append_output_token_ids(7)
    with pytest.raises(hkv.UsageError, match="exceed max_model_len 4096"):
        kv.allocate_slots(a, 5000)
    # Counted twice, the mirror would be a token ahead and want a key for
    # 48 tokens that the engine's 47 do not have.
    for _ in range(6):
        a.append_output_token_ids(7)
    assert kv.allocate_slots(a, 7).get_block_ids() == ([],)
    a.num_computed_tokens = 47
    a.append_output_token_ids(7)
    assert kv.allocate_slots(a, 1).get_block_ids() == ([],)
    assert kv.get_block_ids("a") == ([1, 2, 3],)


def test_free_order_is_the_engines_unless_asked():
    for order, expected in (("append_all", [4, 5, 3, 2, 1]),
                            ("prepend_uncached", [3, 4, 5, 2, 1])):
        kv = manager(num_blocks=6, free_order=order)
        a = v.Request("a", range(40))
        admit(kv, a)
        kv.free(a)
        queue = kv.block_pool.free_block_queue.get_all_free_blocks()
        assert [b.block_id for b in queue] == expected, order
    with pytest.raises(hkv.UsageError, match="free_order 'lifo'"):
        manager(free_order="lifo")


class CrossAttentionSpec:
    block_size = 16


def spec_dict(**spec):
    return {"num_blocks": 11, "kv_cache_groups": [{"kv_cache_spec": spec}]}


@pytest.mark.parametrize("bad,match", [
    ({"kv_cache_groups": []}, r"kv_cache_config\.num_blocks is missing"),
    ({"num_blocks": 11, "kv_cache_groups": 3}, "must be a list"),
    (spec_dict(kind="full_attention"),
     r"kv_cache_groups\[0\]\.kv_cache_spec\.block_size is missing"),
    (spec_dict(kind="sliding_window", block_size=16, sliding_window=0),
     r"kv_cache_spec\.sliding_window must be an int in \[1,"),
    (spec_dict(kind="mamba", block_size=16, mamba_cache_mode="some"),
     r"kv_cache_spec\.mamba_cache_mode must be one of align, all, none"),
    (spec_dict(kind="paged", block_size=16), "unknown spec kind 'paged'"),
    (spec_dict(block_size=16), r"kv_cache_spec\.kind is missing"),
    ({"num_blocks": 11,
      "kv_cache_groups": [{"kv_cache_spec": CrossAttentionSpec()}]},
     "hkv does not manage CrossAttentionSpec groups"),
])
def test_bad_config_names_the_field(bad, match):
    with pytest.raises(hkv.UsageError, match=match):
        v.KVCacheManager(bad, 1024, 16)


def test_configs_hkv_lacks_or_rejects():
    with pytest.raises(hkv.UsageError, match="pcp_world_size"):
        manager(pcp_world_size=2)
    with pytest.raises(hkv.UsageError, match="metrics_collector"):
        manager(metrics_collector=object())
    with pytest.raises(hkv.Error, match="hash unit"):
        manager(hash_block_size=5)


def test_example_scheduler_runs(capsys):
    example = load_example("scheduler_loop")
    assert example.main([]) == 0
    out = capsys.readouterr().out
    assert "12 requests" in out and "tokens hit" in out


@pytest.mark.skipif(INSTALLED, reason="checks python/ without the compiled "
                    "module; the installed package has it")
def test_import_without_the_extension(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    code = ("try:\n    import hkv.vllm\n"
            "except ImportError as err:\n    print(err)\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout
    assert "hkv.vllm needs the compiled extension hkv._hkv" in out
    assert "hkv_py" in out


def test_decode_inside_a_block_changes_nothing_then_the_block_is_cached():
    kv = manager(enable_kv_cache_events=True)
    a = v.Request("a", range(20))
    admit(kv, a)
    kv.take_events()
    for i in range(11):  # tokens 20..31: inside block 1
        a.append_output_token_ids(100 + i)
        assert kv.allocate_slots(a, 1) is kv.empty_kv_cache_blocks
        a.num_computed_tokens += 1
    assert kv.get_block_ids("a") == ([1, 2],) and kv.take_events() == []
    a.append_output_token_ids(111)  # the 32nd token fills block 1
    assert kv.allocate_slots(a, 1).get_block_ids() == ([],)
    (stored,) = kv.take_events()
    assert stored.token_ids == list(range(16, 20)) + list(range(100, 112))
    assert kv.block_pool.blocks[2].block_hash == a.block_hashes[1] + bytes(4)
    a.num_computed_tokens += 1
    a.append_output_token_ids(112)
    assert kv.allocate_slots(a, 1).get_block_ids() == ([3],)
    b = v.Request("b", list(a.all_token_ids) + [5])
    assert kv.get_computed_blocks(b)[1] == 32


def test_results_hold_block_ids_and_build_block_objects_when_read():
    kv = manager()
    admit(kv, v.Request("a", range(50)))
    kv.free(v.Request("a", range(50)))
    b = v.Request("b", range(50))
    blocks, hit = kv.get_computed_blocks(b)
    assert hit == 48 and blocks.get_block_ids() == ([1, 2, 3],)
    # Ids are fresh lists each time: a caller may extend them.
    blocks.get_block_ids()[0].append(7)
    assert blocks.get_block_ids() == ([1, 2, 3],)
    assert [blk.block_id for blk in blocks.blocks[0]] == [1, 2, 3]
    assert blocks == kv.create_kv_cache_blocks(
        (list(blocks.blocks[0]),))
    # A copy of the lookup's blocks is compared; a different one refused.
    other = kv.create_kv_cache_blocks((list(blocks.blocks[0][:2]),))
    with pytest.raises(hkv.UsageError, match="are not its lookup's"):
        kv.allocate_slots(b, 2, 48, other)
    new = kv.allocate_slots(b, 2, 48, blocks)
    (fresh,) = new.get_block_ids()
    assert len(fresh) == 1 and new.get_block_ids(allow_none=True) == (fresh,)
    assert kv.get_blocks("b").get_block_ids() == ([1, 2, 3] + fresh,)
