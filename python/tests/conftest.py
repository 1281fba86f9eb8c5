"""Shared fixtures: the repository root, the build tree and where hkv comes
from.

By default hkv is imported from the build tree named by HKV_PYTHON_BUILD
(default build/release) and python/, both put first on sys.path. With
HKV_PYTHON_INSTALLED=1 the tests run against the installed package (`pip
install .`): nothing goes on sys.path, and BUILD is HKV_PYTHON_BUILD when
given, else None, which skips the tests that compare with the build tree's
`hkv` CLI."""
import importlib.util
import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
INSTALLED = os.environ.get("HKV_PYTHON_INSTALLED") == "1"
if INSTALLED:
    BUILD = (pathlib.Path(os.environ["HKV_PYTHON_BUILD"])
             if "HKV_PYTHON_BUILD" in os.environ else None)
else:
    BUILD = pathlib.Path(os.environ.get("HKV_PYTHON_BUILD",
                                        ROOT / "build" / "release"))
    for path in (ROOT / "python", BUILD / "python"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def pytest_configure(config):
    """An installed run must not import the sources (from a current
    directory of python/, say)."""
    if not INSTALLED:
        return
    import hkv
    if pathlib.Path(hkv.__file__).is_relative_to(ROOT / "python"):
        raise pytest.UsageError(
            f"HKV_PYTHON_INSTALLED=1 but hkv comes from {hkv.__file__}; run "
            "pytest where python/ is not on sys.path")


def cli():
    """The build tree's `hkv` CLI; skips the test without one."""
    if BUILD is None:
        pytest.skip("compares with the hkv CLI of a build tree; set "
                    "HKV_PYTHON_BUILD to one")
    path = BUILD / "bin" / "hkv"
    if not path.exists():
        pytest.skip(f"no {path}")
    return path


def python_env():
    """The environment of a Python subprocess that imports hkv from where
    this run does."""
    env = dict(os.environ)
    if not INSTALLED:
        env["PYTHONPATH"] = os.pathsep.join([str(BUILD / "python"),
                                             str(ROOT / "python")])
    return env


def load_example(name):
    """python/examples/NAME.py as a module (its main() not run)."""
    path = ROOT / "python" / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
