#!/usr/bin/env bash
# Checks the built book (scripts/docs.sh builds it into build/book) as a learner opens it:
#  - every link, image, stylesheet and script of every page leads to a file of the book, and
#    every #anchor to an element of its page (links to other sites are counted, not followed:
#    the check needs no network);
#  - in headless Chromium, every page's images load, and the search box answers a query on
#    build/book/index.html opened from disk (file://) and on the book served over http.
# The work is done by scripts/lib/book_check.py, with Selenium driving Chromium.
#
# usage: scripts/check-book.sh [--query WORD] [--book DIR]
#   --query   the word typed into the search box (default: warp)
#   --book    the built book (default: build/book)
# exit:  0 all good; 1 something is broken (each named); 77 skipped: Chromium is not installed
#        and could not be installed here (not root, no sudo, or no apt-get): the links were
#        still checked, search and images were not.
#
# Needs chromium, chromium-driver and python3-selenium (Debian/Ubuntu; scripts/install-deps.sh
# installs them). When they are missing, the script installs them if it can.
set -euo pipefail
cd "$(dirname "$0")/.."

query=warp book=build/book
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --query) [ $# -ge 2 ] || { echo "check-book: --query needs a word" >&2; exit 2; }; query=$2; shift 2 ;;
    --query=*) query=${1#*=}; shift ;;
    --book) [ $# -ge 2 ] || { echo "check-book: --book needs a folder" >&2; exit 2; }; book=$2; shift 2 ;;
    --book=*) book=${1#*=}; shift ;;
    *) echo "check-book: unknown argument '$1'; see check-book.sh --help" >&2; exit 2 ;;
  esac
done
[ -f "$book/index.html" ] || { echo "check-book: no $book/index.html; build the book first: scripts/docs.sh" >&2; exit 1; }

# The browser, its driver, and a Python that can import Selenium (Debian's python3-selenium
# is seen by /usr/bin/python3, which may not be the first python3 on PATH).
find_tools() {
  chromium=$(command -v chromium || command -v chromium-browser || true)
  chromedriver=$(command -v chromedriver || true)
  python=""
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import selenium' 2>/dev/null; then python=$p; break; fi
  done
}
missing() {
  local m=()
  [ -n "$chromium" ] || m+=(chromium)
  [ -n "$chromedriver" ] || m+=(chromium-driver)
  [ -n "$python" ] || m+=(python3-selenium)
  echo "${m[*]}"
}

find_tools
if [ -n "$(missing)" ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  if command -v apt-get >/dev/null 2>&1 && { [ -z "$sudo" ] || sudo -n true 2>/dev/null; }; then
    echo "check-book: installing $(missing)"
    # shellcheck disable=SC2046  # one package name per word
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
        --no-install-recommends $(missing) >/dev/null; } || echo "check-book: the installation failed" >&2
    find_tools
  fi
fi

if [ -z "$chromium" ]; then
  # Without a browser, the links are still checked (the standard library is enough).
  py=$(command -v python3 || echo /usr/bin/python3)
  "$py" scripts/lib/book_check.py --links-only "$book"
  echo "check-book: SKIPPED the search and image checks: Chromium is not installed and could not be" >&2
  echo "            installed here (that needs apt-get and root or sudo). To run them:" >&2
  echo "            sudo apt-get install chromium chromium-driver python3-selenium" >&2
  exit 77
fi
if [ -n "$(missing)" ]; then
  echo "check-book: Chromium is here but $(missing) is not, and could not be installed;" >&2
  echo "            sudo apt-get install $(missing)" >&2
  exit 1
fi

exec "$python" scripts/lib/book_check.py --query "$query" --chromium "$chromium" --chromedriver "$chromedriver" "$book"
