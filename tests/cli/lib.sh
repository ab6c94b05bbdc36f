# Shared helpers for the end-to-end CLI tests. Each test script sources this file; meson passes
# DL_TRAIN (the binary), MAKE_IDX (the data set generator) and DL_SOURCE_DIR (the repository).
set -euo pipefail

: "${DL_TRAIN:?DL_TRAIN must name the dl-train binary}"
: "${MAKE_IDX:?MAKE_IDX must name the make_idx_dataset tool}"
: "${DL_SOURCE_DIR:?DL_SOURCE_DIR must name the repository root}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dl-train-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# make_data DIR N_TRAIN N_TEST: a learnable 28x28, 10-class data set in IDX .gz files.
make_data() { mkdir -p "$1"; "$MAKE_IDX" "$1" "$2" "$3"; }

# line_count FILE: the lines in FILE so far (0 when it does not exist yet).
line_count() { wc -l 2>/dev/null <"$1" || echo 0; }

# wait_for_lines FILE N POLLS SECONDS: returns once FILE holds at least N lines, or after POLLS
# checks SECONDS apart (the caller's next step then shows what went wrong).
wait_for_lines() {
  local file=$1 target=$2 polls=$3 pause=$4
  for _ in $(seq 1 "$polls"); do
    [ "$(line_count "$file")" -ge "$target" ] && return 0
    sleep "$pause"
  done
  return 0
}

# kill_at_lines PID FILE N SECONDS: sends PID SIGKILL as soon as FILE holds at least N lines,
# checking every SECONDS while PID runs; returns when it is killed or has ended by itself (the
# caller's wait then says which).
kill_at_lines() {
  local pid=$1 file=$2 target=$3 pause=$4
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(line_count "$file")" -ge "$target" ]; then
      kill -KILL "$pid" 2>/dev/null || true
      return 0
    fi
    sleep "$pause"
  done
}

# expect_ended_run_left_alone LOG DIR COMMAND...: COMMAND resumes the run in DIR, which has
# ended; it must exit 0, say so in LOG, and change none of DIR's files (its lock aside): neither
# their bytes nor their modification times (the logs were written again, the same bytes).
expect_ended_run_left_alone() {
  local log=$1 dir=$2
  shift 2
  local before after
  before=$(cd "$dir" && find . -type f ! -name .dl-train.lock -printf '%p %T@ ' -exec md5sum {} \; | sort)
  "$@" >"$log" 2>&1 || fail "resuming the ended run in $dir failed: $(tail -3 "$log")"
  grep -q "^resume: the run in $dir has ended (" "$log" || fail "no 'has ended' line: $(tail -3 "$log")"
  after=$(cd "$dir" && find . -type f ! -name .dl-train.lock -printf '%p %T@ ' -exec md5sum {} \; | sort)
  [ "$before" = "$after" ] || fail "resuming the ended run changed: $(diff <(echo "$before") <(echo "$after"))"
}

# expect_end_written_again DIR COMMAND...: DIR holds a run that has ended; with its end's files
# taken away (model.dlm, summary.json: a kill after the last checkpoint), COMMAND resumes it and
# must write them again without training: the same scores.csv, metrics.jsonl (timings aside),
# model.dlm, test accuracy and final score (the last score reported, which no step of the resume
# reports: the checkpoint carries it).
expect_end_written_again() {
  local dir=$1 kept untimed='s/,"epoch_seconds".*//'
  shift
  kept=$(mktemp -d "$WORK/end.XXXXXX")
  mv "$dir/model.dlm" "$dir/summary.json" "$kept/"
  cp "$dir/scores.csv" "$dir/metrics.jsonl" "$kept/"
  "$@" >"$kept/resume.log" 2>&1 || fail "writing the end of $dir failed: $(tail -3 "$kept/resume.log")"
  cmp "$kept/scores.csv" "$dir/scores.csv" || fail "writing the end of $dir trained: scores.csv changed"
  cmp <(sed "$untimed" "$kept/metrics.jsonl") <(sed "$untimed" "$dir/metrics.jsonl") ||
    fail "writing the end of $dir changed metrics.jsonl: $(diff <(sed "$untimed" "$kept/metrics.jsonl") <(sed "$untimed" "$dir/metrics.jsonl"))"
  "$COMPARE_MODELS" "$kept/model.dlm" "$dir/model.dlm" 0 || fail "the end's model.dlm in $dir differs"
  local verdict
  verdict=$("$PYTHON3" - "$kept/summary.json" "$dir/summary.json" <<'PY'
import json, sys
want, got = (json.load(open(path)) for path in sys.argv[1:])
for key in ("test_accuracy", "final_score"):
    if want[key] is None or got[key] != want[key]:
        print(f"{key} {got[key]}, the uninterrupted run's {want[key]}")
PY
  ) || fail "reading the summaries of $dir failed"
  [ -z "$verdict" ] || fail "the end's summary.json in $dir: $verdict"
}

