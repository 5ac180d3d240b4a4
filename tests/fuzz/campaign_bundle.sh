#!/usr/bin/env bash
# Packs a fuzz campaign into one file for a machine with more cores that lacks the Debian
# packages (the GPU machine of ../shared/GPU.md, used for its 16 CPU cores): the targets of
# BUILD_FUZZ (default build-fuzz), its instrumented libswitchyard, the Debian libraries they
# load (ldd; never glibc or libstdc++), and the corpora. tests/fuzz/campaign.sh runs it there.
# usage: tests/fuzz/campaign_bundle.sh [OUT]   (default .gpu/fuzz.tar.xz; .gpu/ is git-ignored
#        locally, see scripts/gpu-bundle)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${BUILD_FUZZ:-$root/build-fuzz}"
out="${1:-$root/.gpu/fuzz.tar.xz}"
targets=(fuzz_import fuzz_compile_run fuzz_npz fuzz_sim_config fuzz_executable)
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$(dirname "$out")"
for t in "${targets[@]}"; do cp "$build/tests/fuzz/$t" "$stage/bin/"; done
cp -P "$build"/lib/libswitchyard*.so* "$stage/lib/"  # links stay links
ldd "$build/tests/fuzz/fuzz_compile_run" | awk '/=> \//{print $3}' |
  grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|libresolv|libpthread|libdl|librt)\.so' |
  grep -v "$build" | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
cp -r "$build/corpus" "$stage/corpus"
tar -C "$stage" -cJf "$out" bin lib corpus
echo "campaign_bundle: $out: $(du -m "$out" | cut -f1) MiB"
