"""hkv.plan against the spec's worked example and `hkv plan --json`."""
import json
import subprocess

import pytest

import hkv
from conftest import ROOT, cli


def test_worked_tp2_example():
    # The spec's TP2 deployment: 7 draft tokens, no draft cache layers.
    model = str(ROOT / "tests" / "testdata" / "glm53-spec-tp2-example.json")
    row, = hkv.plan(model, tp=2, budget="64GiB",
                    context=262144, geometries=["2048/256/256"])
    assert row["geometry"] == "2048/256/256"
    assert row["stride_bytes"] == 12638208
    assert row["shared"]["blocks"] == 5437
    assert row["shared"]["blocks_per_request"] == 198
    assert row["shared"]["concurrency"] == 27
    assert row["shared"]["tokens"] == 7077888


def test_model_file_and_tuple_geometry():
    model = str(ROOT / "data" / "models" / "llama-3.1-8b.json")
    row, = hkv.plan(model, budget=40 << 30, context=131072,
                    geometries=[(16, 16, 16)])
    assert row["stride_bytes"] == 2097152
    assert row["shared"]["blocks"] == 20480


CLI_CASES = [
    ["--model", "glm53-flash-like", "--tp", "4", "--budget", "33GiB",
     "--context", "262144", "--geometry", "256/256/256", "--geometry",
     "2048/256/256", "--geometry", "auto"],
    ["--model", "glm53-flash-like", "--tp", "4", "--budget", "33GiB",
     "--context", "262144", "--search", "--max-unit", "256", "--top", "5"],
]


@pytest.mark.parametrize("args", CLI_CASES)
def test_matches_the_cli_json(args):
    out = subprocess.run([str(cli()), "plan", *args, "--json"], check=True,
                         capture_output=True, text=True).stdout
    opts = dict(zip(args[::2], args[1::2]))
    kwargs = {"tp": int(opts["--tp"]), "budget": opts["--budget"],
              "context": int(opts["--context"])}
    if "--search" in args:
        kwargs.update(search=True, max_unit=int(args[args.index(
            "--max-unit") + 1]), top=int(args[args.index("--top") + 1]))
    else:
        kwargs["geometries"] = [args[i + 1] for i, a in enumerate(args)
                                if a == "--geometry"]
    assert hkv.plan_report(opts["--model"], **kwargs) == json.loads(out)


PRESETS = ["glm53-flash-gb10x4", "glm53-flash-rtx6000x4-dcp4-dflash",
           "glm53-flash-rtx6000x4-dcp1-mtp"]


@pytest.mark.parametrize("geometry", ["256/256/256", "2048/256/256",
                                      "2048/2048/2048"])
@pytest.mark.parametrize("preset", PRESETS)
def test_plan_of_a_preset_is_the_capacity_simulate_reports(preset, geometry):
    """hkv plan --preset plans the deployment hkv simulate runs (its drafts,
    tokens in flight and draft layers): the engine's log line is the
    capacity simulate and compare report."""
    run = [str(cli()), "plan", "--preset", preset, "--geometry", geometry,
           "--json"]
    plan, = json.loads(subprocess.run(run, check=True, capture_output=True,
                                      text=True).stdout)["plans"]
    sim = json.loads(subprocess.run(
        [str(cli()), "simulate", "--preset", preset, "--geometry", geometry,
         "--limit", "2", "--quiet", "--json"], check=True,
        capture_output=True, text=True).stdout)
    report = sim[0] if isinstance(sim, list) else sim
    capacity = report["capacity"]
    assert plan["shared"]["reference_tokens"] == \
        capacity["engine_pool_tokens"]
    assert plan["shared"]["blocks_per_request"] == \
        capacity["blocks_per_request"]
