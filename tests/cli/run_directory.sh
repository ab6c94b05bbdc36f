#!/usr/bin/env bash
# Nothing lost, nothing mixed: inputs that are not regular files, --overwrite on directories that
# are not dl-train's, two processes on one run directory, a start that fails before training,
# symbolic links in the run directory and --resume over damaged checkpoints. Each ends in one
# line naming the file and the fix, with its exit code, and deletes nothing that is not
# dl-train's.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 200 50
cfg="$DL_SOURCE_DIR/configs/lenet-small-test.yaml"

# Special files as inputs: refused by name, without blocking (timeout guards a hang).
mkfifo "$WORK/config.fifo"
expect_failure 2 "config.fifo: is a FIFO \(named pipe\), not a regular file" -- \
  timeout 20 "$DL_TRAIN" validate --config-only --config "$WORK/config.fifo"
expect_failure 2 "/dev/zero: is a character device" -- timeout 20 "$DL_TRAIN" --config /dev/zero
head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' '#' >"$WORK/huge.yaml"
expect_failure 2 "huge.yaml: is 2097152 bytes, over the limit of 1048576 bytes \(1 MiB\)" -- \
  "$DL_TRAIN" validate --config-only --config "$WORK/huge.yaml"
cp -r "$WORK/data" "$WORK/fifo-data"
rm "$WORK/fifo-data/train-labels-idx1-ubyte.gz"
mkfifo "$WORK/fifo-data/train-labels-idx1-ubyte.gz"
mapfile -t args < <(small_args "$WORK/fifo-data" "$WORK/fifo-run")
expect_failure 3 "train-labels-idx1-ubyte.gz: is a FIFO" -- timeout 20 "$DL_TRAIN" "${args[@]}"
[ ! -e "$WORK/fifo-run" ] || fail "a start that failed on its data claimed the run directory"
mkfifo "$WORK/model.fifo"
expect_failure 4 "model.fifo: is a FIFO" -- timeout 20 "$DL_TRAIN" inspect --model "$WORK/model.fifo"
expect_failure 4 "is a directory, not a regular file" -- "$DL_TRAIN" inspect --model "$WORK/data"

# A start that fails before training leaves no claim: the retry needs no --overwrite.
mapfile -t args < <(small_args "$WORK/nowhere" "$WORK/retry")
expect_failure 3 "nowhere/train-images-idx3-ubyte.gz" -- "$DL_TRAIN" "${args[@]}"
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry" inputType.convolutionalFlat.height=27)
expect_failure 3 "inputType" -- "$DL_TRAIN" "${args[@]}"
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry" layers.3.output.nOut=5)
# The labels' own file is named (an IDX images file holds none).
expect_failure 2 "^dl-train: error: .*:[0-9]+:[0-9]+ with --set .*: the output layer \(layers.3\) has nOut 5, but the labels of $WORK/data/train-labels-idx1-ubyte.gz go up to [0-9]; set its nOut to at least" -- \
  "$DL_TRAIN" "${args[@]}"
# Out of memory (a dense layer of 300000 x 1152 weights under a 1.5 GB address-space limit).
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry" layers.2.dense.nOut=300000)
expect_failure 7 "out of memory allocating the model's parameters and their gradients \(348900218 values each\): 1.3 GiB of host memory; lower batchSize, the layers' nOut" -- \
  bash -c 'ulimit -v 1500000 && exec "$@"' - "$DL_TRAIN" "${args[@]}"
[ ! -e "$WORK/retry" ] || fail "a failed start created $WORK/retry"
# A batch whose activations do not fit (under a 3 GB limit; the host's memory would hold them).
# Which layer's allocation meets the limit depends on what the process had mapped before (thread
# stacks, loaded libraries), so the message is checked for its form, not for one layer.
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry" batchSize=100000)
expect_failure 7 "out of memory allocating the activations of layer [0-9]+ \([a-z]+, [0-9]+ values per sample\) for batch 100000: [0-9.]+ [MG]iB of host memory; lower batchSize" -- \
  bash -c 'ulimit -v 3000000 && exec "$@"' - "$DL_TRAIN" "${args[@]}"
