#!/usr/bin/env bash
# data.format: csv with text labels end to end, on iris-like rows generated here (three species,
# four measurements): validate prints the class table; training, eval --json, evaluation.json,
# evaluation.txt, predict, the ONNX export and the report name the classes; a test label that is no training class
# is one line naming the file, line, label and classes, exit 3, nothing written; more species
# than numClasses is refused naming the label that made the column text; quoted line breaks (a
# header cell's, a label's) keep predict's line column and messages on the rows' first lines; a
# skipped line that reads as a data row (skipLines on a file without a header) is named in a note.
source "$(dirname "$0")/lib.sh"
: "${PYTHON3:?PYTHON3 must name python3}"

# Rows in file order virginica, setosa, versicolor: the classes are sorted, so label 0 is setosa.
"$PYTHON3" - "$WORK" <<'PY'
import random, sys
random.seed(5)
species = [("virginica", (6.6, 3.0, 5.6, 2.0)), ("setosa", (5.0, 3.4, 1.5, 0.2)),
           ("versicolor", (5.9, 2.8, 4.3, 1.3))]
for name, count in (("train", 150), ("test", 60)):
    with open(f"{sys.argv[1]}/{name}.csv", "w") as f:
        f.write("sepal_length,sepal_width,petal_length,petal_width,species\n")
        for i in range(count):
            label, centre = species[i % 3]
            f.write(",".join(f"{x + random.gauss(0, 0.25):.2f}" for x in centre) + f",{label}\n")
PY
cat >"$WORK/iris.yaml" <<YAML
seed: 7
backend: cpu
updater: {type: adam, learningRate: 0.05}
batchSize: 16
epochs: 6
inputType:
  feedForward: {size: 4}
layers:
  - dense: {nOut: 16, activation: relu}
  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}
data:
  format: csv
  trainFile: $WORK/train.csv
  testFile: $WORK/test.csv
  skipLines: 1
  numClasses: 3
  normalize: true
output:
  directory: $WORK/run
parallel:
  workers: 1
YAML
cfg="$WORK/iris.yaml"
names='["setosa", "versicolor", "virginica"]'

"$DL_TRAIN" validate --config "$cfg" >"$WORK/validate.txt"
for row in "0  setosa      50" "1  versicolor  50" "2  virginica   50"; do
  grep -qE "^ +$row$" "$WORK/validate.txt" || fail "validate's class table lacks '$row': $(cat "$WORK/validate.txt")"
done
echo "ok: validate prints the class table"

"$DL_TRAIN" --config "$cfg" --set output.console=epochs >"$WORK/train.txt"
json_field() {  # json_field FILE EXPRESSION: a Python expression over the document `d`
  "$PYTHON3" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"
}
[ "$(json_field "$WORK/run/evaluation.json" 'json.dumps(d["class_names"])')" = "$names" ] ||
  fail "evaluation.json: $(cat "$WORK/run/evaluation.json")"
[ "$(json_field "$WORK/run/evaluation.json" '[e["name"] for e in d["per_class"]]')" = \
  "['setosa', 'versicolor', 'virginica']" ] || fail "evaluation.json per_class: $(cat "$WORK/run/evaluation.json")"
accuracy=$(json_field "$WORK/run/evaluation.json" 'd["accuracy"]')
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.8) }' || fail "test accuracy $accuracy after 6 epochs"
grep -q "| 1 'versicolor'" "$WORK/run/evaluation.txt" || fail "evaluation.txt: $(cat "$WORK/run/evaluation.txt")"
echo "ok: trained to test accuracy $accuracy; evaluation.json and evaluation.txt name the classes"

"$DL_TRAIN" eval --model "$WORK/run/model.dlm" --json >"$WORK/eval.json"
[ "$(json_field "$WORK/eval.json" 'json.dumps(d["evaluation"]["class_names"])')" = "$names" ] ||
  fail "eval --json: $(cat "$WORK/eval.json")"
