#!/bin/sh
# chromium_driver.sh PAGE WORKDIR [SCREENSHOT] -- render an HTML file in
# headless Chromium (Debian package `chromium`) for chromium_spec.lua:
#   WORKDIR/dom.html      the DOM after the page's scripts ran (--dump-dom,
#                         in a 1280x2000 window: the self-check measures
#                         which table headers fall outside it)
#   WORKDIR/chromium.log  Chromium's stderr, console messages included
#                         (--enable-logging=stderr --v=0: "Uncaught ..." lines)
#   SCREENSHOT            a 1280x2000 PNG of the page, when given
# PAGE and SCREENSHOT must be absolute paths.  A fresh profile each time;
# nothing is fetched from the network.  Exit: 127 without chromium, else
# the status of the DOM dump (124 on a 120 s timeout).
set -u
page=$1
work=$2
shot=${3:-}
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
[ -n "$chromium" ] || exit 127
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT INT TERM
set -- --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-extensions --no-first-run --no-default-browser-check \
  --user-data-dir="$profile"
timeout 120 "$chromium" "$@" --window-size=1280,2000 --enable-logging=stderr --v=0 --dump-dom "file://$page" \
  >"$work/dom.html" 2>"$work/chromium.log"
rc=$?
if [ -n "$shot" ]; then
  timeout 120 "$chromium" "$@" --hide-scrollbars --window-size=1280,2000 \
    --screenshot="$shot" "file://$page" >/dev/null 2>>"$work/chromium.log"
fi
exit $rc
