#!/usr/bin/env bash
# report.html in a real browser: headless Chromium renders the page of a two-epoch run to a PNG,
# which must be the page's size and mostly drawn (charts, tables), not blank. Skipped (77)
# without Chromium (Debian: chromium). REPORT_PNG=FILE keeps the screenshot.
source "$(dirname "$0")/lib.sh"
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "skip: no chromium"; exit 77; }
make_data "$WORK/data" 600 100
mapfile -t args < <(small_args "$WORK/data" "$WORK/run" epochs=3 output.scoreEveryIterations=2)
"$DL_TRAIN" "${args[@]}" >/dev/null
png=${REPORT_PNG:-$WORK/report.png}
# --no-sandbox: the test may run as root (a container), where Chromium's sandbox will not start.
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$WORK/profile" --window-size=1280,2000 --screenshot="$png" \
  "file://$WORK/run/report.html" >"$WORK/chromium.log" 2>&1 ||
  fail "chromium failed: $(tail -5 "$WORK/chromium.log")"
[ -s "$png" ] || fail "no screenshot: $(tail -5 "$WORK/chromium.log")"
read -r width height drawn colours < <("${PYTHON3:-/usr/bin/python3}" \
  "$DL_SOURCE_DIR/tests/report/png_stats.py" "$png")
[ "$width" = 1280 ] && [ "$height" = 2000 ] || fail "screenshot is ${width}x$height"
# Text, axes, lines and the heat map cover a few percent of a white page; a blank one has none.
"${PYTHON3:-/usr/bin/python3}" -c "import sys; sys.exit(0 if $drawn > 0.02 and $colours >= 8 else 1)" ||
  fail "the screenshot looks blank: $drawn of the pixels drawn, $colours colours"
echo "ok: report rendered by $("$CHROMIUM" --version 2>/dev/null | head -1): ${width}x$height, $drawn drawn, $colours colours"