[ ! -e "$WORK/retry" ] || fail "a failed start created $WORK/retry"
# Under an address-space limit a small run fits in (Grid Engine's h_vmem), it trains and ends:
# OpenBLAS's thread pool, each thread reserving 128 MiB as it started, failed that reservation and
# retried it for ever, so even --version hung (src/cli/blas_threads_before_start.cpp).
mapfile -t args < <(small_args "$WORK/data" "$WORK/small-limit")
timeout 120 bash -c 'ulimit -v 400000 && exec "$@"' - "$DL_TRAIN" "${args[@]}" >"$WORK/limit.log" 2>&1 ||
  fail "a small run under a 400 MB address-space limit did not end with 0 ($?): $(tail -3 "$WORK/limit.log")"
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry")
"$DL_TRAIN" "${args[@]}" >/dev/null || fail "the retry after a failed start was refused"
[ -f "$WORK/retry/.dl-train-run" ] || fail "no marker in the run directory"

# --overwrite never deletes what is not dl-train's.
mkdir -p "$WORK/foreign"
echo "my notes" >"$WORK/foreign/notes.txt"
echo "not ours" >"$WORK/foreign/scores.csv"
mapfile -t args < <(small_args "$WORK/data" "$WORK/foreign")
expect_failure 6 "--overwrite refused, nothing deleted: it has no dl-train marker" -- \
  "$DL_TRAIN" "${args[@]}" --overwrite
[ "$(cat "$WORK/foreign/notes.txt")" = "my notes" ] && [ "$(cat "$WORK/foreign/scores.csv")" = "not ours" ] ||
  fail "--overwrite touched a foreign directory"
# --resume given a directory that is not a run (no marker) writes nothing there: it used to
# train into it, replacing scores.csv and report.html and deleting "notes.tmp-<dead pid>".
echo "keep" >"$WORK/foreign/notes.tmp-999999999"
before=$(cd "$WORK/foreign" && ls -A | xargs md5sum)
expect_failure 6 "foreign: --resume refused, nothing written: the directory holds files \(notes.tmp-999999999, notes.txt\) but no dl-train marker \(.dl-train-run\)" -- \
  "$DL_TRAIN" "${args[@]}" --resume
[ "$before" = "$(cd "$WORK/foreign" && ls -A | xargs md5sum)" ] || fail "--resume touched a foreign directory"
# A fresh start there names no flag as the fix (it said "pass --resume ... --overwrite").
expect_failure 6 "foreign: this output directory holds files that are not a dl-train run \(notes.tmp-999999999, notes.txt\); set output.directory to a new or empty directory$" -- \
  "$DL_TRAIN" "${args[@]}"
# Named by the file this run reads, not by another format's default (data/cifar-10-batches-bin,
# which lies under data/ when run from $WORK).
mapfile -t args < <(small_args "$WORK/data" data)
expect_failure 6 "--overwrite refused, nothing deleted: it holds the input $WORK/data/train-images-idx3-ubyte.gz;" -- \
  bash -c 'cd "$0" && exec "$@"' "$WORK" "$DL_TRAIN" "${args[@]}" --overwrite
mkdir -p "$WORK/cwd"
cp "$cfg" "$WORK/cwd/mine.yaml"
mapfile -t args < <(small_args "$WORK/data" ".")
expect_failure 6 "--overwrite refused, nothing deleted: it is the working directory" -- \
  bash -c 'cd "$0" && exec "$@"' "$WORK/cwd" "$DL_TRAIN" "${args[@]}" --overwrite
[ -f "$WORK/cwd/mine.yaml" ] || fail "--overwrite deleted the working directory's files"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz; do
  [ -f "$WORK/data/$f" ] || fail "--overwrite deleted the data file $f"
done
# In dl-train's own directory it replaces the run and keeps a file someone put there, also one
# named like a temporary file of a writer that is gone.
echo "keep" >"$WORK/retry/README.txt"
echo "keep" >"$WORK/retry/notes.tmp-999999999"
mapfile -t args < <(small_args "$WORK/data" "$WORK/retry")
"$DL_TRAIN" "${args[@]}" --overwrite >/dev/null || fail "--overwrite of dl-train's own run failed"
[ "$(cat "$WORK/retry/README.txt")" = keep ] || fail "--overwrite deleted a file dl-train did not write"
"$DL_TRAIN" "${args[@]}" --resume >/dev/null || fail "--resume of dl-train's own run failed"
[ "$(cat "$WORK/retry/notes.tmp-999999999")" = keep ] || fail "a start deleted notes.tmp-999999999"

