#!/usr/bin/env bash
# A run directory on a file system without flock (Lustre mounted with noflock, some NFS mounts),
# as a user meets it: the real dl-train under an LD_PRELOAD shim whose flock fails with ENOLCK
# (tests/tools/flock_unsupported.cpp). The claim file replaces the lock: a run trains and says
# so once; a second start while the first runs is refused naming the holder, the claim file, the
# mount and the fix; a claim of a dead process on this machine is taken over, a claim of another
# host refused; the claim is gone after a normal end and after a failed start; kill -9 leaves a
# claim that the next start takes over.
source "$(dirname "$0")/lib.sh"
: "${FLOCK_UNSUPPORTED:?FLOCK_UNSUPPORTED must name the flock shim}"
no_flock() { LD_PRELOAD="$FLOCK_UNSUPPORTED" "$@"; }
host=$(hostname)
boot=$(cat /proc/sys/kernel/random/boot_id)
pidns=$(readlink /proc/self/ns/pid)
# write_claim FILE PID HOST: a claim as dl-train writes it (run_directory_claim.cpp).
write_claim() {
  printf 'dl-train run directory claim\npid %s\nhost %s\nboot_id %s\npid_namespace %s\nstart_ticks 0\nsince 2026-12-01T10:00:00Z\nsince_unix %s\n' \
    "$2" "$3" "$boot" "$pidns" "$(date +%s)" >"$1"
}
dead_pid() { sh -c 'echo $$'; }  # a process that has exited (ids are not reused this soon)

make_data "$WORK/data" 600 100

# A run trains under the shim, says once why and how, and leaves no claim behind.
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" epochs=1)
no_flock "$DL_TRAIN" "${args[@]}" >"$WORK/run.log" 2>"$WORK/run.err" || fail "training without flock failed: $(cat "$WORK/run.err")"
grep -q "its file system has no flock (flock: No locks available; mount .* of type .*): the run directory is claimed by the file $WORK/run/.dl-train.claim instead" "$WORK/run.err" ||
  fail "no line about the fallback: $(cat "$WORK/run.err")"
[ "$(grep -c "has no flock" "$WORK/run.err")" = 1 ] || fail "the fallback said more than once: $(cat "$WORK/run.err")"
grep -q '"stopped_by": "completed"' "$WORK/run/summary.json" || fail "no completed summary"
[ -e "$WORK/run/.dl-train.claim" ] && fail "the claim file stayed after a normal end"
echo "ok: trained without flock: $(cat "$WORK/run.err")"

# A second start while the first runs: refused in one line, naming holder, claim, mount, fix.
make_data "$WORK/big" 6000 200
mapfile -t args < <(small_args "$WORK/big" "$WORK/shared" epochs=2 output.scoreEveryIterations=1)
DL_TRAIN_TEST_SYNC_PAUSE_MS=20 LD_PRELOAD="$FLOCK_UNSUPPORTED" "$DL_TRAIN" "${args[@]}" >"$WORK/first.log" 2>&1 &
first=$!
wait_for_lines "$WORK/shared/scores.csv" 2 400 0.05
[ -f "$WORK/shared/.dl-train.claim" ] || fail "no claim file while the run trains"
grep -qx "pid $first" "$WORK/shared/.dl-train.claim" || fail "the claim does not name pid $first: $(cat "$WORK/shared/.dl-train.claim")"
claim_re="another dl-train is using this run directory \\(pid $first on host $host since [0-9TZ:-]+, still running\\): it holds the claim file $WORK/shared/.dl-train.claim, .*\\(mount .* of type .* from .*\\); wait for that run to end, or remove $WORK/shared/.dl-train.claim once you are sure it has ended"
expect_failure 6 "$claim_re" -- no_flock "$DL_TRAIN" "${args[@]}" --resume
expect_failure 6 "$claim_re" -- no_flock "$DL_TRAIN" "${args[@]}"
# A start with flock refuses it too (another mount of the same directory).
expect_failure 6 "$claim_re" -- "$DL_TRAIN" "${args[@]}" --resume
[ -f "$WORK/shared/.dl-train.claim" ] || fail "a refused start removed the holder's claim"

# kill -9: the claim stays; the next start (on this machine) takes it over, saying so.
kill -KILL "$first"
wait "$first" || true
[ -f "$WORK/shared/.dl-train.claim" ] || fail "kill -9 left no claim (nothing to take over)"
no_flock "$DL_TRAIN" "${args[@]}" --resume >"$WORK/resume.log" 2>"$WORK/resume.err" ||
  fail "--resume after kill -9 failed: $(cat "$WORK/resume.err")"
grep -q "dl-train: $WORK/shared/.dl-train.claim: took over the claim of pid $first on host $host since .*, which runs no more" "$WORK/resume.err" ||
  fail "no takeover line: $(cat "$WORK/resume.err")"
[ "$(wc -l <"$WORK/resume.err")" = 2 ] || fail "more than the fallback and takeover lines: $(cat "$WORK/resume.err")"
[ -e "$WORK/shared/.dl-train.claim" ] && fail "the claim file stayed after the resumed run"
echo "ok: kill -9 then resume: $(tail -1 "$WORK/resume.err")"

