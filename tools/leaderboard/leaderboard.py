#!/usr/bin/env python3
"""The class leaderboard's bookkeeping: which files of a submission are taken, what went
wrong with it, the ranking, the history and the reports. Standard library only; the
building and running is done by scripts/leaderboard.sh, which calls this program.

  leaderboard.py chapters --repo R --submissions S [--chapter chNN ...]
  leaderboard.py plan     --repo R --submissions S --work W --chapter chNN [...]
  leaderboard.py record   --history H --entry DIR [--run-id ID --gpu-name N ...]
  leaderboard.py report   --history H --out DIR [--run-id ID] [--quiet]
  leaderboard.py check-fixture --history H --run-id ID --expect FILE

Names of students come from folder names, which may hold any byte: they are only ever
handled here, as data. The shell sees nothing but the safe ids made by `plan`
([A-Za-z0-9][A-Za-z0-9_-]*-<8 hex digits>).
"""

import argparse
import csv
import datetime
import hashlib
import io
import json
import math
import os
import re
import sys

SCHEMA = 1
MAX_FILE_BYTES = 1 << 20  # a submitted source file larger than this is not taken

# Why a submission is not ranked, most serious first. The first of a submission's reasons
# in this order is the one shown in the table; all are kept in the record.
REASONS = [
    ("missing-files", "missing files"),
    ("build-failed", "did not build"),
    ("hung", "hung (time limit)"),
    ("faulted", "faulted"),
    ("launch-error", "launch error"),
    ("nan", "wrote NaN/Inf"),
    ("wrong", "wrong answers"),
    ("stray-work", "left work running after returning"),
    ("stale-output", "stale output after timing (result reused across calls?)"),
    ("implausible", "implausible numbers (above 100% of the spec roofline)"),
    ("not-implemented", "not implemented"),
    ("skipped", "not tested (tests skipped)"),
    ("no-result", "no result"),
]
REASON_LABEL = dict(REASONS)
REASON_ORDER = {k: i for i, (k, _) in enumerate(REASONS)}

# Things in a submission's source that a teacher may want to read before trusting a rank.
# They are shown as review notes; they never fail a submission on their own.
REVIEW_PATTERNS = [
    (r"\b(secure_)?getenv\b|\benviron\b", "reads the environment"),
    (r"/proc/", "reads /proc"),
    (r"\bfopen\b|\b[io]?fstream\b|\bfreopen\b", "opens files"),
    (r"\bsystem\s*\(|\bpopen\b|\bfork\s*\(|\bexec[lv]p?e?\s*\(|\bposix_spawn", "runs programs"),
    (r"\bdlopen\b|\bdlsym\b", "loads code at run time"),
    (r"constructor\s*\)|gnu::constructor|init_priority|\batexit\b|\bat_quick_exit\b", "runs code before or after main"),
    (r"cudaStreamCreate|cudaStreamPerThread|cudaStreamLegacy|cudaLaunchHostFunc|cudaStreamAddCallback",
     "uses streams or callbacks of its own"),
    (r"std::thread|pthread_create|std::async", "starts threads"),
    (r"^[ \t]+static\s+(?!const\b|constexpr\b|_)", "keeps state between calls (a static variable)"),
]


# --------------------------------------------------------------------------- names ---

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


def chapter_dirs(repo):
    """{'ch01': 'ch01_indexing', ...} for the chapters present in the repository."""
    out = {}
    base = os.path.join(repo, "chapters")
    for name in sorted(os.listdir(base)):
        m = re.match(r"^(ch\d\d)_", name)
        if m and os.path.isdir(os.path.join(base, name)):
            out[m.group(1)] = name
    return out


def stub_names(repo, chapter_dir):
    folder = os.path.join(repo, "chapters", chapter_dir)
    return sorted(n for n in os.listdir(folder) if re.match(r"^ex.*\.cu$", n))


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
    folder = None
    for candidate in (chapter, chapter_dir):
        p = os.path.join(student_path, os.fsencode(candidate))
        if os.path.isdir(p) and not os.path.islink(p):
            folder = p
            break
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


