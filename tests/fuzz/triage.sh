#!/usr/bin/env bash
# Groups crash inputs by cause: replays each under its target and prints one line per input,
# "KIND at FILE:LINE (first in src/)  INPUT", sorted so that inputs of one bug sit together.
# Usage: triage.sh TARGET INPUT...   (BIN: folder of the target, default build-fuzz/tests/fuzz)
set -uo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bin="${BIN:-$root/build-fuzz/tests/fuzz}"
target="$1"
shift
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && command -v llvm-symbolizer > /dev/null; then
  export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer)"
fi

for input in "$@"; do
  report="$(timeout 60 "$bin/$target" -rss_limit_mb=2048 -timeout=10 "$input" 2>&1)"
  kind="$(grep -m1 -oE "ERROR: [A-Za-z]+: [a-z-]+( [a-z-]+)?|runtime error: [^:]*|escaped[^:]*|libFuzzer: [a-z-]+" <<< "$report" |
          head -c 80)"
  # Where: UBSan's own location, else the first stack frame in src/.
  frame="$(grep -m1 -oE "^$root/src/[^ ]+: runtime error" <<< "$report" | sed "s|: runtime error||")"
  [ -n "$frame" ] || frame="$(grep -E "^ +#[0-9]+ " <<< "$report" | grep -m1 -oE "$root/src/[^ ]+")"
  frame="${frame#"$root/"}"
  [ -n "$kind" ] || kind="no crash now"
  printf '%s at %s  %s\n' "$kind" "${frame:-?}" "$input"
done | sort
