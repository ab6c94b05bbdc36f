#!/usr/bin/env bash
# Standard streams that are not what they seem: started with stdout closed, the console goes
# nowhere (never into a file of the run); stdout piped into `head` stops the run with a checkpoint
# and exit 141; a console nobody reads (a full pipe) does not keep SIGTERM from its checkpoint
# and exit 143, nor a full stderr a warning, the signal or the final error message; SIGHUP stops
# with a checkpoint and exit 129; stdout into /dev/full stops with a checkpoint and exit 6; SIGINT
# and SIGHUP ignored by the launcher stay ignored. --resume then completes each run with the
# scores of an uninterrupted one.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 6000 200
# Every sync point pauses a little, so that each signal arrives while training still runs.
export DL_TRAIN_TEST_SYNC_PAUSE_MS=10
mapfile -t straight < <(small_args "$WORK/data" "$WORK/straight" epochs=2 output.scoreEveryIterations=1)
"$DL_TRAIN" "${straight[@]}" >/dev/null

# resume_matches NAME: --resume completes run NAME with the uninterrupted run's scores.
resume_matches() {
  mapfile -t args < <(small_args "$WORK/data" "$WORK/$1" epochs=2 output.scoreEveryIterations=1)
  "$DL_TRAIN" "${args[@]}" --resume >"$WORK/$1-resumed.log" 2>&1 || fail "$1: --resume failed"
  cmp "$WORK/straight/scores.csv" "$WORK/$1/scores.csv" || fail "$1: resumed scores differ"
}

# Closed stdout (and stdin): descriptors 0 and 1 are /dev/null, scores.csv holds only scores.
mapfile -t args < <(small_args "$WORK/data" "$WORK/closed" epochs=2 output.scoreEveryIterations=1)
rc=0
"$DL_TRAIN" "${args[@]}" >&- <&- 2>"$WORK/closed.err" || rc=$?
[ "$rc" = 0 ] || fail "closed stdout: exit $rc: $(cat "$WORK/closed.err")"
cmp "$WORK/straight/scores.csv" "$WORK/closed/scores.csv" ||
  fail "closed stdout: scores.csv differs (console text in it?): $(head -3 "$WORK/closed/scores.csv")"
echo "ok: closed stdout: exit 0, scores.csv as the uninterrupted run"

# stdout into `head -n 1`: the reader goes away; a checkpoint, exit 141, one line on stderr.
mapfile -t args < <(small_args "$WORK/data" "$WORK/piped" epochs=2 output.scoreEveryIterations=1)
set +o pipefail
"$DL_TRAIN" "${args[@]}" 2>"$WORK/piped.err" | head -n 1 >/dev/null
rc=${PIPESTATUS[0]}
set -o pipefail
[ "$rc" = 141 ] || fail "stdout into head: exit $rc, want 141: $(cat "$WORK/piped.err")"
grep -qE "standard output failed \(Broken pipe\); stopped with a checkpoint in .*piped; continue with --resume" \
  "$WORK/piped.err" || fail "stdout into head: stderr: $(cat "$WORK/piped.err")"
ls "$WORK/piped/checkpoints/"*.dlck >/dev/null || fail "stdout into head: no checkpoint"
resume_matches piped
echo "ok: stdout into head: exit 141, $(cat "$WORK/piped.err")"

# stdout into /dev/full: the output itself fails, no reader went away. Training stops as for a
# closed pipe (a checkpoint, resumable) but exits 6, an output error, as the other commands do;
# it used to exit 141.
mapfile -t args < <(small_args "$WORK/data" "$WORK/full" epochs=2 output.scoreEveryIterations=1)
rc=0
"$DL_TRAIN" "${args[@]}" >/dev/full 2>"$WORK/full.err" || rc=$?
[ "$rc" = 6 ] || fail "stdout into /dev/full: exit $rc, want 6: $(cat "$WORK/full.err")"
grep -qE "standard output failed \(No space left on device\); stopped with a checkpoint in .*full; continue with --resume" \
  "$WORK/full.err" || fail "stdout into /dev/full: stderr: $(cat "$WORK/full.err")"
resume_matches full
echo "ok: stdout into /dev/full: exit 6, $(cat "$WORK/full.err")"

# A full pipe nobody reads (4 KiB buffer), then SIGTERM: a checkpoint and exit 143 all the same.
mapfile -t args < <(small_args "$WORK/data" "$WORK/blocked" epochs=2 output.scoreEveryIterations=1)
"$PYTHON3" - "$WORK/blocked/scores.csv" "$DL_TRAIN" "${args[@]}" <<'PY' || fail "full pipe: see above"
import fcntl, os, signal, subprocess, sys, time
scores, command = sys.argv[1], sys.argv[2:]
read_end, write_end = os.pipe()
fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: a small pipe, soon full
proc = subprocess.Popen(command, stdout=write_end, stderr=subprocess.DEVNULL)
os.close(write_end)
deadline = time.time() + 60
while time.time() < deadline:  # well past the point where 4 KiB of console text filled the pipe
    if os.path.exists(scores) and sum(1 for _ in open(scores)) > 120:
        break
    time.sleep(0.05)