def cmd_chapters(args):
    """Prints the chapters to run: those asked for, or those that any student submitted."""
    chapters = chapter_dirs(args.repo)
    if args.chapter:
        for ch in args.chapter:
            if ch not in chapters:
                print("unknown chapter '%s' (chapters present: %s)" % (ch, " ".join(chapters)), file=sys.stderr)
                return 2
        print(" ".join(args.chapter))
        return 0
    found = set()
    root = os.fsencode(args.submissions)
    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            for ch, full in chapters.items():
                for c in (ch, full):
                    p = os.path.join(entry.path, os.fsencode(c))
                    if os.path.isdir(p) and not os.path.islink(p):
                        found.add(ch)
    print(" ".join(sorted(found)))
    return 0


def cmd_plan(args):
    """Copies the taken files of every (student, chapter) into WORK/entries/<id>/<chNN>/
    and prints one line per entry: id, chapter, 'build' or 'missing', and the student's
    name as printable text (control characters escaped, so no tabs or newlines)."""
    chapters = chapter_dirs(args.repo)
    root = os.fsencode(args.submissions)
    entries = sorted(os.scandir(root), key=lambda e: e.name)
    lines, top_ignored = [], []
    for entry in entries:
        if not entry.is_dir(follow_symlinks=False):
            top_ignored.append(display_name(entry.name))
            continue
        sid = safe_id(entry.name)
        for ch in args.chapter:
            stubs = stub_names(args.repo, chapters[ch])
            taken, ignored, missing = scan_student(entry.path, ch, chapters[ch], stubs)
            dest = os.path.join(args.work, "entries", sid, ch)
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
            lines.append("%s\t%s\t%s\t%s" % (sid, ch, "build" if taken else "missing", meta["student"]))
    for name in top_ignored:
        print("note: ignored %s in the submissions folder (not a folder)" % name, file=sys.stderr)
    print("\n".join(lines))
    return 0


# ----------------------------------------------------------------- classification ---

RUN_RE = re.compile(r"^\[ RUN      \] (\S+)")
# gtest ends a test with "[  FAILED  ] Suite/Test.Name/param, where GetParam() = ... (3 ms)".
END_RE = re.compile(r"^\[(       OK |  FAILED  |  SKIPPED )\] ([^\s,]+)(?:,| \()")
ERROR_LINE_RE = re.compile(r"(?:^|\s)(?:[^\s:]*/)?([^/\s:]+\.(?:cu|cuh|cpp|cc|h|hpp))(?:\((\d+)\)|:(\d+)(?::\d+)?):?\s*"
                           r"(?:fatal )?error[:\s]\s*(.*)$")


def reason(kind, detail=""):
    return {"kind": kind, "label": REASON_LABEL[kind], "detail": detail}


def read_text(path, limit=4 << 20):
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
        return data.decode("utf-8", errors="replace")
    except OSError:
        return None


def first_build_error(log):
    """The first compiler or linker error of a build log, without folder names."""
    for line in log.splitlines():
        m = ERROR_LINE_RE.search(line)
        if m:
            where = m.group(1) + ":" + (m.group(2) or m.group(3) or "?")
            return (where + ": error: " + m.group(4).strip())[:300]
    for line in log.splitlines():
        low = line.lower()
        if "undefined reference" in low or "ld returned" in low or re.search(r"\berror\b", low):
            return re.sub(r"/\S*/", "", line.strip())[:300]
    return ""


def test_blocks(log):
    """The gtest log as [(test, result, text)], result 'OK', 'FAILED', 'SKIPPED' or None (the
    program stopped inside that test)."""
    blocks, current, text = [], None, []
    for line in log.splitlines():
        m = RUN_RE.match(line)
        if m:
            if current:
                blocks.append((current, None, "\n".join(text)))
            current, text = m.group(1), []
            continue
        m = END_RE.match(line)
        if m and current and m.group(2) == current:
            blocks.append((current, m.group(1).strip(), "\n".join(text)))
            current, text = None, []
            continue
        if current:
            text.append(line)
    if current:
        blocks.append((current, None, "\n".join(text)))
    return blocks


