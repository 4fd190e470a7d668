#!/usr/bin/env bash
# Builds the workbook's pages (docs/) into a browsable book with MkDocs and the Material
# theme, warnings as errors: a link to a page that does not exist fails the build, and so
# does a link to a heading that does not exist (scripts/check-doc-links.sh checks those,
# and the exercise files' "Guide:" lines, first).
#
# usage: scripts/docs.sh              build into build/book (open build/book/index.html)
#        scripts/docs.sh --serve      serve the pages on http://127.0.0.1:8000, rebuilt on
#                                     every save (--addr HOST:PORT to pick another address)
#
# Needs the Debian/Ubuntu packages mkdocs and mkdocs-material (scripts/install-deps.sh).
# The search box works from disk too (scripts/lib/book_search_index.py, mkdocs.yml's hooks);
# scripts/check-book.sh then checks the built book's links, images and search in a browser.
set -euo pipefail
cd "$(dirname "$0")/.."

serve=0 addr=127.0.0.1:8000
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --serve) serve=1; shift ;;
    --addr) [ $# -ge 2 ] || { echo "docs.sh: --addr needs HOST:PORT" >&2; exit 2; }; addr=$2; shift 2 ;;
    --addr=*) addr=${1#*=}; shift ;;
    *) echo "docs.sh: unknown argument '$1'; see docs.sh --help" >&2; exit 2 ;;
  esac
done

if ! command -v mkdocs >/dev/null 2>&1; then
  echo "docs.sh: mkdocs is not installed; on Debian/Ubuntu: apt-get install mkdocs mkdocs-material" >&2
  echo "         (scripts/install-deps.sh installs them)" >&2
  exit 1
fi

if [ "$serve" = 1 ]; then
  # While you edit, a broken link is reported but does not stop the server.
  scripts/check-doc-links.sh || echo "docs.sh: serving anyway; scripts/docs.sh (the build) fails until they are fixed" >&2
  PYTHONWARNINGS=ignore::DeprecationWarning exec mkdocs serve --strict --config-file mkdocs.yml --dev-addr "$addr"
fi
scripts/check-doc-links.sh
PYTHONWARNINGS=ignore::DeprecationWarning mkdocs build --strict --clean --config-file mkdocs.yml --site-dir build/book
echo "docs.sh: the book is in build/book ($(find build/book -name '*.html' | wc -l) HTML files); open build/book/index.html"
