#!/usr/bin/env bash
# Validation sets: data.validationSplit and separate IDX files. Each epoch logs Keras's four
# numbers (console and metrics.jsonl), early stopping judges the validation set, the test set is
# evaluated once at the end; the training loss includes L2; the held-back part does not depend on
# workers; a resumed run (from a mid-epoch checkpoint) logs the same numbers; the config errors
# name the fix.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 600 200
make_data "$WORK/val" 100 10

metric() {  # metric FILE KEY: the KEY of every record, one per line
  python3 - "$1" "$2" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if sys.argv[2] in r: print(repr(r[sys.argv[2]]))
PY
}

mapfile -t args < <(small_args "$WORK/data" "$WORK/split" epochs=2 data.validationSplit=0.2 \
  earlyStopping.enabled=true earlyStopping.scoreCalculator=accuracy)
"$DL_TRAIN" "${args[@]}" >"$WORK/split.txt"
grep -q "validation: 120 examples from .*train-images-idx3-ubyte.gz (validationSplit 0.2)" \
  "$WORK/split.txt" || fail "no validation line: $(head -3 "$WORK/split.txt")"
grep -qE "data: 480 training and 200 test examples" "$WORK/split.txt" || fail "$(head -2 "$WORK/split.txt")"
grep -E "^([0-9:]{8} )?epoch [0-9]+/[0-9]+ done in .*train loss [0-9.]+ - accuracy [0-9.]+ - val_loss [0-9.]+ - val_accuracy [0-9.]+$" \
  "$WORK/split.txt" >"$WORK/epochs.txt" || fail "no Keras epoch line: $(grep done "$WORK/split.txt")"
[ "$(wc -l <"$WORK/epochs.txt")" = 2 ] || fail "expected 2 epoch lines"
grep -q "test set (final model): accuracy" "$WORK/split.txt" || fail "no final test line"
cat "$WORK/epochs.txt"
# Resumed once it has ended, the run keeps its test set's "final" record in metrics.jsonl (the
# resume cut it as it cut the records past its checkpoint, and then trained nothing).
expect_ended_run_left_alone "$WORK/split-again.log" "$WORK/split" "$DL_TRAIN" "${args[@]}" --resume
grep -q '"final": *true' "$WORK/split/metrics.jsonl" || fail "the final record is gone"
# The jsonl console spells them as metrics.jsonl does (it wrote validation_accuracy).
mapfile -t jargs < <(small_args "$WORK/data" "$WORK/split-jsonl" epochs=1 data.validationSplit=0.2 \
  output.console=jsonl)
"$DL_TRAIN" "${jargs[@]}" >"$WORK/split.jsonl"
grep '"event":"epoch"' "$WORK/split.jsonl" | grep -q '"val_accuracy"' &&
  ! grep -q 'validation_accuracy' "$WORK/split.jsonl" ||
  fail "jsonl epoch event: $(grep '"event":"epoch"' "$WORK/split.jsonl")"
python3 - "$WORK/split/metrics.jsonl" "$WORK/split/early_stopping.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
epochs = [r for r in rows if "epoch" in r]
assert len(epochs) == 2, rows
for r in epochs:
    for k in ("train_loss", "train_accuracy", "val_loss", "val_accuracy"):
        assert k in r, (k, r)
    assert "test_accuracy" not in r, r
    assert 0.0 <= r["train_accuracy"] <= 1.0 and r["train_loss"] > 0, r
final = rows[-1]
assert final.get("final") is True and "test_accuracy" in final and "epoch" not in final, final
best = max(epochs, key=lambda r: r["val_accuracy"])["epoch"]
stopping = json.load(open(sys.argv[2]))
assert stopping["best_epoch"] == best, (stopping, best)
print("ok: metrics.jsonl", json.dumps(epochs[-1]))
PY
# The epoch's training loss includes the L2 term, as Keras's does: with one round an epoch it is
# that round's score in scores.csv (output loss + L2 at the same parameters).
mapfile -t l2 < <(small_args "$WORK/data" "$WORK/l2" epochs=1 batchSize=600 l2=0.05 \
  output.scoreEveryIterations=1)
"$DL_TRAIN" "${l2[@]}" >/dev/null
python3 - "$WORK/l2/metrics.jsonl" "$WORK/l2/scores.csv" <<'PY'
import csv, json, sys
loss = json.loads(open(sys.argv[1]).readline())["train_loss"]
score = float(list(csv.DictReader(open(sys.argv[2])))[-1]["score"])
assert abs(loss - score) <= 1e-6 * score and score > 3.0, (loss, score)
print("ok: train_loss %.6f = the score with L2 %.6f" % (loss, score))
PY

# The held-back part depends on the seed only: 2 workers hold back the same 120 samples.
mapfile -t two < <(small_args "$WORK/data" "$WORK/two" epochs=1 data.validationSplit=0.2 \
  parallel.workers=2)
