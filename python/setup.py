"""Builds the switchyard wheel: the .py files of switchyard/, the extension _switchyard and the
libraries it loads (libswitchyard_internal.so, the backend plugins), side by side in the package
folder, where the extension finds them ($ORIGIN).

The extension is the one the project's CMake build makes (python/CMakeLists.txt), so it is
compiled with the library's own flags and headers:

- SWITCHYARD_BUILD_DIR=<a build tree> takes it, already built, from <tree>/python/switchyard
  (nothing is compiled: `pip install` then takes seconds). The tree must be configured for the
  Python that runs pip.
- Otherwise CMake configures and builds the repository (the library and the extension only,
  no tests or benchmarks) under setuptools' build_temp, so a fresh clone installs with
  `pip install --no-build-isolation ./python` — slower: it compiles the whole library.
  SWITCHYARD_CMAKE_ARGS adds configure arguments (e.g. "-DSWITCHYARD_CUDA=OFF").

Offline: needs setuptools and wheel from the system (--no-build-isolation) and numpy at run
time. docs/python.md, "Install".
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
REPO = Path(os.environ.get("SWITCHYARD_SOURCE_DIR", HERE.parent)).resolve()


def project_version():
    text = (REPO / "CMakeLists.txt").read_text()
    match = re.search(r"project\(switchyard\s+VERSION\s+([0-9.]+)", text)
    if not match:
        raise SystemExit(f"setup.py: no project version in {REPO / 'CMakeLists.txt'}")
    return match.group(1)


class CMakeBuild(build_ext):
    """Puts the CMake-built extension and its libraries into the package."""

    def build_extension(self, ext):
        package = self._built_package()
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = package / f"_switchyard{suffix}"
        if not built.exists():
            found = sorted(p.name for p in package.glob("_switchyard*"))
            raise SystemExit(f"setup.py: {built} is missing (found {found or 'nothing'}); the "
                             f"build tree was configured for another Python than "
                             f"{sys.executable}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, target)
        shutil.copymode(built, target)
        for library in sorted(package.glob("lib*.so*")):  # symlinks in the tree: copy the files
            shutil.copy(library.resolve(), target.parent / library.name)

    def _built_package(self):
        tree = os.environ.get("SWITCHYARD_BUILD_DIR")
        if tree:
            package = Path(tree).resolve() / "python" / "switchyard"
            if not package.is_dir():
                raise SystemExit(f"setup.py: SWITCHYARD_BUILD_DIR={tree} has no python/switchyard;"
                                 f" build it first: cmake --build {tree} --target "
                                 "switchyard_python_package")
            return package
        tree = Path(self.build_temp).resolve() / "cmake"
        if not (tree / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            extra = shlex.split(os.environ.get("SWITCHYARD_CMAKE_ARGS", ""))
            subprocess.run(["cmake", "-S", str(REPO), "-B", str(tree), *generator,
                            "-DCMAKE_BUILD_TYPE=Release", "-DSWITCHYARD_BUILD_TESTS=OFF",
                            "-DSWITCHYARD_BUILD_BENCH=OFF",
                            f"-DPython3_EXECUTABLE={sys.executable}", *extra], check=True)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(tree), "--target", "switchyard_python", "-j",
                        jobs], check=True)
        return tree / "python" / "switchyard"


setup(
    name="switchyard",
    version=project_version(),
    description="Switchyard, a neural-network runtime with placement across devices, with "
                "ONNX Runtime's Python API",
    long_description=(HERE / "README.md").read_text(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["switchyard", "switchyard.*"]),
    ext_modules=[Extension("switchyard._switchyard", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
    zip_safe=False,
)
