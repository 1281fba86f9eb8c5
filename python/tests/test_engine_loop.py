"""The engine example's hits equal the C++ replay's on the same requests:
hkv.replay (bound) and, when built, `hkv replay` on a file of them."""
import subprocess

import pytest

import hkv
from conftest import ROOT, cli, load_example

LIMIT = 200
TRACE = ROOT / "data" / "traces" / "mooncake_conversation_trace.jsonl"


@pytest.fixture(scope="module")
def trace():
    return hkv.read_mooncake_trace(str(TRACE))[:LIMIT]


@pytest.mark.parametrize("groups", ["", "full:256,recurrent:256"])
def test_hits_match_the_cpp_replay(trace, groups):
    example = load_example("engine_loop")
    args = example.parse_args(["--groups", groups, "--key-function",
                               "xxh3_128_cbor", "--quiet"])
    totals, run = example.run(trace, args)
    replay_groups = hkv.make_groups(groups) if groups else []
    expected = hkv.replay(trace, groups=replay_groups,
                          key_function=hkv.KeyFunction.XXH3_128_CBOR)
    assert totals["requests"] == expected.requests == LIMIT
    assert totals["prompt_tokens"] == expected.prompt_tokens
    assert totals["hit_tokens"] == expected.hit_tokens > 0
    assert totals["rejected_requests"] == expected.rejected_requests
    assert len(run["timeline"]["hit_ratio"]) == LIMIT


def test_hits_match_the_cli(trace, tmp_path):
    path = cli()
    lines = TRACE.read_text(encoding="utf-8").splitlines()[:LIMIT]
    small = tmp_path / "first.jsonl"
    small.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = subprocess.run([str(path), "replay", str(small)], check=True,
                         capture_output=True, text=True).stdout
    cli_hits = int(out.split("hit tokens")[1].split()[0])
    example = load_example("engine_loop")
    totals, _ = example.run(trace, example.parse_args(["--quiet"]))
    assert totals["hit_tokens"] == cli_hits
