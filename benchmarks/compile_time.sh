#!/usr/bin/env bash
# Compile time of code that uses covenant, against a reference file compiled in the same run.
#
#   COVENANT_BUILD_DIR=build-bench benchmarks/compile_time.sh OUT.json [ROUNDS]
#
# Compiles, as a new user would (g++ -std=c++20 -I include, no other flags; the include path
# also has the build tree's generated covenant/build_config.hpp, from COVENANT_BUILD_DIR, default
# build-bench/, as an installed covenant would have it beside the other headers), each of
#   contract_hpp  a file that includes only <covenant/contract/contract.hpp>
#   readme        the README's example (its first ```cpp block)
#   demo          examples/demo.cpp
#   reference     a file that includes only <boost/json.hpp> and <spdlog/spdlog.h>
# at -O0 and -O2, ROUNDS times (default 3) in interleaved order, and writes the best time of each
# (seconds), its peak compiler memory (KiB, GNU time) and its ratio to the reference at the same
# level to OUT.json. Ratios, not seconds, are comparable between machines and loads.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: compile_time.sh OUT.json [ROUNDS]}"
ROUNDS="${2:-3}"
CXX="${CXX:-g++}"
BUILD_DIR="${COVENANT_BUILD_DIR:-$ROOT/build-bench}"
GENERATED="$BUILD_DIR/generated/include"
[ -f "$GENERATED/covenant/build_config.hpp" ] || {
  echo "compile_time.sh: no $GENERATED/covenant/build_config.hpp: configure that build tree first" >&2
  exit 1
}
TIME_BIN=/usr/bin/time
[ -x "$TIME_BIN" ] || { echo "compile_time.sh: GNU time (/usr/bin/time) is needed" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

printf '#include <covenant/contract/contract.hpp>\nint main() { return 0; }\n' >"$WORK/contract_hpp.cpp"
printf '#include <boost/json.hpp>\n#include <spdlog/spdlog.h>\nint main() { return 0; }\n' >"$WORK/reference.cpp"
awk 'BEGIN { s = 0 } /^```cpp[ \t]*$/ { if (s == 0) { s = 1; next } } /^```[ \t]*$/ { if (s == 1) { exit } }
     s == 1 { print }' "$ROOT/README.md" >"$WORK/readme.cpp"
[ -s "$WORK/readme.cpp" ] || { echo "compile_time.sh: no cpp block in README.md" >&2; exit 1; }
cp "$ROOT/examples/demo.cpp" "$WORK/demo.cpp"
cp -r "$ROOT/examples/models" "$WORK/models"

NAMES=(contract_hpp readme demo reference)
LEVELS=(-O0 -O2)
declare -A BEST MEM

for ((round = 1; round <= ROUNDS; round++)); do
  for level in "${LEVELS[@]}"; do
    for name in "${NAMES[@]}"; do
      stats="$WORK/stats"
      "$TIME_BIN" -f '%e %M' -o "$stats" "$CXX" -std=c++20 -I "$ROOT/include" -I "$GENERATED" "$level" \
        -c "$WORK/$name.cpp" -o "$WORK/$name.o" 2>"$WORK/err" \
        || { cat "$WORK/err" >&2; echo "compile_time.sh: $name $level failed" >&2; exit 1; }
      read -r secs kib <"$stats"
      key="$name$level"
      if [ -z "${BEST[$key]:-}" ] || awk -v a="$secs" -v b="${BEST[$key]}" 'BEGIN { exit !(a < b) }'; then
        BEST[$key]="$secs"
      fi
      if [ -z "${MEM[$key]:-}" ] || [ "$kib" -gt "${MEM[$key]}" ]; then MEM[$key]="$kib"; fi
    done
  done
done

{
  printf '{\n  "compiler": "%s",\n  "flags": "-std=c++20 -I include",\n  "rounds": %s,\n  "results": [\n' \
    "$("$CXX" --version | head -n1)" "$ROUNDS"
  first=1
  for name in "${NAMES[@]}"; do
    for level in "${LEVELS[@]}"; do
      key="$name$level"
      ratio="$(awk -v a="${BEST[$key]}" -v b="${BEST[reference$level]}" 'BEGIN { printf "%.3f", a / b }')"
      [ "$first" -eq 1 ] || printf ',\n'
      first=0
      printf '    {"name": "%s", "level": "%s", "seconds": %s, "peak_kib": %s, "ratio_to_reference": %s}' \
        "$name" "${level#-}" "${BEST[$key]}" "${MEM[$key]}" "$ratio"
    done
  done
  printf '\n  ]\n}\n'
} >"$OUT"

printf '%-14s %-4s %8s %10s %8s\n' file level seconds peak_MiB ratio
for name in "${NAMES[@]}"; do
  for level in "${LEVELS[@]}"; do
    key="$name$level"
    awk -v n="$name" -v l="${level#-}" -v s="${BEST[$key]}" -v m="${MEM[$key]}" -v r="${BEST[reference$level]}" \
      'BEGIN { printf "%-14s %-4s %8.2f %10.0f %8.2f\n", n, l, s, m / 1024, s / r }'
  done
done
