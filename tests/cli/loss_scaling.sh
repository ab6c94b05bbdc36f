#!/usr/bin/env bash
# Loss scaling from the command line: a power-of-two scale trains the same parameters as none
# (float has room for it), the end of the run reports the scale, SIGTERM + --resume carries the
# scaler state on bit-identically, and bad settings are config errors (exit 2).
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 6000 200

# Growth every 40 good steps: the scale changes during the run, so a resume that lost the
# scaler's state would end with another scale.
readonly SCALING=(lossScaling.mode=dynamic lossScaling.initialScale=1024
  lossScaling.growthInterval=40)
readonly COMMON=(epochs=2 output.scoreEveryIterations=1 parallel.workers=2
  parallel.averagingFrequency=3)

parameter_hash() { "$DL_TRAIN" inspect --model "$1" | sed -n 's/^parameter_hash: //p'; }
# The top-level key (each entry of "ranks" has its own, beside figures that differ run to run).
scaling_summary() { grep '^  "loss_scaling"' "$1/summary.json"; }

mapfile -t plain < <(small_args "$WORK/data" "$WORK/plain" "${COMMON[@]}")
"$DL_TRAIN" "${plain[@]}" >"$WORK/plain.log"
mapfile -t scaled < <(small_args "$WORK/data" "$WORK/scaled" "${COMMON[@]}" "${SCALING[@]}")
"$DL_TRAIN" "${scaled[@]}" >"$WORK/scaled.log"

grep -q "^  mode: dynamic$" "$WORK/scaled/config.resolved.yaml" ||
  fail "the resolved config does not state mode: dynamic"
grep -q "^  mode: none$" "$WORK/plain/config.resolved.yaml" ||
  fail "the resolved config of a FLOAT run does not state mode: none"
grep -q "loss scaling (dynamic): final scale .*; 0 step(s) skipped for overflow" "$WORK/scaled.log" ||
  fail "no loss scaling line at the end of the log: $(tail -3 "$WORK/scaled.log")"
scaling_summary "$WORK/scaled" | grep -q '"mode": "dynamic".*"skipped_steps": 0' ||
  fail "summary.json lacks the loss scaling result: $(cat "$WORK/scaled/summary.json")"
# 6000 examples, 2 workers x batch 32: 94 rounds an epoch, 188 good steps per worker, so the
# scale grew 4 times: 1024 x 2^4.
scaling_summary "$WORK/scaled" | grep -q '"final_scale": 16384,' ||
  fail "the scale did not grow to 16384: $(scaling_summary "$WORK/scaled")"
# The process's own entry in `ranks` holds each of its workers' final scale.
grep '^  "ranks": ' "$WORK/scaled/summary.json" |
  grep -q '"loss_scaling": {"mode": "dynamic", "final_scales": \[16384, 16384\], "skipped_steps": 0}' ||
  fail "summary.json's ranks lack the workers' final scales: $(grep '"ranks"' "$WORK/scaled/summary.json")"
if scaling_summary "$WORK/plain" >/dev/null; then fail "summary.json of a run without scaling has loss_scaling"; fi
[ "$(parameter_hash "$WORK/plain/model.dlm")" = "$(parameter_hash "$WORK/scaled/model.dlm")" ] ||
  fail "a power-of-two loss scale changed the parameters"
cmp "$WORK/plain/scores.csv" "$WORK/scaled/scores.csv" || fail "loss scaling changed the scores"

# SIGTERM, then --resume: the same scores, parameters and final scale as the uninterrupted run.
# The pause at each sync point (test-only, README) keeps the run going until the signal arrives.
mapfile -t args < <(small_args "$WORK/data" "$WORK/killed" "${COMMON[@]}" "${SCALING[@]}")
DL_TRAIN_TEST_SYNC_PAUSE_MS=30 "$DL_TRAIN" "${args[@]}" >"$WORK/killed.log" 2>&1 &
pid=$!
wait_for_lines "$WORK/killed/scores.csv" 40 400 0.01
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] || fail "expected exit 143 after SIGTERM, got $rc: $(tail -3 "$WORK/killed.log")"
"$DL_TRAIN" "${args[@]}" --resume >"$WORK/resumed.log"
cmp "$WORK/scaled/scores.csv" "$WORK/killed/scores.csv" || fail "resumed score log differs"
[ "$(parameter_hash "$WORK/scaled/model.dlm")" = "$(parameter_hash "$WORK/killed/model.dlm")" ] ||
  fail "resumed parameters differ"
[ "$(scaling_summary "$WORK/scaled")" = "$(scaling_summary "$WORK/killed")" ] ||
  fail "resumed loss scale differs: $(scaling_summary "$WORK/killed"), uninterrupted $(scaling_summary "$WORK/scaled")"

# Bad settings: exit 2 with the key and the fix.
cfg="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"
expect_failure 2 "lossScaling.mode" "did you mean 'dynamic'" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set lossScaling.mode=dynamik
expect_failure 2 "lossScaling.initialScale = 0 is out of range" "allowed" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set lossScaling.initialScale=0
expect_failure 2 "lossScaling.backoffFactor = 2 is out of range" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set lossScaling.backoffFactor=2
expect_failure 2 "lossScaling.growthInterval = 0 is out of range" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set lossScaling.growthInterval=0
expect_failure 2 "did you mean 'growthFactor'" -- \
  "$DL_TRAIN" validate --config-only --config "$cfg" --set lossScaling.growthfactor=2
echo "ok: loss scaling exact, reported, resumed bit-identically; bad settings rejected"
