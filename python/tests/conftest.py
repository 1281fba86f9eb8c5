"""Shared fixtures: the repository root, and hkv importable from the build
tree named by HKV_PYTHON_BUILD (default build/release) and python/."""
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("HKV_PYTHON_BUILD",
                                    ROOT / "build" / "release"))
for path in (ROOT / "python", BUILD / "python"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
