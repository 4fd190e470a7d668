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
    (
        r"constructor\s*\)|destructor\s*\)|gnu::constructor|gnu::destructor|init_priority|\batexit\b|\bat_quick_exit\b",
        "runs code before or after main",
    ),
    (r"~\s*\w+\s*\(\s*\)", "defines a destructor (code that can run after main)"),
    (
        r"cudaStreamCreate|cudaStreamPerThread|cudaStreamLegacy|cudaLaunchHostFunc|cudaStreamAddCallback",
        "uses streams or callbacks of its own",
    ),
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
            entries.append(
                {"id": sid, "chapter": ch, "state": "build" if taken else "missing", "student": meta["student"]}
            )
    return entries, top_ignored


CHAPTERISH_RE = re.compile(r"^(?:ch|chapter)[ _-]?0*([0-9]{1,2})(?:[_ -].*)?$", re.IGNORECASE)


def layout(repo, submissions, wanted):
    """What a class folder holds for the chapters wanted, read without copying anything:
    {"students": [(name, {chapter: (taken, ignored, missing, review) or None})], "checks":
    [what looks like a mistake, and how to fix it], "entries": the number of (student, chapter)
    with files to build, "empty": why nothing can be built (when nothing can)}."""
    dirs = chapter_dirs(repo)
    all_stubs = {name: ch for ch, d in dirs.items() for name in stub_names(repo, d)}
    students, checks, entries = [], [], 0
    for entry in sorted(os.scandir(os.fsencode(submissions)), key=lambda e: e.name):
        shown = display_name(entry.name)
        if entry.is_symlink() or not entry.is_dir():
            checks.append("%s: not a folder, ignored (the class folder holds one folder per student)" % shown)
            continue
        per_chapter = {}
        for ch in wanted:
            stubs = stub_names(repo, dirs[ch])
            taken, ignored, missing = scan_student(entry.path, ch, dirs[ch], stubs)
            if taken is None:
                per_chapter[ch] = None
                continue
            texts = [v.decode("utf-8", errors="replace") for v in taken.values()]
            per_chapter[ch] = (sorted(taken), ignored, missing, review_notes(texts))
            entries += bool(taken)
            names = [i.split(" (")[0] for i in ignored]
            if not taken and any(n.endswith(".cu") for n in names):
                checks.append(
                    "%s/%s: none of its files (%s) is named as one of the chapter's: name them as the "
                    "stubs in chapters/%s/ (%s)" % (shown, ch, ", ".join(names), dirs[ch], ", ".join(stubs))
                )
        students.append((shown, per_chapter))
        for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
            name = display_name(inner.name)
            m = CHAPTERISH_RE.match(name)
            if inner.is_file() and name in all_stubs:
                checks.append(
                    "%s/%s: a chapter's file directly in the student's folder: move it to %s/%s/"
                    % (shown, name, shown, all_stubs[name])
                )
            elif inner.is_dir() and m and not re.match(r"^ch[0-9][0-9](_|$)", name):
                ch = "ch%02d" % int(m.group(1))
                checks.append(
                    "%s/%s/: not a chapter folder: %s"
                    % (
                        shown,
                        name,
                        "rename it %s (or %s)" % (ch, dirs[ch])
                        if ch in dirs
                        else "there is no chapter %s (chapters: %s)" % (ch, " ".join(sorted(dirs))),
                    )
                )
    empty = ""
    if not students:
        empty = (
            "no student folders in '%s': put one folder per student in it, each with a chNN folder of that "
            'chapter\'s files (docs/leaderboard.md, "Submission layout")' % submissions
        )
    elif not entries:
        empty = (
            "no student folder holds the files of %s: each student needs a chNN folder with files named as the "
            'chapter\'s stubs (docs/leaderboard.md, "Submission layout")'
            % ("chapter " + ", ".join(wanted) if wanted else "a chapter that can be ranked")
        )
    return {"students": students, "checks": checks, "entries": entries, "empty": empty}


def print_layout(found, submissions, wanted, full=False):
    """The things to check in a class folder (always), and with `full` what every student
    submitted: per chapter the files taken, missing and not taken, and the review notes."""
    if full:
        print(
            "class folder %s: %d student folder(s); chapters %s"
            % (submissions, len(found["students"]), " ".join(wanted) or "(none)")
        )
        for name, per_chapter in found["students"]:
            parts, absent = [], [ch for ch, what in per_chapter.items() if what is None]
            for ch, what in per_chapter.items():
                if what is not None:
                    taken, ignored, missing, review = what
                    part = "%s: %d file(s)" % (ch, len(taken))
                    part += ", missing " + ", ".join(missing) if missing else ""
                    part += ", not taken: " + ", ".join(ignored) if ignored else ""
                    part += ", review: " + "; ".join(review) if review else ""
                    parts.append(part)
            if absent:
                parts.append("no folder for %s (missing files)" % " ".join(absent))
            print("  %-20s %s" % (name, "; ".join(parts) or "nothing"))
        print("%d entr%s to build" % (found["entries"], "y" if found["entries"] == 1 else "ies"))
    for check in found["checks"]:
        print("check: " + check)