def classify_failure_text(text):
    if "[fault]" in text:
        return "faulted"
    if "exception" in text and re.search(r"illegal (memory access|address|instruction)|unspecified launch failure|"
                                         r"misaligned address", text):
        return "faulted"
    if "[launch error]" in text:
        return "launch-error"
    if "[not implemented]" in text:
        return "not-implemented"
    if re.search(r"\d+ NaN/Inf", text):
        return "nan"
    return "wrong"


def timed_out(rc):
    return rc in (124, 137)


def classify_tests(rc, log):
    reasons = []
    blocks = test_blocks(log)
    seen = set()
    for test, result, text in blocks:
        if result == "FAILED":
            kind = classify_failure_text(text)
            if kind not in seen:
                seen.add(kind)
                detail = test
                if kind == "not-implemented":
                    m = re.search(r"write the kernel in (\S+)", text)
                    detail = m.group(1) if m else test
                reasons.append(reason(kind, detail))
        elif result is None:
            if timed_out(rc) or "is still running after" in text:
                reasons.append(reason("hung", test))
            else:
                reasons.append(reason("faulted", "%s (the test program stopped, exit code %s)" % (test, rc)))
    if not reasons:
        if timed_out(rc) or "is still running after" in log:
            reasons.append(reason("hung", "before any test ran"))
        elif rc is not None and (rc >= 128 or rc < 0):
            reasons.append(reason("faulted", "the test program died (exit code %s) before any test ran" % rc))
        elif rc != 0:
            last = [l for l in log.splitlines() if l.strip()][-1:] or ["no output"]
            reasons.append(reason("no-result", "the test program stopped with exit code %s before any test ran: %s"
                                  % (rc, last[0][:200])))
        else:
            ok = sum(1 for _, r, _ in blocks if r == "OK")
            skipped = sum(1 for _, r, _ in blocks if r == "SKIPPED")
            if skipped or ok == 0:
                reasons.append(reason("skipped", "%d passed, %d skipped: is the GPU visible?" % (ok, skipped)))
    return reasons


def classify_bench(rc, log, doc):
    """Reasons and per-shape metrics from the benchmark's JSON (None if it wrote none)."""
    reasons, shapes = [], []
    if doc is None:
        if timed_out(rc) or (log and "is still running after" in log):
            reasons.append(reason("hung", "in the benchmark"))
        elif rc is not None and (rc >= 128 or rc < 0):
            reasons.append(reason("faulted", "the benchmark crashed (exit code %s)" % rc))
        else:
            reasons.append(reason("no-result", "the benchmark wrote no results (exit code %s)" % rc))
        return reasons, shapes
    rows = doc.get("results", []) if isinstance(doc, dict) else []
    rows = [r for r in rows if isinstance(r, dict)]
    refs = {}
    for r in rows:
        us = r.get("median_us")
        if r.get("role") == "reference" and r.get("verdict") == "pass" and isinstance(us, (int, float)) and us > 0:
            refs[(r.get("op"), r.get("shape"))] = us
    seen = set()

    def add(kind, detail):
        if kind not in seen:
            seen.add(kind)
            reasons.append(reason(kind, detail))

    for r in rows:
        if r.get("role") != "student":
            continue
        where = "%s %s [%s]" % (r.get("op"), r.get("shape"), r.get("impl"))
        verdict = r.get("verdict")
        msg = r.get("message") or ""
        if verdict == "pass":
            us = r.get("median_us")
            if isinstance(us, bool) or not isinstance(us, (int, float)) or not us > 0:
                add("no-result", "%s: no valid median time" % where)
                continue
            ref = refs.get((r.get("op"), r.get("shape")))
            shapes.append({
                "op": r.get("op"), "shape": r.get("shape"), "impl": r.get("impl"),
                "student_us": r.get("median_us"), "reference_us": ref,
                "vs_reference": (ref / r["median_us"]) if ref and r.get("median_us") else None,
                "roofline_measured_pct": r.get("roofline_measured_pct"),
                "roofline_spec_pct": r.get("roofline_spec_pct"),
            })
        elif verdict == "implausible":
            add("implausible", "%s: %.0f%% of the spec roofline" % (where, r.get("roofline_spec_pct") or 0))
        elif verdict == "wrong":
            if "left work running" in msg:
                add("stray-work", where)
            elif "after timing" in msg:
                add("stale-output", where)
            elif re.search(r"\d+ NaN/Inf", msg):
                add("nan", where)
            else:
                add("wrong", where)
        elif verdict == "fault":
            add("faulted", where)
        elif verdict == "launch error":
            add("launch-error", where)
        elif verdict == "not implemented":
            add("not-implemented", where)
        else:
            add("no-result", "%s: %s" % (where, verdict))
    if not reasons and not any(s["vs_reference"] for s in shapes):
        reasons.append(reason("no-result", "no shape has a reference time to compare with"))
    if not reasons and timed_out(rc):
        reasons.append(reason("hung", "in the benchmark"))
    return reasons, shapes


