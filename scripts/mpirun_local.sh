#!/usr/bin/env bash
# mpirun for several ranks on this one machine (development, tests, CI containers):
#   scripts/mpirun_local.sh -np 2 build/dl-train --config configs/mnist.yaml
# The arguments go to mpirun after the flags below. With Open MPI they are:
#   --oversubscribe   more ranks than cores is allowed (CI machines have two)
#   --bind-to none    Open MPI binds each rank to one core when there are 2 or fewer ranks, but a
#                     dl-train rank runs several worker and BLAS threads
#   --mca btl self,vader  (Open MPI 5 renamed vader to sm)
#                     shared memory only: all ranks are on this machine, so no network
#                     interfaces are probed (containers may have none, or odd ones)
#   --mca btl_vader_single_copy_mechanism none
#                     large messages go through the shared-memory segment rather than
#                     cross-process reads (CMA), which containers often forbid
#   --allow-run-as-root
#                     only when running as root, as CI containers do
# Other MPIs get the arguments unchanged. Clusters do not use this: see docs/DISTRIBUTED.md.
set -euo pipefail

if ! command -v mpirun >/dev/null; then
  echo "mpirun_local.sh: mpirun not found; install Open MPI (Debian: openmpi-bin)" >&2
  exit 127
fi

readonly kFirstOpenMpiWithSm=5

flags=()
version_line="$(mpirun --version 2>&1 | head -n 1)"
if [[ "$version_line" =~ Open\ MPI\)?\ ([0-9]+)\. ]]; then
  shared_memory_btl=vader
  if ((BASH_REMATCH[1] >= kFirstOpenMpiWithSm)); then
    shared_memory_btl=sm
  fi
  flags+=(--oversubscribe --bind-to none --mca btl "self,$shared_memory_btl"
    --mca "btl_${shared_memory_btl}_single_copy_mechanism" none)
  if [[ "$(id -u)" -eq 0 ]]; then
    flags+=(--allow-run-as-root)
  fi
fi
exec mpirun "${flags[@]}" "$@"
