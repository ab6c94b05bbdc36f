#!/usr/bin/env bash
# configs/cifar10.yaml (the seed's Keras network and recipe, unchanged) data-parallel on generated
# CIFAR-10 data: 2 workers in averaging and in synchronous mode, and 2 MPI ranks x 1 worker,
# which trains the synchronous 2-worker model (float tolerance). Each run logs the four numbers
# with a validation split.
source "$(dirname "$0")/lib.sh"
: "${MAKE_CIFAR:?MAKE_CIFAR must name the make_cifar_dataset tool}"
data="$WORK/cifar-10-batches-bin"
mkdir -p "$data"
"$MAKE_CIFAR" "$data" 320 64
cfg="$DL_SOURCE_DIR/configs/cifar10.yaml"
sets() {  # sets OUT SET...: the --set arguments of one run
  local out=$1
  shift
  printf -- '--set\n%s\n' backend=cpu "data.directory=$data" "output.directory=$WORK/$out" \
    epochs=2 data.validationSplit=0.2 "$@"
}
check_run() {  # check_run OUT LOG: two epoch lines with the four numbers, a final test line
  local n
  n=$(grep -cE "^([0-9:]{8} )?epoch [0-9]+/[0-9]+ done in .* - val_accuracy [0-9.]+$" "$2" || true)
  [ "$n" = 2 ] || fail "$1: expected 2 epoch lines: $(grep done "$2")"
  grep -q "test set (final model): accuracy" "$2" || fail "$1: no final test line"
  echo "ok: $1: $(grep '^done:' "$2"); $(grep '^test set' "$2")"
}

for mode in averaging synchronous; do
  mapfile -t args < <(sets "$mode" parallel.mode=$mode parallel.workers=2)
  "$DL_TRAIN" --config "$cfg" "${args[@]}" >"$WORK/$mode.log"
  grep -q "; $mode mode, 2 worker(s) x batch 32" "$WORK/$mode.log" ||
    fail "$mode: $(grep '^model:' "$WORK/$mode.log")"
  check_run "$mode, 2 workers" "$WORK/$mode.log"
done

if [ "${MPI_BUILT:-0}" != 1 ] || ! command -v mpirun >/dev/null; then
  echo "SKIP (the MPI part): dl-train was built without MPI or mpirun is missing"
  exit 0
fi
mapfile -t args < <(sets ranks parallel.mode=synchronous parallel.workers=1)
"$MPIRUN_LOCAL" -np 2 "$DL_TRAIN" --config "$cfg" "${args[@]}" >"$WORK/ranks.log" 2>&1 ||
  fail "mpirun -np 2 failed: $(tail -5 "$WORK/ranks.log")"
grep -q "global workers: 2" "$WORK/ranks.log" || fail "expected 2 global workers"
check_run "mpirun -np 2, synchronous" "$WORK/ranks.log"
"$COMPARE_MODELS" "$WORK/synchronous/model.dlm" "$WORK/ranks/model.dlm" 1e-5 ||
  fail "2 ranks x 1 worker differ from 1 process x 2 workers"
echo "ok: 2 MPI ranks train the model of 2 synchronous workers"
