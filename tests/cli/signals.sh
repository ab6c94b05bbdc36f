#!/usr/bin/env bash
# SIGTERM: the run finishes its step, writes a checkpoint and exits 143; --resume then completes
# it with the same score log as an uninterrupted run.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 6000 200
mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" epochs=2)
"$DL_TRAIN" "${straight[@]}" >/dev/null
mapfile -t args < <(small_args "$WORK/data" "$WORK/killed" epochs=2)
# The pause at each sync point (test-only, README) keeps the run going until the signal arrives.
DL_TRAIN_TEST_SYNC_PAUSE_MS=10 "$DL_TRAIN" "${args[@]}" >"$WORK/killed.log" 2>&1 &
pid=$!
# Wait until training has begun (the first score row) before the signal.
wait_for_lines "$WORK/killed/scores.csv" 2 200 0.05
# The stop signals go to a thread of their own, never to a training thread in its arithmetic
# (signals.cpp): the main thread, which is worker 0, blocks SIGTERM (bit 15 of SigBlk), and so do
# the threads it starts (the thread pool's helpers); threads started before it blocked them (the
# standard error writer, a library's idle threads) and the signal thread do not.
main_blocked="$(awk '/^SigBlk:/ {print $2}' /proc/"$pid"/status)"
(( (16#$main_blocked >> 14) & 1 )) || fail "the training thread takes SIGTERM (SigBlk $main_blocked)"
blocking=0
for status in /proc/"$pid"/task/*/status; do
  blocked="$(awk '/^SigBlk:/ {print $2}' "$status" 2>/dev/null)" || continue
  [ -n "$blocked" ] && (( (16#$blocked >> 14) & 1 )) && blocking=$((blocking + 1))
done
[ "$blocking" -ge 2 ] || fail "only $blocking thread(s) block SIGTERM; the pool's helpers should too"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "expected exit 143 after SIGTERM, got $rc: $(tail -3 "$WORK/killed.log")"
grep -q "signal 15 received: checkpoint" "$WORK/killed.log" || fail "no checkpoint on SIGTERM"
# The last line says the run was stopped, not "done" as it once did.
tail -1 "$WORK/killed.log" | grep -q "^stopped by signal 15: .* (continue with --resume)$" ||
  fail "the last line of a stopped run: $(tail -1 "$WORK/killed.log")"
# Stopped inside its first epoch, the run evaluated nothing: summary.json's test_accuracy is null,
# not a 0 that reads as a result (its final_score, the last score reported, is a number).
"$PYTHON3" - "$WORK/killed/summary.json" <<'PY' || fail "summary.json of a run stopped in its first epoch"
import json, sys
summary = json.load(open(sys.argv[1]))
assert summary["epochs"] == 0, f"the signal came after epoch {summary['epochs']}"
assert summary["test_accuracy"] is None, f"test_accuracy {summary['test_accuracy']}"
assert isinstance(summary["final_score"], float), f"final_score {summary['final_score']}"
PY
"$DL_TRAIN" "${args[@]}" --resume >"$WORK/resumed.log"
cmp "$WORK/straight/scores.csv" "$WORK/killed/scores.csv" || fail "resumed score log differs"

# Resumed at an epoch's end and stopped inside the next epoch, the run counts the epochs it
# trained before the resume (it said "0 epoch(s)" of a run that had trained one).
mapfile -t boundary < <(small_args "$WORK/data" "$WORK/boundary" epochs=1)
"$DL_TRAIN" "${boundary[@]}" >/dev/null || fail "the first epoch failed"
rows=$(grep -c . "$WORK/boundary/scores.csv")
DL_TRAIN_TEST_SYNC_PAUSE_MS=10 "$DL_TRAIN" "${boundary[@]}" --set epochs=2 --resume \
  >"$WORK/boundary.log" 2>&1 &
pid=$!
wait_for_lines "$WORK/boundary/scores.csv" $((rows + 2)) 200 0.05
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "resumed at an epoch's end, SIGTERM: exit $rc"
grep -q '"epochs": 1,' "$WORK/boundary/summary.json" ||
  fail "epochs of a run resumed at an epoch's end: $(grep '"epochs"' "$WORK/boundary/summary.json")"
tail -1 "$WORK/boundary.log" | grep -q "^stopped by signal 15: 1 epoch(s)" ||
  fail "the last line: $(tail -1 "$WORK/boundary.log")"

# SIGUSR1 writes a checkpoint and training goes on to a normal end.
mapfile -t usr1 < <(small_args "$WORK/data" "$WORK/usr1" epochs=2)
DL_TRAIN_TEST_SYNC_PAUSE_MS=10 "$DL_TRAIN" "${usr1[@]}" >"$WORK/usr1.log" 2>&1 &
pid=$!
wait_for_lines "$WORK/usr1/scores.csv" 2 200 0.05
kill -USR1 "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "SIGUSR1 should not stop the run (exit $rc)"
grep -q "checkpoint requested (SIGUSR1): .*checkpoint-e0-" "$WORK/usr1.log" || fail "no checkpoint on SIGUSR1: $(cat "$WORK/usr1.log")"
cmp "$WORK/straight/scores.csv" "$WORK/usr1/scores.csv" || fail "SIGUSR1 changed the training"

# A second Ctrl-C before the first is honoured ends the run at once, exit 130, saying so on
# standard error (it ended without a word). Each sync point pauses 1 s, and the first SIGINT is
# acted on at the sync point after the one it arrived in: the second, 0.2 s later, always
# arrives first.
mapfile -t twice < <(small_args "$WORK/data" "$WORK/twice" epochs=2)
# (A script's `&` ignores SIGINT in its child, which dl-train keeps: env gives it back.)
DL_TRAIN_TEST_SYNC_PAUSE_MS=1000 env --default-signal=INT "$DL_TRAIN" "${twice[@]}" \
  >"$WORK/twice.log" 2>"$WORK/twice.err" &
pid=$!
wait_for_lines "$WORK/twice/scores.csv" 2 400 0.05
kill -INT "$pid"
sleep 0.2
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || fail "two SIGINTs: exit $rc, want 130"
tail -1 "$WORK/twice.err" | grep -q "^dl-train: a second interrupt: stopped at once, without the checkpoint" ||
  fail "two SIGINTs, the last line of stderr: $(tail -1 "$WORK/twice.err")"
echo "ok: a second SIGINT -> 130 at once, with a line saying so"

# Once the run has ended, the signals have their default effect again: a process held up on its
# way out (here the test-only pause after the run returns; in a job, an MPI finalize that hangs)
# is ended by SIGTERM. Before, dl-train's handler still took it, only to set a flag nothing read.
mapfile -t ended < <(small_args "$WORK/data" "$WORK/ended" epochs=1 data.trainLimit=640)
DL_TRAIN_TEST_EXIT_PAUSE_MS=120000 "$DL_TRAIN" "${ended[@]}" >"$WORK/ended.log" 2>"$WORK/ended.err" &
pid=$!
for _ in $(seq 1 600); do
  grep -q "pausing 120000 ms before exiting" "$WORK/ended.err" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
grep -q "pausing 120000 ms before exiting" "$WORK/ended.err" ||
  fail "the run did not reach its pause before exiting: $(tail -3 "$WORK/ended.err")"
grep -q '"stopped_by": "completed"' "$WORK/ended/summary.json" || fail "the run did not complete"
kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"
  fail "SIGTERM after the run's end was ignored: the process went on pausing"
fi
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "ended by SIGTERM after the run, the process exited $rc"
echo "ok: SIGTERM after the run ends the process"

# SIGUSR1 before training (MPI's start, the config, the data) and in a command that does not
# train is ignored: it used to end the process with 138. From the moment it is ignored or caught
# (bit 10 of SigIgn or SigCgt), a stream of them leaves validate's exit 0.
"$DL_TRAIN" validate "${usr1[@]}" >"$WORK/validate-usr1.log" 2>&1 &
pid=$!
handled=false sent=0
while kill -0 "$pid" 2>/dev/null; do
  masks=$(awk '/^Sig(Ign|Cgt):/ {print $2}' /proc/"$pid"/status 2>/dev/null) || break
  for mask in $masks; do (( (16#$mask >> 9) & 1 )) && handled=true; done
  if [ "$handled" = true ]; then kill -USR1 "$pid" 2>/dev/null && sent=$((sent + 1)); fi
done
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "validate under SIGUSR1 exited $rc after $sent signal(s): $(tail -2 "$WORK/validate-usr1.log")"
[ "$handled" = true ] || fail "validate neither ignores nor catches SIGUSR1: its default action ends it"
echo "ok: SIGUSR1 ignored by validate ($sent sent)"
# With a validation set, a stop signal exits once its checkpoint is written. It used to evaluate
# the whole test set first (the run's end does, for a final model), which a scheduler's grace
# period may not allow: a "final" record in metrics.jsonl said so. The resumed run's end has it.
mapfile -t vstraight < <(small_args "$WORK/data" "$WORK/vstraight" epochs=2 data.validationSplit=0.2)
"$DL_TRAIN" "${vstraight[@]}" >/dev/null
mapfile -t vargs < <(small_args "$WORK/data" "$WORK/vkilled" epochs=2 data.validationSplit=0.2)
DL_TRAIN_TEST_SYNC_PAUSE_MS=10 "$DL_TRAIN" "${vargs[@]}" >"$WORK/vkilled.log" 2>&1 &
pid=$!
wait_for_lines "$WORK/vkilled/scores.csv" 2 200 0.05
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "validation set, SIGTERM: exit $rc, want 143: $(tail -3 "$WORK/vkilled.log")"
! grep -q '"final"' "$WORK/vkilled/metrics.jsonl" ||
  fail "a run stopped by SIGTERM evaluated the test set: $(grep '"final"' "$WORK/vkilled/metrics.jsonl")"
grep -q '"test_accuracy": null' "$WORK/vkilled/summary.json" ||
  fail "stopped with a validation set: $(grep test_accuracy "$WORK/vkilled/summary.json")"
"$DL_TRAIN" "${vargs[@]}" --resume >"$WORK/vresumed.log"
cmp "$WORK/vstraight/scores.csv" "$WORK/vkilled/scores.csv" || fail "validation set: resumed scores differ"
[ "$(grep -c '"final"' "$WORK/vkilled/metrics.jsonl")" = 1 ] ||
  fail "the resumed run's end: $(grep -c '"final"' "$WORK/vkilled/metrics.jsonl") final records"
echo "ok: validation set, SIGTERM -> 143 without evaluating the test set; its resume evaluates it once"

# SIGTERM while the run is set up (the data read, before its directory is claimed): it ends there,
# 143, with nothing written. It used to claim the directory, train a step and write a first
# checkpoint. The signal is sent as soon as the handler is installed (SigCgt bit 15); reading 60,000
# images takes far longer than that.
make_data "$WORK/big" 60000 1000
mapfile -t early < <(small_args "$WORK/big" "$WORK/early" epochs=1)
term_when_caught="$DL_SOURCE_DIR/tests/cli/term_when_caught.py"
"$PYTHON3" "$term_when_caught" "$DL_TRAIN" "${early[@]}" >"$WORK/early.log" 2>&1 ||
  fail "SIGTERM while setting up: $(tail -3 "$WORK/early.log")"
grep -q "^stopped by signal 15 while setting up, before training: nothing was written to $WORK/early" \
  "$WORK/early.log" || fail "SIGTERM while setting up: $(tail -3 "$WORK/early.log")"
[ ! -e "$WORK/early" ] || fail "SIGTERM while setting up left $(ls -A "$WORK/early")"
# The same with standard output on a full disk: the line saying so is lost, and stderr says what
# happened (it read "the run completed in " with no directory).
"$PYTHON3" "$term_when_caught" "$DL_TRAIN" "${early[@]}" >/dev/full 2>"$WORK/early-full.err" ||
  fail "SIGTERM while setting up, stdout full: $(tail -3 "$WORK/early-full.err")"
grep -q "standard output failed (No space left on device); stopped before training; nothing was written" \
  "$WORK/early-full.err" || fail "SIGTERM while setting up, stdout full: $(cat "$WORK/early-full.err")"
[ ! -e "$WORK/early" ] || fail "SIGTERM while setting up left $(ls -A "$WORK/early")"
echo "ok: SIGTERM while setting up -> 143, nothing written"
# SIGTERM while a long data read runs (CSV rows here, parsed on the readers' threads as a folder's
# images are decoded): the read ends at its next row, with exit 143, nothing written, and a line
# saying so. It used to read on to the end, which with a large folder can outlast a scheduler's
# grace period. The signal comes as the handler is installed, before the first row is parsed.
make_long_read "$WORK"
"$PYTHON3" "$term_when_caught" "$DL_TRAIN" --config "$WORK/rows.yaml" >"$WORK/rows.log" 2>&1 ||
  fail "SIGTERM while reading the data: $(tail -3 "$WORK/rows.log")"
grep -q "^stopped by signal 15 while reading the data, before training: nothing was written to $WORK/rows" \
  "$WORK/rows.log" || fail "SIGTERM while reading the data: $(tail -3 "$WORK/rows.log")"
[ ! -e "$WORK/rows" ] || fail "SIGTERM while reading the data left $(ls -A "$WORK/rows")"
echo "ok: SIGTERM while reading the data -> the read ends early, 143, nothing written"
echo "ok: SIGTERM -> 143, checkpoint, resume identical ($(grep -c . "$WORK/killed/scores.csv") rows)"
