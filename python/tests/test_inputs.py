"""Bad arguments raise hkv.UsageError naming the argument (never pybind11's
bare "Unable to cast" RuntimeError or an "incompatible function arguments"
TypeError), and bad traces raise hkv.Error naming file and line."""
import pytest

import hkv
from hkv import _hkv

LINE = ('{"timestamp": 0, "input_length": 600, "output_length": 7, '
        '"hash_ids": [0, 1]}\n')


@pytest.fixture
def kv():
    return hkv.KVCacheManager(groups="full:16", num_blocks=11)


def test_limits_are_module_constants():
    assert _hkv.MAX_TOKENS_PER_REQUEST == 1 << 24
    assert _hkv.MAX_POOL_BLOCKS == 1 << 24
    assert _hkv.MAX_REQUESTS_PER_WORKLOAD == 1 << 20
    assert _hkv.MAX_TRACE_LINE_BYTES == 1 << 20
    assert _hkv.MAX_CONFIG_FILE_BYTES == 1 << 20


@pytest.mark.parametrize("kwargs, message", [
    ({"num_blocks": -1}, r"num_blocks must be an int in \[0, 4294967295\], "
                         r"got -1"),
    ({"num_blocks": 2**32}, r"num_blocks must be an int .* got 4294967296"),
    ({"num_blocks": 11.5}, r"num_blocks must be an int .* got 11.5"),
    ({"num_blocks": 11, "dcp": "2"}, r"dcp must be an int .* got '2'"),
    ({"num_blocks": 11, "hash_unit": -16}, r"hash_unit must be an int"),
    ({"num_blocks": 11, "max_model_len": 2**40}, r"max_model_len must be"),
    ({"num_blocks": 11, "key_function": 3}, r"key_function must be a str"),
    ({"num_blocks": 11, "seed": 7}, r"seed must be a str or None, got 7"),
])
def test_manager_arguments_are_named(kwargs, message):
    with pytest.raises(hkv.UsageError, match=message):
        hkv.KVCacheManager(groups="full:16", **kwargs)


def test_group_fields_are_named():
    with pytest.raises(hkv.UsageError, match=r"group field 'window' must be "
                                             r"an int .* got 1.5"):
        hkv.make_group({"kind": "sliding", "block_size": 16, "window": 1.5})
    with pytest.raises(hkv.UsageError, match="groups must be a group-list"):
        hkv.KVCacheManager(groups=16, num_blocks=11)


def test_scheduler_call_arguments_are_named(kv):
    r = kv.make_request("r", list(range(20)))
    kv.get_computed_blocks(r)
    with pytest.raises(hkv.UsageError, match="num_new_tokens must be an int"):
        kv.allocate_slots(r, -1)
    with pytest.raises(hkv.UsageError, match="num_lookahead_tokens must be"):
        kv.allocate_slots(r, 20, num_lookahead_tokens=2**32)
    with pytest.raises(hkv.UsageError, match="max_num_scheduled_tokens"):
        kv.split_prefill(r, 20, max_num_scheduled_tokens=None)
    assert kv.num_free_blocks == 10  # nothing was allocated
    kv.allocate_slots(r, 20)
    with pytest.raises(hkv.UsageError, match="num_computed_tokens must be"):
        kv.commit(r, "20")


def test_token_ids_are_named_by_position(kv):
    with pytest.raises(hkv.UsageError,
                       match=r"Request\(\): tokens\[2\] must be an int in "
                             r"\[0, 4294967295\], got -1"):
        kv.make_request("r", [1, 2, -1])
    with pytest.raises(hkv.UsageError,
                       match=r"Request\(\): tokens must be a list of token "
                             r"ids"):
        kv.make_request("r", 12)
    r = kv.make_request("r", [1, 2, 3])
    with pytest.raises(hkv.UsageError, match=r"append_tokens\(\): tokens\[0\]"):
        r.append_output_token_ids([2**32])
    assert r.num_tokens == 3


def test_request_extras_are_named(kv):
    with pytest.raises(hkv.UsageError, match="lora_id must be an int"):
        kv.make_request("r", [1, 2], lora_id=-3)
    with pytest.raises(hkv.UsageError, match=r"mm_features\[0\] must be"):
        kv.make_request("r", [1, 2], mm_features=[("img", 0)])
    with pytest.raises(hkv.UsageError, match=r"mm_features\[0\] offset"):
        kv.make_request("r", [1, 2], mm_features=[("img", -1, 1)])


def test_bound_calls_name_their_keyword_arguments(kv):
    r = kv.make_request("r", list(range(20)))
    with pytest.raises(hkv.UsageError,
                       match=r"allocate\(\): num_in_flight_tokens must be an "
                             r"int in \[0, 4294967295\], got -5"):
        kv.cache.allocate(r, 20, 0, None, num_in_flight_tokens=-5)
    with pytest.raises(hkv.UsageError, match=r"split_prefill\(\): "
                                             r"long_prefill_threshold"):
        kv.cache.split_prefill(r, 0, 20, long_prefill_threshold="x")