"$DL_TRAIN" "${two[@]}" >"$WORK/two.txt"
grep -q "validation: 120 examples" "$WORK/two.txt" || fail "2 workers: $(head -3 "$WORK/two.txt")"

# Resume from a checkpoint inside epoch 1 (480 samples: 15 rounds an epoch; iteration 20): the
# straight run's four numbers.
resume_args() {
  small_args "$WORK/data" "$WORK/$1" epochs=2 data.validationSplit=0.2 \
    output.checkpointEveryIterations=5 output.keepLast=20
}
mapfile -t straight < <(resume_args straight)
"$DL_TRAIN" "${straight[@]}" >/dev/null
mapfile -t cut < <(resume_args cut)
"$DL_TRAIN" "${cut[@]}" >/dev/null
ls "$WORK/cut/checkpoints" >"$WORK/ckpts.txt"
for f in "$WORK"/cut/checkpoints/*.dlck; do
  case "$f" in *-i20.dlck) ;; *) rm "$f" ;; esac
done
[ -n "$(ls "$WORK/cut/checkpoints")" ] || fail "no checkpoint at iteration 20: $(cat "$WORK/ckpts.txt")"
"$DL_TRAIN" "${cut[@]}" --resume >"$WORK/resume.txt"
grep -q "resume: .*-i20.dlck" "$WORK/resume.txt" || fail "did not resume at 20: $(grep resume "$WORK/resume.txt")"
for k in train_loss train_accuracy val_loss val_accuracy; do
  a=$(metric "$WORK/straight/metrics.jsonl" "$k")
  b=$(metric "$WORK/cut/metrics.jsonl" "$k")
  [ "$a" = "$b" ] || fail "$k after resuming inside epoch 1: $b; straight run: $a"
done
echo "ok: a run resumed inside epoch 1 logs the straight run's four numbers"

# Separate validation files.
mapfile -t files < <(small_args "$WORK/data" "$WORK/files" \
  "data.validationImages=$WORK/val/train-images-idx3-ubyte.gz" \
  "data.validationLabels=$WORK/val/train-labels-idx1-ubyte.gz")
"$DL_TRAIN" "${files[@]}" >"$WORK/files.txt"
grep -q "validation: 100 examples from $WORK/val/train-images-idx3-ubyte.gz" "$WORK/files.txt" ||
  fail "validation files: $(head -3 "$WORK/files.txt")"
grep -q "data: 600 training" "$WORK/files.txt" || fail "the training set lost samples"

# Config errors: exit 2, one line with the fix.
mapfile -t half < <(small_args "$WORK/data" "$WORK/half" data.validationImages=x.gz)
expect_failure 2 "data.validationImages is set but data.validationLabels is not" "give both" -- \
  "$DL_TRAIN" validate "${half[@]}"
expect_failure 2 "both name a validation set" -- "$DL_TRAIN" validate "${files[@]}" \
  --set data.validationSplit=0.1
expect_failure 2 "validationSplit" "\[0, 1\)" -- "$DL_TRAIN" validate "${args[@]}" \
  --set data.validationSplit=1
# A warm-up as long as the run, which training refuses, is refused by validate too (with the data
# read, the run's length is known); it passed validate, to fail the job's start.
for command in validate train; do
  expect_failure 2 "warmupIterations \(100000\) is not below the schedule" "shorten the warm-up" -- \
    "$DL_TRAIN" "$command" "${args[@]}" --set learningRateSchedule.type=cosine \
    --set learningRateSchedule.warmupIterations=100000 --set "output.directory=$WORK/warmup-$command"
  [ ! -e "$WORK/warmup-$command" ] || fail "$command: a refused warm-up left $(ls -A "$WORK/warmup-$command")"
done
mapfile -t tiny < <(small_args "$WORK/data" "$WORK/tiny" data.trainLimit=5 data.validationSplit=0.1)
expect_failure 3 "validationSplit 0.1 of 5 training samples holds back 0" -- "$DL_TRAIN" "${tiny[@]}"
# Averaging workers meet every averagingFrequency rounds; checkpoints asked for in between wait for
# the next meeting, which the start says (a job expecting one every 5 iterations got one per
# epoch, silently). A multiple of the frequency, or one worker, says nothing.
for every in 5 6; do
  mapfile -t meet < <(small_args "$WORK/data" "$WORK/meet-$every" data.trainLimit=320 \
    parallel.workers=2 parallel.mode=averaging parallel.averagingFrequency=3 \
    "output.checkpointEveryIterations=$every")
  "$DL_TRAIN" "${meet[@]}" >/dev/null 2>"$WORK/meet-$every.err" || fail "averaging every 3: $(tail -2 "$WORK/meet-$every.err")"
done
grep -q "note: output.checkpointEveryIterations 5 falls between the workers' averaging points" \
  "$WORK/meet-5.err" || fail "no note of checkpoints between averaging points: $(cat "$WORK/meet-5.err")"
! grep -q "averaging points" "$WORK/meet-6.err" || fail "a multiple of averagingFrequency was noted"
echo "ok: checkpoints between averaging points are noted"
