"""hkv.vllm.KVCacheManager: the example scheduler, written against the
reference contract, gets the same hits, block tables and copies step by
step from it as from hkv.KVCacheManager driven with its own calls; the
reference's signatures; misuse."""
import inspect
import os
import subprocess
import sys
import types

import pytest

import hkv
import hkv.vllm as v
from conftest import INSTALLED, ROOT, load_example


class NativeKV:
    """The reference calls the example scheduler makes, each done with
    hkv.KVCacheManager's own: allocate_slots then commit up to the chunk's
    end (the reference caches at allocation), take_copies, finish_step when
    a step starts, free."""

    def __init__(self, kv):
        self.kv = kv
        self.native = {}  # request_id -> hkv.Request

    def _request(self, request):
        r = self.native.get(request.request_id)
        if r is None:
            r = self.kv.make_request(request.request_id,
                                     request.prompt_token_ids)
            self.native[request.request_id] = r
        if request.num_tokens > r.num_tokens:
            r.append_output_token_ids(request.all_token_ids[r.num_tokens:])
        return r

    def new_step_starts(self):
        self.kv.finish_step()

    def get_computed_blocks(self, request):
        return self.kv.get_computed_blocks(self._request(request))

    def split_prefill(self, request, n, hit, max_num_scheduled_tokens):
        return self.kv.split_prefill(
            self._request(request), n,
            num_computed_tokens=request.num_computed_tokens + hit,
            max_num_scheduled_tokens=max_num_scheduled_tokens)

    def allocate_slots(self, request, n, hit=0, blocks=None):
        r = self._request(request)
        new = self.kv.allocate_slots(
            r, n, num_computed_tokens=request.num_computed_tokens,
            new_computed_blocks=blocks)
        if new is not None:
            self.kv.commit(r, min(request.num_computed_tokens + hit + n,
                                  r.num_tokens))
        return new

    def take_kv_cache_block_copies(self):
        return [types.SimpleNamespace(src_block_id=c.source,
                                      dst_block_id=c.destination)
                for c in self.kv.take_copies()], []

    def get_block_ids(self, request_id):
        return self.kv.get_block_ids(self.native[request_id])

    @property
    def usage(self):
        return self.kv.usage

    def free(self, request):
        self.kv.free(self.native.pop(request.request_id))


def spec_of(entry):
    """An hkv.vllm spec from a group-list entry."""
    kind, block, *options = entry.split(":")
    opts = dict(o.split("=") for o in options)
    if kind == "full":
        return v.FullAttentionSpec(block_size=int(block))
    if kind == "sliding":
        return v.SlidingWindowSpec(block_size=int(block),
                                   sliding_window=int(opts["window"]))
    if kind == "chunked":
        return v.ChunkedLocalAttentionSpec(
            block_size=int(block), attention_chunk_size=int(opts["chunk"]))
    return v.MambaSpec(block_size=int(block),
                       mamba_cache_mode=opts.get("mode", "align"))


def config_of(groups, num_blocks):
    return v.KVCacheConfig(num_blocks, [], [
        v.KVCacheGroupSpec([f"layer{i}"], spec_of(g))
        for i, g in enumerate(groups.split(","))])


CONFIGS = [  # (group list, hash unit, blocks)
    ("full:32,recurrent:32,sliding:32:window=64", 16, 40),
    ("full:32,recurrent:32,sliding:32:window=64", 32, 64),
    ("full:32,recurrent:32:mode=all", 32, 48),
    ("full:32,chunked:32:chunk=128", 32, 48),
]


@pytest.mark.parametrize("groups,unit,blocks", CONFIGS)
def test_same_steps_as_the_native_manager(groups, unit, blocks):
    example = load_example("scheduler_loop")
    native = NativeKV(hkv.KVCacheManager(groups, blocks, hash_unit=unit,
                                         max_model_len=4096))
    shaped = v.KVCacheManager(config_of(groups, blocks), 4096, unit)
    expected = example.run(native, example.workload(), 128)
    steps = example.run(shaped, example.workload(), 128)
    assert steps == expected
    hits = [h for s in steps for h in s.hits.values()]
    assert max(hits) > 0
    assert len(hits) >= 12  # every request admitted at least once
    assert any(len(s.num_scheduled_tokens) > 1 for s in steps)
    assert sum(len(s.finished) for s in steps) == 12
    assert shaped.usage == native.usage == 0


def test_hybrid_run_preempts_copies_and_chunks():
    example = load_example("scheduler_loop")
    groups, unit, blocks = CONFIGS[0]
    steps = example.run(v.KVCacheManager(config_of(groups, blocks), 4096,
                                         unit), example.workload(), 128)
    assert sum(len(s.preempted) for s in steps) > 0
    assert sum(len(s.copies) for s in steps) > 0
    chunks = [n for s in steps for n in s.num_scheduled_tokens.values()]
    assert 1 in chunks and max(chunks) == 128  # decode, budget-bound chunks