[ "$(json_field "$WORK/eval.json" 'd["evaluation"]["per_class"][2]["name"]')" = virginica ] ||
  fail "eval --json per_class: $(cat "$WORK/eval.json")"
echo "ok: eval --json names the classes"

"$DL_TRAIN" predict --model "$WORK/run/model.dlm" --input "$WORK/test.csv" -o "$WORK/predict.csv" \
  2>"$WORK/predict.err"
head -1 "$WORK/predict.csv" | grep -qx "index,line,predicted,predicted_class,p0,p1,p2" ||
  fail "predict header: $(head -1 "$WORK/predict.csv")"
# Every row's name is its predicted label's, and the rows name all three species.
awk -F, 'NR > 1 { split("setosa versicolor virginica", n, " ");
                  if ($4 != n[$3 + 1]) bad = 1; seen[$4] = 1 }
         END { exit !(bad == 0 && length(seen) == 3) }' "$WORK/predict.csv" ||
  fail "predict's names do not match its labels: $(head -5 "$WORK/predict.csv")"
predicted=$(sed -n "s/.*, accuracy \([0-9.]*\) against the input's labels$/\1/p" "$WORK/predict.err")
awk -v a="$accuracy" -v p="$predicted" 'BEGIN { d = a - p; exit !(p != "" && d < 1e-4 && d > -1e-4) }' ||
  fail "predict's accuracy is not eval's $accuracy: $(cat "$WORK/predict.err")"
echo "ok: predict names the classes: $(cat "$WORK/predict.err")"

# eval --predictions names the classes and each row's line as predict does (it wrote neither):
# predicted_class after predicted, and the same lines and predictions as predict's on the same file.
"$DL_TRAIN" eval --model "$WORK/run/model.dlm" --predictions "$WORK/eval-predictions.csv" >/dev/null
head -1 "$WORK/eval-predictions.csv" | grep -qx "index,line,label,predicted,predicted_class,p0,p1,p2" ||
  fail "eval --predictions header: $(head -1 "$WORK/eval-predictions.csv")"
cmp <(cut -d, -f1,2,4- "$WORK/eval-predictions.csv") <(cut -d, -f1- "$WORK/predict.csv") ||
  fail "eval --predictions differs from predict: $(head -3 "$WORK/eval-predictions.csv")"
echo "ok: eval --predictions names the classes and lines as predict does"

# A header cell holding a quoted line break is one header row (it was "an unterminated quote" on
# line 1, skipped, and a bad row on line 2), and a label holding one is one bad row: predict's
# line column and its message name the lines the rows start on.
header='"sepal\nlength",sepal_width,petal_length,petal_width,species\n'
{ printf "$header"; sed -n 2,5p "$WORK/test.csv"; } >"$WORK/lines.csv"
"$DL_TRAIN" predict --model "$WORK/run/model.dlm" --input "$WORK/lines.csv" -o "$WORK/lines-predict.csv" \
  2>"$WORK/lines-predict.err" || fail "predict on a header with a line break: $(cat "$WORK/lines-predict.err")"
[ "$(tail -n +2 "$WORK/lines-predict.csv" | cut -d, -f1,2 | tr '\n' ' ')" = "0,3 1,4 2,5 3,6 " ] ||
  fail "predict's lines: $(cat "$WORK/lines-predict.csv")"
{ printf "$header"; sed -n 2,3p "$WORK/test.csv"; printf '5.0,3.4,1.5,0.2,"setosa\n(typo)"\n'
  sed -n 4,5p "$WORK/test.csv"; } >"$WORK/lines-bad.csv"
expect_failure 3 "lines-bad.csv: line 5: the label \(field 5\) 'setosa\\\\n\(typo\)' is not UTF-8 text" -- \
  "$DL_TRAIN" predict --model "$WORK/run/model.dlm" --input "$WORK/lines-bad.csv"
echo "ok: quoted line breaks: a header cell's and a label's; rows named by the lines they start on"

