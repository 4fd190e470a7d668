"""Writing so that a reader sees all of a file or folder or none of it: everything is written
under a temporary name next to its place and renamed at the end, so a run that stops half-way
(an interrupt, a full disk, a node that dies) leaves no half-written report, record or log
folder behind. Also the reading of a folder of files back, and of a table kept as a Python
literal.
"""

import ast
import json
import os
import shutil
import sys


def temporary_name(path):
    """A name next to `path` that no other writer uses (this process's id)."""
    folder, name = os.path.split(os.path.abspath(path))
    return os.path.join(folder, ".%s.tmp.%d" % (name, os.getpid()))


def write_text(path, text):
    tmp = temporary_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write_json(path, doc):
    """JSON through a temporary file, flushed to disk before the rename (on a shared file
    system, a job that dies mid-write leaves only the temporary)."""
    tmp = temporary_name(path)
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def publish_folder(path, fill):
    """Makes the folder `path` (which must not exist yet) by calling fill(tmp) on a temporary
    folder and renaming it into place; on any error the temporary folder is removed."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = temporary_name(path)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        fill(tmp)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def publish_files(path, files):
    """Makes the folder `path` (which must not exist yet) holding `files`, {(folder, ..., name):
    text}, whole or not at all (publish_folder)."""

    def fill(tmp):
        for parts, text in sorted(files.items()):
            os.makedirs(os.path.join(tmp, *parts[:-1]), exist_ok=True)
            with open(os.path.join(tmp, *parts), "w", encoding="utf-8", newline="") as f:
                f.write(text)

    publish_folder(path, fill)
    return path


def read_files(folder):
    """{file name: text} of the files in `folder`, read as they are (no newline translation)."""
    files = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), encoding="utf-8", newline="") as f:
            files[name] = f.read()
    return files


def read_literal(path):
    """A table kept as a Python literal (a dict), read as data, never run."""
    with open(path, encoding="utf-8") as f:
        return ast.literal_eval(f.read())


def new_folder_main(prog, usage, nargs, argv, make, problems):
    """The command line of a module that makes one new folder, the last of its `nargs`
    arguments: `make(*argv)`. Returns the exit status: 2 for a wrong line (printing `usage`),
    1 when the folder exists already or making it raises one of `problems` (exception types)."""
    if len(argv) != nargs or argv[0].startswith("-"):
        print("usage: python3 -m wb_leaderboard.%s %s" % (prog, usage), file=sys.stderr)
        return 2
    if os.path.exists(argv[-1]):
        print("%s: '%s' exists already: give a folder that does not exist yet" % (prog, argv[-1]), file=sys.stderr)
        return 1
    try:
        make(*argv)
    except problems as e:
        print("%s: %s" % (prog, e), file=sys.stderr)
        return 1
    return 0
