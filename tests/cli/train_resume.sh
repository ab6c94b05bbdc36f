#!/usr/bin/env bash
# Two epochs straight equal one epoch then --resume for the second: same score log, same
# evaluation of the final model; the run directory has every file it promises; the resumed run
# removes temporary files a killed writer left.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 1200 300
mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" epochs=2)
"$DL_TRAIN" "${straight[@]}" >"$WORK/straight.log"
for f in config.resolved.yaml scores.csv timing.csv metrics.jsonl evaluation.txt model.dlm summary.json; do
  [ -s "$WORK/straight/$f" ] || fail "run directory lacks $f"
done
ls "$WORK/straight/checkpoints/"*.dlck >/dev/null || fail "no checkpoint written"
grep -q '"test_accuracy"' "$WORK/straight/summary.json" || fail "summary.json lacks test_accuracy"

mapfile -t first < <(small_args "$WORK/data" "$WORK/resumed" epochs=1)
"$DL_TRAIN" "${first[@]}" >"$WORK/first.log"
# What a writer killed mid-write leaves behind: the resumed run removes it (its process is gone),
# and keeps a file that only looks similar.
sh -c 'exit 0' & dead_pid=$!
wait "$dead_pid"
stale="$WORK/resumed/checkpoints/checkpoint-e1-i99.dlck.tmp-$dead_pid"
echo partial >"$stale"
echo keep >"$WORK/resumed/notes.tmp-draft"
mapfile -t second < <(small_args "$WORK/data" "$WORK/resumed" epochs=2)
"$DL_TRAIN" "${second[@]}" --resume >"$WORK/second.log"
[ ! -e "$stale" ] || fail "the stale temporary file of a dead writer was not removed"
[ -e "$WORK/resumed/notes.tmp-draft" ] || fail "a file that is not a temporary file was removed"
grep -q "resume: .*checkpoint-e1" "$WORK/second.log" || fail "resume did not name its checkpoint: $(cat "$WORK/second.log")"

cmp "$WORK/straight/scores.csv" "$WORK/resumed/scores.csv" || fail "score logs differ"
"$DL_TRAIN" eval --model "$WORK/straight/model.dlm" | grep -v '^model:' >"$WORK/eval-straight.txt"
"$DL_TRAIN" eval --model "$WORK/resumed/model.dlm" | grep -v '^model:' >"$WORK/eval-resumed.txt"
cmp "$WORK/eval-straight.txt" "$WORK/eval-resumed.txt" || fail "final models evaluate differently"
grep -q "Accuracy" "$WORK/eval-straight.txt" || fail "eval printed no accuracy"
accuracy=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$WORK/straight/summary.json")
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.9) }' || fail "the small net learned too little: $accuracy"
# Resumed again once its epochs are all trained (a launcher that always passes --resume), the
# run trains nothing and keeps its files: model.dlm was rewritten and summary.json said test
# accuracy 0 after 0 epochs.
expect_ended_run_left_alone "$WORK/again.log" "$WORK/resumed" "$DL_TRAIN" "${second[@]}" --resume
grep -q "all 2 epoch(s) trained; .*raise epochs" "$WORK/again.log" || fail "$(cat "$WORK/again.log")"
grep -q "has no model.dlm" "$WORK/again.log" && fail "model.dlm is there: $(cat "$WORK/again.log")"
# Resumed with fewer epochs than it trained, it says how many it trained (it said "all 1 epoch(s)
# trained" of a 2-epoch run).
expect_ended_run_left_alone "$WORK/fewer.log" "$WORK/resumed" "$DL_TRAIN" "${second[@]}" --resume --set epochs=1
grep -q "(2 epoch(s) trained, more than epochs 1 asks for; .*set epochs above 2" "$WORK/fewer.log" ||
  fail "resumed with fewer epochs: $(cat "$WORK/fewer.log")"
# Killed after its last epoch's checkpoint, before the run's end was written (model.dlm,
# summary.json): the resume writes that end without training a step, as the uninterrupted run
# did (cli_kill_resume kills there by chance, too).
expect_end_written_again "$WORK/resumed" "$DL_TRAIN" "${second[@]}" --resume
# A resume under another batch size would go on from a position that now means other samples:
# refused (exit 4) naming the key; --restart-epoch goes on from the saved parameters instead.
mapfile -t changed < <(small_args "$WORK/data" "$WORK/resumed" epochs=3 batchSize=64)
expect_failure 4 "the config differs from the run's in what decides the data order or the model \(batchSize: 32 -> 64\)" \
  "--restart-epoch" -- "$DL_TRAIN" "${changed[@]}" --resume
# With the worker count changed beside it: only the batch size is named, since the worker count
# alone is re-sharded (it was listed as a reason too).
mapfile -t changed_workers < <(small_args "$WORK/data" "$WORK/resumed" epochs=3 batchSize=64 parallel.workers=2)
expect_failure 4 "decides the data order or the model \(batchSize: 32 -> 64\); resume with" -- \
  "$DL_TRAIN" "${changed_workers[@]}" --resume
"$DL_TRAIN" "${changed[@]}" --resume --restart-epoch >"$WORK/restarted.log" ||
  fail "--restart-epoch did not resume: $(tail -3 "$WORK/restarted.log")"
grep -q "resume: --restart-epoch: epoch 3 starts afresh (batchSize: 32 -> 64)" "$WORK/restarted.log" ||
  fail "--restart-epoch did not say what it did: $(grep resume "$WORK/restarted.log")"
# --help names what the flag is for as the refusal above does: a worker count alone is re-sharded
# and needs no --restart-epoch (the help once sent users to it for that).
help_line=$("$DL_TRAIN" --help | grep -A1 -- '--restart-epoch' | tr -s ' \n' ' ')
case "$help_line" in
  *"batch size, data, seed or parallel mode"*"worker or rank count alone needs no flag"*) ;;
  *) fail "--help's --restart-epoch line: $help_line" ;;
esac
echo "ok: straight and resumed runs agree; accuracy $accuracy; changed batch size refused"

# A resume under a changed config names the keys that changed (from the checkpoint's copy of its
# config): a copied run directory's output.directory and a changed console. It said only that the
# config differs.
mapfile -t original < <(small_args "$WORK/data" "$WORK/original" epochs=1 output.console=quiet)
"$DL_TRAIN" "${original[@]}" >/dev/null 2>&1 || fail "the run to copy failed"
cp -r "$WORK/original" "$WORK/copied"
mapfile -t copied < <(small_args "$WORK/data" "$WORK/copied" epochs=2 output.console=epochs)
"$DL_TRAIN" "${copied[@]}" --resume >"$WORK/copied.log" 2>&1 || fail "resuming the copy failed"
grep -q "^resume: note: the config differs from the one the checkpoint was saved with: epochs: 1 -> 2, output.console: quiet -> epochs, output.directory: .*original -> .*copied$" \
  "$WORK/copied.log" || fail "the changed keys are not named: $(grep 'resume: note' "$WORK/copied.log")"
echo "ok: a resume names the config keys that changed"
