#!/usr/bin/env bash
# The data-parallel recipe study (issue 13): which recipe lets 2 workers, and 2 MPI ranks, reach
# the test accuracy of one worker after the same number of epochs. LeNet with the recipe of
# configs/mnist.yaml (batch 128 per worker, Nesterov lr 0.01, averaging every 3 rounds), 3 epochs,
# on the real MNIST digits in data/mnist and on Fashion-MNIST, for each seed.
#
# Setups: 1w   one worker (the reference);
#         2w   one process, parallel.workers=2;
#         2r   mpirun -np 2 (scripts/mpirun_local.sh), parallel.workers=1 per rank.
# Recipes (the --set keys each adds to the 2w and 2r runs; 1w always runs the plain config):
#         dl4j     learningRateScaling: none: DL4J's ParallelWrapper, each worker at lr 0.01
#         plus20   learning rate +20 % (0.012), as DL4J's GPU page suggests
#         linear   learningRateScaling: linear, warmupIterations: 20 (lr x workers, ramped)
#
# Usage: bench/recipe_study.sh OUT.csv [seeds...]        (default seeds: 123 124 125)
# Environment: DLTRAIN (default build/dl-train), EPOCHS (3), DATASETS ("mnist fashion"),
#              RECIPES ("dl4j linear plus20"), SETUPS ("1w 2w 2r"), FASHION_TRAIN_LIMIT (the
#              first N of Fashion-MNIST's 60,000 training images; 0 = all; default 12000, which
#              keeps a run near a minute on a busy 2-core machine; the test set is always whole).
# Appends one CSV row per run (dataset,recipe,setup,seed,accuracy,seconds) to OUT.csv; rows
# already there are skipped, so an interrupted study continues where it stopped.
# bench/summarize_recipes.py OUT.csv prints the table of bench/RESULTS.md.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

out="${1:?usage: bench/recipe_study.sh OUT.csv [seeds...]}"
shift
seeds=("$@")
((${#seeds[@]})) || seeds=(123 124 125)
dltrain="${DLTRAIN:-build/dl-train}"
epochs="${EPOCHS:-3}"
read -r -a datasets <<<"${DATASETS:-mnist fashion}"
read -r -a recipes <<<"${RECIPES:-dl4j linear plus20}"
read -r -a setups <<<"${SETUPS:-1w 2w 2r}"
[[ -x "$dltrain" ]] || { echo "recipe_study.sh: $dltrain is not built" >&2; exit 1; }
[[ -f "$out" ]] || echo "dataset,recipe,setup,seed,accuracy,seconds" >"$out"
work="$(mktemp -d -t dl-train-recipes.XXXXXX)"
trap 'rm -rf "$work"' EXIT

declare -A config_of=([mnist]=configs/mnist.yaml [fashion]=configs/fashion-mnist.yaml)
declare -A limit_of=([mnist]=0 [fashion]="${FASHION_TRAIN_LIMIT:-12000}")
declare -A recipe_sets=(
  [dl4j]="parallel.learningRateScaling=none"
  [plus20]="parallel.learningRateScaling=none updater.learningRate=0.012"
  [linear]="parallel.learningRateScaling=linear parallel.warmupIterations=20"
)

# run_one DATASET RECIPE SETUP SEED: trains once and appends its row.
run_one() {
  local dataset=$1 recipe=$2 setup=$3 seed=$4
  local dir="$work/$dataset-$recipe-$setup-$seed"
  local args=(--config "${config_of[$dataset]}" --overwrite --set "output.directory=$dir"
    --set "epochs=$epochs" --set "seed=$seed" --set parallel.mode=averaging
    --set parallel.averagingFrequency=3 --set output.printEvaluation=false
    --set "data.trainLimit=${limit_of[$dataset]}")
  local launcher=() workers=2
  case $setup in
    1w) workers=1 ;;
    2r) launcher=(bash scripts/mpirun_local.sh -np 2) workers=1 ;;
  esac
  args+=(--set "parallel.workers=$workers")
  if [[ $setup != 1w ]]; then
    for s in ${recipe_sets[$recipe]}; do args+=(--set "$s"); done
  fi
  local start=$SECONDS
  "${launcher[@]}" "$dltrain" "${args[@]}" >"$dir.log" 2>&1 ||
    { echo "recipe_study.sh: $dataset $recipe $setup seed $seed failed:" >&2; tail -5 "$dir.log" >&2; return 1; }
  local accuracy
  accuracy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["test_accuracy"])' \
    "$dir/summary.json")
  echo "$dataset,$recipe,$setup,$seed,$accuracy,$((SECONDS - start))" >>"$out"
  echo "==> $dataset $recipe $setup seed $seed: accuracy $accuracy ($((SECONDS - start)) s)" >&2
}

for dataset in "${datasets[@]}"; do
  for seed in "${seeds[@]}"; do
    for recipe in "${recipes[@]}"; do
      for setup in "${setups[@]}"; do
        # One worker takes no --set of the recipe: one reference run per seed serves them all.
        row_recipe=$recipe
        [[ $setup == 1w ]] && row_recipe=reference
        grep -q "^$dataset,$row_recipe,$setup,$seed," "$out" && continue
        run_one "$dataset" "$row_recipe" "$setup" "$seed"
      done
    done
  done
done