def read_steps(entry):
    """steps.tsv: one line per step run: name, exit code, seconds."""
    steps = {}
    text = read_text(os.path.join(entry, "steps.tsv")) or ""
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3:
            try:
                steps[parts[0]] = {"rc": int(parts[1]), "seconds": float(parts[2])}
            except ValueError:
                pass
    return steps


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def classify_entry(entry):
    """Everything known about one (student, chapter) entry folder, as a record (without
    the run's details)."""
    with open(os.path.join(entry, "meta.json")) as f:
        meta = json.load(f)
    steps = read_steps(entry)
    reasons, shapes = [], []
    if meta.get("no_folder") or not meta.get("taken"):
        reasons.append(reason("missing-files", "no %s folder with %s" % (meta["chapter"], ", ".join(meta["missing"]))
                              if meta.get("no_folder") else "none of " + ", ".join(meta["missing"])))
    else:
        if meta.get("missing"):
            reasons.append(reason("missing-files", ", ".join(meta["missing"])))
        build = steps.get("build")
        if build is None:
            reasons.append(reason("no-result", "not built"))
        elif build["rc"] != 0:
            log = read_text(os.path.join(entry, "build.log")) or ""
            detail = "time limit" if timed_out(build["rc"]) else first_build_error(log) or "exit code %d" % build["rc"]
            reasons.append(reason("build-failed", detail))
        else:
            tests = steps.get("tests")
            if tests is None:
                reasons.append(reason("no-result", "not tested"))
            else:
                reasons += classify_tests(tests["rc"], read_text(os.path.join(entry, "tests.log")) or "")
                bench = steps.get("bench")
                if tests["rc"] == 0 and bench is not None:
                    doc = None
                    text = read_text(os.path.join(entry, "bench.json"))
                    if text:
                        try:
                            doc = json.loads(text)
                        except ValueError:
                            doc = None
                    try:
                        r, shapes = classify_bench(bench["rc"], read_text(os.path.join(entry, "bench.log")), doc)
                    except (TypeError, ValueError, AttributeError, KeyError, ZeroDivisionError):
                        r, shapes = [reason("no-result", "the benchmark's results file is malformed")], []
                    reasons += r
                elif tests["rc"] == 0 and not reasons:
                    reasons.append(reason("no-result", "the benchmark did not run"))
    kinds = set()
    unique = []
    for r in sorted(reasons, key=lambda r: REASON_ORDER[r["kind"]]):
        if r["kind"] not in kinds:
            kinds.add(r["kind"])
            unique.append(r)
    ratios = [s["vs_reference"] for s in shapes]
    ranked = not unique and any(ratios)
    return {
        "schema": SCHEMA,
        "chapter": meta["chapter"],
        "student": meta["student"],
        "student_id": meta["student_id"],
        "source_hash": meta.get("source_hash", ""),
        "files": meta.get("taken", []),
        "ignored": meta.get("ignored", []),
        "missing": meta.get("missing", []),
        "review": meta.get("review", []),
        "status": "ranked" if ranked else "not ranked",
        "reasons": unique,
        "score": {
            "geomean_vs_reference": geomean(ratios) if ranked else None,
            "roofline_measured_pct": mean([s["roofline_measured_pct"] for s in shapes]) if ranked else None,
            "roofline_spec_pct": mean([s["roofline_spec_pct"] for s in shapes]) if ranked else None,
            "shapes": len([r for r in ratios if r]),
        },
        "shapes": shapes,
        "steps": steps,
    }


