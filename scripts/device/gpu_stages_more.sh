# Sourced by gpu_checks.sh: the speed stages (scale and bench are documented there) and those
# added after the first session.
#   graphs    FLOAT, HALF and BFLOAT16 with 1 worker and FLOAT with 2 synchronous workers, 2 epochs
#             each with cuda.graphs false and true: scores.csv must be the same bytes (a replayed
#             step is the same arithmetic), and images/s shows what the replay saves
#   profile   Nsight Compute's duration of every kernel of 300 launches in the middle of an epoch
#             (FLOAT, 1 worker, batch 128, op by op), summed per kernel: where the GPU's time goes
#   cifar     configs/cifar10.yaml (the Keras seed's network) on generated CIFAR-10 binary batches
#             (the kit's make_cifar_dataset; no real CIFAR-10 here), 2 epochs: FLOAT with 1 worker,
#             2 averaging and 2 synchronous, HALF with 1; and with crops, flips and normalization
#             the training set on the GPU must give the host loader's scores.csv
#   resnet    configs/resnet20-cifar10.yaml (a graph: residual blocks, projection shortcuts,
#             batch normalization, bias-free convolutions) on the same generated batches, 1 epoch:
#             FLOAT, HALF and BFLOAT16 with 1 worker, FLOAT with 2 synchronous workers, each with
#             cuda.graphs false and true (scores.csv must be the same bytes); and a run killed
#             mid-epoch and resumed must end with the uninterrupted run's scores.csv
#   nccl2     two MPI ranks on the one GPU, each with its own NCCL_HOSTID, so that NCCL (and
#             dl-train) take them for two machines and build a 2-rank communicator (socket
#             transport over NCCL_SOCKET_IFNAME, default lo): FLOAT, synchronous, 20,000 images,
#             2 ranks x 1 worker against 1 process x 2 workers (scores.csv compared byte for
#             byte, reported; the models by compare_models within 1e-5, required); then rank 1
#             killed (SIGKILL) mid-epoch in a longer run: mpirun must end the job, and the time
#             from the kill to its exit is reported (a GPU peer's NCCL would wait for ever)
#   cpuscale  the device's CPU cores, no GPU: configs/resnet20-cifar10.yaml on the CPU backend,
#             one worker on 1, 8 and all threads (the same scores.csv bytes, required), the
#             measured speed-ups beside what bench/task_scaling.py predicts from a traced run
#             (DL_CPU_TASK_TRACE): does the prediction made on a 2-core machine hold on 16?

stage_graphs() {
  local setup dtype workers mode name
  for setup in FLOAT:1:averaging HALF:1:averaging BFLOAT16:1:averaging FLOAT:2:synchronous; do
    IFS=: read -r dtype workers mode <<<"$setup"
    for graphs in false true; do
      name="graphs-$graphs-$dtype-${workers}w-$mode"
      train_run "$name" --set "dtype=$dtype" --set "parallel.workers=$workers" \
        --set "parallel.mode=$mode" --set "cuda.graphs=$graphs" --set epochs=2
    done
    local off="$work/graphs-false-$dtype-${workers}w-$mode/scores.csv"
    local on="$work/graphs-true-$dtype-${workers}w-$mode/scores.csv"
    if [[ -f "$off" && -f "$on" ]] && cmp -s "$off" "$on"; then
      say "      graphs: $dtype ${workers}w $mode: scores.csv identical with and without ($(wc -l <"$on") rows)"
    else
      fail_check "graphs: $dtype ${workers}w $mode: scores.csv differs with cuda.graphs true (or is missing)"
      diff <(head -n 5 "$off" 2>/dev/null) <(head -n 5 "$on" 2>/dev/null) | sed 's/^/      /' | tee -a "$log"
    fi
  done
}

