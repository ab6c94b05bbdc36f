#!/usr/bin/env bash
# Two MPI ranks x 1 worker in synchronous mode train like one process with 2 workers at the same
# global batch (float tolerance), and a 2-rank job resumes from its own checkpoint exactly.
source "$(dirname "$0")/lib.sh"
if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP: dl-train was built without MPI or mpirun is missing (apt-get install libopenmpi-dev openmpi-bin)"
  exit 77
fi
make_data "$WORK/data" 1500 300
common=(parallel.mode=synchronous output.scoreEveryIterations=5)

mapfile -t threads < <(small_args "$WORK/data" "$WORK/threads" "${common[@]}" parallel.workers=2)
"$DL_TRAIN" "${threads[@]}" >"$WORK/threads.log"
mapfile -t ranks < <(small_args "$WORK/data" "$WORK/ranks" "${common[@]}" parallel.workers=1)
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${ranks[@]}" >"$WORK/ranks.log" 2>&1 ||
  fail "mpirun -np 2 failed: $(tail -5 "$WORK/ranks.log")"
grep -q "processes: MPI" "$WORK/ranks.log" || fail "the ranks did not form one MPI group: $(head "$WORK/ranks.log")"
grep -q "global workers: 2" "$WORK/ranks.log" || fail "expected 2 global workers"
[ "$(grep -c '^done:' "$WORK/ranks.log")" = 1 ] || fail "only rank 0 should report"
# output.console: auto writes lines into a job's log under mpirun, whose forwarding is a
# terminal of its own: the log held a progress bar redrawn with carriage returns.
! grep -q $'\r' "$WORK/ranks.log" || fail "the log under mpirun holds a redrawn progress bar"
grep -qE "epoch 1/1 done in" "$WORK/ranks.log" || fail "no epoch line in the log under mpirun"
"$COMPARE_MODELS" "$WORK/threads/model.dlm" "$WORK/ranks/model.dlm" 1e-5 ||
  fail "2 ranks x 1 worker differ from 1 process x 2 workers"

# summary.json's `ranks`: one entry per process, each with its own rank and memory (a process
# that trains this network holds tens of MB; none holds 64 GiB); a single process has one entry.
# check_ranks SUMMARY N: exits non-zero, saying why, unless SUMMARY lists ranks 0 .. N-1.
check_ranks() { "${PYTHON3:-/usr/bin/python3}" - "$1" "$2" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
ranks, n = summary.get("ranks"), int(sys.argv[2])
assert isinstance(ranks, list) and len(ranks) == n, f"want {n} ranks: {ranks}"
assert [r["rank"] for r in ranks] == list(range(n)), f"rank numbers: {[r['rank'] for r in ranks]}"
for r in ranks:
    assert 10 << 20 < r["peak_rss_bytes"] < 64 << 30, f"rank {r['rank']} peak_rss_bytes {r['peak_rss_bytes']}"
    assert r["host"] and r["node"].startswith(r["host"]), f"rank {r['rank']}: host {r['host']!r}, node {r['node']!r}"
    assert r["workers"] == 1 + (n == 1) and r["backend"] == "cpu" and r["threads"].startswith("threads: ")
    assert sorted(x["local_rank"] for x in ranks if x["node"] == r["node"]) == list(range(r["local_ranks"]))
assert summary["peak_rss_bytes"] == ranks[0]["peak_rss_bytes"], "the top-level figure is rank 0's"
PY
}
check_ranks "$WORK/ranks/summary.json" 2 || fail "summary.json of 2 ranks: $(cat "$WORK/ranks/summary.json")"
check_ranks "$WORK/threads/summary.json" 1 || fail "summary.json of 1 process: $(cat "$WORK/threads/summary.json")"

# A 2-rank job stopped after epoch 1 and resumed for epoch 2 equals 2 epochs straight.
mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" "${common[@]}" parallel.workers=1 epochs=2)
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log" 2>&1 || fail "straight run failed"
mapfile -t first < <(small_args "$WORK/data" "$WORK/resumed" "${common[@]}" parallel.workers=1 epochs=1)
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${first[@]}" >"$WORK/first.log" 2>&1 || fail "first half failed"
mapfile -t second < <(small_args "$WORK/data" "$WORK/resumed" "${common[@]}" parallel.workers=1 epochs=2)
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${second[@]}" --resume >"$WORK/second.log" 2>&1 || fail "resume failed: $(tail -5 "$WORK/second.log")"
grep -q "resume: " "$WORK/second.log" || fail "the resumed job did not report its checkpoint"
cmp "$WORK/straight/scores.csv" "$WORK/resumed/scores.csv" || fail "resumed score log differs"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/resumed/model.dlm" 0 || fail "resumed model differs"
# eval (as every command but training) under the launcher: rank 0 does it once, the others end.
mapfile -t eval_args < <(small_args "$WORK/data" "$WORK/unused")
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" eval --model "$WORK/straight/model.dlm" "${eval_args[@]:0:10}" \
  >"$WORK/eval.out" 2>"$WORK/eval.err" || fail "eval under mpirun failed: $(tail -3 "$WORK/eval.err")"
