#!/usr/bin/env bash
# Build, test, benchmark and demo entry point for covenant.
# Run `./run.sh help` for the list of commands.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

JOBS="$(nproc 2>/dev/null || echo 2)"

# Debian packages needed to build and test the project.
PACKAGES=(
  libboost1.81-dev libboost-json1.81-dev
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcurl4-openssl-dev libssl-dev libcpp-httplib-dev
  libre2-dev libcli11-dev libsqlite3-dev
  prometheus
  clang-14 libclang-rt-14-dev valgrind
  pkg-config cmake g++ make time
)

usage() {
  cat <<'EOF'
Usage: ./run.sh <command> [args]

Commands:
  deps            install missing Debian packages (apt-get as root; otherwise
                  prints the sudo command to run)
  demo [args...]  build examples/demo.cpp in build/ (g++, RelWithDebInfo) and
                  run it with the given arguments
  test            build and run all tests in build-gcc/ (g++, Debug) and
                  build-clang/ (clang++-14, Debug, ASan+UBSan, plus the concurrency
                  tests under TSan and each fuzz/*.cpp target for 20 s from its
                  seeds); -Werror in both; then the benchmarks briefly: the Release
                  tree build-bench/ built with -Werror, one short benchmark of each
                  bench_* (bench_soak left out) and one round of the compile-time step
  bench [filter]  Release build in build-bench/ (-Werror), run every bench_* executable
                  (optionally with --benchmark_filter=<filter>), each benchmark
                  COVENANT_BENCH_REPETITIONS times (5), interleaved; JSON results in
                  build-bench/<name>.json, merged into build-bench/bench.json; prints
                  the best and the median time of each. Without a filter (or with
                  "compile"), also the compile time of code using covenant
                  (benchmarks/compile_time.sh -> build-bench/compile_time.json)
  fuzz SECONDS    run every fuzz/*.cpp libFuzzer target for SECONDS each
                  (build-fuzz/, clang++-14)
  help            this text
EOF
}

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------------------
# deps
# ---------------------------------------------------------------------------
missing_packages() {
  local installed
  installed="$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)"
  local pkg
  for pkg in "${PACKAGES[@]}"; do
    if ! grep -q "^${pkg} ii" <<<"$installed"; then
      printf '%s\n' "$pkg"
    fi
  done
}

cmd_deps() {
  command -v dpkg-query >/dev/null 2>&1 || die "dpkg-query not found: this script expects Debian 12"
  local missing
  mapfile -t missing < <(missing_packages)
  if [ "${#missing[@]}" -eq 0 ]; then
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    {
      echo "run.sh: missing packages: ${missing[*]}"
      echo "Install them with:"
      echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}"
    } >&2
    exit 1
  fi
  log "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local apt_install=(apt-get install -y -q --no-install-recommends "${missing[@]}")
  # Try with the current package lists first; refresh them if that fails.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null \
     || ! "${apt_install[@]}" </dev/null; then
    apt-get update -q </dev/null
    "${apt_install[@]}" </dev/null
  fi
  mapfile -t missing < <(missing_packages)
  if [ "${#missing[@]}" -ne 0 ]; then
    die "still missing after apt-get install: ${missing[*]}"
  fi
}

# ---------------------------------------------------------------------------
# configure DIR CXX BUILD_TYPE [cmake args...]
# Reuses an existing build tree; reconfigures from scratch only when the
# arguments differ from the ones it was configured with.
# ---------------------------------------------------------------------------
configure() {
  local dir="$1" cxx="$2" type="$3"
  shift 3
  local cxx_path
  cxx_path="$(command -v "$cxx")" || die "compiler not found: $cxx"
  local args=(-S "$ROOT" -B "$ROOT/$dir" -G "Unix Makefiles"
    "-DCMAKE_CXX_COMPILER=$cxx_path" "-DCMAKE_BUILD_TYPE=$type" "$@")
  local stamp="$ROOT/$dir/.run.sh-configure"
  local want
  want="$(printf '%s\n' "${args[@]}")"
  if [ -f "$ROOT/$dir/CMakeCache.txt" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return 0  # up to date; `cmake --build` re-runs configure when inputs change
  fi
  local fresh=()
  if [ -f "$ROOT/$dir/CMakeCache.txt" ]; then fresh=(--fresh); fi
  log "configuring $dir"
  cmake "${fresh[@]}" "${args[@]}" || return 1
  printf '%s\n' "$want" >"$stamp"
}

build() {
  local dir="$1"
  shift
  cmake --build "$ROOT/$dir" -j "$JOBS" "$@"
}

# ---------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------
cmd_demo() {
  cmd_deps
  [ -f "$ROOT/examples/demo.cpp" ] \
    || die "examples/demo.cpp does not exist yet: there is no demo to build"
  configure build g++ RelWithDebInfo \
    -DCOVENANT_WARNINGS_AS_ERRORS=ON \
    -DCOVENANT_BUILD_TESTS=OFF \
    -DCOVENANT_BUILD_EXAMPLES=ON \
    -DCOVENANT_BUILD_BENCHMARKS=OFF
  build build --target demo
  exec "$ROOT/build/demo" "$@"
}

# ---------------------------------------------------------------------------
# test
# ---------------------------------------------------------------------------
SUMMARIES=()

# test_tree NAME CXX [env assignments for ctest] -- [cmake args...]
test_tree() {
  local dir="$1" cxx="$2"
  shift 2
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  if [ "$#" -gt 0 ]; then shift; fi
  local start=$SECONDS

  if ! configure "$dir" "$cxx" Debug -DCOVENANT_WARNINGS_AS_ERRORS=ON "$@"; then
    SUMMARIES+=("$dir: FAILED at configure ($((SECONDS - start))s)")
    return 1
  fi
  if ! build "$dir"; then
    # A second build redoes only what failed: a real error fails again, while a compiler that
    # was killed or read a file badly under load gets another chance.
    log "$dir: build failed; building once more"
    if ! build "$dir"; then
      SUMMARIES+=("$dir: FAILED at build ($((SECONDS - start))s)")
      return 1
    fi
  fi
  local logf="$ROOT/$dir/ctest.log" rc=0
  env "${envs[@]}" ctest --test-dir "$ROOT/$dir" --output-on-failure \
    -j "$JOBS" --timeout 900 --no-tests=error 2>&1 | tee "$logf" || rc=$?
  local line
  line="$(grep -E '[0-9]+% tests passed' "$logf" | tail -n1 || true)"
  [ -n "$line" ] || line="no ctest summary (ctest exit $rc)"
  if [ "$rc" -eq 0 ]; then
    SUMMARIES+=("$dir: OK - $line ($((SECONDS - start))s)")
  else
    SUMMARIES+=("$dir: FAILED - $line ($((SECONDS - start))s)")
  fi
  return "$rc"
}

# The benchmarks, briefly, so that `./run.sh bench` cannot break unseen: the Release tree with
# -Werror (warnings that only optimised builds show, such as GCC 12's false -Wrestrict, fail here),
# one short benchmark of each executable (the first it lists, its minimum time cut to 10 ms; fixed
# iteration counts stay), and one round of the compile-time step. bench_soak is left out: it runs
# for a minute. Results go to build-bench/smoke/, apart from `./run.sh bench`'s.
bench_smoke() {
  local dir=build-bench start=$SECONDS
  if ! configure_bench; then
    SUMMARIES+=("$dir: FAILED at configure ($((SECONDS - start))s)")
    return 1
  fi
  if ! build "$dir"; then
    log "$dir: build failed; building once more"
    if ! build "$dir"; then
      SUMMARIES+=("$dir: FAILED at build ($((SECONDS - start))s)")
      return 1
    fi
  fi
  local built=$((SECONDS - start))
  local list="$ROOT/$dir/covenant_benchmarks.txt" exes=() out="$ROOT/$dir/smoke"
  if [ -f "$list" ]; then mapfile -t exes < <(grep -v '^$' "$list" || true); fi
  rm -rf "$out"
  mkdir -p "$out"
  local exe name first json ran=0 failed=() nosamples=()
  for exe in "${exes[@]}"; do
    name="$(basename "$exe")"
    [ "$name" != bench_soak ] || continue
    json="$out/$name.json"
    # The first benchmark it lists that can run here: one that needs the peers' sample bytes
    # (../shared/bench) skips itself with "sample missing" where they are absent, and the next is
    # tried; an executable whose every benchmark needs them is reported as skipped.
    local names=() one ok=0 skipped=0
    mapfile -t names < <("$exe" --benchmark_list_tests=true </dev/null 2>"$out/$name.log" || true)
    if [ "${#names[@]}" -eq 0 ]; then
      log "$name: lists no benchmark"
      failed+=("$name")
      continue
    fi
    for one in "${names[@]}"; do
      [ -n "$one" ] || continue
      log "$name: $one"
      # The name as a whole-name filter (a regular expression: its special characters escaped).
      first="$(printf '%s' "$one" | sed 's/[][\\.^$*+?(){}|]/\\&/g')"
      rm -f "$json"
      "$exe" "--benchmark_filter=^$first\$" --benchmark_min_time=0.01 --benchmark_repetitions=1 \
        "--benchmark_out=$json" --benchmark_out_format=json </dev/null >>"$out/$name.log" 2>&1 || true
      if [ -f "$json" ] && grep -q '"error_message": "sample missing' "$json"; then
        skipped=$((skipped + 1))
        continue
      fi
      if [ -f "$json" ] && grep -q '"run_name"' "$json" && ! grep -q '"error_occurred": true' "$json"; then ok=1; fi
      break
    done
    if [ "$ok" -eq 0 ] && [ "$skipped" -gt 0 ] && [ "$skipped" -eq "${#names[@]}" ]; then
      log "$name: every benchmark needs the peers' samples (../shared/bench), absent here: skipped"
      nosamples+=("$name")
      continue
    fi
    if [ "$ok" -eq 0 ]; then
      cat "$out/$name.log" >&2
      failed+=("$name")
      continue
    fi
    ran=$((ran + 1))
  done
  [ "${#exes[@]}" -gt 0 ] || failed+=("no bench_* executables")
  local compile_start=$SECONDS compile=ok
  log "compile time, one round"
  COVENANT_BUILD_DIR="$ROOT/$dir" "$ROOT/benchmarks/compile_time.sh" "$out/compile_time.json" 1 || compile=FAILED
  local times="build ${built}s, benchmarks $((compile_start - start - built))s, compile time $((SECONDS - compile_start))s"
  if [ "${#failed[@]}" -eq 0 ] && [ "$compile" = ok ]; then
    local note=""
    if [ "${#nosamples[@]}" -gt 0 ]; then note=", skipped for want of ../shared/bench samples: ${nosamples[*]}"; fi
    SUMMARIES+=("$dir: OK - Release -Werror build, $ran benchmark executables ran one benchmark each (bench_soak left out$note), compile-time step ran ($times)")
    return 0
  fi
  local why=()
  if [ "${#failed[@]}" -gt 0 ]; then why+=("benchmarks failed: ${failed[*]}"); fi
  if [ "$compile" != ok ]; then why+=("compile-time step failed"); fi
  SUMMARIES+=("$dir: FAILED - $(IFS=';'; echo "${why[*]}") ($times)")
  return 1
}

cmd_test() {
  cmd_deps
  local status=0
  test_tree build-gcc g++ -- || status=1
  # The sanitizer tree keeps line tables only (file:line in every report, which is all a sanitizer
  # or fuzzer report needs): 4.4 GB on disk instead of 5.3 GB with full debug info.
  test_tree build-clang clang++-14 \
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1" \
    -- -DCOVENANT_SANITIZE=fuzzer-no-link,address,undefined -DCOVENANT_TSAN_TESTS=ON \
    -DCOVENANT_BUILD_FUZZERS=ON -DCMAKE_CXX_FLAGS_DEBUG=-gline-tables-only || status=1
  bench_smoke || status=1
  echo
  local s
  for s in "${SUMMARIES[@]}"; do echo "$s"; done
  return "$status"
}

# ---------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------
merge_bench_json() {
  local out="$1"
  shift
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$out" "$@" <<'PY'
import json, sys
out, inputs = sys.argv[1], sys.argv[2:]
merged = None
for path in inputs:
    with open(path) as f:
        doc = json.load(f)
    if merged is None:
        merged = doc
        merged["benchmarks"] = list(doc.get("benchmarks", []))
    else:
        merged["benchmarks"].extend(doc.get("benchmarks", []))
if merged is None:
    merged = {"context": {}, "benchmarks": []}
with open(out, "w") as f:
    json.dump(merged, f, indent=2)
    f.write("\n")
# Best (min) and median of the repetitions, as the peer benchmarks report theirs.
runs = {}
for b in merged["benchmarks"]:
    if b.get("run_type", "iteration") == "iteration" and "error_occurred" not in b:
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
        runs.setdefault(b.get("run_name", b["name"]), []).append(b["real_time"] * unit)
if runs:
    width = max(len(n) for n in runs)
    print(f"{'benchmark':<{width}}  {'best us':>10}  {'median us':>10}  runs")
    for name, times in runs.items():
        times.sort()
        print(f"{name:<{width}}  {times[0]:>10.3f}  {times[len(times) // 2]:>10.3f}  {len(times)}")
PY
  elif command -v jq >/dev/null 2>&1; then
    jq -s '(.[0] // {context: {}}) + {benchmarks: (map(.benchmarks // []) | add // [])}' "$@" >"$out"
  else
    die "need python3 or jq to merge benchmark results"
  fi
}

# The benchmarks' Release tree, shared by `bench` and `test` (the same arguments: neither
# reconfigures it from scratch after the other).
configure_bench() {
  configure build-bench g++ Release \
    -DCOVENANT_WARNINGS_AS_ERRORS=ON \
    -DCOVENANT_BUILD_TESTS=OFF \
    -DCOVENANT_BUILD_EXAMPLES=OFF \
    -DCOVENANT_BUILD_BENCHMARKS=ON
}

cmd_bench() {
  cmd_deps
  configure_bench
  build build-bench
  local list="$ROOT/build-bench/covenant_benchmarks.txt" exes=()
  if [ -f "$list" ]; then mapfile -t exes < <(grep -v '^$' "$list" || true); fi
  if [ "${#exes[@]}" -eq 0 ]; then
    echo "no benchmarks yet (benchmarks/*.cpp)"
    return 0
  fi
  local filter=()
  if [ "$#" -gt 0 ]; then
    filter=("--benchmark_filter=$(IFS='|'; echo "$*")")
  fi
  # Several repetitions, interleaved, so a noisy machine shows in the spread (best and median).
  filter+=("--benchmark_repetitions=${COVENANT_BENCH_REPETITIONS:-5}" --benchmark_enable_random_interleaving=true)
  local exe name json results=()
  for exe in "${exes[@]}"; do
    name="$(basename "$exe")"
    json="$ROOT/build-bench/$name.json"
    rm -f "$json"
    log "$name"
    "$exe" "--benchmark_out=$json" --benchmark_out_format=json "${filter[@]}" </dev/null
    if [ -s "$json" ]; then results+=("$json"); fi
  done
  merge_bench_json "$ROOT/build-bench/bench.json" "${results[@]}"
  log "results: build-bench/bench.json"
  if [ "$#" -eq 0 ] || [[ " $* " == *" compile"* ]]; then
    log "compile time (g++ -std=c++20, against a reference file in the same run)"
    COVENANT_BUILD_DIR="$ROOT/build-bench" "$ROOT/benchmarks/compile_time.sh" "$ROOT/build-bench/compile_time.json" \
      "${COVENANT_COMPILE_ROUNDS:-3}"
    log "results: build-bench/compile_time.json"
  fi
}

# ---------------------------------------------------------------------------
# fuzz
# ---------------------------------------------------------------------------
cmd_fuzz() {
  local secs="${1:-}"
  if [ ! -d "$ROOT/fuzz" ]; then
    echo "no fuzz targets yet"
    return 0
  fi
  [[ "$secs" =~ ^[0-9]+$ ]] || die "usage: ./run.sh fuzz SECONDS"
  cmd_deps
  configure build-fuzz clang++-14 RelWithDebInfo \
    -DCOVENANT_BUILD_TESTS=OFF \
    -DCOVENANT_BUILD_EXAMPLES=OFF \
    -DCOVENANT_BUILD_BENCHMARKS=OFF \
    -DCOVENANT_BUILD_FUZZERS=ON \
    -DCOVENANT_SANITIZE=fuzzer-no-link,address,undefined
  build build-fuzz
  local list="$ROOT/build-fuzz/covenant_fuzzers.txt" exes=()
  if [ -f "$list" ]; then mapfile -t exes < <(grep -v '^$' "$list" || true); fi
  if [ "${#exes[@]}" -eq 0 ]; then
    echo "no fuzz targets yet"
    return 0
  fi
  local exe name corpus seeds
  for exe in "${exes[@]}"; do
    name="$(basename "$exe")"
    name="${name#fuzz_}"
    corpus="$ROOT/build-fuzz/corpus/$name"
    mkdir -p "$corpus"
    seeds=()
    if [ -d "$ROOT/fuzz/corpus/$name" ]; then seeds=("$ROOT/fuzz/corpus/$name"); fi
    # The differential reading target also starts from the corpora of the readers it compares.
    if [ "$name" = reading ]; then seeds+=("$ROOT/fuzz/corpus/dynamic" "$ROOT/fuzz/corpus/lenient"); fi
    log "fuzz_$name for ${secs}s"
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      "$exe" -max_total_time="$secs" -print_final_stats=1 "$corpus" "${seeds[@]}" </dev/null
  done
}

# ---------------------------------------------------------------------------
cmd="${1:-help}"
if [ "$#" -gt 0 ]; then shift; fi
case "$cmd" in
  deps)  cmd_deps ;;
  demo)  cmd_demo "$@" ;;
  test)  cmd_test ;;
  bench) cmd_bench "$@" ;;
  fuzz)  cmd_fuzz "$@" ;;
  help|-h|--help) usage ;;
  *) usage >&2; exit 2 ;;
esac
