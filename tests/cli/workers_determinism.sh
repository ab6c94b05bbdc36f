#!/usr/bin/env bash
# Same config, seed and workers twice: identical score files (2 workers, averaging every 3).
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 1000 200
for run in a b; do
  mapfile -t args < <(small_args "$WORK/data" "$WORK/$run" parallel.workers=2 parallel.averagingFrequency=3 \
    parallel.prefetchBuffer=4 output.scoreEveryIterations=1 parallel.reportScoreAfterAveraging=false)
  "$DL_TRAIN" "${args[@]}" >"$WORK/$run.log"
done
cmp "$WORK/a/scores.csv" "$WORK/b/scores.csv" || fail "score files differ"
grep -q '^0,3,1,' "$WORK/a/scores.csv" || fail "no per-worker rows: $(head "$WORK/a/scores.csv")"
grep -qE "^threads: 2 worker\(s\) x [0-9]+ thread\(s\) on [0-9]+ core\(s\) \(CPU affinity: " "$WORK/a.log" ||
  fail "thread plan not printed: $(grep threads "$WORK/a.log")"
echo "ok: $(wc -l <"$WORK/a/scores.csv") identical score rows"