stage_profile() {
  local ncu
  ncu="$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)"
  if [[ -z "$ncu" ]]; then
    fail_check "profile: ncu not found"
    return
  fi
  local report="$work/profile"
  step profile-ncu "$kTrainLimitSeconds" "$ncu" --clock-control none --metrics gpu__time_duration.sum \
    --launch-skip 400 --launch-count 300 -o "$report" \
    "$KIT/bin/dl-train" --config "$kConfig" --set backend=cuda --set epochs=1 --set data.trainLimit=20000 \
    "${data_overrides[@]}" --set "output.directory=$work/profile-run" --overwrite --set cuda.graphs=false \
    --set parallel.workers=1 "${extra_set[@]}"
  "$ncu" --import "$report.ncu-rep" --csv --page raw --metrics gpu__time_duration.sum >"$work/profile.csv" 2>&1
  cp "$work/profile.csv" "$OUT/profile.csv" 2>/dev/null
  # Kernel name and duration (ns) columns, found by their headers; summed per kernel.
  python3 - "$work/profile.csv" <<'PY' | tee -a "$log"
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[head]
name, dur = h.index("Kernel Name"), h.index("gpu__time_duration.sum")
# The row after the header names each column's unit; durations are summed in ns.
to_ns = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}
scale = to_ns.get(rows[head + 1][dur].strip(), 1.0)
total = collections.defaultdict(float); count = collections.Counter()
for r in rows[head + 2:]:
    try:
        t = float(r[dur].replace(",", "")) * scale
    except (ValueError, IndexError):
        continue
    k = r[name][:70]; total[k] += t; count[k] += 1
whole = sum(total.values())
print(f"      profile: {sum(count.values())} kernels, {whole / 1e3:.1f} us in all")
for k, t in sorted(total.items(), key=lambda kv: -kv[1])[:25]:
    print(f"      {t / whole * 100:5.1f}%  {count[k]:4d} x {t / count[k] / 1e3:8.2f} us  {k}")
PY
}

stage_cifar() {
  local data="$work/cifar-data" maker="$KIT/bin/make_cifar_dataset"
  if [[ ! -x "$maker" ]]; then
    fail_check "cifar: $maker missing; rebuild the kit (scripts/device/build_kit.sh)"
    return
  fi
  mkdir -p "$data"
  step cifar-data 60 "$maker" "$data" "$kCifarTrainImages" "$kCifarTestImages" || return
  local setup dtype workers mode
  for setup in FLOAT:1:averaging FLOAT:2:averaging FLOAT:2:synchronous HALF:1:averaging; do
    IFS=: read -r dtype workers mode <<<"$setup"
    config_run configs/cifar10.yaml "cifar-$dtype-${workers}w-$mode" --set "data.directory=$data" \
      --set epochs=2 --set "dtype=$dtype" --set "parallel.workers=$workers" --set "parallel.mode=$mode"
  done
  local residency
  for residency in always never; do
    config_run configs/cifar10.yaml "cifar-pipeline-$residency" --set "data.directory=$data" \
      --set data.normalize=true --set data.randomCrop=2 --set data.horizontalFlip=true \
      --set "data.deviceResident=$residency" --set output.scoreEveryIterations=1
  done
  if cmp -s "$work/cifar-pipeline-always/scores.csv" "$work/cifar-pipeline-never/scores.csv"; then
    say "      cifar: crops, flips and normalization on the GPU give the host loader's scores.csv"
  else
    fail_check "cifar: scores.csv differs between deviceResident always and never (or is missing)"
  fi
}

stage_scale() {
  local batch
  for batch in "${kScaleBatchSizes[@]}"; do
    train_run "scale-FLOAT-b$batch" --set dtype=FLOAT --set parallel.workers=1 \
      --set "batchSize=$batch" --set "epochs=$kScaleEpochs"
  done
}

