#!/usr/bin/env bash
# A thread the system refuses (the user's process limit, `ulimit -u`) ends the run with one line
# naming the thread, the limit and the keys to lower, and exit 7, instead of "internal error:
# Resource temporarily unavailable". Root's process limit does not bind, so as root the run is
# made as 'nobody'; other users' runs share the limit with their other processes, so the test
# needs root (tests/parallel/test_thread_start.cpp covers the error itself for any user).
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skipped: needs root to run as a user of its own"; exit 77; }
command -v setpriv >/dev/null && command -v prlimit >/dev/null && id nobody >/dev/null 2>&1 ||
  { echo "skipped: needs setpriv, prlimit and the user nobody"; exit 77; }
make_data "$WORK/data" 200 50
chmod 755 "$WORK"
mkdir -m 777 "$WORK/runs"

# limited THREADS SETTINGS...: trains as nobody, allowed THREADS more processes and threads than
# nobody runs already. OpenBLAS starts no thread pool in dl-train (src/cli/
# blas_threads_before_start.cpp; with one, every count below would be off by the CPUs less one),
# so the count is dl-train's (main, standard error's and standard output's writers, the signal
# handler, then the workers and their compute threads).
# as_nobody THREADS ARGS...: dl-train ARGS as nobody, under that limit.
as_nobody() {
  local threads=$1
  shift
  local running
  running=$(ps -L -u nobody --no-headers 2>/dev/null | wc -l)
  setpriv --reuid=nobody --regid=nogroup --clear-groups \
    prlimit --nproc=$((running + threads)) "$DL_TRAIN" "$@"
}
limited() {
  local threads=$1
  shift
  mapfile -t args < <(small_args "$WORK/data" "$WORK/runs/$threads-$*" "$@")
  as_nobody "$threads" "${args[@]}"
}

expect_failure 7 "^dl-train: error: could not start worker 1's thread: Resource temporarily unavailable; " \
  "this user may run [0-9]+ processes and threads in all \(ulimit -u\); " \
  "lower parallel.workers, parallel.blasThreads or parallel.prefetchBuffer, or raise ulimit -u$" -- \
  limited 4 parallel.workers=4
expect_failure 7 "could not start compute thread 2 of [0-9]+ \(parallel.blasThreads\)" \
  "raise ulimit -u" -- limited 4 parallel.blasThreads=4
# Training's threads are started once before the run directory is claimed, so a refusal leaves no
# run behind: the retry needs no --overwrite (README, "Run directories").
for refused in 4-parallel.workers=4 4-parallel.blasThreads=4; do
  [ ! -e "$WORK/runs/$refused/.dl-train-run" ] ||
    fail "a refused thread left the claimed run directory $refused: $(ls -A "$WORK/runs/$refused")"
done
# The threads a worker's batches come from are started early too: CSV rows reach a CPU worker
# through its loader, whose prefetch thread is the last thread training starts. Allowed 6: main,
# the two stream writers, the signal handler, worker 1's thread, then worker 0's prefetch thread
# (reading the file needs one data reader thread, which ends before).
printf '%s\n' label,a,b,c,d >"$WORK/rows.csv"
for i in $(seq 0 63); do echo "$((i % 3)),$i,$((i % 7)),1,$((i % 5))" >>"$WORK/rows.csv"; done
chmod 644 "$WORK/rows.csv"
cat >"$WORK/csv.yaml" <<YAML
backend: cpu
batchSize: 16
epochs: 1
inputType:
  feedForward: {size: 4}
layers:
  - dense: {nOut: 8, activation: relu}
  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}
data: {format: csv, trainFile: $WORK/rows.csv, testFile: $WORK/rows.csv, skipLines: 1, labelIndex: 0}
parallel: {workers: 2, blasThreads: 1}
YAML
chmod 644 "$WORK/csv.yaml"
csv_limited() {
  local threads=$1
  shift
  as_nobody "$threads" --config "$WORK/csv.yaml" "$@"
}
expect_failure 7 "^dl-train: error: could not start worker [01]'s batch prefetch thread: " \
  "raise ulimit -u$" -- csv_limited 6 --set "output.directory=$WORK/runs/csv-6"
[ ! -e "$WORK/runs/csv-6/.dl-train-run" ] ||
  fail "a refused prefetch thread left the claimed run directory: $(ls -A "$WORK/runs/csv-6")"
csv_limited 8 --set "output.directory=$WORK/runs/csv-8" --set output.console=quiet >/dev/null ||
  fail "the CSV run failed with 8 threads allowed"
# No thread at all beyond main: the first one dl-train starts, standard error's writer, is named
# too (it was std::terminate, exit 134).
expect_failure 7 "^dl-train: error: could not start the thread that writes standard error" -- \
  limited 1
# With enough threads allowed, the same run trains.
limited 8 parallel.workers=4 output.console=quiet >/dev/null ||
  fail "the run failed with 8 threads allowed"
echo "ok: a refused thread is named"
