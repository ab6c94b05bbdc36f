#!/usr/bin/env bash
# What a config's text may hold: explicit YAML tags, several documents in a --set value, control
# characters and bytes that are not UTF-8 are refused with one line and exit 2; a long value is
# clipped in the message; and a run's own config.resolved.yaml, with paths of every kind of
# UTF-8 text, reads back to the same values and evaluates its model.
source "$(dirname "$0")/lib.sh"
cfg="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"
validate=("$DL_TRAIN" validate --config-only --config)

# Explicit tags, in the file and in --set values.
sed 's/^epochs: 1$/epochs: !!str 3/' "$cfg" >"$WORK/tag.yaml"
expect_failure 2 "tag.yaml:[0-9]+:9: epochs carries the YAML tag '!!str'" "remove the tag" -- \
  "${validate[@]}" "$WORK/tag.yaml"
expect_failure 2 "^dl-train: error: --set epochs=!!int 3: the value carries the YAML tag '!!int'" -- \
  "${validate[@]}" "$cfg" --set 'epochs=!!int 3'
expect_failure 2 "--set seed=!foo 3: the value carries the YAML tag '!foo'" -- \
  "${validate[@]}" "$cfg" --set 'seed=!foo 3'
expect_failure 2 "the value holds 2 YAML documents" -- "${validate[@]}" "$cfg" --set epochs=$'3\n---\n4'

# Control characters: a NUL in the file, and one written as an escape in a path.
{ printf 'seed: 1\n\0\n'; grep -v '^seed:' "$cfg"; } >"$WORK/nul.yaml"
expect_failure 2 "nul.yaml:2:1: the config holds the control character \\\\x00" -- \
  "${validate[@]}" "$WORK/nul.yaml"
expect_failure 2 "output.directory = 'runs/a\\\\x00b' holds the control character" -- \
  "${validate[@]}" "$cfg" --set 'output.directory="runs/a\0b"'

# A path that is not UTF-8 is refused at load, naming the key and the fix: before, it trained,
# and its config.resolved.yaml held U+FFFD instead, so the run's own config no longer loaded.
make_data "$WORK/data"$'\xff' 200 50
mapfile -t args < <(small_args "$WORK/data"$'\xff' "$WORK/latin1-run")
expect_failure 2 "data.trainImages = '.*data\\\\xff/train-images-idx3-ubyte.gz' is not UTF-8" \
  "symbolic link with a UTF-8 name" -- "$DL_TRAIN" "${args[@]}"
[ ! -e "$WORK/latin1-run" ] || fail "a refused config claimed its run directory"

# A value of 100,000 characters is clipped in the message, with its length.
long=$(head -c 100000 /dev/zero | tr '\0' x)
expect_failure 2 "x\.\.\.x+ \(100007 bytes\): epochs must be an integer" "\(100000 bytes\)" -- \
  "${validate[@]}" "$cfg" --set "epochs=$long"
[ "$(wc -c <"$WORK/err.txt")" -lt 500 ] || fail "the message is $(wc -c <"$WORK/err.txt") bytes"

# A run whose paths hold spaces, quotes, a backslash, '#', ': ', non-ASCII letters and an emoji:
# its config.resolved.yaml loads to the same values and evaluates the model it wrote.
# A --set value is YAML: single quotes keep such a path whole (a ' inside written twice).
odd="$WORK/dätä \"q\" 'a' \\ #1: 日本 🙂"
make_data "$odd" 200 50
quoted() { printf "'%s'" "${1//\'/\'\'}"; }
args=(--config "$cfg" --set output.console=quiet --set "output.directory=$(quoted "$odd/run")")
for key in trainImages:train-images-idx3 trainLabels:train-labels-idx1 testImages:t10k-images-idx3 \
  testLabels:t10k-labels-idx1; do
  args+=(--set "data.${key%%:*}=$(quoted "$odd/${key#*:}-ubyte.gz")")
done
"$DL_TRAIN" "${args[@]}" >/dev/null
resolved="$odd/run/config.resolved.yaml"
# validate prints a comment line, the resolved config, an empty line and the layer table.
"$DL_TRAIN" validate --config-only --config "$resolved" | sed -n '2,/^$/p' | sed '$d' \
  >"$WORK/again.yaml"
grep -v '^#' "$resolved" >"$WORK/first.yaml"
diff "$WORK/first.yaml" "$WORK/again.yaml" >/dev/null ||
  fail "the resolved config changed: $(diff "$WORK/first.yaml" "$WORK/again.yaml" | head -5)"
grep -qF "trainImages: \"$WORK/dätä \\\"q\\\" 'a' \\\\ #1: 日本 🙂/train-images-idx3-ubyte.gz\"" "$resolved" ||
  fail "config.resolved.yaml lacks the path as written: $(grep trainImages "$resolved")"
"$DL_TRAIN" eval --config "$resolved" --model "$odd/run/model.dlm" | grep -q "Accuracy" ||
  fail "eval with the run's own config failed"
echo "ok: input text checked"
