#!/usr/bin/env bash
# SIGKILL at any step loses nothing: a run killed again and again (mid-epoch, at an epoch's end,
# before its first checkpoint, possibly while a checkpoint is being written) and resumed each
# time ends with the same parameters, bit for bit, the same score log and the same per-epoch
# evaluations as a run never killed.
# Checked with 1 worker and with 2 workers averaging every 3 rounds.
source "$(dirname "$0")/lib.sh"

# Enough steps (188 rounds of batch 32 per epoch) that a kill can land between any two of them.
readonly TRAIN_EXAMPLES=6000
readonly TEST_EXAMPLES=200
readonly EPOCHS=3
readonly CHECKPOINT_EVERY=3
readonly AVERAGING_FREQUENCY=3
readonly POLL_SECONDS=0.003

make_data "$WORK/data" "$TRAIN_EXAMPLES" "$TEST_EXAMPLES"

parameter_hash() { "$DL_TRAIN" inspect --model "$1" | sed -n 's/^parameter_hash: //p'; }

# run_until FILE TARGET ARGS...: starts the trainer and sends it SIGKILL as soon as FILE in its
# run directory holds TARGET lines. Prints the exit status.
run_until() {
  local file=$out/$1 target=$2
  shift 2
  "$DL_TRAIN" "$@" >>"$WORK/cycles.log" 2>&1 &
  local pid=$!
  kill_at_lines "$pid" "$file" "$target" "$POLL_SECONDS"
  local rc=0
  wait "$pid" || rc=$?
  echo "$rc"
}

# check_config NAME SETTINGS...: a straight run, then the same run killed at several points.
check_config() {
  local name=$1
  shift
  local settings=("epochs=$EPOCHS" "output.checkpointEveryIterations=$CHECKPOINT_EVERY"
    output.scoreEveryIterations=1 "$@")
  local straight=$WORK/$name-straight
  out=$WORK/$name-killed
  mapfile -t args < <(small_args "$WORK/data" "$straight" "${settings[@]}")
  "$DL_TRAIN" "${args[@]}" >"$WORK/$name-straight.log"
  local total per_epoch
  total=$(($(line_count "$straight/scores.csv") - 1))
  per_epoch=$(grep -c '^0,' "$straight/scores.csv")
  # Kill points, as "file lines" (scores.csv has a header line): the first score row (before any
  # checkpoint); the first epoch's evaluation logged (before or while its checkpoint is written);
  # early in an epoch; just before and at an epoch's end; mid epoch; late in the last epoch; its
  # last row (the final evaluation and model file; the run may also finish first).
  local points=("scores.csv 2" "metrics.jsonl 1" "scores.csv $((per_epoch + per_epoch / 4))"
    "scores.csv $((per_epoch * 2))" "scores.csv $((per_epoch * 2 + 1))"
    "scores.csv $((per_epoch * 5 / 2))" "scores.csv $((total + 1 - per_epoch / 3))"
    "scores.csv $((total + 1))")
  mapfile -t args < <(small_args "$WORK/data" "$out" "${settings[@]}")
  local cycle=0 done=false rc file target resume=()
  for point in "${points[@]}"; do
    read -r file target <<<"$point"
    # The lines of a killed run stay until the resumed run truncates its logs to its checkpoint,
    # so a target at or below what is already there would kill too early.
    [ "$target" -gt "$(line_count "$out/$file")" ] || target=$(($(line_count "$out/$file") + 1))
    rc=$(run_until "$file" "$target" "${args[@]}" "${resume[@]}")
    cycle=$((cycle + 1))
    echo "$name: cycle $cycle: kill at $file >= $target lines: exit $rc;" \
      "then $(line_count "$out/scores.csv") score lines, $(line_count "$out/metrics.jsonl") metrics lines"
    case $rc in
      0) done=true; break ;;
      137) ;;
      *) fail "$name: cycle $cycle exited $rc: $(tail -3 "$WORK/cycles.log")" ;;
    esac
    resume=(--resume)
  done
  # Then one last resume, left to complete the run.
  if [ "$done" = false ]; then
    rc=0
    "$DL_TRAIN" "${args[@]}" --resume >>"$WORK/cycles.log" 2>&1 || rc=$?
    cycle=$((cycle + 1))
    [ "$rc" = 0 ] || fail "$name: the last resume exited $rc: $(tail -3 "$WORK/cycles.log")"
  fi
  [ "$cycle" -ge 4 ] || fail "$name: only $cycle cycles: the kills came too late to test anything"

  local want got
  want=$(parameter_hash "$straight/model.dlm")
  got=$(parameter_hash "$out/model.dlm")
  [ -n "$want" ] || fail "$name: inspect printed no parameter_hash"
  [ "$want" = "$got" ] || fail "$name: parameters differ after kills: $got, uninterrupted $want"
  cmp "$straight/scores.csv" "$out/scores.csv" || fail "$name: score logs differ"
  # One evaluation per epoch, as in the uninterrupted run (timings aside).
  local untimed='s/,"epoch_seconds".*//'
  cmp <(sed "$untimed" "$straight/metrics.jsonl") <(sed "$untimed" "$out/metrics.jsonl") ||
    fail "$name: metrics.jsonl differs: $(cut -c1-40 "$out/metrics.jsonl")"
  echo "ok: $name: $cycle cycles, parameter_hash $got as uninterrupted, $total identical score rows"
}

check_config one-worker parallel.workers=1
check_config two-workers parallel.workers=2 "parallel.averagingFrequency=$AVERAGING_FREQUENCY"