# skipLines: 1 on a file without a header left its first row out silently: one note (for the file
# read as both sets) names the file, the line and the fix; validate and training go on.
tail -n +2 "$WORK/train.csv" >"$WORK/noheader.csv"
noheader=(--set "data.trainFile=$WORK/noheader.csv" --set "data.testFile=$WORK/noheader.csv")
note="dl-train: note: $WORK/noheader.csv: line 1, skipped as a header (data.skipLines: 1), reads as a data row like the rows after it, and is left out; if the file has no header, set data.skipLines: 0"
"$DL_TRAIN" validate --config "$cfg" "${noheader[@]}" >"$WORK/noheader.txt" 2>"$WORK/noheader.err"
[ "$(cat "$WORK/noheader.err")" = "$note" ] || fail "validate's note: $(cat "$WORK/noheader.err")"
grep -q "data OK: 149 training examples" "$WORK/noheader.txt" || fail "validate: $(grep "data OK" "$WORK/noheader.txt")"
"$DL_TRAIN" --config "$cfg" "${noheader[@]}" --set epochs=1 --set "output.directory=$WORK/noheader-run" \
  --set output.console=epochs >/dev/null 2>"$WORK/noheader-train.err"
[ "$(cat "$WORK/noheader-train.err")" = "$note" ] || fail "training's note: $(cat "$WORK/noheader-train.err")"
"$DL_TRAIN" validate --config "$cfg" "${noheader[@]}" --set data.skipLines=0 >"$WORK/noheader.txt" 2>"$WORK/noheader.err"
[ ! -s "$WORK/noheader.err" ] && grep -q "data OK: 150 training examples" "$WORK/noheader.txt" ||
  fail "skipLines: 0: $(cat "$WORK/noheader.err")"
echo "ok: a skipped line that reads as data is one note: $note"

onnx=$(onnx_class_names "$WORK/run/model.dlm")
if [ -n "$onnx" ]; then
  [ "$onnx" = "setosa,versicolor,virginica" ] || fail "ONNX class names: $onnx"
  echo "ok: the ONNX export's metadata names the classes"
fi

report="$WORK/run/report.html"
for text in '>setosa</text>' '>virginica</text>' "<td>1 &#39;versicolor&#39;</td>" \
  "actual 2 &#39;virginica&#39; predicted"; do
  grep -qF "$text" "$report" || fail "report.html lacks $text"
done
echo "ok: the report's heat map and per-class table name the classes"

# A test label that is no training class: one line, exit 3, nothing written.
awk 'NR == 6 { sub(/[a-z]+$/, "rose") } { print }' "$WORK/test.csv" >"$WORK/rose.csv"
expect_failure 3 "rose.csv: line 6: the label \(field 5\) 'rose' is not one of the 3 classes of the training file .*train.csv \('setosa', 'versicolor', 'virginica'\)" \
  -- "$DL_TRAIN" --config "$cfg" --set "data.testFile=$WORK/rose.csv" --set "output.directory=$WORK/bad-run"
[ ! -e "$WORK/bad-run" ] || fail "a failed run wrote $WORK/bad-run"
expect_failure 3 "rose.csv: line 6: the label \(field 5\) 'rose'" -- \
  "$DL_TRAIN" eval --model "$WORK/run/model.dlm" --set "data.testFile=$WORK/rose.csv"
awk 'NR == 4 { sub(/[a-z]+$/, "rose") } { print }' "$WORK/train.csv" >"$WORK/four.csv"
expect_failure 3 "four.csv: the labels name 4 classes \('rose', 'setosa', 'versicolor', 'virginica'\), more than data.numClasses 3" \
  "set data.numClasses: 4" -- \
  "$DL_TRAIN" validate --config "$cfg" --set "data.trainFile=$WORK/four.csv"
expect_failure 2 "the output layer \(layers.1\) has nOut 3, but the labels of .* go up to 3 'virginica'; set its nOut to at least 4" -- \
  "$DL_TRAIN" validate --config "$cfg" --set "data.trainFile=$WORK/four.csv" --set data.numClasses=4
