#!/usr/bin/env bash
# Looks at the built book in a real browser: serves build/book on localhost and takes a
# screenshot of each page with headless Chromium, so that a layout problem (a table that
# overflows, a hint that shows its answer, a picture that does not load) is seen, not
# guessed. Build the book first (scripts/docs.sh).
#
# usage: scripts/docs-screenshots.sh [--out DIR] [--size WxH] [PAGE ...]
#   PAGE      a page of the book, e.g. ch01-indexing.html or glossary.html#warp
#             (default: the index, every chapter page, tools and the glossary)
#   --out     where the PNGs go (default: build/book-screenshots)
#   --size    window size (default: 1280x1600)
#
# Needs chromium (Debian/Ubuntu package `chromium`) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/book-screenshots size=1280x1600 pages=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --out) out=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    -*) echo "docs-screenshots.sh: unknown option '$1'" >&2; exit 2 ;;
    *) pages+=("$1"); shift ;;
  esac
done
[[ $size =~ ^[0-9]+x[0-9]+$ ]] || { echo "docs-screenshots.sh: --size is WxH, e.g. 1280x1600" >&2; exit 2; }
[ -f build/book/index.html ] || { echo "docs-screenshots.sh: no book in build/book; run scripts/docs.sh first" >&2; exit 1; }
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "docs-screenshots.sh: chromium not found (apt-get install chromium)" >&2; exit 1; }
if [ ${#pages[@]} = 0 ]; then
  pages=(index.html)
  for f in build/book/ch[0-9][0-9]-*.html build/book/tools.html build/book/glossary.html; do
    [ -f "$f" ] && pages+=("${f#build/book/}")
  done
fi
mkdir -p "$out"

# A local server on a free port, stopped on exit.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$port" --bind 127.0.0.1 --directory build/book >/dev/null 2>&1 &
server=$!
profile=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT
for _ in $(seq 50); do
  python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/index.html')" 2>/dev/null && break
  sleep 0.1
done

for page in "${pages[@]}"; do
  name=${page/.html/}
  name=${name//[^A-Za-z0-9._-]/_}
  png="$out/$name.png"
  "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --hide-scrollbars --virtual-time-budget=5000 --window-size="${size/x/,}" \
    --screenshot="$png" "http://127.0.0.1:$port/$page" >/dev/null 2>&1 ||
    { echo "docs-screenshots.sh: chromium failed on $page" >&2; exit 1; }
  echo "$png  <- $page"
done