# A stale claim of a dead process on this machine is taken over; one of another host refused.
mapfile -t args < <(small_args "$WORK/data" "$WORK/stale" epochs=1)
mkdir -p "$WORK/stale"
dead=$(dead_pid)
write_claim "$WORK/stale/.dl-train.claim" "$dead" "$host"
no_flock "$DL_TRAIN" "${args[@]}" >/dev/null 2>"$WORK/stale.err" || fail "a stale claim was not taken over: $(cat "$WORK/stale.err")"
grep -q "took over the claim of pid $dead on host $host since 2026-12-01T10:00:00Z, which runs no more" "$WORK/stale.err" ||
  fail "no takeover line for the stale claim: $(cat "$WORK/stale.err")"
[ -e "$WORK/stale/.dl-train.claim" ] && fail "the taken-over claim stayed after the run"

mapfile -t args < <(small_args "$WORK/data" "$WORK/elsewhere" epochs=1)
mkdir -p "$WORK/elsewhere"
write_claim "$WORK/elsewhere/.dl-train.claim" "$dead" "other-node-17"
expect_failure 6 "another dl-train is using this run directory \\(pid $dead on host other-node-17 since 2026-12-01T10:00:00Z, on another machine, whose processes cannot be checked from here\\): it holds the claim file $WORK/elsewhere/.dl-train.claim" \
  "remove $WORK/elsewhere/.dl-train.claim once you are sure it has ended" -- no_flock "$DL_TRAIN" "${args[@]}"
grep -q "host other-node-17" "$WORK/elsewhere/.dl-train.claim" || fail "a refused start changed another host's claim"
[ "$(ls -A "$WORK/elsewhere")" = .dl-train.claim ] || fail "a refused start wrote into the directory: $(ls -A "$WORK/elsewhere")"
# Removed by hand, as the message says: the next start trains.
rm "$WORK/elsewhere/.dl-train.claim"
no_flock "$DL_TRAIN" "${args[@]}" >/dev/null 2>&1 || fail "the start after removing the claim failed"

# A start that fails after claiming the directory (--resume over damaged checkpoints) removes its
# claim, and only its own files: the damaged checkpoints stay.
mapfile -t args < <(small_args "$WORK/data" "$WORK/damaged" output.checkpointEveryIterations=5)
no_flock "$DL_TRAIN" "${args[@]}" >/dev/null 2>&1 || fail "the run to damage failed"
for f in "$WORK"/damaged/checkpoints/*.dlck; do
  printf '\xff\xff' | dd of="$f" bs=1 seek=200 conv=notrunc status=none
done
rc=0
no_flock "$DL_TRAIN" "${args[@]}" --resume >/dev/null 2>"$WORK/damaged.err" || rc=$?
[ "$rc" = 4 ] || fail "--resume over damaged checkpoints: exit $rc, want 4: $(cat "$WORK/damaged.err")"
[ -e "$WORK/damaged/.dl-train.claim" ] && fail "the claim file stayed after a failed start"
ls "$WORK"/damaged/checkpoints/*.dlck >/dev/null || fail "a failed start removed the checkpoints"
# Two starts at the same moment, on a fresh directory and on one holding a stale claim: one
# trains, the other is refused (link(2) publishes one claim; one move of the stale claim wins).
for case in fresh stale; do
  mapfile -t args < <(small_args "$WORK/data" "$WORK/race-$case" epochs=1)
  if [ "$case" = stale ]; then
    mkdir -p "$WORK/race-$case"
    write_claim "$WORK/race-$case/.dl-train.claim" "$(dead_pid)" "$host"
  fi
  # A pause at each sync point keeps the first one training while the second starts.
  DL_TRAIN_TEST_SYNC_PAUSE_MS=20 LD_PRELOAD="$FLOCK_UNSUPPORTED" "$DL_TRAIN" "${args[@]}" >"$WORK/race1.log" 2>&1 &
  one=$!
  DL_TRAIN_TEST_SYNC_PAUSE_MS=20 LD_PRELOAD="$FLOCK_UNSUPPORTED" "$DL_TRAIN" "${args[@]}" >"$WORK/race2.log" 2>&1 &
  two=$!
  rc1=0 rc2=0
  wait "$one" || rc1=$?
  wait "$two" || rc2=$?
  [ "$(printf '%s\n' "$rc1" "$rc2" | sort | tr '\n' ' ')" = "0 6 " ] ||
    fail "two simultaneous starts ($case): exits $rc1 and $rc2 (want one 0 and one 6): $(cat "$WORK/race1.log" "$WORK/race2.log")"
  # Refused for the claim while the other trains, or for its finished run when it started later.
  grep -qE "another dl-train is using this run directory|already holds a run" "$WORK/race1.log" "$WORK/race2.log" ||
    fail "the refused start ($case) did not say why: $(cat "$WORK/race1.log" "$WORK/race2.log")"
  [ -e "$WORK/race-$case/.dl-train.claim" ] && fail "a claim stayed after the race ($case)"
  cmp "$WORK/run/scores.csv" "$WORK/race-$case/scores.csv" || fail "simultaneous starts ($case) mixed scores.csv"
  echo "ok: simultaneous starts ($case): $(grep -h "dl-train" "$WORK/race1.log" "$WORK/race2.log" | grep -v "has no flock" | cut -c1-160)"
done

echo "ok: claim file: fallback, refusal, takeover after kill -9 and of a stale claim, other host refused, removed after a normal end and a failed start, simultaneous starts"
