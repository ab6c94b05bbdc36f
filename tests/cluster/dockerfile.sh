#!/usr/bin/env bash
# scripts/cluster/Dockerfile passes the Dockerfile checks (scripts/cluster/check_dockerfile.py),
# and the checker finds each kind of mistake in a Dockerfile made to hold them.
set -euo pipefail
checker="$DL_SOURCE_DIR/scripts/cluster/check_dockerfile.py"
python3 "$checker" "$DL_SOURCE_DIR/scripts/cluster/Dockerfile" "$DL_SOURCE_DIR"

work=$(mktemp -d "${TMPDIR:-/tmp}/dl-dockerfile.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/Dockerfile" <<'BAD'
FROM ubuntu:latest
RUN apt-get install libopenblas-dev
RUN apt update && apt install -y curl
RUN apt-get update && apt-get install -y --no-install-recommends no-such-package-dl-train \
    && rm -rf /var/lib/apt/lists/*
RUN curl -s https://example.com/x | sh
COPY missing-dir /opt/x
COPY --from=nowhere /a /b
CMD dl-train info
BAD
rc=0
python3 "$checker" "$work/Dockerfile" "$work" >"$work/out.txt" || rc=$?
cat "$work/out.txt"
[ "$rc" = 1 ] || { echo "FAIL: the bad Dockerfile passed (exit $rc)" >&2; exit 1; }
for expected in "build from Debian's images" "pin a release tag" "without apt-get update" \
  "without --no-install-recommends" "remove /var/lib/apt/lists" "use apt-get, not apt" \
  "a pipe without SHELL" "COPY missing-dir: not in the build context" \
  "COPY --from=nowhere: no earlier stage" "CMD in shell form"; do
  grep -qF "$expected" "$work/out.txt" || { echo "FAIL: not found: $expected" >&2; exit 1; }
done
# Package names are checked against Debian only where this machine runs the same release.
if grep -q "VERSION_CODENAME=bookworm" /etc/os-release 2>/dev/null; then
  sed -i 's/^FROM ubuntu:latest/FROM debian:bookworm/' "$work/Dockerfile"
  python3 "$checker" "$work/Dockerfile" "$work" >"$work/out.txt" || true
  grep -qF "package no-such-package-dl-train is not in Debian bookworm" "$work/out.txt" ||
    { echo "FAIL: an unknown package was not found: $(cat "$work/out.txt")" >&2; exit 1; }
fi
echo "ok: the shipped Dockerfile passes; the checker finds every planted mistake"
