#!/usr/bin/env python3
"""Compares the classes made from base/ and changes.py with the hand-kept class folders of an
earlier commit (tests/leaderboard/fixture-class/ and hostile-class/, as git holds them), file by
file: the same students, chapters and file names, and the same bytes in every file.

  tests/leaderboard/classes/compare.py REV      e.g. 6a8c4950de3a, the last commit with those folders

Prints one line per class and a line per difference; exit code 0 when every file is identical.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tools", "leaderboard"))

from wb_leaderboard import classes  # noqa: E402


def git(*args):
    return subprocess.run(["git", "-C", REPO] + list(args), capture_output=True, check=True).stdout


def original_files(rev, klass):
    """{path inside the class folder: bytes} of the class folder at commit rev."""
    root = "tests/leaderboard/%s-class/" % klass
    out = {}
    for line in git("ls-tree", "-r", "-z", rev, root).split(b"\0"):
        if not line:
            continue
        meta, path = line.split(b"\t", 1)
        mode, kind, _ = meta.split(b" ")
        path = path.decode()
        if kind != b"blob" or mode not in (b"100644", b"100755"):
            raise SystemExit("compare: %s at %s is not a plain file (%s)" % (path, rev, mode.decode()))
        out[path[len(root) :]] = git("show", "%s:%s" % (rev, path))
    return out


def made_files(klass, folder):
    """{path inside the class folder: bytes} of the class as the package makes it."""
    dest = classes.make_class(klass, os.path.join(folder, klass))
    out = {}
    for dirpath, _, names in os.walk(dest):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, dest)] = f.read()
    return out


def main(argv):
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rev = argv[0]
    differences = 0
    with tempfile.TemporaryDirectory() as tmp:
        for klass in ("fixture", "hostile"):
            old, new = original_files(rev, klass), made_files(klass, tmp)
            if not old:
                print("compare: %s holds no tests/leaderboard/%s-class/" % (rev, klass), file=sys.stderr)
                return 2
            for path in sorted(set(old) | set(new)):
                if path not in new:
                    print("  %s: %s is not made" % (klass, path))
                elif path not in old:
                    print("  %s: %s is made but was not there" % (klass, path))
                elif old[path] != new[path]:
                    print("  %s: %s differs" % (klass, path))
                else:
                    continue
                differences += 1
            same = sum(1 for p in old if new.get(p) == old[p])
            print(
                "%s class: %d of %d files identical to %s (%d students)"
                % (klass, same, len(old), rev, len({p.split(os.sep)[0] for p in old}))
            )
    print("every file identical" if not differences else "%d difference(s)" % differences)
    return 0 if not differences else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
