#!/usr/bin/env bash
# Early stopping on patience: a minimum improvement no epoch can reach stops the run after
# `patience` evaluated epochs without improvement; the summary, its JSON and the best model
# (the highest accuracy, since accuracy is maximized) are written.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 600 200
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" epochs=20 earlyStopping.enabled=true \
  earlyStopping.patience=2 earlyStopping.minImprovement=0.5 earlyStopping.scoreCalculator=accuracy)
"$DL_TRAIN" "${args[@]}" >"$WORK/log.txt"
grep -qi "patience" "$WORK/run/early_stopping.json" || fail "termination reason is not patience: $(cat "$WORK/run/early_stopping.json")"
[ -s "$WORK/run/best_model.dlm" ] || fail "no best model saved"
grep -q '"stopped_by": "early stopping"' "$WORK/run/summary.json" ||
  fail "summary.json does not say early stopping ended the run: $(grep stopped_by "$WORK/run/summary.json")"
epochs=$(grep -c '"epoch"' "$WORK/run/metrics.jsonl")
[ "$epochs" = 3 ] || fail "expected 3 evaluated epochs (1 best + patience 2), got $epochs"
# The best model is the epoch with the highest accuracy.
best_epoch=$(python3 - "$WORK/run/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(max(rows, key=lambda r: r["test_accuracy"])["epoch"])
PY
)
grep -q "\"best_epoch\": *$best_epoch" "$WORK/run/early_stopping.json" || fail "best epoch is not the most accurate one ($best_epoch): $(cat "$WORK/run/early_stopping.json")"
sed -n '/Early stopping/,$p' "$WORK/log.txt" | head -20
# Every JSON document of the run directory, and each record of metrics.jsonl, starts with
# "format_version" (docs/OUTPUTS.md); evaluation.json once did not.
python3 - "$WORK/run" <<'PY' || fail "a JSON output does not start with format_version"
import glob, json, sys
docs = [(p, open(p).read()) for p in sorted(glob.glob(sys.argv[1] + "/*.json"))]
docs += [(p, l) for p in glob.glob(sys.argv[1] + "/*.jsonl") for l in open(p) if l.strip()]
names = sorted({p.rsplit("/", 1)[1] for p, _ in docs})
assert names == ["early_stopping.json", "evaluation.json", "metrics.jsonl", "summary.json"], names
bad = [p for p, text in docs if list(json.loads(text))[:1] != ["format_version"]]
assert not bad, "no leading format_version in " + ", ".join(bad)
PY
# Resumed, the stopped run stays stopped: before, it stepped once more and wrote that model.
expect_ended_run_left_alone "$WORK/again.log" "$WORK/run" "$DL_TRAIN" "${args[@]}" --resume
grep -q "(early stopping: stopped by patience: .*start a new run" "$WORK/again.log" ||
  fail "$(cat "$WORK/again.log")"
# Killed after the stop's checkpoint but before its end was written: the resume writes that end
# (the stopped model, not one stepped further) without training.
expect_end_written_again "$WORK/run" "$DL_TRAIN" "${args[@]}" --resume
echo "ok: stopped on patience after $epochs epochs; best epoch $best_epoch; its end written again after a kill"

# Stopped inside an epoch (maxTimeSeconds reached in the second epoch: 19 rounds of 40 ms each),
# the run's figures are model.dlm's: before, summary.json and evaluation.json reported the first
# epoch's evaluation for a model trained 8 rounds further, and metrics.jsonl had no record of it.
mapfile -t args < <(small_args "$WORK/data" "$WORK/timed" epochs=3 earlyStopping.enabled=true \
  earlyStopping.maxTimeSeconds=1.1)
DL_TRAIN_TEST_SYNC_PAUSE_MS=40 "$DL_TRAIN" "${args[@]}" >"$WORK/timed.log"
grep -q '"reason": "maxTime"' "$WORK/timed/early_stopping.json" || fail "$(cat "$WORK/timed.log")"
"$DL_TRAIN" eval --model "$WORK/timed/model.dlm" --json >"$WORK/timed_eval.json"
python3 - "$WORK/timed" "$WORK/timed_eval.json" <<'PY2' || fail "the figures are not model.dlm's: $(cat "$WORK/timed.log")"
import json, sys
model = json.load(open(sys.argv[2]))
records = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
summary = json.load(open(sys.argv[1] + "/summary.json"))
evaluation = json.load(open(sys.argv[1] + "/evaluation.json"))
assert records[-1].get("final") and records[-1]["iteration"] == model["iteration"], records[-1]
assert abs(records[-1]["test_loss"] - model["mean_loss"]) < 1e-5, (records[-1], model["mean_loss"])
assert summary["test_accuracy"] == model["evaluation"]["accuracy"], summary["test_accuracy"]
assert evaluation["confusion"] == model["evaluation"]["confusion"], evaluation["confusion"]
PY2
grep -q "^test set (final model): accuracy" "$WORK/timed.log" || fail "$(cat "$WORK/timed.log")"
echo "ok: stopped inside an epoch, the run reports model.dlm's test figures"

# earlyStopping.maxEpochs past `epochs` is the run's length, and so the default length of its
# schedule: it was `epochs` alone, so epochs 2 and 3 trained at the cosine's end, learning rate 0.
mapfile -t args < <(small_args "$WORK/data" "$WORK/longer" epochs=1 earlyStopping.enabled=true \
  earlyStopping.maxEpochs=3 learningRateSchedule.type=cosine output.console=lines)
"$DL_TRAIN" "${args[@]}" >"$WORK/longer.log" 2>&1 || fail "maxEpochs 3: $(tail -3 "$WORK/longer.log")"
per_epoch=$(awk -F, 'NR > 1 && $1 == 0 {n = $2} END {print n}' "$WORK/longer/scores.csv")
grep -q "schedule cosine over $((3 * per_epoch)) iterations" "$WORK/longer.log" ||
  fail "the schedule is not 3 epochs of $per_epoch iterations: $(grep -m1 schedule "$WORK/longer.log")"
echo "ok: earlyStopping.maxEpochs sets the schedule's default length"