# The small test network on the data in $1, writing to $2, with extra --set arguments after.
small_args() {
  local data=$1 out=$2
  shift 2
  local args=(--config "$DL_SOURCE_DIR/configs/lenet-small-test.yaml"
    --set "data.trainImages=$data/train-images-idx3-ubyte.gz"
    --set "data.trainLabels=$data/train-labels-idx1-ubyte.gz"
    --set "data.testImages=$data/t10k-images-idx3-ubyte.gz"
    --set "data.testLabels=$data/t10k-labels-idx1-ubyte.gz"
    --set "output.directory=$out")
  for a in "$@"; do args+=(--set "$a"); done
  printf '%s\n' "${args[@]}"
}

# make_long_read DIR: DIR/rows.csv (300,000 rows: the class, then 4 features) and DIR/rows.yaml, a
# one-layer network that trains on them into DIR/rows: a data read that lasts a while, parsed on
# the readers' threads, for signals sent during it.
make_long_read() {
  "$PYTHON3" - "$1/rows.csv" <<'PY'
import random, sys
random.seed(5)
with open(sys.argv[1], "w") as f:
    for i in range(300000):
        f.write(f"{i % 3}," + ",".join(f"{random.gauss(i % 3, 1):.3f}" for _ in range(4)) + "\n")
PY
  cat >"$1/rows.yaml" <<YAML
backend: cpu
batchSize: 32
epochs: 1
inputType:
  feedForward: {size: 4}
layers:
  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}
data: {format: csv, trainFile: $1/rows.csv, testFile: $1/rows.csv, labelIndex: 0, numClasses: 3}
output:
  directory: $1/rows
YAML
}

# expect_failure CODE PATTERN... -- COMMAND...: runs COMMAND, requires exit CODE and every PATTERN
# (grep -E) in its stderr, and exactly one line of stderr.
expect_failure() {
  local code=$1
  shift
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  local rc=0
  "$@" >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  [ "$rc" = "$code" ] || fail "expected exit $code, got $rc from: $* ($(cat "$WORK/err.txt"))"
  for p in "${patterns[@]}"; do
    grep -qE -- "$p" "$WORK/err.txt" || fail "stderr lacks /$p/: $(cat "$WORK/err.txt")"
  done
  [ "$(wc -l <"$WORK/err.txt")" -eq 1 ] || fail "expected one line of stderr: $(cat "$WORK/err.txt")"
  echo "ok: exit $code: $(cat "$WORK/err.txt")"
}

# onnx_class_names MODEL: the class names the ONNX export of MODEL carries in its metadata, joined
# by commas; nothing where this build exports no ONNX or python3-onnx is missing (the caller
# skips its check); an export without the names fails.
onnx_class_names() {
  "$PYTHON3" -c "import onnx" 2>/dev/null || return 0
  "$DL_TRAIN" export --format onnx -m "$1" -o "$WORK/class_names.onnx" >/dev/null || return 0
  "$PYTHON3" -c "
import onnx, sys
props = {p.key: p.value for p in onnx.load(sys.argv[1]).metadata_props}
print(props['dl-train.class_names'].replace(chr(10), ','))" "$WORK/class_names.onnx"
}
