#!/usr/bin/env bash
# scripts/device/gpu_results_table.sh, the tables a GPU session reads its figures from, on a
# results.tsv made here: dl-train is compared with PyTorch on the train stage's 1-worker LeNet runs
# only (the first H100 call's table divided the cifar stage's run instead), figures are rounded,
# a dtype without a peer says n/a, and a call without PyTorch's rows has no ratio table.
set -euo pipefail
: "${DL_SOURCE_DIR:?DL_SOURCE_DIR must name the repository root}"
table="$DL_SOURCE_DIR/scripts/device/gpu_results_table.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dl-train-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The stages' order, as gpu_checks.sh writes them: graphs, train, cifar, then PyTorch. The
# graphs and cifar rows carry other figures, so taking either shows in the ratios.
tab=$'\t'
{
  echo "dl-train${tab}graphs-true-FLOAT-1w-averaging${tab}9000.4${tab}0.862${tab}0.4252794${tab}0"
  echo "dl-train${tab}train-FLOAT-1w-averaging${tab}3000.6${tab}0.8375${tab}0.24347${tab}0"
  echo "dl-train${tab}train-HALF-1w-averaging${tab}2000${tab}0.8357${tab}0.25${tab}0"
  echo "dl-train${tab}train-FLOAT-2w-synchronous${tab}7000${tab}0.835${tab}0.3${tab}0"
  echo "dl-train${tab}cifar-FLOAT-1w-averaging${tab}500${tab}1${tab}0.17${tab}0"
  echo "dl-train${tab}cifar-HALF-1w-averaging${tab}400${tab}1${tab}0.17${tab}0"
  echo "dl-train${tab}train-BFLOAT16-1w-averaging${tab}${tab}${tab}${tab}1"
  echo "pytorch${tab}float32-eager${tab}1000${tab}0.8346${tab}0.881${tab}"
  echo "pytorch${tab}float32-compile${tab}1500${tab}0.8327${tab}1.268${tab}"
  echo "pytorch${tab}fp16-eager${tab}800${tab}0.8335${tab}1.186${tab}"
  echo "pytorch${tab}bf16-eager${tab}900${tab}0.8334${tab}1.125${tab}"
} >"$WORK/results.tsv"

bash "$table" "$WORK/results.tsv" >"$WORK/out.md" || fail "exit $? on a good results.tsv"
expect_line() {
  grep -qxF "$1" "$WORK/out.md" || { cat "$WORK/out.md" >&2; fail "no line '$1'"; }
}
expect_line "| dl-train | graphs-true-FLOAT-1w-averaging | 9000 | 0.862 | 0.425 | 0 |"
expect_line "| dl-train | train-FLOAT-1w-averaging | 3001 | 0.8375 | 0.243 | 0 |"
expect_line "| dl-train | train-BFLOAT16-1w-averaging |  |  |  | 1 |"
expect_line "| FLOAT | 3.00x | 2.00x |"
expect_line "| HALF | 2.50x | n/a |"
expect_line "| BFLOAT16 | n/a | n/a |"

grep -v '^pytorch' "$WORK/results.tsv" >"$WORK/dl-train-only.tsv"
bash "$table" "$WORK/dl-train-only.tsv" >"$WORK/out.md" || fail "exit $? without PyTorch's rows"
grep -q 'vs PyTorch' "$WORK/out.md" && fail "a ratio table without PyTorch's rows"
expect_line "| dl-train | cifar-HALF-1w-averaging | 400 | 1 | 0.170 | 0 |"

status=0
bash "$table" "$WORK/missing.tsv" 2>"$WORK/err.txt" || status=$?
[ "$status" = 2 ] || fail "a missing results.tsv gave exit $status, not 2"
grep -q "usage" "$WORK/err.txt" || fail "a missing results.tsv gave no usage line"
echo "ok: the results table compares the train stage's 1-worker runs with PyTorch"
