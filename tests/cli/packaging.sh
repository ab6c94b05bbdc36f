#!/usr/bin/env bash
# What `meson install` ships: into a scratch DESTDIR, the binary, the man page (when help2man was
# found), bash completion, the configs, the docs and LICENSE; the completion completes
# subcommands, options and config files; the man page names every subcommand.
source "$(dirname "$0")/lib.sh"
: "${BUILD_ROOT:?BUILD_ROOT must name the build directory}"
meson install -C "$BUILD_ROOT" --no-rebuild --destdir "$WORK/dest" >"$WORK/install.log" 2>&1 ||
  fail "meson install failed: $(tail -5 "$WORK/install.log")"
prefix=$(find "$WORK/dest" -path '*/bin/dl-train' | head -1)
[ -n "$prefix" ] || fail "no bin/dl-train installed"
root=$(dirname "$(dirname "$prefix")")
for f in share/bash-completion/completions/dl-train share/dl-train/configs/mnist.yaml \
  share/doc/dl-train/LICENSE share/doc/dl-train/OUTPUTS.md share/doc/dl-train/CONFIG.md; do
  [ -s "$root/$f" ] || fail "not installed: $f"
done
"$prefix" --version | head -1 | grep -qE '^dl-train [0-9.]+$' || fail "installed binary --version"
if command -v help2man >/dev/null; then
  man=$root/share/man/man1/dl-train.1
  [ -s "$man" ] || fail "no man page installed"
  for command in train validate eval inspect info report predict export; do
    grep -qw -- "$command" "$man" || fail "man page lacks $command"
  done
fi
complete_words() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _dl_train
    printf "%s\n" "${COMPREPLY[@]}"' _ "$root/share/bash-completion/completions/dl-train" "$@"
}
complete_words dl-train rep | grep -qx report || fail "completion of 'rep'"
complete_words dl-train eval --j | grep -qx -- --json || fail "completion of eval --j"
(cd "$root/share/dl-train" && complete_words dl-train --config configs/mn) |
  grep -qx configs/mnist.yaml || fail "completion of a config file"
echo "ok: installed $(find "$WORK/dest" -type f | wc -l) files under $root"
