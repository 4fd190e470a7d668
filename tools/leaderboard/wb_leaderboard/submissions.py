"""A class's submissions folder: one folder per student, inside it one folder per chapter
(chNN or the chapter's full folder name) holding the student's versions of the chapter's
exercise files. Which files are taken (the stubs' names only: no headers, links, folders or
files over 1 MiB), the safe id each student gets, the review notes on what a source does, and
the plan: each (student, chapter) entry's files copied into the work folder.

Names of students come from folder names, which may hold any byte: they are only ever handled
here, as data. Everything else sees the safe ids ([A-Za-z0-9][A-Za-z0-9_-]*-<8 hex digits>).
"""

import hashlib
import json
import os
import re

from .chapters import chapter_dirs, stub_names

MAX_FILE_BYTES = 1 << 20  # a submitted source file larger than this is not taken

# Things in a submission's source that a teacher may want to read before trusting a rank.
# They are shown as review notes; they never fail a submission on their own.
REVIEW_PATTERNS = [
    (r"\b(secure_)?getenv\b|\benviron\b", "reads the environment"),
    (r"/proc/", "reads /proc"),
    (r"\bfopen\b|\b[io]?fstream\b|\bfreopen\b|\bopen(at)?\s*\(|\bdup[23]?\s*\(", "opens files"),
    (r"\bsystem\s*\(|\bpopen\b|\bfork\s*\(|\bexec[lv]p?e?\s*\(|\bposix_spawn", "runs programs"),
    (r"\bdlopen\b|\bdlsym\b", "loads code at run time"),
    (r"constructor\s*\)|destructor\s*\)|gnu::constructor|gnu::destructor|init_priority|\batexit\b|\bat_quick_exit\b",
     "runs code before or after main"),
    (r"~\s*\w+\s*\(\s*\)", "defines a destructor (code that can run after main)"),
    (r"cudaStreamCreate|cudaStreamPerThread|cudaStreamLegacy|cudaLaunchHostFunc|cudaStreamAddCallback",
     "uses streams or callbacks of its own"),
    (r"std::thread|pthread_create|std::async", "starts threads"),
    (r"^[ \t]+static\s+(?!const\b|constexpr\b|_)", "keeps state between calls (a static variable)"),
    (r"\brun_seed\b|\bseed_hint\b|\brng_for\b", "calls the harness's seed functions"),
    (r"^\s*namespace\s+wb\b|\bwb::\w+\s*\([^)]*\)\s*\{", "puts code in the harness's namespace (wb)"),
    (r"^\s*#\s*include\s*(\"(/|[^\"]*\.\./)|<\s*/|[^\s\"<])", "includes a file by path or macro"),
]


def display_name(raw):
    """A folder name (bytes) as printable text: invalid UTF-8 and control characters are
    shown as \\xNN escapes."""
    text = raw.decode("utf-8", errors="backslashreplace")
    return "".join(c if (c >= " " and c != "\x7f") else "\\x%02x" % ord(c) for c in text)


def safe_id(raw):
    """A path- and shell-safe id for a folder name (bytes), unique per name."""
    text = raw.decode("utf-8", errors="replace")
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", text)
    slug = re.sub(r"_+", "_", slug).lstrip("-_")[:40].rstrip("-_")
    if not slug:
        slug = "student"
    return "%s-%s" % (slug, hashlib.sha1(raw).hexdigest()[:8])


SAFE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*-[0-9a-f]{8}$")


def review_notes(texts):
    notes = []
    for pattern, note in REVIEW_PATTERNS:
        rx = re.compile(pattern, re.MULTILINE)
        if any(rx.search(t) for t in texts):
            notes.append(note)
    return notes


def scan_student(student_path, chapter, chapter_dir, stubs):
    """What one student's folder holds for one chapter: the files taken (name -> bytes),
    the things ignored (printable descriptions) and the stubs missing."""
    taken, ignored = {}, []
    folder = chapter_folder(student_path, chapter, chapter_dir)
    if folder is None:
        return None, [], list(stubs)
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name = entry.name  # bytes, since folder is bytes
        shown = display_name(name)
        if entry.is_symlink():
            ignored.append(shown + " (a symbolic link)")
        elif entry.is_dir():
            ignored.append(shown + "/ (a folder)")
        elif not entry.is_file():
            ignored.append(shown + " (not a regular file)")
        elif shown not in stubs or name != os.fsencode(shown):
            ignored.append(shown + " (not one of " + ", ".join(stubs) + ")")
        elif entry.stat().st_size > MAX_FILE_BYTES:
            ignored.append(shown + " (larger than %d bytes)" % MAX_FILE_BYTES)
        else:
            with open(entry.path, "rb") as f:
                taken[shown] = f.read()
    missing = [s for s in stubs if s not in taken]
    return taken, ignored, missing


def chapter_folder(student_path, chapter, chapter_dir):
    """The student's folder for a chapter (bytes), or None: chNN or the full folder name, a real
    folder (not a symbolic link)."""
    for candidate in (chapter, chapter_dir):
        p = os.path.join(student_path, os.fsencode(candidate))
        if os.path.isdir(p) and not os.path.islink(p):
            return p
    return None


def submitted_chapters(repo, submissions):
    """The chapters (sorted) that some student has a folder for."""
    chapters = chapter_dirs(repo)
    found = set()
    for entry in os.scandir(os.fsencode(submissions)):
        if entry.is_dir(follow_symlinks=False):
            for ch, full in chapters.items():
                if chapter_folder(entry.path, ch, full) is not None:
                    found.add(ch)
    return sorted(found)


def plan(repo, submissions, work, wanted):
    """Copies the taken files of every (student, chapter) into WORK/entries/<id>/<chNN>/ (with
    the entry's meta.json) and returns the entries, in the order of the students' folder
    names, each {"id", "chapter", "state": "build" or "missing", "student"}; and the names of
    the things in the submissions folder that are not folders (ignored)."""
    chapters = chapter_dirs(repo)
    entries, top_ignored = [], []
    for entry in sorted(os.scandir(os.fsencode(submissions)), key=lambda e: e.name):
        if not entry.is_dir(follow_symlinks=False):
            top_ignored.append(display_name(entry.name))
            continue
        sid = safe_id(entry.name)
        for ch in wanted:
            stubs = stub_names(repo, chapters[ch])
            taken, ignored, missing = scan_student(entry.path, ch, chapters[ch], stubs)
            dest = os.path.join(work, "entries", sid, ch)
            os.makedirs(os.path.join(dest, "submission"), exist_ok=True)
            h = hashlib.sha256()
            for name in sorted(taken or {}):
                h.update(name.encode() + b"\0" + taken[name] + b"\0")
                with open(os.path.join(dest, "submission", name), "wb") as f:
                    f.write(taken[name])
            texts = [v.decode("utf-8", errors="replace") for v in (taken or {}).values()]
            meta = {
                "student": display_name(entry.name),
                "student_id": sid,
                "chapter": ch,
                "chapter_dir": chapters[ch],
                "taken": sorted(taken or {}),
                "ignored": ignored,
                "missing": missing,
                "no_folder": taken is None,
                "source_hash": h.hexdigest()[:16] if taken else "",
                "review": review_notes(texts),
            }
            with open(os.path.join(dest, "meta.json"), "w") as f:
                json.dump(meta, f, indent=1)
            entries.append({"id": sid, "chapter": ch, "state": "build" if taken else "missing",
                            "student": meta["student"]})
    return entries, top_ignored