# A symbolic link in the run directory is not written through.
mkdir -p "$WORK/linked"
echo "precious" >"$WORK/victim.txt"
ln -s "$WORK/victim.txt" "$WORK/linked/scores.csv"
mapfile -t args < <(small_args "$WORK/data" "$WORK/linked")
expect_failure 6 "linked: --resume refused, nothing written" -- "$DL_TRAIN" "${args[@]}" --resume
# In a run directory dl-train made (the marker), the link is refused by name.
touch "$WORK/linked/.dl-train-run"
expect_failure 6 "scores.csv: is a symbolic link" -- "$DL_TRAIN" "${args[@]}" --resume
[ "$(cat "$WORK/victim.txt")" = precious ] || fail "a write followed a symbolic link"

# checkpoints/ linked to another run's: a resume wrote its checkpoints there and pruned the other
# run's (keepLast), deleting them. Refused now, nothing touched.
mapfile -t args < <(small_args "$WORK/data" "$WORK/other-run" epochs=2)
"$DL_TRAIN" "${args[@]}" >/dev/null
other_checkpoints=$(ls "$WORK/other-run/checkpoints")
mapfile -t args < <(small_args "$WORK/data" "$WORK/linked-checkpoints" epochs=3)
mkdir -p "$WORK/linked-checkpoints"
touch "$WORK/linked-checkpoints/.dl-train-run"
ln -s "$WORK/other-run/checkpoints" "$WORK/linked-checkpoints/checkpoints"
expect_failure 6 "linked-checkpoints/checkpoints: is a symbolic link \(to $WORK/other-run/checkpoints\); dl-train does not write through links" -- \
  "$DL_TRAIN" "${args[@]}" --resume
[ "$(ls "$WORK/other-run/checkpoints")" = "$other_checkpoints" ] || fail "a resume changed the linked checkpoints"

