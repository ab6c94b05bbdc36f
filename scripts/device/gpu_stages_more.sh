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
