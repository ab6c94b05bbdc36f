#!/usr/bin/env bash
# One worker on 1, 2, 3, 4, 8 and 16 threads (more than the cores is fine) gives identical score
# files, for each library behind the CPU products (cpu.kernels: cblas, and auto, which is oneDNN
# where built): the CPU ops cut their work by problem size, never by thread count. Batch 128 makes
# several convolution tasks, whose partial weight gradients are summed in task order, and a dense
# layer cut into tiles. Then the task trace (DL_CPU_TASK_TRACE) read by bench/task_scaling.py.
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

# Batch 32 makes LeNet's second layer 4 backward chunks and 8 forward ones: 16 threads spread both
# Winograd passes over more tasks (TaskSpread, conv2d_winograd.hpp), 1 thread does not.
for threads in 1 16; do
  mapfile -t args < <(small_args "$WORK/data" "$WORK/b32-$threads" batchSize=32 cpu.kernels=cblas \
    parallel.blasThreads=$threads output.scoreEveryIterations=1)
  "$DL_TRAIN" "${args[@]}" >"$WORK/b32-$threads.log"
done
cmp "$WORK/b32-1/scores.csv" "$WORK/b32-16/scores.csv" ||
  fail "batch 32: 16 threads (the Winograd passes spread) differ from 1"
"$COMPARE_MODELS" "$WORK/b32-1/model.dlm" "$WORK/b32-16/model.dlm" 0 >/dev/null ||
  fail "batch 32: the models of 1 and 16 threads differ"
echo "ok: batch 32, 1 and 16 threads identical, the Winograd passes spread on 16"

# The task trace (DL_CPU_TASK_TRACE, src/backend/cpu/task_trace.hpp) runs every op's tasks in
# order on one thread and times them: the same bits, and a file bench/task_scaling.py reads.
trace="$WORK/trace.txt"
mapfile -t args < <(small_args "$WORK/data" "$WORK/traced" batchSize=128 cpu.kernels=cblas \
  parallel.blasThreads=4 output.scoreEveryIterations=1)
DL_CPU_TASK_TRACE="$trace" "$DL_TRAIN" "${args[@]}" >"$WORK/traced.log"
cmp "$WORK/cblas-1/scores.csv" "$WORK/traced/scores.csv" || fail "the traced run's scores differ"
grep -q "^# binary " "$trace" || fail "the trace names no binary: $(head -2 "$trace")"
calls=$(grep -c '^[0-9]' "$trace")
((calls > 20)) || fail "the trace holds $calls calls"
"$PYTHON3" "$DL_SOURCE_DIR/bench/task_scaling.py" "$trace" >"$WORK/scaling.txt" ||
  fail "task_scaling.py failed on the trace"
grep -Eq '^\| 16 \| [0-9.]+x \|' "$WORK/scaling.txt" || fail "no 16-thread row: $(cat "$WORK/scaling.txt")"
grep -q "conv2d" "$WORK/scaling.txt" || fail "no convolution named: $(cat "$WORK/scaling.txt")"
echo "ok: the traced run's scores are the untraced run's; $calls calls traced;" \
  "$(grep '^| 16 |' "$WORK/scaling.txt")"