# --resume over checkpoints that are all damaged: exit 4 naming each; nothing overwritten.
mapfile -t args < <(small_args "$WORK/data" "$WORK/damaged" output.checkpointEveryIterations=2)
"$DL_TRAIN" "${args[@]}" >/dev/null
for f in "$WORK"/damaged/checkpoints/*.dlck; do
  printf '\xff\xff' | dd of="$f" bs=1 seek=200 conv=notrunc status=none
done
before=$(cat "$WORK"/damaged/checkpoints/*.dlck "$WORK/damaged/scores.csv" | md5sum)
expect_failure 4 "--resume found no valid checkpoint \(skipping checkpoint .*checkpoint-e" -- \
  "$DL_TRAIN" "${args[@]}" --resume
[ "$before" = "$(cat "$WORK"/damaged/checkpoints/*.dlck "$WORK/damaged/scores.csv" | md5sum)" ] ||
  fail "a refused --resume changed the damaged run"

# Two processes on one run directory: the second (fresh or --resume) is refused, naming the first.
make_data "$WORK/big" 6000 200
# A sync point every iteration, each pausing 20 ms: the first run lasts over 7 s, well past the
# two refused starts even on a loaded machine.
mapfile -t args < <(small_args "$WORK/big" "$WORK/shared" epochs=2 output.scoreEveryIterations=1)
DL_TRAIN_TEST_SYNC_PAUSE_MS=20 "$DL_TRAIN" "${args[@]}" >"$WORK/first.log" 2>&1 &
first=$!
wait_for_lines "$WORK/shared/scores.csv" 2 400 0.05
expect_failure 6 "another dl-train is using this run directory \(pid $first on host .* since " -- \
  "$DL_TRAIN" "${args[@]}" --resume
expect_failure 6 "another dl-train is using this run directory" -- "$DL_TRAIN" "${args[@]}"
kill -TERM "$first"
rc=0
wait "$first" || rc=$?
[ "$rc" = 143 ] || fail "the first run should stop on SIGTERM with 143, got $rc"
"$DL_TRAIN" "${args[@]}" --resume >/dev/null || fail "--resume after the holder ended failed"

# Two starts at the same moment: one trains, the other is refused; the log is not mixed.
mapfile -t args < <(small_args "$WORK/data" "$WORK/straight")
"$DL_TRAIN" "${args[@]}" >/dev/null
mapfile -t args < <(small_args "$WORK/data" "$WORK/race")
"$DL_TRAIN" "${args[@]}" >"$WORK/race1.log" 2>&1 &
one=$!
"$DL_TRAIN" "${args[@]}" >"$WORK/race2.log" 2>&1 &
two=$!
rc1=0 rc2=0
wait "$one" || rc1=$?
wait "$two" || rc2=$?
[ "$(printf '%s\n' "$rc1" "$rc2" | sort | tr '\n' ' ')" = "0 6 " ] ||
  fail "two simultaneous starts: exits $rc1 and $rc2 (want one 0 and one 6)"
cmp "$WORK/straight/scores.csv" "$WORK/race/scores.csv" || fail "simultaneous starts mixed scores.csv"

# The run directory removed while training (with and without checkpoints inside the epoch): the
# run stops with exit 6 naming the directory, and does not make it again. It used to recreate it
# for its next checkpoint and exit 0, leaving a directory without marker, config or scores.csv.
for every in 3 0; do
  mapfile -t args < <(small_args "$WORK/big" "$WORK/removed" epochs=2 output.scoreEveryIterations=1 \
    "output.checkpointEveryIterations=$every")
  DL_TRAIN_TEST_SYNC_PAUSE_MS=20 "$DL_TRAIN" "${args[@]}" >"$WORK/removed.log" 2>&1 &
  pid=$!
  wait_for_lines "$WORK/removed/scores.csv" 4 400 0.05
  rm -rf "$WORK/removed"
  rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 6 ] || fail "checkpointEveryIterations=$every: removed run directory: exit $rc, want 6"
  grep -qE "$WORK/removed (is gone|does not exist)" "$WORK/removed.log" ||
    fail "the message does not name the removed directory: $(grep error "$WORK/removed.log")"
  [ ! -e "$WORK/removed" ] || fail "the removed run directory was made again: $(ls -A "$WORK/removed")"
done

# A FIFO or a folder in place of a log the run reads back (scores.csv, metrics.jsonl, the lock
# file on --resume; summary.json for its report) is refused with exit 6 at once: the FIFOs waited
# for a writer for ever (no signal but SIGKILL ended it), and a folder as summary.json ended the
# run with exit 2 and `report`'s advice.
mapfile -t args < <(small_args "$WORK/data" "$WORK/logs-run" epochs=2)
"$DL_TRAIN" "${args[@]}" --set epochs=1 >/dev/null 2>&1 || fail "the run to resume did not train"
for log in scores.csv metrics.jsonl .dl-train.lock; do
  rm -rf "$WORK/logs-fifo" && cp -r "$WORK/logs-run" "$WORK/logs-fifo" && rm -f "$WORK/logs-fifo/$log"
  mkfifo "$WORK/logs-fifo/$log"
  mapfile -t args < <(small_args "$WORK/data" "$WORK/logs-fifo" epochs=2)
  expect_failure 6 "logs-fifo/$log: .*FIFO" -- timeout 60 "$DL_TRAIN" "${args[@]}" --resume
done
rm -rf "$WORK/logs-dir" && cp -r "$WORK/logs-run" "$WORK/logs-dir"
rm -f "$WORK/logs-dir/summary.json" && mkdir "$WORK/logs-dir/summary.json"
mapfile -t args < <(small_args "$WORK/data" "$WORK/logs-dir" epochs=2)
expect_failure 6 "logs-dir/summary.json: is a folder, and dl-train writes a regular file of that name" -- \
  timeout 120 "$DL_TRAIN" "${args[@]}" --resume
# A link in place of one of the run's files (scores.csv kept in a shared log), or a FIFO as the
# marker, is refused before anything is written: a rename replaced the link, cutting the shared
# log off, and the FIFO passed for a marker.
rm -rf "$WORK/logs-link" && cp -r "$WORK/logs-run" "$WORK/logs-link"
cp "$WORK/logs-run/scores.csv" "$WORK/shared-scores.csv"
ln -sf "$WORK/shared-scores.csv" "$WORK/logs-link/scores.csv"
mapfile -t args < <(small_args "$WORK/data" "$WORK/logs-link" epochs=2)
for mode in --resume --overwrite; do
  expect_failure 6 "logs-link/scores.csv: is a symbolic link .*writes its own file of that name" -- \
    timeout 120 "$DL_TRAIN" "${args[@]}" "$mode"
done
[ -L "$WORK/logs-link/scores.csv" ] || fail "the link in place of scores.csv was replaced"
cmp -s "$WORK/logs-run/scores.csv" "$WORK/shared-scores.csv" || fail "the shared log was written"
mkdir "$WORK/fifo-marker" && mkfifo "$WORK/fifo-marker/.dl-train-run"
mapfile -t args < <(small_args "$WORK/data" "$WORK/fifo-marker" epochs=1)
expect_failure 6 "fifo-marker/.dl-train-run: is a FIFO" -- timeout 60 "$DL_TRAIN" "${args[@]}"
[ -p "$WORK/fifo-marker/.dl-train-run" ] || fail "the FIFO in place of the marker was replaced"

echo "ok: special files, --overwrite, lock, failed starts, links, damaged checkpoints, removed run"
