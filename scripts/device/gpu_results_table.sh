#!/usr/bin/env bash
# The tables of scripts/device/gpu_checks.sh's gpu_results.md, from its results.tsv (one row per
# run: framework, run name, images/s, test accuracy, train seconds, exit code or note): every
# run, then dl-train / PyTorch for the train stage's 1-worker LeNet runs (FLOAT against float32,
# HALF against fp16, BFLOAT16 against bf16; eager and torch.compile). Markdown on stdout.
# Tested on any machine by tests/cli/device_results_table.sh.
#
#   scripts/device/gpu_results_table.sh RESULTS_TSV
set -euo pipefail

if (($# != 1)) || [[ ! -f "$1" ]]; then
  echo "usage: $0 RESULTS_TSV (an existing file)" >&2
  exit 2
fi
results_tsv="$1"

echo "| framework | run | images/s | test accuracy | train s | exit / note |"
echo "| --- | --- | ---: | ---: | ---: | --- |"
# images/s whole, seconds to the millisecond: the raw figures carry float noise digits.
awk -F'\t' '{
  ips = ($3 ~ /^[0-9.]+$/) ? sprintf("%.0f", $3) : $3
  secs = ($5 ~ /^[0-9.]+$/) ? sprintf("%.3f", $5) : $5
  printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, ips, $4, secs, $6
}' "$results_tsv"
grep -q '^pytorch' "$results_tsv" || exit 0
echo
# Only the train stage's LeNet runs (train-DTYPE-1w-MODE) are PyTorch's peers: the graphs-*,
# cifar-* and scale-* runs share the -1w- part but train longer, or another network.
awk -F'\t' '
  $1 == "dl-train" && $2 ~ /^train-[A-Z0-9]+-1w-/ { split($2, p, "-"); dl[p[2]] = $3 }
  $1 == "pytorch" { pt[$2] = $3 }
  END {
    peer["FLOAT"] = "float32"; peer["HALF"] = "fp16"; peer["BFLOAT16"] = "bf16"
    print "| dl-train dtype (1 worker) | vs PyTorch eager | vs PyTorch compile |"
    print "| --- | ---: | ---: |"
    split("FLOAT HALF BFLOAT16", order, " ")
    for (i = 1; i <= 3; i++) {
      d = order[i]; e = pt[peer[d] "-eager"]; c = pt[peer[d] "-compile"]
      printf "| %s | %s | %s |\n", d, (dl[d] > 0 && e > 0) ? sprintf("%.2fx", dl[d] / e) : "n/a",
             (dl[d] > 0 && c > 0) ? sprintf("%.2fx", dl[d] / c) : "n/a"
    }
  }' "$results_tsv"
