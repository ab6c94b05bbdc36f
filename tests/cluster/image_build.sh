#!/usr/bin/env bash
# Builds the image of scripts/cluster/Dockerfile where a container engine runs, and checks that
# its dl-train starts (`dl-train info`). Skipped (exit 77), saying so, where none does.
set -euo pipefail
engine=""
for candidate in docker podman; do
  if command -v "$candidate" >/dev/null && "$candidate" info >/dev/null 2>&1; then
    engine=$candidate
    break
  fi
done
if [ -z "$engine" ]; then
  echo "SKIP: no container engine runs here (docker info and podman info fail or are missing);" \
    "the Dockerfile is linted by cluster_dockerfile instead"
  exit 77
fi
tag="dl-train-test:$$"
"$engine" build -f "$DL_SOURCE_DIR/scripts/cluster/Dockerfile" -t "$tag" "$DL_SOURCE_DIR"
"$engine" run --rm "$tag" dl-train info | tee /dev/stderr | grep -q "cuda: built"
"$engine" rmi "$tag" >/dev/null
echo "ok: image built with $engine; dl-train info runs in it"
