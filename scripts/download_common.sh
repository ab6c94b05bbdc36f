# Shared by the data download scripts (fetch_mnist.sh, fetch_cifar10.sh); sourced, not run.
# The caller sets connect_timeout_s, max_time_s and retries.

# download URL OUT: prints the tool's error on failure.
download() {
  if command -v curl >/dev/null 2>&1; then
    curl --fail --silent --show-error --location --connect-timeout "${connect_timeout_s}" \
      --max-time "${max_time_s}" --retry "${retries}" --output "$2" "$1" 2>&1
  elif command -v wget >/dev/null 2>&1; then
    wget --quiet --timeout="${connect_timeout_s}" --tries="$((retries + 1))" --output-document="$2" \
      "$1" 2>&1
  else
    echo "neither curl nor wget is installed"
    return 1
  fi
}

# fetch_to URL OUT: downloads; on failure prints "URL: <the tool's last error line>" and returns 1
# (with retries the tool repeats its error: the last line is enough).
fetch_to() {
  local err
  if err="$(download "$1" "$2")"; then
    return 0
  fi
  err="${err##*$'\n'}"
  echo "$1: ${err:-download failed}"
  return 1
}
