"""Builds the Python package hkv for `pip install --no-build-isolation .`:
setuptools packages python/hkv/*.py; CMake builds the compiled module
hkv._hkv (target hkv_py, which links only the library) in setuptools'
build/temp.*/ folder and installs it with the bundled traces (component
python) into the package. CMAKE_ARGS adds CMake arguments, e.g.
CMAKE_ARGS=-DHKV_WERROR=ON."""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent


def version():
    """The CMake project's version, the one place it is written."""
    text = (ROOT / "CMakeLists.txt").read_text(encoding="utf-8")
    return re.search(r"project\(hkv VERSION ([0-9.]+)", text).group(1)


def configure_command(build):
    """The library and the module only, with the release preset's
    flags: ccache then reuses a release build's objects (given the preset's
    one other setting, CMAKE_ARGS=-DHKV_WERROR=ON); the installed module is
    stripped of the debug info. Each setting is passed every time, so that
    the build folder's cache keeps none from an earlier CMAKE_ARGS."""
    command = ["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
               f"-DPython_EXECUTABLE={sys.executable}",
               "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
               "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG",
               "-DHKV_BUILD_CLI=OFF", "-DHKV_BUILD_PYTHON=ON",
               "-DHKV_BUILD_TESTS=OFF", "-DHKV_BUILD_BENCH=OFF",
               "-DHKV_BUILD_FUZZ=OFF", "-DHKV_WERROR=OFF"]
    if shutil.which("ccache"):
        command.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    return command + shlex.split(os.environ.get("CMAKE_ARGS", ""))


class CMakeBuild(build_ext):
    """Builds hkv._hkv with CMake where setuptools expects it."""

    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve()
        # The extension's path is <prefix>/hkv/_hkv.<suffix>.
        prefix = pathlib.Path(self.get_ext_fullpath(ext.name)).parents[1]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL",
                              str(os.cpu_count() or 1))
        for command in (
                configure_command(build),
                ["cmake", "--build", str(build), "--target", "hkv_py",
                 "--parallel", jobs],
                ["cmake", "--install", str(build), "--component", "python",
                 "--prefix", str(prefix.resolve()), "--strip"]):
            subprocess.run(command, check=True)


setup(version=version(),
      ext_modules=[Extension("hkv._hkv", sources=[])],
      cmdclass={"build_ext": CMakeBuild})