proc.send_signal(signal.SIGTERM)
try:
    rc = proc.wait(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    sys.exit("FAIL: full pipe: SIGTERM did not end the run within 60 s")
if rc != 143:
    sys.exit(f"FAIL: full pipe: exit {rc}, want 143")
PY
ls "$WORK/blocked/checkpoints/"*.dlck >/dev/null || fail "full pipe: no checkpoint"
echo "ok: full stdout pipe: SIGTERM -> checkpoint, exit 143"

# full_pipe_run SECONDS ROWS FILE COMMAND...: runs COMMAND with stdout and stderr on one pipe that
# is full before it starts (nobody reads it); once FILE holds ROWS more lines than at the start
# (ROWS 0: at once), SIGTERM. Prints the exit code; fails when the command has not ended within
# SECONDS. A console write that waited for a reader would never return here.
full_pipe_run() {
  "$PYTHON3" - "$@" <<'PY'
import fcntl, os, signal, subprocess, sys, time
seconds, rows, watched, command = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
count = lambda: sum(1 for _ in open(watched)) if os.path.exists(watched) else 0
read_end, write_end = os.pipe()
fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
os.set_blocking(write_end, False)
try:
    while True:
        os.write(write_end, b"x" * 512)
except BlockingIOError:
    pass
os.set_blocking(write_end, True)
start, before = time.time(), count()
proc = subprocess.Popen(command, stdout=write_end, stderr=write_end)
os.close(write_end)
while rows > 0 and count() < before + rows and proc.poll() is None and time.time() < start + seconds:
    time.sleep(0.05)
if rows > 0:
    proc.send_signal(signal.SIGTERM)
try:
    rc = proc.wait(timeout=max(1, start + seconds - time.time()))
except subprocess.TimeoutExpired:
    proc.kill()
    sys.exit(f"FAIL: with a full pipe on stdout and stderr, still running after {seconds} s")
print(rc)
PY
}

# A full stderr, a warning at the start (a damaged checkpoint beside the valid one), SIGTERM:
# the warning waits at most 2 s, the run trains, and the signal gives a checkpoint and exit 143.
echo "not a checkpoint" >"$WORK/blocked/checkpoints/checkpoint-e9-i99999.dlck"
mapfile -t args < <(small_args "$WORK/data" "$WORK/blocked" epochs=2 output.scoreEveryIterations=1)
rc=$(full_pipe_run 60 20 "$WORK/blocked/scores.csv" "$DL_TRAIN" "${args[@]}" --resume) ||
  fail "full stderr: $rc"
[ "$rc" = 143 ] || fail "full stderr, SIGTERM: exit $rc, want 143"
rm "$WORK/blocked/checkpoints/checkpoint-e9-i99999.dlck"
resume_matches blocked
echo "ok: full stdout and stderr, a warning, then SIGTERM -> checkpoint, exit 143, resume identical"

# The final error message into a full stderr: written if a reader comes within 2 s, else dropped;
# the exit code is the error's.
mapfile -t args < <(small_args "$WORK/nowhere" "$WORK/never")
rc=$(full_pipe_run 20 0 /dev/null "$DL_TRAIN" "${args[@]}") || fail "full stderr: $rc"
[ "$rc" = 3 ] || fail "full stderr, missing data: exit $rc, want 3"
echo "ok: full stderr: the final error message does not block, exit 3"

# A completed run's console into a 4 KiB pipe whose reader comes late: a reader 6 s late gets every
# line (it lost the tail 2 s after the run), and one that never reads is told of on stderr, the run's exit
# 0 (the tail was dropped without a word).
mapfile -t args < <(small_args "$WORK/data" "$WORK/late" epochs=1 output.scoreEveryIterations=1)
"$PYTHON3" - "$WORK/late.err" "$DL_TRAIN" "${args[@]}" <<'PY' || fail "late reader: see above"
import fcntl, os, subprocess, sys, time
errors, command = sys.argv[1], sys.argv[2:]
for delay in (6, None):
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ
    with open(errors, "wb") as err:
        proc = subprocess.Popen(command + ["--overwrite"], stdout=write_end, stderr=err)
    os.close(write_end)
    if delay is None:
        rc = proc.wait(timeout=120)
        said = open(errors).read()
        if rc != 0 or "reader did not take the console's last lines in 10 s" not in said:
            sys.exit(f"FAIL: a reader that never reads: exit {rc}, stderr {said!r}")
        continue
    time.sleep(delay)
    with os.fdopen(read_end, "rb") as reader:
        text = reader.read().decode()
    rc = proc.wait(timeout=120)
    last = text.rstrip("\n").rsplit("\n", 1)[-1]
    if rc != 0 or not last.startswith("done: ") or "dropped" in open(errors).read():
        sys.exit(f"FAIL: a reader {delay} s late: exit {rc}, last line {last!r}")
PY
echo "ok: a late stdout reader gets the whole console; one that never reads is named on stderr"

# SIGHUP (a closed terminal) stops like SIGTERM: a checkpoint, exit 129. The run gets SIGHUP's
# default disposition even where this suite itself runs under nohup (which dl-train honours, as
# the next case shows).
mapfile -t args < <(small_args "$WORK/data" "$WORK/hangup" epochs=2 output.scoreEveryIterations=1)
env --default-signal=HUP "$DL_TRAIN" "${args[@]}" >"$WORK/hangup.log" 2>&1 &
pid=$!
wait_for_lines "$WORK/hangup/scores.csv" 2 400 0.05
kill -HUP "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 129 ] || fail "SIGHUP: exit $rc, want 129: $(tail -3 "$WORK/hangup.log")"
grep -q "signal 1 received: checkpoint" "$WORK/hangup.log" || fail "SIGHUP: no checkpoint"
resume_matches hangup
echo "ok: SIGHUP -> checkpoint, exit 129, resume identical"

# expect_ignored SIGNAL NAME LAUNCHER...: run NAME started through LAUNCHER (which leaves SIGNAL
# ignored) gets SIGNAL while training and completes, with the uninterrupted run's scores.
expect_ignored() {
  local signal=$1 name=$2
  shift 2
  mapfile -t args < <(small_args "$WORK/data" "$WORK/$name" epochs=2 output.scoreEveryIterations=1)
  "$@" "$DL_TRAIN" "${args[@]}" >"$WORK/$name.log" 2>&1 &
  local pid=$! rc=0
  wait_for_lines "$WORK/$name/scores.csv" 2 400 0.05
  kill "-$signal" "$pid"
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || fail "SIG$signal ignored by the launcher ($*) stopped the run: exit $rc"
  cmp "$WORK/straight/scores.csv" "$WORK/$name/scores.csv" || fail "$name: scores differ"
  echo "ok: SIG$signal ignored by the launcher ($*) stays ignored, the run completes"
}
# Under nohup (SIGHUP ignored) a hangup does not stop the run.
expect_ignored HUP nohup nohup
# Started in the background by a script, SIGINT ignored (a shell's `&`): the terminal's Ctrl-C is
# meant for the script's foreground job, and dl-train leaves it ignored, as it leaves SIGHUP
# under nohup; it used to stop the run with 130.
expect_ignored INT nointr env --ignore-signal=INT

# The other commands' standard output: what did not reach it fails the command. Into /dev/full,
# predict's CSV and validate's config ended with 0, the output lost; one line and exit 6 now.
model="$WORK/straight/model.dlm"
rc=0
"$DL_TRAIN" predict -m "$model" -i "$WORK/data/train-images-idx3-ubyte.gz" >/dev/full \
  2>"$WORK/predict-full.err" || rc=$?
[ "$rc" = 6 ] || fail "predict into /dev/full: exit $rc, want 6: $(cat "$WORK/predict-full.err")"
[ "$(grep -c "^dl-train: error: standard output: cannot write all of it.*; what this command printed there is incomplete" \
  "$WORK/predict-full.err")" = 1 ] || fail "predict into /dev/full: $(cat "$WORK/predict-full.err")"
for command in "validate --config $WORK/straight/config.resolved.yaml" "inspect --model $model" \
  "eval --model $model" "--version" "--help"; do
  # shellcheck disable=SC2086 # the command's words
  expect_failure 6 "^dl-train: error: standard output: cannot write all of it" -- \
    bash -c 'exec "$@" >/dev/full' - "$DL_TRAIN" $command
done
# Into `head -n 1`, the reader gone: 141, as a pipeline's writer ends, and nothing on stderr.
set +o pipefail
"$DL_TRAIN" predict -m "$model" -i "$WORK/data/train-images-idx3-ubyte.gz" 2>"$WORK/predict-head.err" |
  head -n 1 >/dev/null
rc=${PIPESTATUS[0]}
set -o pipefail
[ "$rc" = 141 ] || fail "predict into head: exit $rc, want 141: $(cat "$WORK/predict-head.err")"
! grep -q error "$WORK/predict-head.err" || fail "predict into head: $(cat "$WORK/predict-head.err")"
echo "ok: the commands' standard output checked: /dev/full exit 6, head 141"