def test_trace_request_and_replay_arguments_are_named():
    with pytest.raises(hkv.UsageError,
                       match=r"TraceRequest\(\): input_length must be an int"):
        hkv.TraceRequest(0, -600, 7, [0, 1])
    with pytest.raises(hkv.UsageError, match=r"TraceRequest\(\): hash_ids "
                                             r"must be a list of"):
        hkv.TraceRequest(0, 600, 7, [0, -1])
    trace = [hkv.TraceRequest(0, 600, 7, [0, 1])]
    with pytest.raises(hkv.UsageError,
                       match=r"replay\(\): block_size must be an int in "
                             r"\[0, 4294967295\], got -16"):
        hkv.replay(trace, block_size=-16)
    with pytest.raises(hkv.UsageError, match=r"replay\(\): capacity_tokens"):
        hkv.replay(trace, capacity_tokens=1.5)
    assert hkv.replay(trace, key_function="xxh3_128_cbor").requests == 1
    with pytest.raises(hkv.Error, match="unknown key function"):
        hkv.replay(trace, key_function="md5")


@pytest.mark.parametrize("kwargs, message", [
    ({"limit": -1}, r"limit must be an int in \[0, 18446744073709551615\] or "
                    r"None, got -1"),
    ({"num_blocks": 2**40}, r"num_blocks must be an int in \[0, 4294967295\]"),
    ({"num_blocks": 0}, r"num_blocks: 0 is not a whole number in "
                        r"\[1, 16777215\]"),
    ({"num_blocks": 1 << 30}, r"num_blocks: 1073741824 is not a whole"),
    ({"time_scale": float("nan")}, r"time_scale: nan is not a number in "
                                   r"\(0, 1e\+12\]"),
    ({"budget_gib": float("inf")}, r"budget_gib: inf is not a number"),
    ({"spec_acceptance": 1.5}, r"spec_acceptance: 1.5 is not a number in "
                               r"\[0, 1\]"),
    ({"concurrency": 0}, r"concurrency: 0 is not a whole number in \[1, "),
])
def test_simulator_options_are_named(kwargs, message):
    with pytest.raises(hkv.UsageError, match=message):
        hkv.simulate(workload="repeat", **kwargs)


def test_simulator_input_errors_name_the_option():
    with pytest.raises(hkv.Error, match=r"--workload fanout:requests=1e8: "
                                        r"requests=100000000: 100000000 "
                                        r"requests exceed the limit"):
        hkv.simulate(workload="fanout:requests=1e8", groups="full:16",
                     num_blocks=100)
    with pytest.raises(hkv.Error, match="--vary concurrency= lists no values"):
        hkv.compare(vary="concurrency=", limit=5)


def test_trace_errors_name_file_and_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(LINE + LINE.replace('"timestamp": 0', '"timestamp": 1e400'))
    with pytest.raises(hkv.Error,
                       match=r"corruption: .*t\.jsonl:2: \"timestamp\" holds "
                             r"number '1e400'"):
        hkv.read_mooncake_trace(str(path))
    assert len(hkv.read_mooncake_trace(path, limit=1)) == 1  # a PathLike
    with pytest.raises(hkv.Error, match=r"io_error: cannot open .*absent: No "
                                        r"such file or directory"):
        hkv.read_mooncake_trace(str(tmp_path / "absent"))
    with pytest.raises(hkv.Error, match="is a directory"):
        hkv.read_mooncake_trace(str(tmp_path))
    with pytest.raises(hkv.UsageError, match=r"read_mooncake_trace\(\): limit"):
        hkv.read_mooncake_trace(str(path), limit=-1)


def test_plan_arguments_are_named(tmp_path):
    with pytest.raises(hkv.UsageError, match=r"context must be an int in "
                                             r"\[1, 4294967295\], got 0"):
        hkv.plan("llama-3.1-8b", budget="8GiB", context=0)
    with pytest.raises(hkv.UsageError, match=r"tp must be an int"):
        hkv.plan("llama-3.1-8b", budget="8GiB", context=8192, tp=-2)
    with pytest.raises(hkv.UsageError, match="unknown plan option 'max_len'"):
        hkv.plan("llama-3.1-8b", budget="8GiB", context=8192, max_len=4)
    with pytest.raises(hkv.UsageError, match="bad geometry"):
        hkv.plan("llama-3.1-8b", budget="8GiB", context=8192,
                 geometries=["16/16/4294967296"])
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (_hkv.MAX_CONFIG_FILE_BYTES + 1))
    with pytest.raises(hkv.Error, match="is larger than 1048576 bytes"):
        hkv.plan(str(big), budget="8GiB", context=8192)
