#!/usr/bin/env bash
# Ranks that disagree fail fast instead of hanging: rank 0 compares every rank's config, build,
# data, backend, collective and checkpoint at start, and a difference ends the whole job within
# seconds with one message naming the rank, its host and what differs (exit 2, 3 or 4). The ranks
# are started MPMD (`mpirun -np 1 ... : -np 1 ...`), each in its own working directory, so one
# config with relative paths names other files on each rank, as on nodes without a shared file
# system.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
readonly kTimeLimitSeconds=60 # a hang (the old behaviour) ends here with 124
readonly kFastSeconds=30      # what "within seconds" must mean even on a loaded CI machine

# The small network reading data/ relative to the working directory.
config="$WORK/relative.yaml"
sed -e 's|data/small/|data/|' "$DL_SOURCE_DIR/configs/lenet-small-test.yaml" >"$config"
run_args=(--config "$config" --set output.directory=run)

# two_ranks CODE DIR0 DIR1 PATTERN... -- [ARGS OF RANK 1...]: rank 0 runs in DIR0, rank 1 in DIR1
# with extra ARGS; the job must end with CODE, quickly, and stderr must match every PATTERN.
two_ranks() {
  local code=$1 dir0=$2 dir1=$3
  shift 3
  local patterns=()
  while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
  shift
  local start=$SECONDS rc=0
  timeout "$kTimeLimitSeconds" "$MPIRUN_LOCAL" \
    -np 1 -wdir "$dir0" "$DL_TRAIN" "${run_args[@]}" --resume : \
    -np 1 -wdir "$dir1" "$DL_TRAIN" "${run_args[@]}" --resume "$@" \
    >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
  local seconds=$((SECONDS - start))
  [ "$rc" != 124 ] || fail "the ranks hung until killed after $kTimeLimitSeconds s"
  [ "$rc" = "$code" ] || fail "expected exit $code, got $rc: $(head -3 "$WORK/err.txt")"
  [ "$seconds" -le "$kFastSeconds" ] || fail "took $seconds s to fail"
  for p in "${patterns[@]}"; do
    grep -qE -- "$p" "$WORK/err.txt" || fail "stderr lacks /$p/: $(head -3 "$WORK/err.txt")"
  done
  [ "$(grep -c '^dl-train: ' "$WORK/err.txt")" = 1 ] ||
    fail "expected one dl-train message: $(grep '^dl-train: ' "$WORK/err.txt")"
  echo "ok: exit $rc after $seconds s: $(grep '^dl-train: ' "$WORK/err.txt")"
}

# Training sets of 600 and 500 samples: the ranks would run different numbers of rounds.
make_data "$WORK/a/data" 600 200
make_data "$WORK/b/data" 500 200
two_ranks 3 "$WORK/a" "$WORK/b" \
  "rank 1 of 2 \(host [^)]+\) differs from rank 0 \(host [^)]+\)" \
  "training set: 500 samples of 28x28, content hash [0-9a-f]{16} \(rank 0: 600 samples" \
  "give every rank the same data files" --

# The same data, but only rank 0 sees the run directory's checkpoint.
mkdir -p "$WORK/c" "$WORK/d"
cp -r "$WORK/a/data" "$WORK/c/" && cp -r "$WORK/a/data" "$WORK/d/"
(cd "$WORK/c" && "$DL_TRAIN" "${run_args[@]}" >/dev/null) || fail "the first run failed"
two_ranks 4 "$WORK/c" "$WORK/d" \
  "checkpoint to resume from: none: starting from the beginning \(rank 0: run/checkpoints/" \
  "a file system every rank sees" --

# Different --set overrides on the two ranks: the keys that differ are named with both values
# (it named two hashes of the configs).
two_ranks 2 "$WORK/a" "$WORK/a" "resolved config: batchSize: 16 \(rank 0: [0-9]+\), seed: 7 \(rank 0: [0-9]+\)" \
  "the same --set overrides" -- --set seed=7 --set batchSize=16

# An error every rank meets alike (a data file none of them has) is said once, by rank 0: each
# rank printed it, with the launcher's noise of several aborts at once. One rank's own error is
# still said by that rank (the missing-file cases above).
rc=0
timeout "$kTimeLimitSeconds" "$MPIRUN_LOCAL" -np 3 -wdir "$WORK/a" "$DL_TRAIN" "${run_args[@]}" \
  --set data.trainImages=/nonexistent/train.gz >"$WORK/out.txt" 2>"$WORK/err.txt" || rc=$?
[ "$rc" = 3 ] || fail "a data file no rank has: exit $rc, want 3: $(head -3 "$WORK/err.txt")"
[ "$(grep -c '^dl-train: ' "$WORK/err.txt")" = 1 ] ||
  fail "an error all ranks meet, said more than once: $(grep '^dl-train: ' "$WORK/err.txt")"
grep -q "^dl-train: rank 0: error: /nonexistent/train.gz: cannot open" "$WORK/err.txt" ||
  fail "rank 0 did not say it: $(grep '^dl-train: ' "$WORK/err.txt")"
echo "ok: an error all ranks meet is said once"
