#!/usr/bin/env bash
# Fetches bubblewrap for a GPU machine that does not have it installed: downloads the
# Debian/Ubuntu package of this machine's release into .bwrap/ (ignored by git) and unpacks it
# there, so that the folder can be carried to the GPU machine with the repository.
#
# usage: scripts/fetch-bwrap.sh            download and unpack into .bwrap/
#        scripts/fetch-bwrap.sh --unpack   only unpack .bwrap/*.deb (on the GPU machine)
#
# Then, on the GPU machine:
#   scripts/fetch-bwrap.sh --unpack          (if .bwrap/usr/bin/bwrap is not there yet)
#   scripts/leaderboard.sh --bwrap .bwrap/usr/bin/bwrap --hostile
# The unpacked bwrap runs as an ordinary program; it needs unprivileged user namespaces (or
# root). scripts/leaderboard.sh checks that it can start a sandbox and refuses to rank if not.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
dest="$here/.bwrap"
mkdir -p "$dest"
# The folder ignores itself, so nothing in it is ever committed.
[ -f "$dest/.gitignore" ] || printf '*\n' > "$dest/.gitignore"

if [ "${1:-}" != "--unpack" ]; then
  command -v apt-get > /dev/null 2>&1 || { echo "fetch-bwrap: needs apt-get (Debian/Ubuntu)" >&2; exit 1; }
  rm -f "$dest"/bubblewrap_*.deb
  (cd "$dest" && apt-get download bubblewrap) ||
    { echo "fetch-bwrap: 'apt-get download bubblewrap' failed (try: sudo apt-get update)" >&2; exit 1; }
fi

deb=$(ls "$dest"/bubblewrap_*.deb 2> /dev/null | head -1)
[ -n "$deb" ] || { echo "fetch-bwrap: no bubblewrap_*.deb in $dest: run scripts/fetch-bwrap.sh first" >&2; exit 1; }
command -v dpkg-deb > /dev/null 2>&1 || { echo "fetch-bwrap: needs dpkg-deb to unpack $deb" >&2; exit 1; }
dpkg-deb -x "$deb" "$dest"
bwrap="$dest/usr/bin/bwrap"
[ -x "$bwrap" ] || { echo "fetch-bwrap: $deb holds no usr/bin/bwrap" >&2; exit 1; }
echo "fetch-bwrap: $(basename "$deb") unpacked: $bwrap"
if "$bwrap" --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp true 2> /dev/null; then
  echo "fetch-bwrap: it starts a sandbox on this machine"
else
  echo "fetch-bwrap: it cannot start a sandbox on this machine (user namespaces off?); on the GPU machine," \
       "scripts/leaderboard.sh checks again"
fi
echo "use: scripts/leaderboard.sh --bwrap .bwrap/usr/bin/bwrap ..."