stage_bench() {
  local python
  if ! python="$(python_with_torch)"; then
    fail_check "bench: no python3 here imports torch"
    return
  fi
  say "      bench: $python, torch $("$python" -c 'import torch; print(torch.__version__)' 2>&1)"
  PYTHONUNBUFFERED=1 step pytorch "$kBenchLimitSeconds" "$python" bench/gpu/pytorch_lenet_gpu.py \
    --data-dir "$data" "${bench_args[@]}"
  local line
  while read -r line; do
    printf 'pytorch\t%s\t%s\t%s\t%s\t%s\n' \
      "$(echo "$line" | sed -n 's/.*"precision": "\([^"]*\)".*"mode": "\([^"]*\)".*/\1-\2/p')" \
      "$(echo "$line" | sed -n 's/.*"train_images_per_second": \([0-9.]*\).*/\1/p')" \
      "$(echo "$line" | sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p')" \
      "$(echo "$line" | sed -n 's/.*"train_seconds": \([0-9.]*\).*/\1/p')" \
      "$(echo "$line" | sed -n 's/.*"\(error\|skipped\)": "\([^"]*\)".*/\1: \2/p')" >>"$results_tsv"
  done < <(grep '^{"framework": "pytorch"' "$work/pytorch.out")
}

stage_resnet() {
  local data="$work/cifar-data" maker="$KIT/bin/make_cifar_dataset"
  if [[ ! -x "$maker" ]]; then
    fail_check "resnet: $maker missing; rebuild the kit (scripts/device/build_kit.sh)"
    return
  fi
  [[ -f "$data/test_batch.bin" ]] || { mkdir -p "$data" &&
    step resnet-data 60 "$maker" "$data" "$kCifarTrainImages" "$kCifarTestImages"; } || return
  local setup dtype workers graphs name
  for setup in FLOAT:1 HALF:1 BFLOAT16:1 FLOAT:2; do
    IFS=: read -r dtype workers <<<"$setup"
    for graphs in false true; do
      name="resnet-$dtype-${workers}w-graphs-$graphs"
      config_run configs/resnet20-cifar10.yaml "$name" --set "data.directory=$data" \
        --set "dtype=$dtype" --set "parallel.workers=$workers" --set "cuda.graphs=$graphs" \
        --set output.scoreEveryIterations=1 --set output.checkpointEveryIterations=10
    done
    if cmp -s "$work/resnet-$dtype-${workers}w-graphs-false/scores.csv" \
      "$work/resnet-$dtype-${workers}w-graphs-true/scores.csv"; then
      say "      resnet: $dtype ${workers}w: scores.csv identical with and without CUDA graphs"
    else
      fail_check "resnet: $dtype ${workers}w: scores.csv differs with cuda.graphs true (or is missing)"
    fi
  done
  # Resumed from its mid-epoch checkpoint, the FLOAT 1-worker run ends as the uninterrupted one.
  local straight="$work/resnet-FLOAT-1w-graphs-true" resumed="$work/resnet-resumed"
  local first
  first="$(find "$straight/checkpoints" -name 'checkpoint-e0-i*.dlck' 2>/dev/null | sort -V | head -n 1)"
  if [[ -z "$first" ]]; then
    fail_check "resnet: no mid-epoch checkpoint in $straight"
    return
  fi
  rm -rf "$resumed" && cp -r "$straight" "$resumed"
  find "$resumed/checkpoints" -type f ! -name "$(basename "$first")" -delete
  step resnet-resume "$kTrainLimitSeconds" "$KIT/bin/dl-train" --config configs/resnet20-cifar10.yaml \
    --set backend=cuda --set epochs=1 --set "data.directory=$data" --set output.scoreEveryIterations=1 \
    --set output.checkpointEveryIterations=10 --set "output.directory=$resumed" --resume || return
  if cmp -s "$straight/scores.csv" "$resumed/scores.csv"; then
    say "      resnet: resumed from $(basename "$first"): scores.csv identical"
  else
    fail_check "resnet: the resumed run's scores.csv differs from the uninterrupted one"
  fi
}

# The nccl2 stage's limits: the end of a job after a kill (cli_mpi_kill: about 2 s on the CPU),
# the rows of scores.csv to wait for before killing (the job is then mid-epoch), and its epochs.
readonly kNccl2EndSeconds=60
readonly kNccl2KillAfterRows=3
readonly kNccl2KillEpochs=5

# nccl2_launch: sets the caller's `launch` to mpirun for 2 ranks on this machine, each rank its
# own NCCL_HOSTID (single quotes: each rank's shell expands its own OMPI_COMM_WORLD_RANK); the
# program and its arguments follow.
nccl2_launch() {
  launch=("$MPI_KIT/bin/mpirun" --allow-run-as-root -np 2 --bind-to none --mca btl self,vader
    -x LD_LIBRARY_PATH -x OPAL_PREFIX -x PMIX_PKGLIBDIR -x PMIX_PKGDATADIR -x NCCL_DEBUG
    -x NCCL_DEBUG_SUBSYS -x NCCL_SOCKET_IFNAME -x NCCL_IB_DISABLE
    bash -c 'NCCL_HOSTID="dl-train-nccl2-rank$OMPI_COMM_WORLD_RANK" exec "$@"' nccl2)
}

stage_nccl2() {
  use_mpi_kit nccl2 || return
  export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
  export NCCL_IB_DISABLE=1
  local launch common=(--config "$kConfig" --set backend=cuda --set epochs=1
    --set data.trainLimit=20000 --set parallel.mode=synchronous "${data_overrides[@]}" --overwrite)
  nccl2_launch
  step nccl2-1process-2workers "$kMpiLimitSeconds" "$MPI_KIT/bin/dl-train" "${common[@]}" \
    --set parallel.workers=2 --set "output.directory=$work/nccl2-1p2w" "${extra_set[@]}"
  step nccl2-2ranks-1worker "$kMpiLimitSeconds" "${launch[@]}" "$MPI_KIT/bin/dl-train" \
    "${common[@]}" --set parallel.workers=1 --set "output.directory=$work/nccl2-2r1w" "${extra_set[@]}"
  grep -E "NCCL version|nRanks 2|Init COMPLETE|NCCL over|^done:|[Ee]rror" "$work/nccl2-2ranks-1worker.out" |
    head -n 12 | sed 's/^/      /' | tee -a "$log"
  grep -q "NCCL over 2 GPU(s) of 2 process(es)" "$work/nccl2-2ranks-1worker.out" ||
    fail_check "nccl2: the 2 ranks did not form one 2-rank NCCL communicator"
  if cmp -s "$work/nccl2-1p2w/scores.csv" "$work/nccl2-2r1w/scores.csv"; then
    say "      nccl2: scores.csv of 2 ranks x 1 worker and 1 process x 2 workers: identical"
  else
    say "      nccl2: scores.csv of 2 ranks x 1 worker and 1 process x 2 workers: differ (first rows below)"
    diff <(head -n 4 "$work/nccl2-1p2w/scores.csv" 2>&1) <(head -n 4 "$work/nccl2-2r1w/scores.csv" 2>&1) |
      sed 's/^/      /' | tee -a "$log"
  fi
  step nccl2-compare-models 30 "$KIT/bin/compare_models" "$work/nccl2-1p2w/model.dlm" \
    "$work/nccl2-2r1w/model.dlm" 1e-5
  sed 's/^/      /' "$work/nccl2-compare-models.out" | tee -a "$log"
  nccl2_kill_run
}

# Rank 1 of a 2-rank job killed mid-epoch: the job must end (mpirun kills rank 0, whose NCCL
# would wait for rank 1 for ever) within kNccl2EndSeconds; the time is reported.
nccl2_kill_run() {
  local remaining=$((deadline - SECONDS)) launch dir="$work/nccl2-killed"
  if ((remaining < kMpiLimitSeconds / 2)); then
    say "SKIP  nccl2-kill: only ${remaining}s of the ${budget_s}s budget left"
    printf '%s\t%s\t%s\t%s\n' nccl2-kill skipped 0 budget >>"$steps_tsv"
    failures=$((failures + 1))
    return
  fi
  nccl2_launch
  timeout --kill-after="$kKillGraceSeconds" "$kMpiLimitSeconds" "${launch[@]}" "$MPI_KIT/bin/dl-train" \
    --config "$kConfig" --set backend=cuda --set "epochs=$kNccl2KillEpochs" --set parallel.workers=1 \
    --set parallel.mode=synchronous --set output.scoreEveryIterations=50 "${data_overrides[@]}" \
    --set "output.directory=$dir" --overwrite "${extra_set[@]}" >"$work/nccl2-kill.out" 2>&1 &
  local timer=$! victim="" mpirun_pid="" child _
  for _ in $(seq 1 1200); do
    [[ -f "$dir/scores.csv" ]] && (($(wc -l <"$dir/scores.csv") > kNccl2KillAfterRows)) && break
    kill -0 "$timer" 2>/dev/null || break
    sleep 0.1
  done
  mpirun_pid="$(pgrep -P "$timer" | head -n 1)"
  for child in $(pgrep -P "${mpirun_pid:-0}"); do
    tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$child
  done
  if [[ -z "$victim" ]]; then
    fail_check "nccl2-kill: rank 1 not found (the job ended or never reached row $kNccl2KillAfterRows of scores.csv)"
    tail -n 6 "$work/nccl2-kill.out" | sed 's/^/      /' | tee -a "$log"
    wait "$timer"
    return
  fi
  local start_ns rc=0
  start_ns=$(date +%s%N)
  kill -KILL "$victim"
  wait "$timer" || rc=$?
  local ms=$((($(date +%s%N) - start_ns) / 1000000))
  cat "$work/nccl2-kill.out" >>"$log"
  printf '%s\t%s\t%s\t%s\n' nccl2-kill "$rc" "$((ms / 1000))" "end $ms ms after the kill" >>"$steps_tsv"
  # timeout's 124 (or its KILL's 137 after the limit, which the time then shows) means a hang.
  if ((rc != 0 && rc != 124 && ms < kNccl2EndSeconds * 1000)); then
    say "OK    nccl2-kill: rank 1 killed after $(($(wc -l <"$dir/scores.csv") - 1)) score rows; mpirun exit $rc ${ms} ms later"
  else
    failures=$((failures + 1))
    say "FAIL  nccl2-kill: mpirun exit $rc ${ms} ms after the kill (limit ${kNccl2EndSeconds}s; 124: cut, the job hung)"
  fi
}

# The CPU stage's runs: one epoch of this many generated CIFAR images.
readonly kCpuScaleImages=2560

cpu_scale_run() { # cpu_scale_run NAME THREADS [ENV...]: one CPU epoch of ResNet-20 on $data
  local name="$1" threads="$2"
  shift 2
  step "$name" "$kTrainLimitSeconds" env "$@" "$KIT/bin/dl-train" \
    --config configs/resnet20-cifar10.yaml --set backend=cpu --set epochs=1 \
    --set "data.directory=$work/cifar-data" --set "data.trainLimit=$kCpuScaleImages" \
    --set parallel.workers=1 --set "parallel.blasThreads=$threads" \
    --set "output.directory=$work/$name" --overwrite
}

stage_cpuscale() {
  local maker="$KIT/bin/make_cifar_dataset" cores threads rate one="" name
  cores="$(nproc)"
  [[ -x "$maker" ]] || { fail_check "cpuscale: $maker missing; rebuild the kit"; return; }
  [[ -f "$work/cifar-data/test_batch.bin" ]] || { mkdir -p "$work/cifar-data" &&
    step cpuscale-data 60 "$maker" "$work/cifar-data" "$kCifarTrainImages" "$kCifarTestImages"; } ||
    return
  for threads in 1 8 "$cores"; do
    name="cpuscale-$threads"
    cpu_scale_run "$name" "$threads" || continue
    rate="$(awk -v r="$(json_number "$work/$name/summary.json" train_images_per_second)" \
      'BEGIN { printf "%.1f", r }')"
    [[ -z "$one" ]] && one="$rate"
    say "      cpuscale: $threads threads: $rate images/s ($(awk -v a="$rate" -v b="$one" \
      'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "?" }') of 1 thread)"
    [[ "$threads" == 1 ]] && continue
    cmp -s "$work/cpuscale-1/scores.csv" "$work/$name/scores.csv" ||
      fail_check "cpuscale: $threads threads wrote another scores.csv than 1 thread"
  done
  # Traced as the widest run decides (its tasks are the same; spread products follow the width).
  cpu_scale_run cpuscale-trace "$cores" "DL_CPU_TASK_TRACE=$work/cpuscale-trace.txt" || return
  if command -v python3 >/dev/null 2>&1; then
    python3 bench/task_scaling.py "$work/cpuscale-trace.txt" 2>&1 | tee -a "$log" | sed -n '1,12p'
  else
    say "      cpuscale: no python3 here; bench/task_scaling.py $OUT/cpuscale-trace.txt on the host"
    cp "$work/cpuscale-trace.txt" "$OUT/" 2>/dev/null
  fi
}