def append_history(path, record):
    """Appends one line to the history, under an exclusive lock: runs on several GPUs write
    at the same time, and nothing already written is ever rewritten."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    line = json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n"
    with open(path, "a", encoding="ascii") as f:
        try:
            import fcntl
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except (ImportError, OSError):
            pass
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


def cmd_record(args):
    rec = classify_entry(args.entry)
    rec.update({
        "run_id": args.run_id,
        "date": args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": {"name": args.gpu_name, "uuid": args.gpu_uuid},
        "sandbox": args.sandbox,
        "commit": args.commit,
        "logs": args.logs,
    })
    if not args.gpu_name:
        text = read_text(os.path.join(args.entry, "bench.json"))
        try:
            rec["gpu"]["name"] = json.loads(text)["device"]["name"] if text else "unknown GPU"
        except (ValueError, KeyError, TypeError):
            rec["gpu"]["name"] = "unknown GPU"
    append_history(args.history, rec)
    r = rec["reasons"][0] if rec["reasons"] else None
    if r:
        print("not ranked: %s%s" % (r["label"], (": " + r["detail"]) if r["detail"] else ""))
    else:
        s = rec["score"]
        print("ranked: %.3fx reference (geometric mean over %d shapes), %.1f%% of the measured roofline"
              % (s["geomean_vs_reference"], s["shapes"], s["roofline_measured_pct"] or 0))
    return 0


# ------------------------------------------------------------------------ reports ---

def load_history(path):
    records, bad = [], 0
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    bad += 1
                    continue
                if isinstance(rec, dict) and rec.get("schema") == SCHEMA:
                    records.append(rec)
                else:
                    bad += 1
    except FileNotFoundError:
        pass
    if bad:
        print("note: %d unreadable line(s) in %s were skipped (left in the file)" % (bad, path), file=sys.stderr)
    return records


def boards(records):
    """{(chapter, gpu name): [latest record per student]}, each list ranked first (best
    first), then the rest by name."""
    latest = {}
    for i, rec in enumerate(records):
        key = (rec["chapter"], rec["gpu"]["name"] or "unknown GPU", rec["student_id"])
        if key not in latest or (rec["date"], i) >= latest[key][0]:
            latest[key] = ((rec["date"], i), rec)
    counts = {}
    for rec in records:
        key = (rec["chapter"], rec["gpu"]["name"] or "unknown GPU", rec["student_id"])
        counts[key] = counts.get(key, 0) + 1
    out = {}
    for (ch, gpu, sid), (_, rec) in latest.items():
        rec = dict(rec)
        rec["runs_seen"] = counts[(ch, gpu, sid)]
        out.setdefault((ch, gpu), []).append(rec)
    for key, recs in out.items():
        ranked = [r for r in recs if r["status"] == "ranked"]
        ranked.sort(key=lambda r: (-r["score"]["geomean_vs_reference"], -(r["score"]["roofline_measured_pct"] or 0),
                                   r["student"]))
        for i, r in enumerate(ranked):
            r["rank"] = i + 1
        rest = sorted((r for r in recs if r["status"] != "ranked"), key=lambda r: r["student"])
        for r in rest:
            r["rank"] = None
        out[key] = ranked + rest
    return dict(sorted(out.items()))


def runs_summary(records):
    runs = {}
    for rec in records:
        r = runs.setdefault(rec["run_id"], {"run_id": rec["run_id"], "date": rec["date"], "entries": 0,
                                            "chapters": set(), "gpus": set(), "sandbox": rec.get("sandbox", "")})
        r["entries"] += 1
        r["date"] = min(r["date"], rec["date"])
        r["chapters"].add(rec["chapter"])
        r["gpus"].add(rec["gpu"]["name"])
    out = []
    for r in sorted(runs.values(), key=lambda r: r["date"]):
        r = dict(r, chapters=sorted(r["chapters"]), gpus=sorted(r["gpus"]))
        out.append(r)
    return out


def fmt(v, digits):
    return "-" if v is None else ("%." + str(digits) + "f") % v


def why(rec):
    if not rec["reasons"]:
        return ""
    r = rec["reasons"][0]
    return r["label"] + (": " + r["detail"] if r["detail"] else "")


def terminal_table(key, recs, width=None):
    ch, gpu = key
    headers = ["rank", "student", "x ref (geomean)", "% roofline (meas)", "shapes", "result"]
    rows = []
    for r in recs:
        s = r["score"]
        name = r["student"] if len(r["student"]) <= 28 else r["student"][:27] + "~"
        if r["rank"]:
            rows.append([str(r["rank"]), name, fmt(s["geomean_vs_reference"], 3), fmt(s["roofline_measured_pct"], 1),
                         str(s["shapes"]), "ranked"])
        else:
            text = why(r)
            rows.append(["-", name, "-", "-", "-", text if len(text) <= 90 else text[:89] + "~"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = io.StringIO()
    out.write("%s on %s\n" % (ch, gpu))
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out.write(line.rstrip() + "\n" + "-" * len(line.rstrip()) + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    notes = [(r["student"], r["review"]) for r in recs if r.get("review")]
    for student, review in notes:
        out.write("  review %s: %s\n" % (student, "; ".join(review)))
    return out.getvalue()


def md_cell(text):
    text = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def markdown(all_boards, runs, history_path):
    out = io.StringIO()
    out.write("# Class leaderboard\n\n")
    out.write("Generated %s from `%s` (%d runs). Ranked by the geometric mean, over the benchmark shapes, "
              "of reference time / submission time (higher is faster); the mean %% of the measured roofline "
              "is shown beside it. Each student's latest result per chapter and GPU is shown. "
              "See docs/leaderboard.md.\n\n"
              % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 os.path.basename(history_path), len(runs)))
    for (ch, gpu), recs in all_boards.items():
        out.write("## %s on %s\n\n" % (md_cell(ch), md_cell(gpu)))
        ranked = [r for r in recs if r["rank"]]
        if ranked:
            out.write("| rank | student | x reference (geomean) | % of roofline (measured, mean) | shapes | run | review |\n")
            out.write("| ---: | --- | ---: | ---: | ---: | --- | --- |\n")
            for r in ranked:
                s = r["score"]
                out.write("| %d | %s | %s | %s | %d | %s | %s |\n" % (
                    r["rank"], md_cell(r["student"]), fmt(s["geomean_vs_reference"], 3),
                    fmt(s["roofline_measured_pct"], 1), s["shapes"], md_cell(r["run_id"]),
                    md_cell("; ".join(r.get("review", [])))))
            out.write("\n")
        rest = [r for r in recs if not r["rank"]]
        if rest:
            out.write("Not ranked:\n\n| student | reason | detail | also | run |\n| --- | --- | --- | --- | --- |\n")
            for r in rest:
                first = r["reasons"][0] if r["reasons"] else {"label": "", "detail": ""}
                also = ", ".join(x["label"] for x in r["reasons"][1:])
                out.write("| %s | %s | %s | %s | %s |\n" % (md_cell(r["student"]), md_cell(first["label"]),
                                                           md_cell(first["detail"]), md_cell(also), md_cell(r["run_id"])))
            out.write("\n")
        ignored = [(r["student"], r["ignored"]) for r in recs if r.get("ignored")]
        if ignored:
            out.write("Files not taken: " + "; ".join("%s: %s" % (md_cell(s), md_cell(", ".join(i)))
                                                     for s, i in ignored) + "\n\n")
    out.write("## Runs\n\n| run | date | entries | chapters | GPUs | sandbox |\n| --- | --- | ---: | --- | --- | --- |\n")
    for r in runs:
        out.write("| %s | %s | %d | %s | %s | %s |\n" % (md_cell(r["run_id"]), r["date"], r["entries"],
                                                      " ".join(r["chapters"]), md_cell(", ".join(r["gpus"])),
                                                      md_cell(r["sandbox"])))
    return out.getvalue()


def csv_safe(v):
    """Spreadsheets run cells that start with = + - @ as formulas: quote those as text."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def csv_text(all_boards):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["chapter", "gpu", "rank", "student", "student_id", "status", "geomean_vs_reference",
                "roofline_measured_pct", "roofline_spec_pct", "shapes", "reason", "detail", "review", "run_id",
                "date", "source_hash"])
    for (ch, gpu), recs in all_boards.items():
        for r in recs:
            s = r["score"]
            first = r["reasons"][0] if r["reasons"] else {"kind": "", "detail": ""}
            w.writerow([csv_safe(x) for x in [
                ch, gpu, r["rank"] or "", r["student"], r["student_id"], r["status"],
                fmt(s["geomean_vs_reference"], 4) if s["geomean_vs_reference"] else "",
                fmt(s["roofline_measured_pct"], 2) if s["roofline_measured_pct"] is not None else "",
                fmt(s["roofline_spec_pct"], 2) if s["roofline_spec_pct"] is not None else "",
                s["shapes"], first["kind"], first["detail"], "; ".join(r.get("review", [])), r["run_id"], r["date"],
                r.get("source_hash", "")]])
    return out.getvalue()