def test_example_runs_as_a_script():
    env = dict(os.environ)
    build = os.environ.get("HKV_PYTHON_BUILD", str(ROOT / "build/release"))
    env["PYTHONPATH"] = os.pathsep.join([f"{build}/python",
                                         str(ROOT / "python")])
    out = subprocess.run(
        [sys.executable, str(ROOT / "python/examples/scheduler_loop.py")],
        env=env, capture_output=True, text=True, check=True).stdout
    assert "12 requests" in out and "preemptions" in out


# Signatures -------------------------------------------------------------


def params(function):
    return list(inspect.signature(function).parameters)


def test_reference_signatures():
    assert params(v.KVCacheManager.allocate_slots) == [
        "self", "request", "num_new_tokens", "num_new_computed_tokens",
        "new_computed_blocks", "num_lookahead_tokens",
        "num_external_computed_tokens", "delay_cache_blocks",
        "num_encoder_tokens", "full_sequence_must_fit"]
    assert params(v.KVCacheManager)[:10] == [
        "kv_cache_config", "max_model_len", "hash_block_size",
        "enable_caching", "use_eagle", "log_stats", "enable_kv_cache_events",
        "dcp_world_size", "pcp_world_size", "metrics_collector"]


def small(groups="full:16", num_blocks=11, **options):
    return v.KVCacheManager(config_of(groups, num_blocks), 1024, **options)


def test_allocate_slots_positional_order():
    kv = small(num_blocks=20)
    first = v.Request("a", range(40))
    kv.allocate_slots(first, 40)
    first.num_computed_tokens = 40
    r = v.Request("b", list(range(40)) + [7] * 8)
    blocks, hit = kv.get_computed_blocks(r)
    assert hit == 32
    # request, new, hit, hit blocks, lookahead: 32 + 16 + 8 tokens.
    new = kv.allocate_slots(r, 16, hit, blocks, 8)
    assert kv.get_block_ids("b")[0][:2] == blocks.get_block_ids()[0]
    assert len(kv.get_block_ids("b")[0]) == 4 and len(new.blocks[0]) == 2
    assert all(isinstance(b, v.KVCacheBlock) for b in new.blocks[0])


def test_a_state_registered_this_step_is_hit_from_the_next():
    kv = small("full:16,recurrent:16", num_blocks=20)
    kv.allocate_slots(v.Request("a", range(48)), 48)  # registers at once
    b = v.Request("b", list(range(48)) + [7] * 16)
    blocks, hit = kv.get_computed_blocks(b)
    assert hit == 48 and kv.allocate_slots(b, 16, hit, blocks) is None
    kv.new_step_starts()
    blocks, hit = kv.get_computed_blocks(b)
    assert hit == 48 and kv.allocate_slots(b, 16, hit, blocks) is not None


def test_free_is_a_no_op_without_blocks():
    kv = small()
    kv.free(v.Request("never", range(20)))
    looked = v.Request("r", range(20))
    kv.get_computed_blocks(looked)
    kv.free(looked)
    kv.free(looked)
    again = v.Request("r", range(30))  # the id is free again
    kv.get_computed_blocks(again)
    assert kv.allocate_slots(again, 30) is not None
    assert kv.usage == pytest.approx(0.2)


def test_none_on_no_room_changes_nothing():
    kv = small(num_blocks=6)  # 5 usable blocks
    a = v.Request("a", range(64))
    kv.allocate_slots(a, 48)
    a.num_computed_tokens = 48
    before = (kv.usage, kv.get_block_ids("a"))
    b = v.Request("b", range(100, 140))
    blocks, hit = kv.get_computed_blocks(b)
    assert kv.allocate_slots(b, 40, hit, blocks) is None
    assert kv.allocate_slots(a, 16 + 32) is None  # 3 more blocks: 2 are free
    assert (kv.usage, kv.get_block_ids("a")) == before
    assert kv.get_block_ids("b") == ([],)
    assert kv.allocate_slots(a, 16, full_sequence_must_fit=True) is not None
    kv.free(a)
    assert kv.allocate_slots(v.Request("c", range(96)), 16,
                             full_sequence_must_fit=True) is None
    blocks, hit = kv.get_computed_blocks(b)
    assert kv.allocate_slots(b, 40, hit, blocks) is not None


def test_blocks_shapes():
    kv = small("full:16,recurrent:16", num_blocks=20)
    r = v.Request("a", range(40))
    new = kv.allocate_slots(r, 40)
    table = kv.get_block_ids("a")
    assert new.get_block_ids() == (table[0], table[1][-1:])
    assert (new + new.new_empty()) == new
    assert kv.empty_kv_cache_blocks.get_block_ids(allow_none=True) is None
    assert kv.get_blocks("a").blocks[1][0].is_null
    assert kv.get_num_common_prefix_blocks("a") == [0, 0]
    copies, retained = kv.take_kv_cache_block_copies()
    assert copies == [] and retained == []


