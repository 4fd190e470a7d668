"""Writing so that a reader sees all of a file or folder or none of it: everything is written
under a temporary name next to its place and renamed at the end, so a run that stops half-way
(an interrupt, a full disk, a node that dies) leaves no half-written report, record or log
folder behind.
"""

import json
import os
import shutil


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
