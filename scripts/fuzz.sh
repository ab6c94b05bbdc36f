#!/usr/bin/env bash
# Fuzzes the readers of untrusted input: the config loader, the IDX reader, the checkpoint reader,
# the PNG and JPEG decoders with the image fitting, and the CSV reader (tests/fuzz/fuzz_*.cpp, libFuzzer with AddressSanitizer and UndefinedBehaviorSanitizer).
# Builds them in build-fuzz with clang (installing clang and its libFuzzer runtime when they are
# missing), then runs each target for SECONDS (default 30) on a copy of its seed corpus in
# tests/fuzz/corpus/. Prints executions and crashes per target; a crash, a sanitizer report, a
# leak, a timeout or an out-of-memory input counts as a crash. Each crashing input is kept in
# build-fuzz/fuzz-artifacts/ (replay it: build-fuzz/tests/fuzz/fuzz_<name> FILE).
# Exit status: 0 when no target crashed, 1 otherwise (2 for a usage error).
#
# Usage: scripts/fuzz.sh [SECONDS-PER-TARGET]
set -euo pipefail

readonly DEFAULT_SECONDS=30
readonly TARGETS=(config idx checkpoint image csv)
# Per input: longer than this is a hang; more memory than this is a memory bomb.
readonly INPUT_TIMEOUT_SECONDS=10
readonly RSS_LIMIT_MB=2048
readonly MALLOC_LIMIT_MB=1024
# A target still running this long after its time is up is stuck (libFuzzer's own out-of-memory
# report can hang on a huge heap): it is killed and counted as a crash.
readonly GRACE_SECONDS=120

seconds=${1:-$DEFAULT_SECONDS}
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS-PER-TARGET] (a whole number of seconds, default $DEFAULT_SECONDS)" >&2
  exit 2
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
build_dir=build-fuzz

# clang and the libFuzzer runtime (libclang-rt-<version>-dev on Debian).
fuzzer_runtime_found() {
  command -v clang++ >/dev/null 2>&1 &&
    [[ -f "$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a)" ]]
}
apt_install() {
  local as_root=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null 2>&1 || {
      echo "fuzz.sh: $* missing and not root, no sudo: install them as root" >&2
      exit 1
    }
    as_root=(sudo)
  fi
  "${as_root[@]}" apt-get update
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
}
if ! fuzzer_runtime_found; then
  echo "==> fuzz: installing clang and its libFuzzer runtime"
  command -v clang++ >/dev/null 2>&1 || apt_install clang
  clang_major=$(clang++ -dumpversion | cut -d. -f1)
  fuzzer_runtime_found || apt_install "libclang-rt-${clang_major}-dev"
fi

# The libraries under test get libFuzzer's coverage instrumentation (fuzzer-no-link); the
# targets themselves add -fsanitize=fuzzer (tests/fuzz/meson.build).
if [[ -f "$build_dir/meson-private/coredata.dat" ]]; then
  echo "==> fuzz: reconfiguring $build_dir"
  meson setup --reconfigure "$build_dir" >/dev/null
else
  echo "==> fuzz: configuring $build_dir (clang, ASan + UBSan, libFuzzer)"
  CC=clang CXX=clang++ meson setup "$build_dir" -Dfuzzing=true -Dtests=false \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dcpp_args=-fsanitize=fuzzer-no-link -Dcuda=disabled -Dmpi=disabled >/dev/null
fi
echo "==> fuzz: building ${TARGETS[*]/#/fuzz_}"
ninja -C "$build_dir" -j2 "${TARGETS[@]/#/tests/fuzz/fuzz_}"

work=$(mktemp -d "${TMPDIR:-/tmp}/dl-train-fuzz.XXXXXX")
# The targets' scratch files go to tmpfs when there is one: less disk I/O per execution.
scratch=$(mktemp -d /dev/shm/dl-train-fuzz.XXXXXX 2>/dev/null || mktemp -d "$work/scratch.XXXXXX")
trap 'rm -rf "$work" "$scratch"' EXIT
artifacts="$repo_root/$build_dir/fuzz-artifacts"
mkdir -p "$artifacts"

# UBSan reports stop the run (by default they are printed and execution goes on).
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
failed=0
summary=()
for name in "${TARGETS[@]}"; do
  target="fuzz_$name"
  corpus="$work/corpus-$name"
  cp -r "tests/fuzz/corpus/$name" "$corpus"
  seeds=$(find "$corpus" -type f | wc -l)
  echo "==> fuzz: $target for ${seconds}s on $seeds seeds"
  rc=0
  TMPDIR="$scratch" timeout -s KILL $((seconds + GRACE_SECONDS)) \
    "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" \
    -timeout="$INPUT_TIMEOUT_SECONDS" -rss_limit_mb="$RSS_LIMIT_MB" \
    -malloc_limit_mb="$MALLOC_LIMIT_MB" -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target-" "$corpus" >"$work/$target.log" 2>&1 || rc=$?
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$target.log" | tail -n 1)
  crashes=0
  if ((rc != 0)); then
    crashes=1
    failed=1
    echo "fuzz.sh: $target failed (exit $rc); its report:" >&2
    grep -E -A40 '^==[0-9]+==|^fuzz_[a-z]+: |deadly signal|Test unit written' \
      "$work/$target.log" | head -n 80 >&2 || tail -n 40 "$work/$target.log" >&2
  fi
  line="$target: ${executions:-0} executions, $crashes crashes, corpus $seeds -> $(find "$corpus" -type f | wc -l) inputs"
  summary+=("$line")
  echo "$line"
done

echo "==> fuzz: results (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
if ((failed != 0)); then
  echo "fuzz.sh: a target crashed; the inputs are in $artifacts" >&2
  exit 1
fi