def test_stats_events_reset_and_delayed_caching():
    kv = small(num_blocks=20, log_stats=True, enable_kv_cache_events=True)
    a = v.Request("a", range(40))
    kv.allocate_slots(a, 40, delay_cache_blocks=True)
    assert kv.get_computed_blocks(v.Request("b", range(40)))[1] == 0
    kv.cache_blocks(a, 32)
    assert kv.get_computed_blocks(v.Request("c", range(40)))[1] == 32
    assert any(isinstance(e, hkv.BlockStored) for e in kv.take_events())
    assert kv.make_prefix_cache_stats().requests == 1
    assert kv.reset_prefix_cache() is False
    kv.free(a)
    kv.free(v.Request("c", []))
    assert kv.reset_prefix_cache() is True
    assert small().make_prefix_cache_stats() is None


def test_key_extras_and_engine_shaped_objects():
    class FullAttentionSpec:  # an engine spec's class name and fields
        block_size = 16
    config = {"num_blocks": 20,
              "kv_cache_groups": [{"kv_cache_spec": FullAttentionSpec()}]}
    kv = v.KVCacheManager(config, 1024)
    engine_request = types.SimpleNamespace(
        request_id="e", all_token_ids=list(range(40)), num_prompt_tokens=40,
        num_computed_tokens=0, status=v.RequestStatus.WAITING,
        cache_salt="salt", lora_request=None, mm_features=[])
    kv.allocate_slots(engine_request, 40)
    assert kv.get_computed_blocks(v.Request("plain", range(40)))[1] == 0
    salted = v.Request("salted", range(40), cache_salt="salt")
    assert kv.get_computed_blocks(salted)[1] == 32


def test_truncate_and_eagle():
    kv = small(num_blocks=20)
    kv.allocate_slots(v.Request("a", range(48)), 48)
    blocks, hit = kv.get_computed_blocks(v.Request("b", range(48)))
    cut = kv.truncate_computed_blocks(blocks, 16)
    assert hit == 32
    assert cut.get_block_ids() == (blocks.get_block_ids()[0][:1],)
    eagle = small(num_blocks=20, use_eagle=True)
    eagle.allocate_slots(v.Request("a", range(48)), 48)
    assert eagle.get_computed_blocks(v.Request("b", range(48)))[1] == 16


# Misuse -----------------------------------------------------------------


def spec_dict(**fields):
    return {"num_blocks": 11, "kv_cache_groups": [{"kv_cache_spec": fields}]}


class CrossAttentionSpec:
    block_size = 16


@pytest.mark.parametrize("config,match", [
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
def test_bad_config_names_the_field(config, match):
    with pytest.raises(hkv.UsageError, match=match):
        v.KVCacheManager(config, 1024)


def test_configs_hkv_lacks_or_rejects():
    with pytest.raises(hkv.UsageError, match="pcp_world_size"):
        small(pcp_world_size=2)
    with pytest.raises(hkv.UsageError, match="metrics_collector"):
        small(metrics_collector=object())
    with pytest.raises(hkv.Error, match="hash unit"):
        small(hash_block_size=5)
    with pytest.raises(hkv.Error, match="draft model"):
        small("full:16,chunked:16:chunk=64", use_eagle=True)


def test_allocation_misuse_changes_nothing():
    kv = small(num_blocks=20)
    a = v.Request("a", range(40))
    with pytest.raises(hkv.UsageError, match="num_new_tokens must be"):
        kv.allocate_slots(a, 0)
    with pytest.raises(hkv.UsageError, match="num_encoder_tokens"):
        kv.allocate_slots(a, 40, num_encoder_tokens=4)
    with pytest.raises(hkv.UsageError, match="not looked up"):
        kv.allocate_slots(a, 8, 32)
    a.num_computed_tokens = 8
    with pytest.raises(hkv.UsageError, match="num_computed_tokens must be 0"):
        kv.allocate_slots(a, 8)
    a.num_computed_tokens = 0
    kv.allocate_slots(a, 40)
    a.num_computed_tokens = 40
    with pytest.raises(hkv.UsageError, match="only its first allocation"):
        kv.allocate_slots(a, 1, 16)
    a.all_token_ids.pop()
    with pytest.raises(hkv.UsageError, match="tokens only grow"):
        kv.allocate_slots(a, 1)
    with pytest.raises(hkv.UsageError, match="holds no blocks"):
        kv.cache_blocks(v.Request("b", range(8)), 8)
    assert kv.usage == pytest.approx(3 / 19)


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
