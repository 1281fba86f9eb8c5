"""The engine flags hkv compare gives for the reference engine are the
engine's own options (EngineArgs.add_cli_args in its tree, what `vllm
serve` extends), with values it takes, carrying each configuration's
blocks, cache mode and deployment."""
import pytest

from .conftest import TREE

if TREE is None:
    pytest.skip("the reference engine's tree is not here",
                allow_module_level=True)

import ast  # noqa: E402

import hkv  # noqa: E402


def _engine_options():
    """The options `vllm serve` takes from EngineArgs.add_cli_args, read
    from the tree's source (importing it needs pydantic, transformers and
    huggingface_hub): every add_argument name, and the --no- form of each
    boolean (argparse.BooleanOptionalAction)."""
    source = (TREE / "vllm" / "engine" / "arg_utils.py").read_text()
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(
                node.func, "attr", None) == "add_argument":
            names |= {a.value for a in node.args
                      if isinstance(a, ast.Constant)
                      and str(a.value).startswith("--")}
    return names | {"--no-" + n[2:] for n in names}


def _literal(path, name):
    """The values of `name = Literal[...]` in the tree's `path`."""
    tree = ast.parse((TREE / path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(
                node.targets[0], "id", None) == name:
            return {e.value for e in node.value.slice.elts}
    raise AssertionError(f"no {name} in {path}")


OPTIONS = _engine_options()
CACHE_MODES = _literal("vllm/config/cache.py", "MambaCacheMode")
# Options taking a positive token or rank count.
COUNTS = {"--block-size", "--mamba-block-size", "--max-model-len",
          "--tensor-parallel-size", "--decode-context-parallel-size"}


def _parse(argv):
    """{option: value} of an argv the engine's parser would take; raises
    AssertionError naming what it would not."""
    out, words = {}, list(argv)
    while words:
        option = words.pop(0)
        assert option in OPTIONS, f"{option} is not an engine option"
        if option in ("--enable-prefix-caching",
                      "--no-enable-prefix-caching"):
            out["--enable-prefix-caching"] = not option.startswith("--no-")
            continue
        assert words, f"{option} has no value"
        value = words.pop(0)
        if option in COUNTS:
            assert value.isdigit() and int(value) > 0, (option, value)
            value = int(value)
        elif option == "--mamba-cache-mode":
            assert value in CACHE_MODES, value
        else:
            raise AssertionError(f"{option}: no check for its value")
        out[option] = value
    return out


DEPLOYMENTS = [
    dict(model="llama-3.1-8b", tp=1, budget_gib=20, context=131072),
    # No built-in geometry has the hash unit of one group sharded twice.
    dict(model="llama-3.1-8b", tp=1, dcp=2, budget_gib=20, context=65536,
         geometries=["256/256/512"]),
    dict(model="qwen3-next-80b-a3b", tp=1, budget_gib=40, context=131072),
    dict(model="gpt-oss-120b", tp=2, budget_gib=30, context=131072),
]


@pytest.mark.parametrize("deployment", DEPLOYMENTS,
                         ids=lambda d: f"{d['model']}-dcp{d.get('dcp', 1)}")
def test_every_configurations_flags_are_the_engines_options(deployment):
    report = hkv.compare(limit=200, **deployment)
    engine = report["on_the_engine"]
    assert engine["engine"] == "vllm@28be48fa"
    runnable = [c for c in report["configurations"]
                if c["engine"]["flags"] is not None]
    assert runnable, [c["engine"]["why_not"] for c in
                      report["configurations"]]
    assert engine["best"] in [c["label"] for c in runnable]
    for config in runnable:
        args = _parse(config["engine"]["flags"])
        # The report's blocks cover the DCP ranks' tokens; the engine's
        # --block-size is one rank's.
        dcp = deployment.get("dcp", 1)
        blocks = {g["block_size"] for g in config["groups"]}
        assert blocks == {args["--block-size"] * dcp}, config["label"]
        assert args["--enable-prefix-caching"] is True
        assert args["--max-model-len"] == deployment["context"]
        assert args["--tensor-parallel-size"] == deployment["tp"]
        assert args.get("--decode-context-parallel-size", 1) == \
            deployment.get("dcp", 1)
        recurrent = any(g["kind"] == "recurrent" for g in config["groups"])
        assert ("--mamba-block-size" in args) == recurrent
        if recurrent:
            assert args["--mamba-block-size"] == args["--block-size"]
            assert args["--mamba-cache-mode"] in ("align", "all")
    # Those it cannot run say which of the engine's rules stops them.
    for config in report["configurations"]:
        if config["engine"]["flags"] is None:
            assert config["engine"]["why_not"]


def test_an_option_the_engine_does_not_have_is_refused():
    """The check above can fail: the fork's --prefix-match-unit and a cache
    mode the engine does not name are refused."""
    assert "--block-size" in OPTIONS and "--mamba-cache-mode" in OPTIONS
    with pytest.raises(AssertionError, match="not an engine option"):
        _parse(["--block-size", "16", "--prefix-match-unit", "16"])
    with pytest.raises(AssertionError):
        _parse(["--mamba-cache-mode", "dense"])
