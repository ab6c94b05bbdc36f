#!/usr/bin/env bash
# What a person sees of a run: the console in each output.console mode (the bar on a terminal,
# flushed lines when piped, JSON lines), TensorBoard event files read back by an independent
# reader, report.html (written by the run and by `dl-train report`), provenance in summary.json
# (strict JSON even after a non-finite loss), --version, and --json for validate/inspect/eval/info.
source "$(dirname "$0")/lib.sh"
# TensorBoard event files need the protobuf the build found (meson -Donnx); without it there is
# nothing of theirs to check.
if "$DL_TRAIN" --version | grep -q '^TensorBoard event files: no'; then
  echo "SKIPPED: this dl-train was built without protobuf (TensorBoard event files: no)"
  exit 77
fi
make_data "$WORK/data" 600 100
PY=${PYTHON3:-/usr/bin/python3}
HERE=$DL_SOURCE_DIR/tests/report
# Strict: NaN and Infinity are not JSON.
strict_json() { "$PY" -c 'import json,sys
def bad(c): raise ValueError("not JSON: " + c)
for p in sys.argv[1:]:
    text = open(p).read()
    docs = [l for l in text.splitlines() if l.strip()] if p.endswith("l") else [text]
    for d in docs: json.loads(d, parse_constant=bad)' "$@"; }

# Piped: plain lines with a clock time, an iteration line per report, the TensorBoard files.
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" epochs=2 output.scoreEveryIterations=5 \
  output.tensorboard=true)
"$DL_TRAIN" "${args[@]}" >"$WORK/lines.log" 2>"$WORK/lines.err"
grep -qE '^[0-9]{2}:[0-9]{2}:[0-9]{2} epoch 1 iteration 5 \(5/19\): score' "$WORK/lines.log" ||
  fail "no timestamped iteration line: $(head -20 "$WORK/lines.log")"
grep -qE '^[0-9:]{8} epoch 2/2 done in .*train loss .*test accuracy' "$WORK/lines.log" ||
  fail "no epoch line: $(cat "$WORK/lines.log")"
grep -q $'\r' "$WORK/lines.log" && fail "carriage returns in a piped log"
grep -q "Confusion Matrix" "$WORK/lines.log" || fail "no confusion matrix at the end"
[ "$(grep -c "Confusion Matrix" "$WORK/lines.log")" = 1 ] || fail "confusion matrix printed per epoch"
# One epoch numbering for a person (docs/OUTPUTS.md): the two epochs are 1 and 2 in every line.
grep -qiE '(^|[^/0-9])epoch 0([^0-9]|$)' "$WORK/lines.log" && fail "an epoch 0 on the console: $(grep -i 'epoch 0' "$WORK/lines.log")"
grep -qE '^[0-9:]{8} epoch 2 iteration [0-9]+ \(' "$WORK/lines.log" || fail "the second epoch's iteration lines are not 'epoch 2'"
grep -qE '^[0-9:]{8} epoch 1/2 done in ' "$WORK/lines.log" || fail "no 'epoch 1/2 done' line"
# The last line says what the network learned.
tail -1 "$WORK/lines.log" | grep -qE '^done: 2 epoch\(s\), .* images/s, test accuracy [01]\.[0-9]{4}; run directory ' ||
  fail "the last line lacks the test accuracy: $(tail -1 "$WORK/lines.log")"
[ -s "$WORK/lines.err" ] && fail "stderr of a clean CPU run: $(cat "$WORK/lines.err")"
# backend: auto without a GPU says so in one short line, and nothing else on stderr.
if ! "$DL_TRAIN" info | grep -qE '^  cuda: built; [1-9]'; then
  mapfile -t auto < <(small_args "$WORK/data" "$WORK/auto" epochs=1 backend=auto output.console=quiet)
  "$DL_TRAIN" "${auto[@]}" 2>"$WORK/auto.err" || fail "backend: auto failed: $(cat "$WORK/auto.err")"
  grep -qE '^dl-train: training on the CPU \(.+\)$' "$WORK/auto.err" || fail "no CPU line: $(cat "$WORK/auto.err")"
  [ "$(wc -l <"$WORK/auto.err")" = 1 ] || fail "more than the CPU line on stderr: $(cat "$WORK/auto.err")"
  [ "$(wc -c <"$WORK/auto.err")" -le 100 ] || fail "the CPU line is long: $(cat "$WORK/auto.err")"
  echo "ok: the no-GPU note: $(cat "$WORK/auto.err")"
fi

# A log file grows line by line while the run trains: the first iteration line is there while
# the process still runs and far less than a stdio buffer (4 KiB) has been written.
make_data "$WORK/more" 6000 100
mapfile -t slow < <(small_args "$WORK/more" "$WORK/slow" epochs=50 output.scoreEveryIterations=150)
"$DL_TRAIN" "${slow[@]}" >"$WORK/slow.log" 2>&1 &
slow_pid=$!
for _ in $(seq 1 600); do
  grep -q "iteration 150 " "$WORK/slow.log" && break
  sleep 0.1
done
kill -0 "$slow_pid" 2>/dev/null || fail "the run ended before its log showed an iteration line"
grep -q "iteration 150 " "$WORK/slow.log" || fail "no iteration line while training: $(cat "$WORK/slow.log")"
size=$(wc -c <"$WORK/slow.log")
[ "$size" -lt 4096 ] || fail "the log arrived in a block of $size bytes"
echo "ok: piped log: $(grep -c iteration "$WORK/slow.log") iteration line(s), $size bytes, while training"
kill -TERM "$slow_pid"
wait "$slow_pid" || true

# TensorBoard: framing and CRCs checked, scalars at their steps.
events=("$WORK"/run/tensorboard/events.out.tfevents.*)
[ -s "${events[0]}" ] || fail "no event file"
"$PY" "$HERE/read_tfevents.py" "${events[@]}" >"$WORK/scalars.txt" || fail "event file unreadable"
for tag in train/loss train/learning_rate train/images_per_second epoch/test_accuracy \
  epoch/test_loss epoch/test_f1; do
  grep -q " $tag " "$WORK/scalars.txt" || fail "no $tag in $(head "$WORK/scalars.txt")"
done
grep -q '^5 train/loss ' "$WORK/scalars.txt" || fail "no loss at step 5"
grep -q '^38 epoch/test_accuracy ' "$WORK/scalars.txt" || fail "no accuracy at the last step"
echo "ok: tensorboard: $(grep -c . "$WORK/scalars.txt") records read back"

# A run killed after a checkpoint has written scalars past it. Made without timing: a finished
# two-epoch run loses its last checkpoint, so --resume goes back to the end of epoch 0; the
# resumed run's session start makes TensorBoard (and the reader) drop the scalars after it.
mapfile -t twice < <(small_args "$WORK/data" "$WORK/twice" epochs=2 output.tensorboard=true \
  output.console=quiet output.scoreEveryIterations=4)
"$DL_TRAIN" "${twice[@]}"
rm "$WORK/twice/checkpoints/checkpoint-e2-i38.dlck"
"$DL_TRAIN" "${twice[@]}" --resume
"$PY" "$HERE/read_tfevents.py" "$WORK"/twice/tensorboard/events.out.tfevents.* >"$WORK/twice.txt"
grep -qE '^session_start 20 dropped [1-9]' "$WORK/twice.txt" ||
  fail "no session start dropping the scalars past the checkpoint: $(grep session "$WORK/twice.txt")"
duplicates=$(grep -E '^[0-9]+ ' "$WORK/twice.txt" | cut -d' ' -f1,2 | sort | uniq -d | wc -l)
[ "$duplicates" = 0 ] || fail "$duplicates step/tag pairs twice after the resume"
grep -q '^38 epoch/test_accuracy ' "$WORK/twice.txt" || fail "the resumed epoch's scalars are missing"
echo "ok: tensorboard after a resume behind the last scalars: $(grep session_start "$WORK/twice.txt" | tr '\n' ';')"

# summary.json: provenance, strict JSON.
strict_json "$WORK/run/summary.json" "$WORK/run/metrics.jsonl"
for key in version git_commit build host cpu backend threads command_line config_hash \
  start_time end_time skipped_steps; do
  grep -q "\"$key\"" "$WORK/run/summary.json" || fail "summary.json lacks $key"
done

# report.html: written by the run, self-contained, with the charts; and by `dl-train report`.
html=$WORK/run/report.html
[ -s "$html" ] || fail "no report.html"
grep -q '<svg' "$html" && grep -q 'Test accuracy and F1 per epoch' "$html" || fail "no charts"
grep -qiE '<script|<link|src="http' "$html" && fail "report.html is not self-contained"
rm "$html"
"$DL_TRAIN" report "$WORK/run" | grep -q "report.html" || fail "dl-train report printed nothing"
[ -s "$html" ] || fail "dl-train report wrote no report.html"

# A second run, compared on one page.
mapfile -t args2 < <(small_args "$WORK/data" "$WORK/run2" epochs=1 output.console=quiet \
  updater.learningRate=0.002)
"$DL_TRAIN" "${args2[@]}" >"$WORK/quiet.log"
[ ! -s "$WORK/quiet.log" ] || fail "quiet printed: $(cat "$WORK/quiet.log")"
"$DL_TRAIN" report "$WORK/run" "$WORK/run2" --output "$WORK/compare.html" >/dev/null
grep -q "run2" "$WORK/compare.html" || fail "the comparison lacks the second run"

# JSON lines on the console.
mapfile -t args3 < <(small_args "$WORK/data" "$WORK/run3" epochs=1 output.console=jsonl)
"$DL_TRAIN" "${args3[@]}" >"$WORK/console.jsonl"
strict_json "$WORK/console.jsonl"
for event in start score epoch finish; do
  grep -q "\"event\":\"$event\"" "$WORK/console.jsonl" || fail "no $event record"
done

# A terminal: the bar, redrawn with carriage returns, with ETA, then the epoch's line.
if command -v script >/dev/null; then
  mapfile -t args4 < <(small_args "$WORK/data" "$WORK/run4" epochs=2)
  printf -v cmd '%q ' "$DL_TRAIN" "${args4[@]}"
  script -q -c "$cmd" /dev/null >"$WORK/tty.log"
  grep -q "Epoch 2/2" "$WORK/tty.log" || fail "no epoch header on a terminal: $(head "$WORK/tty.log")"
  grep -q $'\r' "$WORK/tty.log" || fail "the bar is not redrawn in place"
  grep -qE '19/19 \[=+\] - [0-9.]+s - loss' "$WORK/tty.log" || fail "no finished bar"
  echo "ok: terminal: $(tr '\r' '\n' <"$WORK/tty.log" | grep -c 'ETA') bar redraws with ETA"
fi

# The bar's last loss is the epoch line's train loss, also where workers average every few rounds
# and l2 adds a regularization term (the bar once showed the sync rounds' data loss alone).
mapfile -t args6 < <(small_args "$WORK/data" "$WORK/bar-avg" epochs=2 parallel.workers=2 \
  parallel.mode=averaging parallel.averagingFrequency=3 l2=0.01 output.console=bar)
"$DL_TRAIN" "${args6[@]}" 2>/dev/null | tr '\r' '\n' >"$WORK/bar-avg.log"
for epoch in 1 2; do
  bar_loss=$(grep -A1000 "^Epoch $epoch/2" "$WORK/bar-avg.log" | grep -m1 -oE '^ *[0-9]+/[0-9]+ \[=+\] - [0-9.]+s - loss [0-9.]+' | grep -oE '[0-9.]+$')
  line_loss=$(grep -oE "^epoch $epoch/2 done .*train loss [0-9.]+" "$WORK/bar-avg.log" | grep -oE '[0-9.]+$')
  [ -n "$bar_loss" ] && [ "$bar_loss" = "$line_loss" ] ||
    fail "epoch $epoch: the bar ends at loss '$bar_loss', the epoch line says '$line_loss'"
done
echo "ok: averaging with l2: the bar ends at the epoch line's train loss ($line_loss)"

# A non-finite loss (skipped): summary.json (and metrics.jsonl where written) stay strict JSON.
# Such weights end the run as diverged, even under skip (its parameters are no longer finite).
mapfile -t args5 < <(small_args "$WORK/data" "$WORK/inf" epochs=1 updater.learningRate=1e30 \
  onNonFiniteLoss=skip output.console=quiet l2=0 l2Bias=0)
"$DL_TRAIN" "${args5[@]}" >/dev/null 2>&1 || true
strict_json "$WORK/inf/summary.json"
[ ! -e "$WORK/inf/metrics.jsonl" ] || strict_json "$WORK/inf/metrics.jsonl"
grep -q '"final_score": null' "$WORK/inf/summary.json" ||
  fail "a NaN score is not null: $(head -5 "$WORK/inf/summary.json")"

# Under skip, steps whose loss or gradient is not finite are counted (summary.json, the console,
# a warning per epoch), and an epoch with no finite score is a divergence, exit 5: every step of
# it was skipped from parameters that only give NaN, and the run ended "completed" at chance
# accuracy with skipped_steps 0.
mapfile -t skips < <(small_args "$WORK/data" "$WORK/skips" epochs=2 updater.learningRate=50 \
  onNonFiniteLoss=skip output.scoreEveryIterations=1 l2=0 l2Bias=0 output.console=epochs)
rc=0
"$DL_TRAIN" "${skips[@]}" >"$WORK/skips.log" 2>"$WORK/skips.err" || rc=$?
[ "$rc" = 5 ] || fail "every step of an epoch skipped: exit $rc, want 5: $(tail -2 "$WORK/skips.err")"
grep -q "^dl-train: warning: epoch 1: [0-9]* step(s) skipped, their loss or gradient not finite" \
  "$WORK/skips.err" || fail "no skipped-steps warning: $(cat "$WORK/skips.err")"
grep -q "every step of the epoch was skipped, its loss or gradient not finite" "$WORK/skips.err" ||
  fail "the divergence does not say why: $(tail -1 "$WORK/skips.err")"
grep -q "^skipped: [1-9][0-9]* step(s), their loss or gradient not finite" "$WORK/skips.log" ||
  fail "the console does not count the skipped steps"
grep -qE '"skipped_non_finite_steps": [1-9]' "$WORK/skips/summary.json" ||
  fail "summary.json: $(grep skipped "$WORK/skips/summary.json")"

# A diverged run (onNonFiniteLoss: stop) fails with exit 5 and still leaves its summary.
mapfile -t args6 < <(small_args "$WORK/data" "$WORK/diverged" epochs=1 updater=sgd updater.learningRate=1e30 \
  output.console=epochs output.scoreEveryIterations=1)
rc=0
"$DL_TRAIN" "${args6[@]}" >"$WORK/diverged.log" 2>"$WORK/diverged.err" || rc=$?
[ "$rc" = 5 ] || fail "a diverged run exited $rc"
[ "$(wc -l <"$WORK/diverged.err")" = 1 ] || fail "expected one error line: $(cat "$WORK/diverged.err")"
strict_json "$WORK/diverged/summary.json"
grep -q '"stopped_by": "diverged: ' "$WORK/diverged/summary.json" || fail "summary of a diverged run"
grep -q '^diverged: ' "$WORK/diverged.log" || fail "no diverged line: $(tail -2 "$WORK/diverged.log")"
[ -s "$WORK/diverged/report.html" ] || fail "no report of a diverged run"
# Its final_score is the last score scores.csv holds (or null without a row), not the one refused
# (it was 6e+29 beside a last row of 2.36).
"$PYTHON3" - "$WORK/diverged" <<'PY' || fail "final_score of a diverged run: see above"
import csv, json, sys
run = sys.argv[1]
rows = list(csv.DictReader(open(f"{run}/scores.csv")))
final = json.load(open(f"{run}/summary.json"))["final_score"]
want = float(rows[-1]["score"]) if rows else None
if (final is None) != (want is None) or (want is not None and abs(final - want) > 1e-6 * abs(want)):
    sys.exit(f"FAIL: final_score {final}, scores.csv's last row {want}")
PY
[ ! -e "$WORK/diverged/model.dlm" ] || fail "a diverged run saved its model"
# The error counts iterations as scores.csv does (it named the 0-based step, one less).
mapfile -t args8 < <(small_args "$WORK/data" "$WORK/diverged-rows" epochs=1 \
  updater.learningRate=1e30 output.console=quiet output.scoreEveryIterations=1)
"$DL_TRAIN" "${args8[@]}" 2>"$WORK/diverged-rows.err" && fail "lr 1e30 did not diverge"
bad_iteration=$(grep -oE 'iteration [0-9]+' "$WORK/diverged-rows.err" | grep -oE '[0-9]+')
last_row=$(tail -n +2 "$WORK/diverged-rows/scores.csv" | tail -1 | cut -d, -f2)
[ "$bad_iteration" = $((${last_row:-0} + 1)) ] ||
  fail "diverged at iteration $bad_iteration, after scores.csv's iteration $last_row"
# The summary counts the iterations run up to the one named (it said 0 inside the first epoch).
summary_iterations=$(grep -oE '"iterations": [0-9]+' "$WORK/diverged-rows/summary.json" | grep -oE '[0-9]+$')
[ "${summary_iterations:-0}" -ge "${last_row:-0}" ] && [ "${summary_iterations:-0}" -le "$bad_iteration" ] &&
  [ "${summary_iterations:-0}" -gt 0 ] ||
  fail "the summary counts $summary_iterations iterations; scores.csv $last_row, the error $bad_iteration"
# Weights grown past float's range: the score (loss + L2 term) went inf, then NaN, and the run
# ended 'done' with exit 0 (the loss alone can stay finite; skipping batches cannot bring such
# weights back, so even under onNonFiniteLoss: skip).
mapfile -t args7 < <(small_args "$WORK/data" "$WORK/score-inf" epochs=1 updater.learningRate=1e30 \
  l2=0.0005 onNonFiniteLoss=skip output.console=quiet output.scoreEveryIterations=1)
expect_failure 5 "the score is not finite \(NaN or Inf\): its L2 term overflowed" -- \
  "$DL_TRAIN" "${args7[@]}"

# --version and --json.
"$DL_TRAIN" --version | grep -qE '^dl-train [0-9]+\.[0-9]+\.[0-9]+$' || fail "--version"
"$DL_TRAIN" --version | grep -q '^git commit: ' || fail "--version lacks the commit"
"$DL_TRAIN" validate --json "${args[@]}" >"$WORK/validate.json"
grep -q '"data_checked": true' "$WORK/validate.json" || fail "validate --json: no data check"
"$DL_TRAIN" inspect --json --model "$WORK/run/model.dlm" >"$WORK/inspect.json"
"$DL_TRAIN" eval --json --model "$WORK/run/model.dlm" >"$WORK/eval.json"
"$DL_TRAIN" info --json >"$WORK/info.json"
strict_json "$WORK/validate.json" "$WORK/inspect.json" "$WORK/eval.json" "$WORK/info.json"
"$DL_TRAIN" eval --model "$WORK/run/model.dlm" --predictions "$WORK/predictions.csv" >/dev/null
head -1 "$WORK/predictions.csv" | grep -q '^index,label,predicted,p0,' || fail "predictions header"
[ "$(wc -l <"$WORK/predictions.csv")" = 101 ] || fail "expected 100 prediction rows"
grep -q '"parameter_hash"' "$WORK/inspect.json" || fail "inspect --json"
grep -q '"confusion"' "$WORK/eval.json" || fail "eval --json"
echo "ok: console modes, TensorBoard, report, provenance, --version, --json"

# A file's strings are whatever its bytes are: inspect prints a metadata entry holding a newline
# and a terminal's escape sequence escaped, one line, as --json does (they were printed raw:
# lines the file does not hold, and red text).
"$PY" "$DL_SOURCE_DIR/tests/tools/edit_checkpoint.py" "$WORK/run/model.dlm" \
  "$WORK/odd.dlm" metadata "$(printf 'odd\nkey' | od -An -tx1 | tr -d ' \n')" \
  "$(printf '\033[31mred\377' | od -An -tx1 | tr -d ' \n')"
"$DL_TRAIN" inspect --model "$WORK/odd.dlm" >"$WORK/odd.txt"
grep -qxF 'metadata.odd\nkey: \x1b[31mred\xff' "$WORK/odd.txt" ||
  fail "inspect printed the odd entry as: $(grep -a -A1 '^metadata.odd' "$WORK/odd.txt" | od -c | head -3)"
! LC_ALL=C grep -q "$(printf '[\001-\010\016-\037\177]')" "$WORK/odd.txt" ||
  fail "inspect printed control characters"
"$DL_TRAIN" inspect --json --model "$WORK/odd.dlm" >"$WORK/odd.json"
strict_json "$WORK/odd.json"
echo "ok: inspect escapes a file's control characters and bytes that are not UTF-8"
