"""The repository as a run sees it: where it is, its commit, the top-level items a build copies
(never the history, the build folders, the tests, the book or a folder of the run's own), and a
new run's id.
"""

import os
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SKIPPED_ITEMS = ("build", "results", "tests", "docs", "site", "Testing")  # never copied into a build


class Refused(Exception):
    """What the command line names cannot be used, or the run cannot start: what is wrong and
    how to fix it (exit code 1)."""


def inside(path, folder):
    """Whether `path` is `folder` or lies in it (both resolved)."""
    return (os.path.realpath(path) + os.sep).startswith(os.path.realpath(folder) + os.sep)


def copied_items(repo):
    """The top-level folders and files of the repository that a build copies."""
    return [
        item for item in sorted(os.listdir(repo)) if item not in SKIPPED_ITEMS and not item.startswith(("build-", "."))
    ]


def source_items(repo, keep_out):
    """The items a build copies, without any that holds a folder of `keep_out` (the submissions,
    the output or the shared folder, were they put in the repository)."""
    return [
        item
        for item in copied_items(repo)
        if not (
            os.path.isdir(os.path.join(repo, item)) and any(p and inside(p, os.path.join(repo, item)) for p in keep_out)
        )
    ]


def sources_guard(repo, paths):
    """Refuses a submissions, output or shared folder inside a folder of sources: it would either
    be copied into every build, or leave the build without that folder."""
    for item in copied_items(repo):
        folder = os.path.join(repo, item)
        for p in paths:
            if p and os.path.isdir(folder) and inside(p, folder):
                raise Refused(
                    "'%s' is inside the repository's %s/, which every build copies: put it elsewhere"
                    % (os.path.realpath(p), item)
                )


def commit_of(repo):
    try:
        p = subprocess.run(["git", "-C", repo, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    except OSError:
        return "unknown"
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else "unknown"


def new_run_id():
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(2).hex()
