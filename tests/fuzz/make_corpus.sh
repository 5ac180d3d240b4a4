#!/usr/bin/env bash
# Seeds the fuzz corpora under OUT (default build-fuzz/corpus), one folder per target; nothing
# is written into git. Deterministic: the same packages give the same seeds, named by content
# hash, so re-running adds nothing twice and keeps what the fuzzer added since.
#   fuzz_import, fuzz_compile_run: model.onnx of libonnx-testdata's node, simple and
#     pytorch-operator cases up to MAX_MODEL_BYTES (default 64 KiB), deduplicated by content.
#   fuzz_npz: small .npz and .npy files written with numpy (every dtype read_npz knows, deflate,
#     fortran order, big endian, empty and 0-d arrays).
#   fuzz_sim_config: examples/demo_sim.json and hand-written configs using every field.
#   fuzz_executable: .syx files that BUILD_FUZZ's CLI (default build-fuzz/tools/switchyard; the
#     fuzz_targets target builds it) compiles from a few of those models: cpu, a sim:0,sim:1
#     pipeline split with weights, and one pinned across both simulated devices.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$root/build-fuzz/corpus}"
build="${BUILD_FUZZ:-$root/build-fuzz}"
max_model_bytes="${MAX_MODEL_BYTES:-65536}"
testdata=/usr/share/libonnx-testdata/data

# Copies a file into a corpus folder under its content hash.
add_seed() {
  local file="$1" dir="$2"
  local hash
  hash="$(sha1sum "$file" | cut -c1-16)"
  [ -e "$dir/$hash" ] || cp "$file" "$dir/$hash"
}

mkdir -p "$out/fuzz_import" "$out/fuzz_compile_run" "$out/fuzz_npz" "$out/fuzz_sim_config" \
  "$out/fuzz_executable"

# Models.
if [ ! -d "$testdata" ]; then
  echo "make_corpus: $testdata missing (apt-get install libonnx-testdata)" >&2
  exit 1
fi
models=0
while IFS= read -r model; do
  if [ "$(stat -c %s "$model")" -le "$max_model_bytes" ]; then
    add_seed "$model" "$out/fuzz_import"
    add_seed "$model" "$out/fuzz_compile_run"
    models=$((models + 1))
  fi
done < <(find "$testdata/node" "$testdata/simple" "$testdata/pytorch-operator" -name model.onnx |
         LC_ALL=C sort)

# Arrays.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
/usr/bin/python3 - "$scratch" <<'EOF'
import os
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
arrays = {
    "f4": rng.standard_normal((2, 3)).astype("<f4"),
    "f8": rng.standard_normal(4).astype("<f8"),
    "f2": rng.standard_normal((1, 2, 2)).astype("<f2"),
    "b1": np.array([True, False, True]),
    "i1": np.arange(-3, 3, dtype="i1"),
    "u1": np.arange(5, dtype="u1"),
    "i2": np.arange(4, dtype="<i2").reshape(2, 2),
    "u2": np.arange(3, dtype="<u2"),
    "i4": np.arange(6, dtype="<i4").reshape(3, 2),
    "u4": np.arange(2, dtype="<u4"),
    "i8": np.array([-(2**62), 0, 2**62], dtype="<i8"),
    "u8": np.array([0, 2**63], dtype="<u8"),
    "U": np.array(["a", "bcd", ""]),
    "S": np.array([b"xy", b"z"]),
    "scalar": np.array(3.5, dtype="<f4"),
    "empty": np.zeros((0, 3), dtype="<f4"),
    "fortran": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),
    "big_endian": np.arange(4, dtype=">i4"),
}
for name, a in arrays.items():
    np.save(os.path.join(out, f"{name}.npy"), a)
    np.savez(os.path.join(out, f"{name}.npz"), **{name: a})
np.savez(os.path.join(out, "all.npz"), **arrays)
np.savez_compressed(os.path.join(out, "all_compressed.npz"), **arrays)
np.savez_compressed(os.path.join(out, "one_compressed.npz"), x=arrays["f4"], y=arrays["i8"])
np.savez(os.path.join(out, "none.npz"))
EOF
for f in "$scratch"/*.npy "$scratch"/*.npz; do add_seed "$f" "$out/fuzz_npz"; done

# Simulated-device configs.
add_seed "$root/examples/demo_sim.json" "$out/fuzz_sim_config"
i=0
while IFS= read -r config; do
  printf '%s\n' "$config" > "$scratch/sim_$i.json"
  add_seed "$scratch/sim_$i.json" "$out/fuzz_sim_config"
  i=$((i + 1))
done <<'EOF'
[]
[{}]
[{"name": "all ops"}, {"name": "second", "ops": "all"}]
[{"name": "subset", "ops": ["Conv", "Relu", "MatMul"], "exclude_ops": ["Relu"]}]
[{"name": "costs", "gflops": 1.5, "gbytes_per_s": 20, "copy_latency_us": 0, "copy_gbytes_per_s": 0.5}]
[{"name": "small", "memory_bytes": 1048576, "shape_steps_inline": true}]
[{"name": "a", "ops": ["Add"], "memory_bytes": 0, "shape_steps_inline": false}, {"name": "b", "exclude_ops": ["Loop", "If"], "gflops": 1e9}]
EOF

# Saved executables, written by the CLI of the fuzz build (the same format version as the target
# that reads them; the files are deterministic, so the content-hash names stay stable).
cli="$build/tools/switchyard"
if [ ! -x "$cli" ]; then
  echo "make_corpus: $cli missing (build the fuzz_targets target of $build)" >&2
  exit 1
fi
compile_seed() {
  local model="$testdata/$1" name="$2"
  shift 2
  "$cli" compile "$model/model.onnx" -o "$scratch/$name.syx" --cache-dir off "$@" > /dev/null
  add_seed "$scratch/$name.syx" "$out/fuzz_executable"
}
for model in node/test_relu node/test_add node/test_conv_with_strides_padding \
             node/test_gemm_default_matrix_bias node/test_softmax_axis_1 \
             node/test_maxpool_2d_default pytorch-operator/test_operator_addmm; do
  compile_seed "$model" "$(basename "$model")"
done
# A sim:0 partition fed by copies, with a 1 KiB+ weight in the WEIGHTS section.
compile_seed pytorch-operator/test_operator_conv conv_split \
  --sim 2 --device sim:0,sim:1 --split pipeline
# Three partitions (sim:0, sim:1, cpu) with copies between the simulated devices: the testdata's
# models are too small for the cost model to split them unpinned.
compile_seed pytorch-operator/test_operator_basic basic_pinned \
  --sim 2 --device sim:0,sim:1 --split pipeline \
  --pin op:Add=sim:0 --pin op:Mul=sim:1 --pin op:Tanh=sim:1

echo "make_corpus: $models models (<= $max_model_bytes bytes), $(ls "$out/fuzz_npz" | wc -l) npz/npy," \
     "$(ls "$out/fuzz_sim_config" | wc -l) sim configs, $(ls "$out/fuzz_executable" | wc -l)" \
     "executables in $out"
