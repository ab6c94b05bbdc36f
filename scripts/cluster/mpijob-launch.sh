#!/usr/bin/env bash
# The launcher of the Kubernetes MPIJob (scripts/cluster/mpijob.yaml): starts one dl-train rank
# per slot of the hostfile the MPI Operator writes, forwarding the environment the ranks need.
#   mpijob-launch.sh [dl-train arguments...]      e.g. --config /etc/dl-train/config.yaml
# -np is the sum of the hostfile's slots, that is Worker replicas x slotsPerWorker: the manifest
# states the job's size once. Environment (defaults for the image of scripts/cluster/Dockerfile):
#   DL_TRAIN          the binary                          (/opt/dl-train/bin/dl-train)
#   DL_TRAIN_RUN_DIR  output.directory, on the shared volume  (/runs/mnist)
#   DL_TRAIN_WORKDIR  the ranks' working directory: relative data paths resolve there (/runs)
#   MPI_HOSTFILE      the hostfile                        (/etc/mpi/hostfile, the operator's)
#   MPIRUN            the mpirun to use                   (mpirun)
# Variables forwarded to every rank with -x when set here: NCCL_* and UCX_* tuning, OMP_*,
# LD_LIBRARY_PATH, PATH, and BACKEND_PRIORITY_*: mpirun starts remote ranks through sshd, whose
# sessions see none of the launcher pod's environment.
set -euo pipefail

dl_train="${DL_TRAIN:-/opt/dl-train/bin/dl-train}"
run_dir="${DL_TRAIN_RUN_DIR:-/runs/mnist}"
workdir="${DL_TRAIN_WORKDIR:-/runs}"
hostfile="${MPI_HOSTFILE:-/etc/mpi/hostfile}"
mpirun="${MPIRUN:-mpirun}"

[[ -r "$hostfile" ]] || {
  echo "mpijob-launch.sh: no hostfile at $hostfile (the MPI Operator mounts it in the launcher" \
    "pod; set MPI_HOSTFILE elsewhere)" >&2
  exit 2
}

# Hostfile lines: "HOST slots=N" (the operator's form), or "HOST" for one slot.
ranks=0
while read -r host rest; do
  [[ -z "$host" || "$host" == \#* ]] && continue
  slots=1
  if [[ "$rest" =~ slots=([0-9]+) ]]; then
    slots=${BASH_REMATCH[1]}
  fi
  ranks=$((ranks + slots))
done <"$hostfile"
((ranks > 0)) || {
  echo "mpijob-launch.sh: $hostfile lists no slots" >&2
  exit 2
}

forward=()
while IFS='=' read -r name _; do
  case "$name" in
    NCCL_* | UCX_* | OMP_* | LD_LIBRARY_PATH | PATH | BACKEND_PRIORITY_*) forward+=(-x "$name") ;;
  esac
done < <(env)

# Every start passes --resume: a restarted launcher continues the run from its newest checkpoint,
# and a start that finds none (the first one, or a restart after a failure before the first
# checkpoint, whose directory already holds the run) starts from the beginning, which dl-train
# says. Passing it only when a checkpoint existed refused such a restart (exit 6) on every retry.
resume=(--resume)

echo "mpijob-launch.sh: $ranks ranks from $hostfile; forwarding ${forward[*]:-nothing};" \
  "run directory $run_dir (resumed when it holds a checkpoint)"
# A rank runs several threads (workers, data loading): no binding to one core each.
exec "$mpirun" -np "$ranks" --hostfile "$hostfile" --bind-to none --map-by slot \
  -wdir "$workdir" "${forward[@]}" \
  "$dl_train" "$@" --set "output.directory=$run_dir" "${resume[@]}"