def json_doc(all_boards, runs, history_path):
    doc = {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "history": os.path.basename(history_path), "metric": "geometric mean of reference time / student time",
           "boards": [], "runs": runs}
    for (ch, gpu), recs in all_boards.items():
        doc["boards"].append({
            "chapter": ch, "gpu": gpu,
            "ranked": [{k: r.get(k) for k in ("rank", "student", "student_id", "score", "shapes", "run_id", "date",
                                              "source_hash", "review", "runs_seen")} for r in recs if r["rank"]],
            "not_ranked": [{k: r.get(k) for k in ("student", "student_id", "reasons", "run_id", "date",
                                                  "source_hash", "review", "ignored", "missing", "runs_seen")}
                           for r in recs if not r["rank"]],
        })
    return doc


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def cmd_report(args):
    records = load_history(args.history)
    os.makedirs(args.out, exist_ok=True)
    all_boards = boards(records)
    runs = runs_summary(records)
    write_atomic(os.path.join(args.out, "leaderboard.md"), markdown(all_boards, runs, args.history))
    write_atomic(os.path.join(args.out, "leaderboard.csv"), csv_text(all_boards))
    write_atomic(os.path.join(args.out, "leaderboard.json"), json.dumps(json_doc(all_boards, runs, args.history),
                                                                        indent=1, ensure_ascii=False) + "\n")
    if not args.quiet:
        shown = all_boards
        if args.run_id:
            touched = {(r["chapter"], r["gpu"]["name"]) for r in records if r["run_id"] == args.run_id}
            shown = {k: v for k, v in all_boards.items() if k in touched}
        for key, recs in shown.items():
            print(terminal_table(key, recs))
        print("%d result(s) from %d run(s) in %s; reports: %s/leaderboard.{md,csv,json}"
              % (len(records), len(runs), args.history, args.out))
    return 0


