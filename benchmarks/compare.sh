#!/usr/bin/env bash
# Benchmarks of the working tree against another revision, run interleaved on one machine.
#
#   benchmarks/compare.sh BASE_REV EXECUTABLE FILTER [ROUNDS] [ALIGNMENTS]
#
#   BASE_REV    a revision to compare with (e.g. origin/main, a commit)
#   EXECUTABLE  a benchmark executable (bench_decode, bench_lenient, bench_stream, ...)
#   FILTER      its --benchmark_filter (a regular expression; "." for all)
#   ROUNDS      rounds of base, new, new, base runs per layout (default 5)
#   ALIGNMENTS  function alignments, one code layout each, comma-separated (default "16,32,64")
#
# Benchmarks of 100-nanosecond calls move by as much as 15 % when only the placement of code or
# stack changes (an unrelated edit, another alignment of functions, the executable's path, which
# is on the stack): a comparison of one build of each side measures placement as much as the
# change. So each side is built once per alignment (-falign-functions=K, a Release tree with only
# the benchmarks), every run starts the executable from one path, the runs of both sides
# alternate, and each benchmark's change is given per layout (median CPU time of each side) and as
# the mean of the layouts. Builds go to build-compare-K/ in the working tree and in a worktree of
# BASE_REV under ${TMPDIR:-/tmp}; both are kept for the next run. Needs git, cmake, g++ and awk.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 3 ]; then
  echo "usage: compare.sh BASE_REV EXECUTABLE FILTER [ROUNDS] [ALIGNMENTS]" >&2
  exit 2
fi
BASE_REV="$1"
EXE="$2"
FILTER="$3"
ROUNDS="${4:-5}"
IFS=, read -r -a ALIGNS <<<"${5:-16,32,64}"

base_commit="$(git -C "$ROOT" rev-parse --verify "$BASE_REV^{commit}")"
BASE="${TMPDIR:-/tmp}/covenant-compare-${base_commit:0:12}"
if [ ! -d "$BASE" ]; then
  git -C "$ROOT" worktree add --quiet --detach "$BASE" "$base_commit"
fi

build() {  # build SOURCE_DIR ALIGNMENT
  local dir="$1/build-compare-$2"
  mkdir -p "$dir"
  cmake -S "$1" -B "$dir" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=-falign-functions=$2" \
    -DCOVENANT_BUILD_TESTS=OFF -DCOVENANT_BUILD_EXAMPLES=OFF -DCOVENANT_BUILD_BENCHMARKS=ON >"$dir/compare.log" 2>&1 ||
    { cat "$dir/compare.log" >&2; exit 1; }
  make -C "$dir" -j"$(nproc)" "$EXE" >>"$dir/compare.log" 2>&1 || { tail -40 "$dir/compare.log" >&2; exit 1; }
}

runs="$(mktemp)"
stage="$(mktemp -d)"
trap 'rm -rf "$runs" "$stage"' EXIT
for k in "${ALIGNS[@]}"; do
  echo "building both sides with -falign-functions=$k" >&2
  build "$BASE" "$k"
  build "$ROOT" "$k"
  for ((i = 0; i < ROUNDS; ++i)); do
    for side in base new new base; do
      dir="$ROOT"
      [ "$side" = base ] && dir="$BASE"
      # Each run from the same path: the path is on the stack, and stack addresses move with it.
      cp "$dir/build-compare-$k/$EXE" "$stage/$EXE"
      "$stage/$EXE" "--benchmark_filter=$FILTER" --benchmark_min_time=0.3 --benchmark_format=csv \
        </dev/null 2>/dev/null | awk -F, -v s="$side" -v k="$k" '/^"/ { gsub(/"/, "", $1); print k, s, $1, $4 }' >>"$runs"
    done
  done
done

# Per layout and benchmark: the median CPU time (ns) of each side and the change; then the mean
# change over the layouts.
sort -k1,1 -k3,3 -k2,2 -k4,4g "$runs" | awk '
  function median(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function flush() {
    if (key == "") return
    split(key, p, SUBSEP)
    b = median(vb, nb); m = median(vn, nn); c = 100 * (m - b) / b
    printf "%-48s -falign-functions=%-3s base %10.1f  new %10.1f  %+6.1f%%  (%d runs each)\n", p[2], p[1], b, m, c, nn
    if (!(p[2] in cnt)) order[++names] = p[2]
    sum[p[2]] += c; cnt[p[2]]++
    nb = nn = 0
  }
  { k = $1 SUBSEP $3; if (k != key) { flush(); key = k }
    if ($2 == "base") vb[++nb] = $4; else vn[++nn] = $4 }
  END {
    flush()
    print ""
    for (i = 1; i <= names; ++i) {
      n = order[i]
      printf "%-48s mean change over %d layouts: %+6.1f%%\n", n, cnt[n], sum[n] / cnt[n]
    }
  }'
