#!/usr/bin/env bash
# scripts/cluster/Dockerfile passes the Dockerfile checks (scripts/cluster/check_dockerfile.py),
# and the checker finds each kind of mistake in Dockerfiles made to hold them (one checker run for
# all: it reads the Debian archive's package names once).
set -euo pipefail
checker="$DL_SOURCE_DIR/scripts/cluster/check_dockerfile.py"
shipped="$DL_SOURCE_DIR/scripts/cluster/Dockerfile"
work=$(mktemp -d "${TMPDIR:-/tmp}/dl-dockerfile.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/other" "$work/debian"
cat >"$work/other/Dockerfile" <<'BAD'
FROM ubuntu:latest
RUN apt-get install libopenblas-dev
RUN apt update && apt install -y curl
RUN curl -s https://example.com/x | sh
COPY missing-dir /opt/x
COPY --from=nowhere /a /b
CMD dl-train info
BAD
# Package names are checked against Debian only where this machine runs the same release.
release=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null || true)
cat >"$work/debian/Dockerfile" <<BAD
FROM debian:${release:-bookworm}
RUN apt-get update && apt-get install -y --no-install-recommends no-such-package-dl-train \
    && rm -rf /var/lib/apt/lists/*
BAD
rc=0
python3 "$checker" "$shipped" "$DL_SOURCE_DIR" "$work/other/Dockerfile" "$work/other" \
  "$work/debian/Dockerfile" "$work/debian" >"$work/out.txt" || rc=$?
cat "$work/out.txt"
[ "$rc" = 1 ] || { echo "FAIL: the bad Dockerfiles passed (exit $rc)" >&2; exit 1; }
grep -qF "check_dockerfile.py: $shipped: 0 problem(s)" "$work/out.txt" ||
  { echo "FAIL: the shipped Dockerfile has problems" >&2; exit 1; }
for expected in "build from Debian's images" "pin a release tag" "without apt-get update" \
  "without --no-install-recommends" "remove /var/lib/apt/lists" "use apt-get, not apt" \
  "a pipe without SHELL" "COPY missing-dir: not in the build context" \
  "COPY --from=nowhere: no earlier stage" "CMD in shell form"; do
  grep -F "$work/other/Dockerfile:" "$work/out.txt" | grep -qF "$expected" ||
    { echo "FAIL: not found: $expected" >&2; exit 1; }
done
if grep -q "^ID=debian" /etc/os-release 2>/dev/null && command -v apt-cache >/dev/null; then
  grep -qF "package no-such-package-dl-train is not in Debian $release" "$work/out.txt" ||
    { echo "FAIL: an unknown Debian package was not found" >&2; exit 1; }
fi
echo "ok: the shipped Dockerfile passes; the checker finds every planted mistake"
