#!/usr/bin/env bash
# `pip install ./python` as a user would, offline: into a fresh venv that sees the system's
# numpy (--system-site-packages), without build isolation or an index. The extension comes
# from this build tree (SWITCHYARD_BUILD_DIR; setup.py compiles nothing then). Then, from a
# folder outside the repository, the installed package must be the one imported and must run a
# model.
# usage: pip_install.sh PYTHON BUILD_DIR
set -euo pipefail
python=$1
build_dir=$(cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

"$python" -m venv --system-site-packages "$scratch/venv"
# From a copy of python/ (and the CMakeLists.txt with the version), so what setuptools writes
# beside setup.py lands in the scratch folder, not in the source tree.
mkdir "$scratch/src"
cp "$repo/CMakeLists.txt" "$scratch/src/"
cp -r "$repo/python" "$scratch/src/python"
rm -rf "$scratch/src/python/build" "$scratch/src/python"/*.egg-info
(cd "$scratch/src" && SWITCHYARD_BUILD_DIR=$build_dir PIP_NO_CACHE_DIR=1 \
  "$scratch/venv/bin/pip" install --no-build-isolation --no-index --quiet ./python)

mkdir "$scratch/elsewhere"
cd "$scratch/elsewhere"
env -u PYTHONPATH SWITCHYARD_CACHE_DIR=off "$scratch/venv/bin/python" - "$scratch/venv" <<'PY'
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

import switchyard as ort

venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(ort.__file__)
assert where.startswith(venv + os.sep), f"imported {where}, not the venv's copy"
extension = os.path.realpath(ort._switchyard.__file__)
assert extension.startswith(venv + os.sep), extension

x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])
graph = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["y"])], "square", [x], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
values = np.random.default_rng(5).standard_normal(7).astype(np.float32)
(squared,) = session.run(None, {"x": values})
np.testing.assert_array_equal(squared, values * values)
print(f"pip_install: switchyard {ort.__version__} from {os.path.dirname(where)}: "
      f"{session.placement_summary()}")
PY