# ----------------------------------------------------------------- fixture check ---

def cmd_check_fixture(args):
    """Compares one run of the fixture class with the expected outcome; exit 1 on a miss."""
    with open(args.expect) as f:
        expect = json.load(f)
    records = [r for r in load_history(args.history) if r["run_id"] == args.run_id]
    problems = []
    for ch, want in expect.items():
        recs = {r["student"]: r for r in records if r["chapter"] == ch}
        if not recs:
            problems.append("%s: no results in run %s" % (ch, args.run_id))
            continue
        gpus = {r["gpu"]["name"] for r in recs.values()}
        for student in want.get("ranked", []):
            r = recs.get(student)
            if r is None:
                problems.append("%s: '%s' has no result" % (ch, student))
            elif r["status"] != "ranked":
                problems.append("%s: '%s' should be ranked, but: %s" % (ch, student, why(r)))
        for before, after in want.get("faster_than", []):
            a, b = recs.get(before), recs.get(after)
            if a and b and a["status"] == b["status"] == "ranked":
                ga, gb = a["score"]["geomean_vs_reference"], b["score"]["geomean_vs_reference"]
                if not ga > gb:
                    problems.append("%s: '%s' (%.3fx) should rank above '%s' (%.3fx)" % (ch, before, ga, after, gb))
        for student, kinds in want.get("reasons", {}).items():
            kinds = [kinds] if isinstance(kinds, str) else kinds
            r = recs.get(student)
            if r is None:
                problems.append("%s: '%s' has no result" % (ch, student))
            elif r["status"] == "ranked":
                problems.append("%s: '%s' was ranked; expected: %s" % (ch, student, " or ".join(kinds)))
            elif r["reasons"][0]["kind"] not in kinds:
                problems.append("%s: '%s' is listed as '%s'; expected: %s" % (ch, student, why(r), " or ".join(kinds)))
            else:
                print("ok   %s %-24s %s" % (ch, student, why(r)))
        order = sorted((r for r in recs.values() if r["status"] == "ranked"),
                       key=lambda r: -r["score"]["geomean_vs_reference"])
        for i, r in enumerate(order):
            if r["student"] in want.get("ranked", []):
                print("ok   %s %-24s ranked %d: %.3fx reference" % (ch, r["student"], i + 1,
                                                                  r["score"]["geomean_vs_reference"]))
        print("     %s ran on: %s" % (ch, ", ".join(sorted(gpus))))
    for p in problems:
        print("MISS " + p)
    print("fixture class: %s" % ("as expected" if not problems else "%d unexpected result(s)" % len(problems)))
    return 0 if not problems else 1