[ "$(grep -c '^ Accuracy:' "$WORK/eval.out")" = 1 ] || fail "eval printed once per rank: $(cat "$WORK/eval.out")"
grep -q "note: eval runs in one process: rank 0 of the 2 " "$WORK/eval.err" || fail "no note: $(cat "$WORK/eval.err")"
set +e
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" eval --model "$WORK/no-such.dlm" "${eval_args[@]:0:10}" >"$WORK/bad.log" 2>&1
code=$?
set -e
[ "$code" = 4 ] || fail "eval of a missing model under mpirun exited $code, not 4: $(cat "$WORK/bad.log")"
[ "$(grep -c 'no-such.dlm' "$WORK/bad.log")" = 1 ] || fail "the error came once per rank: $(cat "$WORK/bad.log")"

# Signals sent to rank 1 alone (a node drained, `kill` of the process seen in top) are the job's:
# SIGUSR1 writes a checkpoint and training goes on, SIGTERM stops every rank with a checkpoint and
# exit 143, and the job resumed from it ends as the straight one. Rank 0 alone used to read them:
# rank 1's were ignored and the job trained on until the scheduler killed it without a checkpoint.
mapfile -t signalled < <(small_args "$WORK/data" "$WORK/signalled" "${common[@]}" parallel.workers=1 epochs=2)
DL_TRAIN_TEST_SYNC_PAUSE_MS=50 "$MPIRUN_LOCAL" -x DL_TRAIN_TEST_SYNC_PAUSE_MS -np 2 "$DL_TRAIN" \
  "${signalled[@]}" >"$WORK/signalled.log" 2>&1 &
job=$!
wait_for_lines "$WORK/signalled/scores.csv" 2 200 0.05
rank1=""
for pid in $(pgrep -f -- "output.directory=$WORK/signalled"); do
  tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && rank1=$pid
done
[ -n "$rank1" ] || fail "rank 1 not found: $(tail -3 "$WORK/signalled.log")"
kill -USR1 "$rank1"
for _ in $(seq 1 100); do grep -q "checkpoint requested" "$WORK/signalled.log" && break; sleep 0.05; done
grep -q "checkpoint requested (SIGUSR1): " "$WORK/signalled.log" || fail "rank 1's SIGUSR1 wrote no checkpoint"
kill -TERM "$rank1" || fail "the job ended before rank 1's SIGTERM: $(tail -3 "$WORK/signalled.log")"
rc=0
wait "$job" || rc=$?
[ "$rc" = 143 ] || fail "SIGTERM to rank 1: expected exit 143, got $rc: $(tail -3 "$WORK/signalled.log")"
grep -q "signal 15 received by rank 1: checkpoint " "$WORK/signalled.log" ||
  fail "no checkpoint naming rank 1: $(grep -a signal "$WORK/signalled.log")"
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" "${signalled[@]}" --resume >"$WORK/signalled2.log" 2>&1 ||
  fail "resume after rank 1's SIGTERM failed: $(tail -5 "$WORK/signalled2.log")"
cmp "$WORK/straight/scores.csv" "$WORK/signalled/scores.csv" || fail "resumed after SIGTERM: scores differ"
"$COMPARE_MODELS" "$WORK/straight/model.dlm" "$WORK/signalled/model.dlm" 0 ||
  fail "resumed after SIGTERM: the model differs"
echo "ok: 2 ranks == 2 threads; summary.json lists both ranks; 2-rank resume is exact; rank 1's signals stop and checkpoint the job; eval runs once"

# SIGTERM to rank 1 alone while the ranks read their data (CSV rows, parsed on the readers'
# threads): rank 1's read ends at its next row, every rank leaves together after the read (rank 0
# says so), the job exits 143 and nothing is written. Rank 1 alone leaving would have kept rank 0
# waiting in the next collective.
make_long_read "$WORK"
"$PYTHON3" "$DL_SOURCE_DIR/tests/cli/term_when_caught.py" --rank 1 "$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" \
  --config "$WORK/rows.yaml" >"$WORK/rows.log" 2>&1 ||
  fail "SIGTERM to rank 1 while reading: $(tail -5 "$WORK/rows.log")"
grep -q "^stopped by signal 15 while reading the data, before training: nothing was written" \
  "$WORK/rows.log" || fail "SIGTERM to rank 1 while reading: $(head -3 "$WORK/rows.log")"
[ ! -e "$WORK/rows" ] || fail "SIGTERM to rank 1 while reading left $(ls -A "$WORK/rows")"
echo "ok: SIGTERM to rank 1 while reading the data -> every rank stops after the read, 143, nothing written"
