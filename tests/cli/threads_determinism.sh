#!/usr/bin/env bash
# One worker on 1, 2, 3, 4, 8 and 16 threads (more than the cores is fine) gives identical score
# files, for each library behind the CPU products (cpu.kernels: cblas, and auto, which is oneDNN
# where built): the CPU ops cut their work by problem size, never by thread count. Batch 128 makes
# several convolution tasks, whose partial weight gradients are summed in task order, and a dense
# layer cut into tiles.
source "$(dirname "$0")/lib.sh"
make_data "$WORK/data" 1000 200
for kernels in cblas auto; do
  for threads in 1 2 3 4 8 16; do
    run="$kernels-$threads"
    mapfile -t args < <(small_args "$WORK/data" "$WORK/$run" batchSize=128 cpu.kernels=$kernels \
      parallel.blasThreads=$threads output.scoreEveryIterations=1)
    "$DL_TRAIN" "${args[@]}" >"$WORK/$run.log"
    grep -q "^CPU kernels: " "$WORK/$run.log" || fail "no kernels line: $(head "$WORK/$run.log")"
    cmp "$WORK/$kernels-1/scores.csv" "$WORK/$run/scores.csv" ||
      fail "cpu.kernels=$kernels: $threads threads differ from 1"
  done
  echo "ok: $kernels: $(grep '^CPU kernels' "$WORK/$kernels-1.log")," \
    "1, 2, 3, 4, 8 and 16 threads identical" \
    "($(wc -l <"$WORK/$kernels-1/scores.csv") score rows)"
done
