#!/usr/bin/env python3
"""Checks an MPIJob manifest before a cluster sees it: against the MPIJob schema
(mpijob.schema.json beside this file, written from the MPI Operator's v2beta1 CRD), then the
rules that make dl-train's job work as written:

  - the launcher runs mpijob-launch.sh, which derives -np from the operator's hostfile
    (Worker replicas x slotsPerWorker), and passes no -np of its own;
  - one rank per GPU: a worker pod's nvidia.com/gpu limit equals slotsPerWorker;
  - the launcher sets NCCL_DEBUG (mpijob-launch.sh forwards NCCL_* to the ranks; a value set only
    in the worker pods never reaches them, since mpirun starts ranks through sshd);
  - every volumeMount names a volume of its pod, and the --config file is on a mounted volume of
    the worker pods, where the ranks run;
  - launcher and workers run the same image, with a tag.

Usage: check_mpijob.py MANIFEST.yaml...  prints each job's size, or one line per problem, each
line starting with the file's name; exit 1 when any file has a problem
"""
import json
import os
import sys

import yaml

try:
    import jsonschema
except ImportError:  # Debian: python3-jsonschema
    jsonschema = None

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpijob.schema.json")
LAUNCH_SCRIPT = "mpijob-launch.sh"


def pod(job, role):
    return job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]


def rules(job):
    problems = []
    slots = job["spec"].get("slotsPerWorker", 1)
    workers = job["spec"]["mpiReplicaSpecs"]["Worker"].get("replicas", 1)
    launcher = pod(job, "Launcher")["containers"][0]
    command = launcher.get("command", []) + launcher.get("args", [])
    if not command or not command[0].endswith(LAUNCH_SCRIPT):
        problems.append(f"the launcher runs {command[:1]}, not {LAUNCH_SCRIPT}: -np would not "
                        "follow replicas x slotsPerWorker")
    if "-np" in command or "-n" in command:
        problems.append("the launcher passes -np itself: leave it to the hostfile")
    env = {e["name"]: e.get("value") for e in launcher.get("env", [])}
    if not env.get("NCCL_DEBUG"):
        problems.append("NCCL_DEBUG is not set in the launcher, which forwards it to the ranks")
    images = set()
    for role in ("Launcher", "Worker"):
        spec = pod(job, role)
        volumes = {v["name"] for v in spec.get("volumes", [])}
        for container in spec["containers"]:
            images.add(container.get("image", ""))
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    problems.append(f"{role} mounts volume {mount['name']}, which its pod lacks")
    worker = pod(job, "Worker")["containers"][0]
    gpus = int(worker.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
    if gpus != slots:
        problems.append(f"a worker pod has {gpus} GPU(s) but {slots} slots: one rank per GPU "
                        "needs nvidia.com/gpu equal to slotsPerWorker")
    if "--config" in command:
        config = command[command.index("--config") + 1]
        mounts = [m["mountPath"] for m in worker.get("volumeMounts", [])]
        if not any(config.startswith(m.rstrip("/") + "/") for m in mounts):
            problems.append(f"--config {config} is on no volume mounted in the worker pods")
    if len(images) != 1 or any(":" not in i or i.endswith(":latest") for i in images):
        problems.append(f"launcher and workers should run one tagged image, not {sorted(images)}")
    return problems, workers * slots


def check(path, validator):
    """The problems of one manifest; prints its size when it has none."""
    with open(path) as f:
        job = yaml.safe_load(f)
    errors = sorted(validator.iter_errors(job), key=lambda e: list(e.path))
    problems = [f"{'.'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message}"
                for e in errors]
    if not problems:
        problems, ranks = rules(job)
    for p in problems:
        print(f"{path}: {p}")
    if not problems:
        print(f"{path}: valid MPIJob v2beta1; {ranks} ranks (Worker replicas x slotsPerWorker)")
    return not problems


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    if jsonschema is None:
        print("check_mpijob.py: python3-jsonschema is not installed (apt-get install "
              "python3-jsonschema)", file=sys.stderr)
        return 77
    with open(SCHEMA) as f:
        validator = jsonschema.Draft7Validator(json.load(f))
    results = [check(path, validator) for path in sys.argv[1:]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
