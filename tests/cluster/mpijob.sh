#!/usr/bin/env bash
# scripts/cluster/mpijob.yaml against the MPIJob v2beta1 schema and dl-train's rules
# (check_mpijob.py), broken copies of it refused, and its launcher script: -np from the
# hostfile, NCCL_DEBUG forwarded, --resume once a checkpoint exists, and a real 2-rank run.
source "$DL_SOURCE_DIR/tests/cli/lib.sh"
cluster="$DL_SOURCE_DIR/scripts/cluster"
if ! python3 -c 'import jsonschema, yaml' 2>/dev/null; then
  echo "SKIP: python3-jsonschema or python3-yaml missing (apt-get install python3-jsonschema python3-yaml)"
  exit 77
fi
# The manifest and broken copies of it, each refused with its reason (one Python process makes
# the copies, one checks all).
python3 - "$cluster/mpijob.yaml" "$WORK" <<'PY'
import copy, sys, yaml
job = yaml.safe_load(open(sys.argv[1]))
def broken(name, edit):
    j = copy.deepcopy(job)
    w = j["spec"]["mpiReplicaSpecs"]["Worker"]
    l = j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    edit(j, w, l)
    yaml.safe_dump(j, open(f"{sys.argv[2]}/{name}.yaml", "w"))
broken("misspelt", lambda j, w, l: w.update(replica=w.pop("replicas")))
broken("gpus", lambda j, w, l: w["template"]["spec"]["containers"][0]["resources"]["limits"]
       .update({"nvidia.com/gpu": 4}))
broken("nccl", lambda j, w, l: l.update(env=[e for e in l["env"] if e["name"] != "NCCL_DEBUG"]))
broken("np", lambda j, w, l: l.update(command=["mpirun"], args=["-np", "16"]))
broken("policy", lambda j, w, l: j["spec"]["runPolicy"].update(cleanPodPolicy="Sometimes"))
PY
paths=("$cluster/mpijob.yaml")
for name in misspelt gpus nccl np policy; do paths+=("$WORK/$name.yaml"); done
if python3 "$cluster/check_mpijob.py" "${paths[@]}" >"$WORK/checks.txt"; then
  fail "broken manifests were accepted: $(cat "$WORK/checks.txt")"
fi
cat "$WORK/checks.txt"
grep -qF "$cluster/mpijob.yaml: valid MPIJob v2beta1; 16 ranks" "$WORK/checks.txt" ||
  fail "the shipped manifest is not a valid 16-rank MPIJob"
expect_problem() {
  grep -F "$WORK/$1.yaml: " "$WORK/checks.txt" | grep -qF "$2" ||
    fail "$1: expected '$2' in: $(cat "$WORK/checks.txt")"
}
expect_problem misspelt "Additional properties are not allowed ('replica' was unexpected)"
expect_problem gpus "one rank per GPU"
expect_problem nccl "NCCL_DEBUG is not set in the launcher"
expect_problem np "passes -np itself"
expect_problem policy "is not one of"

# The launcher script with a recording mpirun: the operator's hostfile of 2 pods x 8 slots.
printf 'dl-train-mnist-worker-0.dl-train-mnist slots=8\ndl-train-mnist-worker-1.dl-train-mnist slots=8\n' >"$WORK/hostfile"
cat >"$WORK/record-mpirun" <<'REC'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$RECORD"
REC
chmod +x "$WORK/record-mpirun"
launch() {
  env RECORD="$WORK/mpirun.txt" MPIRUN="$WORK/record-mpirun" MPI_HOSTFILE="$WORK/hostfile" \
    DL_TRAIN_RUN_DIR="$WORK/k8s-run" NCCL_DEBUG=WARN bash "$cluster/mpijob-launch.sh" \
    --config /etc/dl-train/config.yaml >/dev/null
}
launch
line=$(tail -n 1 "$WORK/mpirun.txt")
[[ "$line" == "-np 16 "* ]] || fail "-np is not 16 from the hostfile: $line"
[[ "$line" == *"-x NCCL_DEBUG"* ]] || fail "NCCL_DEBUG is not forwarded: $line"
# --resume on every start: dl-train resumes from a checkpoint when there is one, else starts from
# the beginning (also in a directory a failed start left without a checkpoint).
[[ "$line" == *"--resume" ]] || fail "no --resume on the first start: $line"
mkdir -p "$WORK/k8s-run/checkpoints" && touch "$WORK/k8s-run/checkpoints/checkpoint-e0-i3.dlck"
launch
[[ "$(tail -n 1 "$WORK/mpirun.txt")" == *"--resume" ]] || fail "no --resume with a checkpoint"

# A real run of the launcher script on this machine: a hostfile of one host with 2 slots.
make_data "$WORK/data" 600 100
echo "localhost slots=2" >"$WORK/local-hostfile"
mapfile -t args < <(small_args "$WORK/data" "$WORK/unused")
kv=()
if [ "$(id -u)" = 0 ]; then kv=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1); fi
if [ "${MPI_BUILT:-0}" = 1 ] && command -v mpirun >/dev/null; then
  env "${kv[@]}" OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader \
    OMPI_MCA_btl_vader_single_copy_mechanism=none MPI_HOSTFILE="$WORK/local-hostfile" \
    DL_TRAIN="$DL_TRAIN" DL_TRAIN_RUN_DIR="$WORK/local-run" DL_TRAIN_WORKDIR="$WORK" \
    NCCL_DEBUG=WARN bash "$cluster/mpijob-launch.sh" "${args[@]}" >"$WORK/local.log" 2>&1 ||
    fail "the launcher script's 2-rank run failed: $(tail -5 "$WORK/local.log")"
  grep -q "global workers: 2" "$WORK/local.log" || fail "not 2 ranks: $(head "$WORK/local.log")"
  [ -f "$WORK/local-run/model.dlm" ] || fail "no model in the run directory"
  echo "ok: the launcher script ran 2 ranks on this machine"
  # A restart after a failure before the first checkpoint: the directory holds the run (its
  # marker and first rows) but no checkpoint. It must train again from the beginning, not be
  # refused as a directory that holds a run (exit 6) on every retry.
  cp "$WORK/local-run/scores.csv" "$WORK/uninterrupted-scores.csv"
  rm -r "$WORK/local-run/checkpoints" "$WORK/local-run/model.dlm"
  env "${kv[@]}" OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader \
    OMPI_MCA_btl_vader_single_copy_mechanism=none MPI_HOSTFILE="$WORK/local-hostfile" \
    DL_TRAIN="$DL_TRAIN" DL_TRAIN_RUN_DIR="$WORK/local-run" DL_TRAIN_WORKDIR="$WORK" \
    NCCL_DEBUG=WARN bash "$cluster/mpijob-launch.sh" "${args[@]}" >"$WORK/restart.log" 2>&1 ||
    fail "the restart before the first checkpoint failed: $(tail -3 "$WORK/restart.log")"
  grep -q "no checkpoint in .* yet; starting from the beginning" "$WORK/restart.log" ||
    fail "the restart did not start from the beginning: $(grep resume "$WORK/restart.log")"
  cmp "$WORK/uninterrupted-scores.csv" "$WORK/local-run/scores.csv" ||
    fail "the restarted run's scores.csv differs from the first run's"
  echo "ok: a restart before the first checkpoint trains from the beginning"
else
  echo "note: no MPI build or mpirun: the launcher script's real run is not tried"
fi
echo "ok: manifest valid, broken copies refused, -np and the environment derived"