# ---------------------------------------------------------------------------- main ---

def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chapters")
    c.add_argument("--repo", required=True)
    c.add_argument("--submissions", required=True)
    c.add_argument("--chapter", action="append", default=[])
    c = sub.add_parser("plan")
    c.add_argument("--repo", required=True)
    c.add_argument("--submissions", required=True)
    c.add_argument("--work", required=True)
    c.add_argument("--chapter", action="append", required=True)
    c = sub.add_parser("record")
    c.add_argument("--history", required=True)
    c.add_argument("--entry", required=True)
    c.add_argument("--run-id", default="")
    c.add_argument("--date", default="")
    c.add_argument("--gpu-name", default="")
    c.add_argument("--gpu-uuid", default="")
    c.add_argument("--sandbox", default="")
    c.add_argument("--commit", default="")
    c.add_argument("--logs", default="")
    c = sub.add_parser("report")
    c.add_argument("--history", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--run-id", default="")
    c.add_argument("--quiet", action="store_true")
    c = sub.add_parser("check-fixture")
    c.add_argument("--history", required=True)
    c.add_argument("--run-id", required=True)
    c.add_argument("--expect", required=True)
    args = p.parse_args(argv)
    return {"chapters": cmd_chapters, "plan": cmd_plan, "record": cmd_record, "report": cmd_report,
            "check-fixture": cmd_check_fixture}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
