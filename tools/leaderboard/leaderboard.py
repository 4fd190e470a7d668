#!/usr/bin/env python3
"""The class leaderboard's bookkeeping: which files of a submission are taken, what went
wrong with it, the cross-checks of its numbers, the ranking, the signed history and the
reports. Standard library only; the building and running is done by
scripts/leaderboard.sh, which calls this program.

  leaderboard.py chapters   --repo R --submissions S [--chapter chNN ...]
  leaderboard.py plan       --repo R --submissions S --work W --chapter chNN [...]
  leaderboard.py runner     --repo R --chapter chNN   what to build and run for a chapter
  leaderboard.py ncu-target --entry DIR            the benchmark row to re-measure with ncu (its selection arguments)
  leaderboard.py record     --history H --key K --entry DIR [--trusted FILE --run-id ID ...]
  leaderboard.py report     --history H --key K --out DIR [--run-id ID] [--quiet]
  leaderboard.py check      --history H --key K --run-id ID --expect FILE
  leaderboard.py verify     --history H --key K    every line of the history, checked
  leaderboard.py run-file | add-job | jobs | job-record | collect ...   a run on a Slurm cluster

Names of students come from folder names, which may hold any byte: they are only ever
handled here, as data. The shell sees nothing but the safe ids made by `plan`
([A-Za-z0-9][A-Za-z0-9_-]*-<8 hex digits>).

What a submission's programs report is read as machine-readable data only: the outcome code
of each test (the `outcome` property in GoogleTest's JSON), the outcome code and numbers of
each benchmark row (the benchmark's JSON, schema_version 2), exit codes. The wording of
messages is never read.
"""

import argparse
import csv
import datetime
import hashlib
import hmac
import io
import json
import math
import os
import re
import sys

SCHEMA = 2                # history records written by this version
BENCH_SCHEMA = 2          # benchmark results files accepted from a fresh run
MAX_FILE_BYTES = 1 << 20  # a submitted source file larger than this is not taken

# Why a submission is not ranked, most serious first. The first of a submission's reasons
# in this order is the one shown in the table; all are kept in the record.
REASONS = [
    ("missing-files", "missing files"),
    # A cluster job that did not finish its work (scripts/leaderboard.sh --slurm): the state
    # Slurm gives the job, or what its node wrote in its record.
    ("cancelled", "job cancelled"),
    ("job-timeout", "job time limit"),
    ("node-failed", "node failed"),
    ("node-problem", "node could not run it"),
    ("build-failed", "did not build"),
    ("no-gpu", "no GPU on node"),
    ("hung", "hung (time limit)"),
    ("faulted", "faulted"),
    ("launch-error", "launch error"),
    ("out-of-bounds", "read or wrote out of bounds"),
    ("nan", "wrote NaN/Inf"),
    ("wrong", "wrong answers"),
    ("race", "results differ between runs (race or nondeterminism)"),
    ("stray-work", "left work running after returning"),
    ("stale-output", "stale output after timing (result reused across calls?)"),
    ("implausible", "implausible numbers"),
    ("not-implemented", "not implemented"),
    ("skipped", "not tested (tests skipped)"),
    ("no-result", "no result"),
]
REASON_LABEL = dict(REASONS)
REASON_ORDER = {k: i for i, (k, _) in enumerate(REASONS)}

# The harness's outcome codes (tests and benchmark rows) and the reason each one gives.
# `pass` is the only code that ranks; a code not in this table never ranks either.
OUTCOME_KIND = {
    "pass": None,
    "not_implemented": "not-implemented",
    "compiled_not_run": "skipped",
    "skipped": "skipped",
    "no_engine": "skipped",
    "wrong": "wrong",
    "unwritten": "wrong",
    "nan": "nan",
    "oob_write": "out-of-bounds",
    "oob_read": "out-of-bounds",
    "wrote_padding": "out-of-bounds",
    "fault": "faulted",
    "launch_error": "launch-error",
    "hang": "hung",
    "outside_stream": "stray-work",
    "cached": "stale-output",
    "stale_after_timing": "stale-output",
    "nondeterministic": "race",
    "race": "race",
    "implausible": "implausible",
    "accepted_bad_args": "wrong",  # arguments the op must refuse were accepted
    "pageable": "wrong",  # pageable host memory where pinned memory is required
}

# The cross-checks of a benchmark row (docs/leaderboard.md, "Cross-checks").
CEILING_SLACK = 1.05      # a row may exceed a measured ceiling by this factor, no more
REFERENCE_BAND = (0.75, 1.35)  # the run's reference time / the leaderboard's own, allowed
FIELD_TOLERANCE = 0.02    # a row's derived numbers (GB/s, TFLOP/s, x ref) vs its time and bytes
NCU_MIN_RATIO = 0.5       # reported median / kernel time per call (ncu) below this is rejected
HARNESS_KERNEL_PREFIXES = ("_ZN2wb", "_ZNK2wb", "_ZZN2wb")  # mangled names of the harness's own kernels
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


# ------------------------------------------------------------ a chapter's programs ---
#
# What the leaderboard builds and runs for a chapter. Most chapters need nothing: their
# benchmark is chNN_bench. A chapter whose score comes from another program (chapter 9's
# decoder) says so in a file `leaderboard.json` in its folder, with these keys (each one
# optional; a list of strings each):
#   build     the build targets a submission needs; the first must be chNN_tests
#   prepare   run once per chapter and GPU from the repository's own build, before anything
#             else, to make inputs in {data} (model weights ...)
#   bench     the timed run of a submission; writes its results to {json}
#   baseline  the same run of the repository's own build, by the leaderboard (the numbers
#             every submission's are cross-checked against)
# In the commands, {bin} is the folder of the programs built, {json} where the results go,
# {data} the folder `prepare` wrote (read-only afterwards) and {ch} the chapter (chNN).

RUNNER_KEYS = ("build", "prepare", "bench", "baseline")
RUNNER_FILE = "leaderboard.json"
TARGET_RE = re.compile(r"^[A-Za-z0-9_]+$")
PLACEHOLDER_RE = re.compile(r"\{([a-z]+)\}")


def default_runner(ch):
    return {"build": ["%s_tests" % ch, "%s_bench" % ch], "prepare": [],
            "bench": ["{bin}/%s_bench" % ch, "--impl=student,reference", "--json={json}"],
            "baseline": ["{bin}/%s_bench" % ch, "--impl=reference", "--json={json}"]}


def chapter_runner(repo, ch):
    """The chapter's programs: its folder's leaderboard.json over the defaults. Raises
    ValueError naming the file and what is wrong with it."""
    chapters = chapter_dirs(repo)
    if ch not in chapters:
        raise ValueError("unknown chapter '%s'" % ch)
    runner = default_runner(ch)
    path = os.path.join(repo, "chapters", chapters[ch], RUNNER_FILE)
    if not os.path.exists(path):
        return runner
    where = "chapters/%s/%s" % (chapters[ch], RUNNER_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s: not readable JSON (%s)" % (where, str(e).split(":")[0]))
    if not isinstance(doc, dict):
        raise ValueError("%s: must be a JSON object with the keys %s" % (where, ", ".join(RUNNER_KEYS)))
    for k, v in doc.items():
        if k not in RUNNER_KEYS:
            raise ValueError("%s: unknown key '%s' (known: %s)" % (where, k[:40], ", ".join(RUNNER_KEYS)))
        if not isinstance(v, list) or not all(isinstance(x, str) and x and x.isprintable() and "\t" not in x
                                               for x in v):
            raise ValueError("%s: '%s' must be a list of non-empty printable strings" % (where, k))
        for x in v:
            for name in PLACEHOLDER_RE.findall(x):
                if name not in ("bin", "json", "data", "ch"):
                    raise ValueError("%s: '%s' uses {%s}; known: {bin} {json} {data} {ch}" % (where, k, name))
        runner[k] = [x.replace("{ch}", ch) for x in v]
    if not runner["build"] or runner["build"][0] != "%s_tests" % ch:
        raise ValueError("%s: 'build' must start with %s_tests (the chapter's tests)" % (where, ch))
    for t in runner["build"]:
        if not TARGET_RE.match(t):
            raise ValueError("%s: '%s' is not a build target name" % (where, t[:40]))
    for k in ("prepare", "bench", "baseline"):
        if runner[k] and not runner[k][0].startswith("{bin}/"):
            raise ValueError("%s: '%s' must run a program of the build ({bin}/NAME)" % (where, k))
    for k in ("bench", "baseline"):
        if not runner[k] or not any("{json}" in x for x in runner[k]):
            raise ValueError("%s: '%s' must be a command that writes its results to {json}" % (where, k))
    return runner


def cmd_runner(args):
    """Prints the chapter's programs, one tab-separated line per key (the key first)."""
    try:
        runner = chapter_runner(args.repo, args.chapter)
    except ValueError as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    for k in RUNNER_KEYS:
        print("\t".join([k] + runner[k]))
    return 0


# ----------------------------------------------------------------- classification ---

RUN_RE = re.compile(r"^\[ RUN      \] (\S+)")
# gtest ends a test with "[  FAILED  ] Suite/Test.Name/param, where GetParam() = ... (3 ms)".
END_RE = re.compile(r"^\[(       OK |  FAILED  |  SKIPPED )\] ([^\s,]+)(?:,| \()")
# The harness prints one line per finished test: "[wb-outcome] <code> <test name>".
OUTCOME_LINE_RE = re.compile(r"^\[wb-outcome\] ([a-z_]+) (\S+)\s*$")
SEED_RE = re.compile(r"^kernel-workbook: seed (\d{1,20})\b", re.MULTILINE)
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


def timed_out(rc):
    return rc in (124, 137)


def crash_or_hang(rc):
    """What a program that ended without writing its results died of."""
    return "hung" if timed_out(rc) else "faulted"


def parse_one_document(text):
    """(document, problem): the text must hold exactly one JSON document. A second one, or
    anything after the first, means something wrote to the results stream after the
    harness did: the file is not trusted."""
    if text is None or not text.strip():
        return None, "empty"
    dec = json.JSONDecoder()
    start = len(text) - len(text.lstrip())
    try:
        doc, end = dec.raw_decode(text, start)
    except ValueError as e:
        return None, "not JSON (%s)" % str(e).split(":")[0]
    if text[end:].strip():
        return None, "written to again after the harness finished it (more than one document)"
    return doc, None


def unfinished_test(log):
    """The last test the gtest log started and did not end, or None."""
    current = None
    for line in (log or "").splitlines():
        m = RUN_RE.match(line)
        if m:
            current = m.group(1)
            continue
        m = END_RE.match(line)
        if m and m.group(2) == current:
            current = None
    return current


def gtest_cases(doc):
    """[(full test name, outcome code or None, gtest result)] from GoogleTest's JSON, or
    raises ValueError when the document is not what GoogleTest writes."""
    if not isinstance(doc, dict) or not isinstance(doc.get("testsuites"), list):
        raise ValueError("no 'testsuites' list")
    out = []
    for suite in doc["testsuites"]:
        if not isinstance(suite, dict) or not isinstance(suite.get("testsuite"), list):
            raise ValueError("a test suite without its 'testsuite' list")
        for case in suite["testsuite"]:
            if not isinstance(case, dict) or not isinstance(case.get("name"), str):
                raise ValueError("a test case without a name")
            if case.get("status") == "NOTRUN":  # DISABLED_ tests
                continue
            name = "%s.%s" % (case.get("classname", suite.get("name", "")), case["name"])
            code = case.get("outcome")
            out.append((name, code if isinstance(code, str) else None, case.get("result")))
    return out


def classify_tests(rc, log, json_text):
    """Reasons from the test program: the outcome code of every test in its JSON; without
    a JSON (the program did not finish), the codes it printed and its exit code."""
    reasons, seen = [], set()

    def add(kind, detail):
        if kind not in seen:
            seen.add(kind)
            reasons.append(reason(kind, detail))

    doc, problem = parse_one_document(json_text) if json_text is not None else (None, "missing")
    if doc is not None:
        try:
            cases = gtest_cases(doc)
        except ValueError as e:
            doc, problem = None, "not a GoogleTest results file: %s" % e
    if doc is None and problem and problem.startswith("written to again"):
        add("implausible", "the tests' results file was %s" % problem)
        return reasons
    if doc is None:
        # The program did not finish (gtest writes its JSON at the end): the test it was
        # in has no record, and counts as hung (exit code 124) or crashed.
        for line in (log or "").splitlines():
            m = OUTCOME_LINE_RE.match(line)
            if m and OUTCOME_KIND.get(m.group(1), "no-result"):
                kind = OUTCOME_KIND.get(m.group(1)) or "no-result"
                add(kind, m.group(2) if kind != "no-result" else "%s: unknown outcome code" % m.group(2))
        test = unfinished_test(log)
        kind = crash_or_hang(rc)
        if test:
            add(kind, test if kind == "hung" else "%s (the test program stopped, exit code %s)" % (test, rc))
        elif timed_out(rc):
            add("hung", "before any test ran")
        elif rc is not None and rc != 0:
            add("faulted" if (rc >= 128 or rc < 0) else "no-result",
                "the test program stopped with exit code %s and wrote no results file" % rc)
        else:
            add("no-result", "the test program wrote no usable results file (%s)" % problem)
        return reasons
    for name, code, result in cases:
        if code is None and result == "SKIPPED" and reasons:
            continue  # not run: an earlier case failed, and the run stops at the first failure
        if code is None:
            add("no-result", "%s: the test has no outcome code" % name)
        elif code not in OUTCOME_KIND:
            add("no-result", "%s: unknown outcome code '%s'" % (name, code[:40]))
        elif OUTCOME_KIND[code]:
            add(OUTCOME_KIND[code], name)
    passed = sum(1 for _, code, _ in cases if code == "pass")
    if not reasons:
        if passed == 0:
            add("skipped", "no test ran: is the GPU visible?")
        elif timed_out(rc):
            add("hung", "after the last test")
        elif rc != 0:
            add("no-result", "every test passed but the test program exited with code %s" % rc)
    return reasons


def num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def pos(v):
    v = num(v)
    return v if v is not None and v > 0 else None


COMPUTE_KEYS = {"fp32": "fp32_tflops", "fp16-tensor": "fp16_tflops", "bf16-tensor": "bf16_tflops",
                "int8-tensor": "int8_tops"}


def ceilings_of(doc):
    """(copy GB/s, {peak: compute ceiling}) of a results file: the measured ones, and for
    compute the higher of measured and spec (a kernel may beat a measured GEMM rate, never
    the spec)."""
    meas = doc.get("measured_ceilings") if isinstance(doc.get("measured_ceilings"), dict) else {}
    spec = doc.get("spec_ceilings") if isinstance(doc.get("spec_ceilings"), dict) else {}
    copy = pos(meas.get("copy_gbps")) or pos(meas.get("dram_gbps"))
    compute = {}
    for peak, key in COMPUTE_KEYS.items():
        values = [v for v in (pos(meas.get(key)), pos(spec.get(key))) if v]
        if values:
            compute[peak] = max(values)
    return copy, compute


def legacy_rows(doc):
    """A schema 1 results file (rows with `verdict`) as schema 2 rows; old history only."""
    names = {"pass": "pass", "implausible": "implausible", "wrong": "wrong", "fault": "fault",
             "launch error": "launch_error", "not implemented": "not_implemented"}
    rows = []
    for r in doc.get("results", []):
        if isinstance(r, dict):
            r = dict(r)
            r["outcome"] = names.get(r.pop("verdict", None), "unknown")
            rows.append(r)
    return rows


def check_row(r, trusted_row, copy_gbps, compute):
    """Why a student row's numbers cannot be right, or None."""
    us, nbytes, flops = pos(r.get("median_us")), pos(r.get("bytes")), pos(r.get("flops"))
    if trusted_row is not None:
        tb, tf = pos(trusted_row.get("bytes")), pos(trusted_row.get("flops"))
        if (tb and nbytes and abs(nbytes - tb) > 1e-6 * tb) or (tf and flops and abs(flops - tf) > 1e-6 * tf):
            return "declares %s bytes and %s FLOPs per call, the chapter %s and %s" % (
                r.get("bytes"), r.get("flops"), trusted_row.get("bytes"), trusted_row.get("flops"))
        nbytes, flops = tb or nbytes, tf or flops
    if nbytes and copy_gbps:
        gbps = nbytes / (us * 1e3)
        if gbps > copy_gbps * CEILING_SLACK:
            return "%.0f GB/s in %.3g us, %.0f%% of the measured copy ceiling (%.0f GB/s)" % (
                gbps, us, 100 * gbps / copy_gbps, copy_gbps)
    peak = compute.get(r.get("peak") if r.get("peak") in compute else "fp32")
    if flops and peak:
        rate = flops / (us * 1e6)
        if rate > peak * CEILING_SLACK:
            return "%.1f TFLOP/s in %.3g us, above the compute ceiling (%.1f)" % (rate, us, peak)
    for key, want in (("gbps", nbytes / (us * 1e3) if nbytes else None),
                      ("tflops", flops / (us * 1e6) if flops else None)):
        got = num(r.get(key))
        if got is not None and want and got > 0 and abs(got - want) > FIELD_TOLERANCE * want + 1e-9:
            return "its %s (%.4g) does not follow from its time and size (%.4g)" % (key, got, want)
    return None


def library_references(rows):
    """{(op, shape): row}: the library reference of each op and shape, which is the first
    reference row of that op and shape in the file. The benchmark times the references of a
    shape in the order the chapter lists them, the library first (any further reference, such
    as chapter 6's unfused baseline, is there to show what a technique buys), and its own
    `vs_reference` uses the same row."""
    out = {}
    for r in rows:
        if r.get("role") == "reference":
            out.setdefault((r.get("op"), r.get("shape")), r)
    return out


CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def classify_bench(rc, bench_text, trusted=None, legacy=False):
    """Reasons, per-shape metrics and notes from the results file of a chapter's benchmark
    step (text; None if it wrote none), cross-checked against `trusted`: the repository's own
    run of the same step, by the leaderboard, on the same GPU. Two formats are read, told
    apart by their content, never by the chapter: the benchmark's (`schema_version` 2, a
    `results` list of rows) and a decoder tool's (`schema_version` 1, a `tool` and a `runs`
    list; see classify_decoder)."""
    reasons, shapes, notes, seen = [], [], [], set()

    def add(kind, detail):
        if kind not in seen:
            seen.add(kind)
            reasons.append(reason(kind, detail))

    if bench_text is None:
        if timed_out(rc):
            add("hung", "in the benchmark")
        elif rc is not None and (rc >= 128 or rc < 0):
            add("faulted", "the benchmark crashed (exit code %s)" % rc)
        else:
            add("no-result", "the benchmark wrote no results (exit code %s)" % rc)
        return reasons, shapes, notes
    doc, problem = parse_one_document(bench_text)
    if doc is None:
        if problem.startswith("written to again"):
            add("implausible", "the benchmark's results file was " + problem)
        elif timed_out(rc):
            add("hung", "in the benchmark")
        else:
            add("no-result", "the benchmark's results file is %s" % problem)
        return reasons, shapes, notes
    if isinstance(doc, dict) and "runs" in doc and "results" not in doc:
        return classify_decoder(rc, doc, trusted)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        add("no-result", "the benchmark's results file has no 'results' list")
        return reasons, shapes, notes
    version = doc.get("schema_version")
    if version == BENCH_SCHEMA:
        rows = [r for r in doc["results"] if isinstance(r, dict)]
    elif version is None and legacy:
        rows = legacy_rows(doc)
    else:
        add("no-result", "the benchmark's results file has schema_version %s, not %d (an old harness?)"
            % (json.dumps(version), BENCH_SCHEMA))
        return reasons, shapes, notes
    if rc is not None and rc != 0 and timed_out(rc):
        add("hung", "in the benchmark")

    # The ceilings: the leaderboard's own (trusted) where there are some; the run's otherwise.
    copy_gbps, compute = ceilings_of(trusted if isinstance(trusted, dict) else doc)
    if not isinstance(trusted, dict):
        notes.append("no baseline run of the repository's benchmark: checked against the run's own ceilings")
    else:
        own_copy, _ = ceilings_of(doc)
        if own_copy and copy_gbps and abs(own_copy - copy_gbps) > 0.01 * copy_gbps:
            add("implausible", "the run reports a measured copy ceiling of %.0f GB/s; the leaderboard measured %.0f"
                % (own_copy, copy_gbps))
    # The baseline's reference rows, each by its own name: a chapter may time several
    # references per shape (the library and a baseline of its own).
    trusted_refs, trusted_library = {}, {}
    if isinstance(trusted, dict):
        trows = [r for r in trusted.get("results", []) if isinstance(r, dict)]
        for r in trows:
            if r.get("role") == "reference" and r.get("outcome") == "pass":
                trusted_refs.setdefault((r.get("op"), r.get("shape"), r.get("impl")), r)
        trusted_library = {k: r for k, r in library_references(trows).items() if r.get("outcome") == "pass"}

    library = library_references(rows)
    timed_refs = set()
    for r in rows:
        us = pos(r.get("median_us"))
        if r.get("role") != "reference" or r.get("outcome") != "pass" or not us:
            continue
        timed_refs.add((r.get("op"), r.get("shape"), r.get("impl")))
        t = trusted_refs.get((r.get("op"), r.get("shape"), r.get("impl")))
        tus = pos(t.get("median_us")) if t else None
        if tus and not REFERENCE_BAND[0] <= us / tus <= REFERENCE_BAND[1]:
            add("implausible", "%s %s [%s]: the reference took %.4g us in this run and %.4g us when the leaderboard "
                "timed it alone: the run's times are not consistent"
                % (r.get("op"), r.get("shape"), r.get("impl"), us, tus))
    for key in sorted(trusted_refs, key=str):
        if key not in timed_refs:
            # The benchmark times every reference it is asked for: a run without one the
            # baseline timed was not the repository's benchmark run as the leaderboard ran it.
            add("implausible", "%s %s [%s]: the baseline timed this reference, the run has no time for it" % key)
            break
    if any(r.get("throttled") is True for r in rows):
        notes.append("the GPU throttled during some samples")

    unscored = 0
    for r in rows:
        if r.get("role") != "student":
            continue
        where = "%s %s [%s]" % (r.get("op"), r.get("shape"), r.get("impl"))
        if any(not isinstance(r.get(k), str) or CONTROL_CHARS.search(r.get(k)) for k in ("op", "shape", "impl")):
            # The benchmark writes plain names; a line break in one would also dodge the ncu re-measurement.
            add("implausible", "%s: a row whose op, shape or impl is not plain text" % json.dumps(where)[:80])
            continue
        code = r.get("outcome")
        if not isinstance(code, str) or code not in OUTCOME_KIND:
            add("no-result", "%s: unknown outcome code %s" % (where, json.dumps(code)[:40]))
            continue
        if code != "pass":
            add(OUTCOME_KIND[code], where)
            continue
        us = pos(r.get("median_us"))
        if not us:
            add("no-result", "%s: no valid median time" % where)
            continue
        key = (r.get("op"), r.get("shape"))
        bad = check_row(r, trusted_library.get(key), copy_gbps, compute)
        if bad:
            add("implausible", "%s: %s" % (where, bad))
            continue
        lib = library.get(key)
        ref = pos(lib.get("median_us")) if lib and lib.get("outcome") == "pass" else None
        if not ref:
            unscored += 1
        nbytes = pos((trusted_library.get(key) or {}).get("bytes")) or pos(r.get("bytes"))
        shapes.append({
            "op": r.get("op"), "shape": r.get("shape"), "impl": r.get("impl"),
            "student_us": us, "reference_us": ref,
            "vs_reference": (ref / us) if ref else None,
            "roofline_measured_pct": (100.0 * nbytes / (us * 1e3) / copy_gbps) if nbytes and copy_gbps
            else num(r.get("roofline_measured_pct")),
            "roofline_spec_pct": num(r.get("roofline_spec_pct")),
        })
    if unscored and len(shapes) > unscored:
        notes.append("%d timed row(s) have no library reference on their shape: shown, not in the score" % unscored)
    if not reasons and not any(s["vs_reference"] for s in shapes):
        add("no-result", "no shape has a reference time to compare with")
    if not reasons and rc not in (0, None):
        add("faulted" if rc >= 128 or rc < 0 else "no-result", "the benchmark exited with code %s" % rc)
    return reasons, shapes, notes


# A decoder tool (chapter 9's `gpt2 --json=FILE`) reports whole-model runs, one per set of
# kernels: {"schema_version": 1, "tool": "gpt2", "gpu": "<name>", "runs": [{"kernels":
# "library", "ttft_ms": X, "decode_tok_s": Y}, {"kernels": "student", ...}, ...]}. The score
# is the geometric mean of the student's decode rate over the library's and of the library's
# time to first token over the student's: two "shapes", each a ratio of times (a decode rate
# becomes the time per token), so it ranks like any other chapter.
DECODER_SCHEMA = 1
DECODER_METRICS = (("decode", "decode_tok_s", lambda v: 1e6 / v),  # us per generated token
                   ("ttft", "ttft_ms", lambda v: 1e3 * v))          # us to the first token


def decoder_runs(doc):
    """({kernels: run}, problem): the runs of a decoder tool's results, or why they are not
    usable. Each run must have positive, finite numbers; a set of kernels run twice is
    ambiguous."""
    if doc.get("schema_version") != DECODER_SCHEMA:
        return None, "has schema_version %s, not %d" % (json.dumps(doc.get("schema_version"))[:20], DECODER_SCHEMA)
    if not isinstance(doc.get("tool"), str) or not doc["tool"] or not isinstance(doc.get("runs"), list):
        return None, "has no 'tool' name or no 'runs' list"
    out = {}
    for run in doc["runs"]:
        if not isinstance(run, dict) or not isinstance(run.get("kernels"), str):
            return None, "has a run without its 'kernels'"
        k = run["kernels"]
        if k in out:
            return None, "has two runs of the %s kernels" % k[:40]
        out[k] = run
    return out, None


def classify_decoder(rc, doc, trusted=None):
    reasons, shapes, notes = [], [], []
    tool = str(doc.get("tool"))[:40]
    runs, problem = decoder_runs(doc)
    if runs is None:
        return [reason("no-result", "the %s results file %s" % (tool, problem))], shapes, notes
    for k in ("library", "student"):
        if k not in runs:
            return [reason("no-result", "the %s results file has no run of the %s kernels" % (tool, k))], shapes, notes
        for _, field, _ in DECODER_METRICS:
            if not pos(runs[k].get(field)):
                return [reason("no-result", "the %s run of the %s kernels has no valid %s" % (tool, k, field))], \
                    shapes, notes
    base = None
    if isinstance(trusted, dict):
        base, _ = decoder_runs(trusted)
    base_lib = (base or {}).get("library")
    if base_lib is None:
        notes.append("no baseline run of the repository's %s: the library's numbers are not cross-checked" % tool)
    for name, field, to_us in DECODER_METRICS:
        lib_us, stu_us = to_us(runs["library"][field]), to_us(runs["student"][field])
        tv = pos((base_lib or {}).get(field))
        if tv and not REFERENCE_BAND[0] <= lib_us / to_us(tv) <= REFERENCE_BAND[1]:
            reasons.append(reason("implausible", "%s %s [library]: %.4g in this run, %.4g when the leaderboard ran the "
                                  "library alone: the run's numbers are not consistent" % (tool, field,
                                                                                          runs["library"][field], tv)))
            return reasons, [], notes
        shapes.append({"op": tool, "shape": name, "impl": "student", "student_us": stu_us, "reference_us": lib_us,
                       "vs_reference": lib_us / stu_us, "roofline_measured_pct": None, "roofline_spec_pct": None})
    if rc is not None and rc != 0:
        kind = "hung" if timed_out(rc) else ("faulted" if rc >= 128 or rc < 0 else "no-result")
        reasons.append(reason(kind, "the %s run exited with code %s" % (tool, rc)))
    return reasons, shapes, notes


def ncu_target(bench_text):
    """The student row to re-measure with ncu: the one that claims the most over the
    reference. None when there is no timed student row."""
    doc, _ = parse_one_document(bench_text)
    if not isinstance(doc, dict) or doc.get("schema_version") != BENCH_SCHEMA:
        return None
    rows = [r for r in doc.get("results", []) if isinstance(r, dict)]
    refs = {(r.get("op"), r.get("shape")): pos(r.get("median_us")) for r in rows if r.get("role") == "reference"}
    best = None
    for r in rows:
        us = pos(r.get("median_us"))
        ref = refs.get((r.get("op"), r.get("shape")))
        if r.get("role") == "student" and r.get("outcome") == "pass" and us and ref:
            if best is None or ref / us > best[0]:
                best = (ref / us, r)
    if best is None:
        return None
    r = best[1]
    return {"op": str(r.get("op")), "shape": str(r.get("shape")), "impl": str(r.get("impl")),
            "median_us": pos(r.get("median_us"))}


def ncu_kernel_time(csv_text):
    """(student kernel ns per call, kernels seen) from `ncu --csv --page raw --metrics
    gpu__time_duration.sum --print-kernel-base mangled`: the harness's own kernels (namespace
    wb) are left out; per call = the total / the count of the most frequent kernel, which can
    only under-estimate (a launcher that launches one kernel twice per call looks cheaper)."""
    lines = [l for l in (csv_text or "").splitlines() if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 2:
        return None, 0
    head = rows[0]
    try:
        i_name, i_time = head.index("Kernel Name"), head.index("gpu__time_duration.sum")
    except ValueError:
        return None, 0
    unit = rows[1][i_time] if len(rows) > 1 and not re.match(r"^[\d.,]+$", rows[1][i_time] or "x") else ""
    scale = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9,
             "s": 1e9, "": 1.0}.get(unit.strip(), None)
    if scale is None:
        return None, 0
    total, counts, seen = 0.0, {}, 0
    for row in rows[1:]:
        if len(row) <= max(i_name, i_time):
            continue
        try:
            t = float(row[i_time].replace(",", "")) * scale
        except ValueError:
            continue
        seen += 1
        name = row[i_name]
        if name.startswith(HARNESS_KERNEL_PREFIXES) or name.startswith("void wb::") or name.startswith("wb::"):
            continue
        total += t
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return None, seen
    return total / max(counts.values()), seen


def classify_ncu(entry, steps, shapes):
    """A reason (implausible) when ncu's kernel durations per call are far above the
    reported median, and a note on what was checked."""
    if "ncu" not in steps:
        return None, None
    target = read_text(os.path.join(entry, "ncu-target.json"))
    try:
        target = json.loads(target) if target else None
    except ValueError:
        target = None
    if not isinstance(target, dict):
        return None, "ncu check: no target row"
    per_call_ns, seen = ncu_kernel_time(read_text(os.path.join(entry, "ncu.csv")))
    where = "%s %s [%s]" % (target.get("op"), target.get("shape"), target.get("impl"))
    if per_call_ns is None:
        return None, "ncu check of %s not possible (exit code %s, %d kernels read)" % (where, steps["ncu"]["rc"], seen)
    # The reported median is the benchmark's own row, not the copy in the target file.
    reported = next((s["student_us"] for s in shapes if (s["op"], s["shape"], s["impl"]) ==
                     (target.get("op"), target.get("shape"), target.get("impl"))), None)
    if reported is None:
        return None, "ncu check: the row %s is not among the timed rows" % where
    per_call_us = per_call_ns / 1e3
    if reported and reported < NCU_MIN_RATIO * per_call_us:
        return (reason("implausible", "%s: the reported median is %.4g us, but its kernels run %.4g us per call "
                       "under ncu" % (where, reported, per_call_us)),
                "ncu: %s kernels %.4g us per call" % (where, per_call_us))
    return None, "ncu: %s kernels %.4g us per call, reported %.4g us" % (where, per_call_us, reported)


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


def printed_seed(log):
    """The seed the program printed last (`kernel-workbook: seed N`), or None."""
    found = SEED_RE.findall(log or "")
    return int(found[-1]) if found else None


def geomean(values):
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def classify_entry(entry, trusted=None, legacy=False, job_reasons=(), job_notes=()):
    """Everything known about one (student, chapter) entry folder, as a record (without
    the run's details). `trusted`: the leaderboard's own benchmark run on this GPU.
    `job_reasons` and `job_notes`: what a cluster job adds (its node had no GPU, Slurm
    cancelled it, the node it ran on)."""
    with open(os.path.join(entry, "meta.json")) as f:
        meta = json.load(f)
    steps = read_steps(entry)
    reasons, shapes, notes = [], [], list(job_notes)
    tests_log = read_text(os.path.join(entry, "tests.log"))
    bench_log = read_text(os.path.join(entry, "bench.log"))
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
                reasons += classify_tests(tests["rc"], tests_log or "", read_text(os.path.join(entry, "tests.json")))
                bench = steps.get("bench")
                if not reasons and bench is not None:
                    r, shapes, n = classify_bench(bench["rc"], read_text(os.path.join(entry, "bench.json")),
                                                  trusted, legacy)
                    reasons += r
                    notes += n
                    if not r:
                        bad, note = classify_ncu(entry, steps, shapes)
                        if bad:
                            reasons.append(bad)
                        if note:
                            notes.append(note)
                elif not reasons:
                    reasons.append(reason("no-result", "the benchmark did not run"))
    reasons = list(job_reasons) + reasons
    kinds = set()
    unique = []
    for r in sorted(reasons, key=lambda r: REASON_ORDER[r["kind"]]):
        if r["kind"] not in kinds:
            kinds.add(r["kind"])
            unique.append(r)
    # Rows without a library reference on their shape are shown, not scored.
    ratios = [s["vs_reference"] for s in shapes if s["vs_reference"]]
    ranked = not unique and bool(ratios)
    if not unique and not ranked:
        unique.append(reason("no-result", "a shape has no reference time"))
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
        "notes": notes,
        "score": {
            "geomean_vs_reference": geomean(ratios) if ranked else None,
            "roofline_measured_pct": mean([s["roofline_measured_pct"] for s in shapes]) if ranked else None,
            "roofline_spec_pct": mean([s["roofline_spec_pct"] for s in shapes]) if ranked else None,
            "shapes": len([r for r in ratios if r]),
        },
        "shapes": shapes,
        "steps": steps,
        "seed": {"tests": printed_seed(tests_log), "bench": printed_seed(bench_log)},
    }
# ------------------------------------------------------------------------ history ---
#
# history.jsonl is written by this program only, one record per line. Each record carries
#   prev: the SHA-256 of the line before it in the file (as written, "" for the first), and
#   mac:  an HMAC-SHA256 of the rest of the record under the teacher's key,
# so a line appended, edited, copied from elsewhere or moved by anyone without the key does
# not verify, and neither does the next genuine line after a line removed or inserted. The
# key lives in a file outside the work and output folders (default
# ~/.config/kernel-workbook/leaderboard.key, created on first use, mode 0600), hidden from
# the sandbox. The date is set here, when the record is written.

RECORD_FIELDS = {
    "schema": int, "chapter": str, "student": str, "student_id": str, "source_hash": str, "files": list,
    "ignored": list, "missing": list, "review": list, "status": str, "reasons": list, "notes": list,
    "score": dict, "shapes": list, "steps": dict, "seed": dict, "run_id": str, "date": str, "gpu": dict,
    "sandbox": str, "commit": str, "logs": str, "prev": str, "mac": str,
}
SANDBOXES = ("bubblewrap", "none")
DATE_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")


def default_key_path():
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "kernel-workbook", "leaderboard.key")


class KeyError_(Exception):
    pass


def load_key(path, create=False):
    """The history key (bytes). With create, a missing key file is made (0600, in a 0700
    folder). A key file that others can read is refused."""
    path = path or default_key_path()
    if create and not os.path.exists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(os.urandom(32).hex() + "\n")
        except FileExistsError:
            pass
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            key = f.read().strip()
    except OSError as e:
        raise KeyError_("cannot read the history key %s (%s); it is made by the first `record`, or give --key"
                        % (path, e.strerror))
    if st.st_mode & 0o077:
        raise KeyError_("the history key %s can be read by others (mode %o): chmod 600 it" % (path, st.st_mode & 0o777))
    if len(key) < 32:
        raise KeyError_("the history key %s is too short" % path)
    return key


def canonical(rec):
    return json.dumps({k: v for k, v in rec.items() if k != "mac"}, sort_keys=True, ensure_ascii=True,
                      separators=(",", ":")).encode()


def sign(rec, key):
    return hmac.new(key, canonical(rec), hashlib.sha256).hexdigest()


def line_hash(line_bytes):
    return hashlib.sha256(line_bytes.rstrip(b"\n")).hexdigest()


def validate_record(rec):
    """None when the record has exactly the fields, types and values this program writes;
    otherwise why not."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    if rec.get("schema") != SCHEMA:
        if rec.get("schema") == 1 and "mac" not in rec:
            return "an unsigned record of an older leaderboard (schema 1)"
        return "schema %s, not %d" % (json.dumps(rec.get("schema"))[:20], SCHEMA)
    keys = set(rec)
    if keys != set(RECORD_FIELDS):
        extra, missing = sorted(keys - set(RECORD_FIELDS)), sorted(set(RECORD_FIELDS) - keys)
        return "fields not as written by the leaderboard (%s)" % "; ".join(
            x for x in ("unexpected: " + ", ".join(extra)[:80] if extra else "",
                        "missing: " + ", ".join(missing)[:80] if missing else "") if x)
    for k, t in RECORD_FIELDS.items():
        if not isinstance(rec[k], t) or (t is int and isinstance(rec[k], bool)):
            return "field '%s' is not a %s" % (k, t.__name__)
    if not re.match(r"^ch\d\d$", rec["chapter"]) or not SAFE_ID_RE.match(rec["student_id"]):
        return "bad chapter or student id"
    if not DATE_RE.match(rec["date"]) or not RUN_ID_RE.match(rec["run_id"]):
        return "bad date or run id"
    if rec["sandbox"] not in SANDBOXES or rec["status"] not in ("ranked", "not ranked"):
        return "bad sandbox or status"
    if not isinstance(rec["gpu"].get("name"), str) or not isinstance(rec["gpu"].get("uuid"), str) or len(rec["gpu"]) != 2:
        return "bad gpu"
    for r in rec["reasons"]:
        if not isinstance(r, dict) or set(r) != {"kind", "label", "detail"} or r["kind"] not in REASON_LABEL:
            return "bad reason"
    s = rec["score"]
    if set(s) != {"geomean_vs_reference", "roofline_measured_pct", "roofline_spec_pct", "shapes"}:
        return "bad score"
    for k in ("geomean_vs_reference", "roofline_measured_pct", "roofline_spec_pct"):
        if s[k] is not None and num(s[k]) is None:
            return "bad score"
    if not isinstance(s["shapes"], int):
        return "bad score"
    ranked = rec["status"] == "ranked"
    if ranked != (not rec["reasons"]) or (ranked and not (pos(s["geomean_vs_reference"]) and s["shapes"] > 0)):
        return "status and reasons disagree"
    if not HEX64_RE.match(rec["mac"]) or not (rec["prev"] == "" or HEX64_RE.match(rec["prev"])):
        return "bad mac or prev"
    return None


def append_history(path, record, key):
    """Signs and appends one record, under an exclusive lock (runs on several GPUs write at
    the same time); nothing already written is ever rewritten."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    import fcntl
    with open(path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        f.seek(0, os.SEEK_END)
        size = f.tell()
        prev = ""
        if size:
            f.seek(max(0, size - (8 << 20)))
            tail = f.read()
            if not tail.endswith(b"\n"):
                f.write(b"\n")  # a truncated last line stays what it is: unreadable
                tail += b"\n"
            lines = tail[:-1].split(b"\n")
            prev = line_hash(lines[-1])
        record = dict(record, prev=prev)
        record["mac"] = sign(record, key)
        problem = validate_record(record)
        if problem:
            raise ValueError("internal: the record does not validate: " + problem)
        f.seek(0, os.SEEK_END)
        f.write(json.dumps(record, sort_keys=True, ensure_ascii=True).encode("ascii") + b"\n")
        f.flush()
        os.fsync(f.fileno())
    return record


def load_history(path, key, problems=None, quiet=False):
    """The records of the history that verify, in file order. Every other line is skipped
    (and left in the file) with its line number and why, in `problems` and on stderr."""
    records = []
    problems = [] if problems is None else problems
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return records
    prev_line = None
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            if n < data.count(b"\n") + 1:
                prev_line = raw
            continue
        why = None
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            rec, why = None, "not JSON (%s)" % str(e).split(":")[0]
        if why is None:
            why = validate_record(rec)
        if why is None and not hmac.compare_digest(rec["mac"], sign(rec, key)):
            why = "its signature does not verify: not written by this leaderboard with this key, or edited"
        if why is None and rec["prev"] != (line_hash(prev_line) if prev_line is not None else ""):
            why = "it does not follow the line before it: lines were inserted, removed or copied"
        prev_line = raw
        if why:
            problems.append((n, why))
        else:
            records.append(rec)
    if problems and not quiet:
        for n, why in problems:
            print("%s:%d: skipped: %s" % (path, n, why), file=sys.stderr)
    return records


def cmd_record(args):
    try:
        key = load_key(args.key, create=True)
    except KeyError_ as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    trusted = None
    if args.trusted:
        doc, _ = parse_one_document(read_text(args.trusted))
        trusted = doc if isinstance(doc, dict) and doc.get("schema_version") == BENCH_SCHEMA else None
    rec = classify_entry(args.entry, trusted=trusted)
    if args.sandbox not in SANDBOXES:
        print("leaderboard: --sandbox must be one of %s" % ", ".join(SANDBOXES), file=sys.stderr)
        return 2
    rec.update({
        "run_id": args.run_id,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": {"name": args.gpu_name or "unknown GPU", "uuid": args.gpu_uuid},
        "sandbox": args.sandbox,
        "commit": args.commit,
        "logs": args.logs,
    })
    append_history(args.history, rec, key)
    r = rec["reasons"][0] if rec["reasons"] else None
    if r:
        print("not ranked: %s%s" % (r["label"], (": " + r["detail"]) if r["detail"] else ""))
    else:
        s = rec["score"]
        print("ranked: %.3fx reference (geometric mean over %d shapes), %.1f%% of the measured roofline"
              % (s["geomean_vs_reference"], s["shapes"], s["roofline_measured_pct"] or 0))
    return 0


def cmd_verify(args):
    try:
        key = load_key(args.key)
    except KeyError_ as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    problems = []
    records = load_history(args.history, key, problems)
    print("%s: %d record(s) verify, %d line(s) skipped" % (args.history, len(records), len(problems)))
    return 0 if not problems else 1


def cmd_ncu_target(args):
    t = ncu_target(read_text(os.path.join(args.entry, "bench.json")))
    if t is None:
        return 1
    with open(os.path.join(args.entry, "ncu-target.json"), "w") as f:
        json.dump(t, f)
    # The benchmark's own selection of that one case, one argument per line: the op by its
    # full name, the shape by its exact text (an exact text selects that shape alone), the
    # variant by name. The row comes from a file the submission's process wrote: a value
    # with a line break or a tab (another argument smuggled in) is refused.
    if any(CONTROL_CHARS.search(t[k]) for k in ("op", "shape", "impl")):
        return 1
    print("--op=%s\n--shape=%s\n--impl=%s" % (t["op"], t["shape"], t["impl"]))
    return 0


# ------------------------------------------------------------------------ reports ---

def boards(records):
    """{(chapter, gpu name): [latest record per student]}, each list ranked first (best
    first), then the rest by name. The latest is the last in the history (file order, which
    the records' chain fixes), whatever dates the records hold."""
    latest = {}
    for i, rec in enumerate(records):
        key = (rec["chapter"], rec["gpu"]["name"] or "unknown GPU", rec["student_id"])
        latest[key] = (i, rec)
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


def unsafe_warning(runs):
    """The header line every report carries when a run it shows ran without a sandbox."""
    unsafe = [r["run_id"] for r in runs if r.get("sandbox") != "bubblewrap"]
    if not unsafe:
        return ""
    return ("WARNING: UNSANDBOXED RESULTS: run(s) %s ran without a sandbox (--unsafe-no-sandbox): their "
            "submissions could read other students' files and the history key, and rewrite their own results. "
            "Do not trust their ranks without reading the code." % ", ".join(unsafe))


def markdown(all_boards, runs, history_path, skipped_lines=(), unmerged=()):
    out = io.StringIO()
    out.write("# Class leaderboard\n\n")
    if unsafe_warning(runs):
        out.write("**%s**\n\n" % md_cell(unsafe_warning(runs)))
    if skipped_lines:
        out.write("**%d line(s) of the history were rejected** (lines %s): see `leaderboard.py verify`.\n\n"
                  % (len(skipped_lines), ", ".join(str(n) for n, _ in skipped_lines[:20])))
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
    if unmerged:
        out.write("## Cluster jobs without a result\n\nAs the latest `--collect` of each cluster run found them; "
                  "the history holds nothing of these jobs.\n\n| run | job | chapter | student | Slurm state | status |\n"
                  "| --- | --- | --- | --- | --- | --- |\n")
        for j in unmerged:
            out.write("| %s | %s | %s | %s | %s | %s |\n" % tuple(md_cell(j.get(k) or "") for k in (
                "run_id", "job", "chapter", "student", "state", "status")))
        out.write("\n")
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
                "date", "source_hash", "sandbox"])
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
                r.get("source_hash", ""), r.get("sandbox", "") if r.get("sandbox") == "bubblewrap"
                else "none (UNSANDBOXED)"]])
    return out.getvalue()


def json_doc(all_boards, runs, history_path, skipped_lines=(), unmerged=()):
    doc = {"generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "warning": unsafe_warning(runs) or None,
           "history": os.path.basename(history_path), "metric": "geometric mean of reference time / student time",
           "rejected_history_lines": [{"line": n, "why": w} for n, w in skipped_lines],
           "jobs_without_result": list(unmerged),
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
    try:
        key = load_key(args.key)
    except KeyError_ as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    skipped = []
    records = load_history(args.history, key, skipped)
    os.makedirs(args.out, exist_ok=True)
    all_boards = boards(records)
    runs = runs_summary(records)
    warning = unsafe_warning(runs)
    unmerged = unmerged_jobs(args.out)
    write_atomic(os.path.join(args.out, "leaderboard.md"),
                 markdown(all_boards, runs, args.history, skipped, unmerged))
    write_atomic(os.path.join(args.out, "leaderboard.csv"), csv_text(all_boards))
    write_atomic(os.path.join(args.out, "leaderboard.json"),
                 json.dumps(json_doc(all_boards, runs, args.history, skipped, unmerged), indent=1,
                            ensure_ascii=False) + "\n")
    if not args.quiet:
        if warning:
            print(warning + "\n")
        shown = all_boards
        if args.run_id:
            touched = {(r["chapter"], r["gpu"]["name"]) for r in records if r["run_id"] == args.run_id}
            shown = {k: v for k, v in all_boards.items() if k in touched}
        for key, recs in shown.items():
            print(terminal_table(key, recs))
        print("%d result(s) from %d run(s) in %s; reports: %s/leaderboard.{md,csv,json}"
              % (len(records), len(runs), args.history, args.out))
        if skipped:
            print("%d line(s) of the history were rejected (listed above, on stderr)" % len(skipped))
        for j in unmerged:
            print("cluster job %s (%s %s): %s" % (j["job"], j["chapter"], j["student"], j["status"]))
    return 0




# ------------------------------------------------------------------- cluster jobs ---
#
# scripts/leaderboard.sh --slurm: one Slurm job per (student, chapter), an array per run.
# The run's folder, on a file system the nodes see (--shared), holds:
#   run.json                 the run: its tasks (one per job), the entries without files,
#                            the arrays submitted (a rerun adds one); written by this program
#   tasks.tsv                task, student id, chapter, entry folder: what a job reads
#   src.tar                  the repository's sources
#   entries/<random>/...     the students' files, as `plan` copied them
#   records/<task>-<array job>.json   what the job found, written by the job (job-record)
#   slurm/<array job>_<task>.out      the job's own output
# A record holds no verdict and no signature: `collect`, on the teacher's machine, checks
# it, classifies it like a local run's results and signs it into the history. The key
# never leaves the teacher's machine.

JOB_RECORD_SCHEMA = 1
JOB_RECORD_KIND = "kernel-workbook leaderboard job record"
JOB_RECORD_FIELDS = {"schema": int, "kind": str, "run_id": str, "task": int, "job_id": str, "student_id": str,
                     "chapter": str, "node": str, "gpu": (dict, type(None)), "no_gpu": str, "node_problem": str,
                     "sandbox": str, "steps": dict, "files": dict, "complete": bool}
JOB_FILES = ("build.log", "tests.log", "tests.json", "bench.log", "bench.json", "ncu.csv", "ncu-target.json",
             "trusted.json")
JOB_RECORD_MAX = 64 << 20
JOB_FILE_MAX = 4 << 20
JOB_ID_RE = re.compile(r"^(\d+)_(\d+)$")
# Slurm's job states (sacct, scontrol) and what they mean here. A state not listed counts
# as still running when the job has no record.
SLURM_DONE = {"COMPLETED", "FAILED"}
SLURM_FAULTS = {
    "CANCELLED": ("cancelled", "cancelled by scancel or an administrator"),
    "PREEMPTED": ("cancelled", "preempted by a job of higher priority"),
    "DEADLINE": ("cancelled", "its deadline passed"),
    "TIMEOUT": ("job-timeout", "Slurm ended it at its time limit (--time)"),
    "NODE_FAIL": ("node-failed", "its node stopped answering while it ran"),
    "BOOT_FAIL": ("node-failed", "its node failed to boot"),
    "OUT_OF_MEMORY": ("node-problem", "the job ran out of memory"),
}


def write_json_atomic(path, doc):
    """Writes JSON through a temporary file and a rename: a reader sees the whole file or
    none of it (on a shared file system, a job that dies mid-write leaves only the temporary)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, sort_keys=True)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def cmd_job_record(args):
    """On the node, after the job's steps: its entry folder as one record file."""
    files = {}
    for name in JOB_FILES:
        text = read_text(os.path.join(args.entry, name), JOB_FILE_MAX)
        if text is not None:
            files[name] = text
    steps = read_steps(args.entry)
    m = JOB_ID_RE.match(args.job_id)
    if not m or int(m.group(2)) != args.task:
        print("leaderboard: --job-id must be ARRAYJOB_TASK of task %d, not '%s'" % (args.task, args.job_id),
              file=sys.stderr)
        return 2
    doc = {"schema": JOB_RECORD_SCHEMA, "kind": JOB_RECORD_KIND, "run_id": args.run_id, "task": args.task,
           "job_id": args.job_id, "student_id": args.student_id, "chapter": args.chapter, "node": args.node,
           "gpu": {"name": args.gpu_name, "uuid": args.gpu_uuid} if args.gpu_name else None,
           "no_gpu": args.no_gpu, "node_problem": args.node_problem, "sandbox": args.sandbox, "steps": steps,
           "files": files, "complete": True}
    problem = validate_job_record(doc)
    if problem:
        print("leaderboard: internal: the job record does not validate: %s" % problem, file=sys.stderr)
        return 1
    write_json_atomic(args.out, doc)
    return 0


def validate_job_record(doc, task=None):
    """None when `doc` is a job record as job-record writes it (for `task`, when given)."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if set(doc) != set(JOB_RECORD_FIELDS):
        return "its fields are not those of a job record"
    for k, t in JOB_RECORD_FIELDS.items():
        if not isinstance(doc[k], t) or (t is int and isinstance(doc[k], bool)):
            return "its field '%s' has the wrong type" % k
    if doc["schema"] != JOB_RECORD_SCHEMA or doc["kind"] != JOB_RECORD_KIND or doc["complete"] is not True:
        return "not a complete job record of schema %d" % JOB_RECORD_SCHEMA
    if not SAFE_ID_RE.match(doc["student_id"]) or not re.match(r"^ch\d\d$", doc["chapter"]):
        return "bad student id or chapter"
    if not RUN_ID_RE.match(doc["run_id"]) or not JOB_ID_RE.match(doc["job_id"]):
        return "bad run id or job id"
    if task is not None and (doc["task"] != task or int(JOB_ID_RE.match(doc["job_id"]).group(2)) != task):
        return "it is the record of task %d, not %d" % (doc["task"], task)
    if doc["sandbox"] not in SANDBOXES:
        return "bad sandbox"
    gpu = doc["gpu"]
    if gpu is not None and (set(gpu) != {"name", "uuid"} or not all(isinstance(v, str) for v in gpu.values())
                            or not gpu["name"]):
        return "bad gpu"
    if (gpu is None) == (doc["no_gpu"] == "") and not doc["node_problem"]:
        return "gpu and no_gpu disagree"
    for name, step in doc["steps"].items():
        if not isinstance(step, dict) or set(step) != {"rc", "seconds"} or not isinstance(step["rc"], int) \
                or num(step["seconds"]) is None or "\t" in name or "\n" in name:
            return "bad step '%s'" % str(name)[:20]
    for name, text in doc["files"].items():
        if name not in JOB_FILES or not isinstance(text, str):
            return "bad file '%s'" % str(name)[:40]
    return None


def read_job_record(path, task):
    """(record, problem): a job's record file, or why it cannot be used."""
    try:
        with open(path, "rb") as f:
            data = f.read(JOB_RECORD_MAX + 1)
    except FileNotFoundError:
        return None, "no record (the job wrote none)"
    except OSError as e:
        return None, "the record cannot be read (%s)" % e.strerror
    if len(data) > JOB_RECORD_MAX:
        return None, "the record is larger than %d MiB" % (JOB_RECORD_MAX >> 20)
    if not data.strip():
        return None, "the record is empty"
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "the record is not UTF-8 text"
    except ValueError as e:
        why = str(e).split(":")[0]
        if "Expecting" in why or "Unterminated" in why:
            return None, "the record is truncated or not valid JSON (%s)" % why
        return None, "the record is not valid JSON (%s)" % why
    problem = validate_job_record(doc, task)
    if problem:
        return None, "the record is not a valid job record: %s" % problem
    return doc, None


def read_run(run_dir):
    path = os.path.join(run_dir, "run.json")
    try:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s is not a cluster run's file (%s)" % (path, str(e).split(":")[0]))
    if not isinstance(run, dict) or run.get("schema") != 1 or not isinstance(run.get("tasks"), list) \
            or not isinstance(run.get("jobs"), list) or not RUN_ID_RE.match(str(run.get("run_id", ""))):
        raise ValueError("%s is not a cluster run's file of schema 1" % path)
    for i, t in enumerate(run["tasks"] + run.get("missing", [])):
        if not isinstance(t, dict) or not SAFE_ID_RE.match(str(t.get("student_id"))) \
                or not re.match(r"^ch\d\d$", str(t.get("chapter"))) or not isinstance(t.get("student"), str) \
                or not isinstance(t.get("entry"), str) or t["entry"].startswith("/") or ".." in t["entry"].split("/") \
                or (i < len(run["tasks"]) and t.get("task") != i):
            raise ValueError("%s: entry %d is not as `run-file` writes it" % (path, i))
    return run


def cmd_run_file(args):
    """Writes run.json and tasks.tsv of a new cluster run from `plan`'s output."""
    tasks, missing = [], []
    with open(args.plan, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 4:
                continue
            sid, ch, state, name = parts[:4]
            entry = os.path.join(args.entries, sid, ch)
            item = {"student_id": sid, "chapter": ch, "student": name, "entry": entry}
            if state == "build":
                tasks.append(dict(item, task=len(tasks)))
            else:
                missing.append(item)
    run = {"schema": 1, "run_id": args.run_id, "commit": args.commit, "created": utc_now(), "tasks": tasks,
           "missing": missing, "jobs": [], "sandbox_optional": bool(args.unsafe_no_sandbox)}
    write_json_atomic(os.path.join(args.run_dir, "run.json"), run)
    with open(os.path.join(args.run_dir, "tasks.tsv"), "w", encoding="utf-8") as f:
        for t in tasks:
            f.write("%d\t%s\t%s\t%s\n" % (t["task"], t["student_id"], t["chapter"], t["entry"]))
    print(len(tasks))
    return 0


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def run_lock(run_dir):
    import fcntl
    f = open(os.path.join(run_dir, ".lock"), "a")
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    return f


def cmd_add_job(args):
    """Adds a submitted array (the first submission or a rerun) to run.json."""
    tasks = parse_task_list(args.tasks)
    with run_lock(args.run_dir):
        run = read_run(args.run_dir)
        known = {t["task"] for t in run["tasks"]}
        if not tasks or not set(tasks) <= known or not re.match(r"^\d+$", args.array_job):
            print("leaderboard: bad array job '%s' or tasks '%s'" % (args.array_job, args.tasks), file=sys.stderr)
            return 2
        run["jobs"].append({"array_job": args.array_job, "tasks": tasks, "submitted": utc_now()})
        write_json_atomic(os.path.join(args.run_dir, "run.json"), run)
    return 0


def parse_task_list(text):
    """'0-3,7' -> [0, 1, 2, 3, 7]; [] when it is not such a list."""
    out = []
    for part in str(text).split(","):
        m = re.match(r"^(\d+)(?:-(\d+))?$", part.strip())
        if not m:
            return []
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a or b - a > 100000:
            return []
        out.extend(range(a, b + 1))
    return sorted(set(out))


def latest_jobs(run):
    """{task: 'ARRAY_TASK'}: the last job submitted for each task."""
    out = {}
    for job in run["jobs"]:
        for t in job.get("tasks", []):
            out[t] = "%s_%d" % (job["array_job"], t)
    return out


def slurm_states(array_jobs, runner=None):
    """{'ARRAY_TASK': {'state', 'exit', 'node'}} from sacct, and from scontrol for what sacct
    does not know (no accounting database, or a job too recent for it). A line of one job
    wins over a line of a range of them (sacct lists the tasks of an array that never
    started as one range). A job neither knows is absent."""
    import subprocess
    run = runner or (lambda argv: subprocess.run(argv, capture_output=True, text=True, timeout=120))
    exact, ranges = {}, []
    ids = sorted(set(array_jobs), key=int)
    if not ids:
        return {}

    def note(job_text, info):
        jobs = expand_array_ids(job_text)
        if re.match(r"^\d+_\d+$", job_text.strip()):
            exact.setdefault(job_text.strip(), info)
        else:
            ranges.append((jobs, info))

    try:
        p = run(["sacct", "-n", "-P", "-X", "--format=JobID,State,ExitCode,NodeList", "-j", ",".join(ids)])
        if p.returncode == 0:
            for line in p.stdout.splitlines():
                parts = line.split("|")
                if len(parts) >= 4:
                    note(parts[0], {"state": parts[1].split()[0] if parts[1].split() else "", "exit": parts[2],
                                    "node": parts[3]})
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    for array in ids:
        try:
            p = run(["scontrol", "-o", "show", "job", array])
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        if p.returncode != 0:
            continue
        for line in p.stdout.splitlines():
            kv = dict(re.findall(r"(\w+)=(\S*)", line))
            a, t = kv.get("ArrayJobId"), kv.get("ArrayTaskId")
            if a == array and t is not None:
                note("%s_%s" % (a, t), {"state": kv.get("JobState", ""), "exit": kv.get("ExitCode", ""),
                                        "node": kv.get("NodeList", "")})
    states = dict(exact)
    for jobs, info in ranges:
        for job in jobs:
            states.setdefault(job, info)
    return states


def expand_array_ids(text):
    """'57_3' -> ['57_3']; '57_[2-4,7%2]' -> ['57_2', '57_3', '57_4', '57_7']; anything else -> []."""
    m = re.match(r"^(\d+)_(\d+)$", text.strip())
    if m:
        return [text.strip()]
    m = re.match(r"^(\d+)_\[?([\d,\-]+)(?:%\d+)?\]?$", text.strip())
    if not m:
        return []
    return ["%s_%d" % (m.group(1), t) for t in parse_task_list(m.group(2))]


def job_status(run, run_dir, states):
    """One line per task and per entry without files: what is known of it now."""
    latest = latest_jobs(run)
    out = []
    for t in run["tasks"]:
        job = latest.get(t["task"])
        item = {"task": t["task"], "student": t["student"], "student_id": t["student_id"], "chapter": t["chapter"],
                "job": job or "", "state": "", "record": None, "problem": ""}
        if job:
            st = states.get(job, {})
            item["state"], item["node"] = st.get("state", ""), st.get("node", "")
            array = job.split("_")[0]
            rec, problem = read_job_record(os.path.join(run_dir, "records", "%d-%s.json" % (t["task"], array)),
                                           t["task"])
            if rec is not None and (rec["job_id"] != job or rec["run_id"] != run["run_id"]
                                    or rec["student_id"] != t["student_id"] or rec["chapter"] != t["chapter"]):
                rec, problem = None, "the record is of another run, job or student"
            item["record"], item["problem"] = rec, problem or ""
        out.append(item)
    return out


def merge_record(rec, entry_src, task, job, merge):
    """Rebuilds a job's entry folder from its record (the plan's meta.json, the steps, the
    files) and merges it with what the node said (no GPU, a problem of the node)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        entry = os.path.join(tmp, "entry")
        os.makedirs(entry)
        with open(os.path.join(entry_src, "meta.json"), "rb") as f, open(os.path.join(entry, "meta.json"), "wb") as g:
            g.write(f.read())
        with open(os.path.join(entry, "steps.tsv"), "w") as f:
            for name, step in rec["steps"].items():
                f.write("%s\t%d\t%s\n" % (name, step["rc"], step["seconds"]))
        for name, text in rec["files"].items():
            with open(os.path.join(entry, name), "w", encoding="utf-8") as f:
                f.write(text)
        trusted = None
        if "trusted.json" in rec["files"]:
            doc, _ = parse_one_document(rec["files"]["trusted.json"])
            trusted = doc if isinstance(doc, dict) else None
        reasons = []
        if rec["node_problem"]:
            reasons.append(reason("node-problem", rec["node_problem"]))
        if rec["no_gpu"]:
            reasons.append(reason("no-gpu", rec["no_gpu"]))
        notes = ["ran on node %s as job %s" % (rec["node"] or "?", job)]
        return merge(entry, task["student_id"], task["chapter"], job, trusted=trusted, gpu=rec["gpu"],
                     sandbox=rec["sandbox"], job_reasons=reasons, job_notes=notes, files=rec["files"])


def logs_key(run_id, sid, ch, job):
    return "runs/%s/%s/%s/%s" % (run_id, sid, ch, job or "no-job")


def cmd_jobs(args):
    """The state of every task of a cluster run, one tab-separated line each: task, job,
    state, record (ok / the problem), student."""
    try:
        run = read_run(args.run_dir)
    except ValueError as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    latest = latest_jobs(run)
    states = slurm_states({j.split("_")[0] for j in latest.values()})
    for item in job_status(run, args.run_dir, states):
        print("%d\t%s\t%s\t%s\t%s" % (item["task"], item["job"] or "-", item["state"] or "UNKNOWN",
                                      "ok" if item["record"] else item["problem"], item["student"]))
    return 0


def cmd_collect(args):
    """Merges the finished jobs of a cluster run into the history, once each: a job's
    record, checked and classified like a local run's results; or, for a job that Slurm
    ended (cancelled, time limit, node failure) without one, that reason. A record that is
    missing, truncated or not a valid record is reported and not merged. Then the reports."""
    try:
        key = load_key(args.key, create=True)
        run = read_run(args.run_dir)
    except (KeyError_, ValueError) as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    run_id = run["run_id"]
    os.makedirs(args.out, exist_ok=True)
    import fcntl
    lock = open(os.path.join(args.out, ".collect.lock"), "a")
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # two collects at once merge each job once
    latest = latest_jobs(run)
    states = slurm_states({j.split("_")[0] for j in latest.values()}) if latest else {}
    merged = {(r["run_id"], r["logs"]) for r in load_history(args.history, key, quiet=True)}
    rows = []
    n_new = 0

    def merge(entry, sid, ch, job, trusted=None, gpu=None, sandbox="bubblewrap", job_reasons=(), job_notes=(),
              files=None):
        logs = logs_key(run_id, sid, ch, job)
        rec = classify_entry(entry, trusted=trusted, job_reasons=job_reasons, job_notes=job_notes)
        rec.update({"run_id": run_id, "date": utc_now(), "gpu": gpu or {"name": "no GPU", "uuid": ""},
                    "sandbox": sandbox, "commit": str(run.get("commit", "")), "logs": logs})
        keep = os.path.join(args.out, logs)
        os.makedirs(keep, exist_ok=True)
        for name, text in (files or {}).items():
            with open(os.path.join(keep, name), "w", encoding="utf-8") as f:
                f.write(text)
        append_history(args.history, rec, key)
        merged.add((run_id, logs))
        return "merged: " + ("ranked, %.3fx reference" % rec["score"]["geomean_vs_reference"] if not rec["reasons"]
                             else why(rec))

    # Entries without files never had a job: recorded once, like a local run does.
    for m in run.get("missing", []):
        logs = logs_key(run_id, m["student_id"], m["chapter"], None)
        if (run_id, logs) in merged:
            status = "already merged"
        else:
            status = merge(os.path.join(args.run_dir, m["entry"]), m["student_id"], m["chapter"], None)
            n_new += 1
        rows.append({"job": "-", "student": m["student"], "chapter": m["chapter"], "state": "no job",
                     "status": status, "merged": True})

    for item in job_status(run, args.run_dir, states):
        job, t = item["job"], item
        row = {"job": job or "-", "task": t["task"], "student": t["student"], "chapter": t["chapter"],
               "state": t["state"] or "UNKNOWN", "node": t.get("node", ""), "merged": False}
        rows.append(row)
        if not job:
            row["status"] = "never submitted"
            continue
        logs = logs_key(run_id, t["student_id"], t["chapter"], job)
        if (run_id, logs) in merged:
            row.update(status="already merged", merged=True)
            continue
        entry_src = os.path.join(args.run_dir, [x for x in run["tasks"] if x["task"] == t["task"]][0]["entry"])
        state = t["state"]
        rec = t["record"]
        if rec is not None:
            try:
                row["status"] = merge_record(rec, entry_src, t, job, merge)
            except (OSError, ValueError, KeyError) as e:
                row["status"] = "NOT MERGED: its record could not be classified (%s); rerun it: " \
                                "scripts/leaderboard.sh --rerun %s" % (e, job)
                row["problem"] = str(e)
                continue
            row["merged"] = True
            n_new += 1
        elif state in SLURM_FAULTS:
            kind, detail = SLURM_FAULTS[state]
            detail = "job %s, Slurm state %s: %s; %s" % (job, state, detail, t["problem"] or "no record")
            row["status"] = merge(entry_src, t["student_id"], t["chapter"], job, job_reasons=[reason(kind, detail)],
                                  job_notes=["Slurm ended job %s as %s on node %s" % (job, state, t.get("node") or "?")])
            row["merged"] = True
            n_new += 1
        elif state in SLURM_DONE or (state == "" and t["problem"] and not t["problem"].startswith("no record")):
            row["status"] = "NOT MERGED: %s; rerun it: scripts/leaderboard.sh --rerun %s" % (t["problem"], job)
            row["problem"] = t["problem"]
        elif state == "":
            row["status"] = "NOT MERGED: %s, and Slurm knows nothing of the job; rerun it: scripts/leaderboard.sh " \
                            "--rerun %s" % (t["problem"], job)
            row["problem"] = t["problem"]
        else:
            row["status"] = "pending (%s)" % state
            row["pending"] = True
    status = {"run_id": run_id, "collected": utc_now(), "jobs": rows,
              "merged_now": n_new, "pending": sum(1 for r in rows if r.get("pending")),
              "not_merged": sum(1 for r in rows if not r["merged"] and not r.get("pending"))}
    keep = os.path.join(args.out, "runs", run_id)
    os.makedirs(keep, exist_ok=True)
    write_json_atomic(os.path.join(keep, "collect.json"), status)
    lock.close()
    if not args.quiet:
        print("cluster run %s: %d job(s) and entries, %d merged now, %d pending, %d not merged" % (
            run_id, len(rows), n_new, status["pending"], status["not_merged"]))
        width = max([len(r["student"]) for r in rows] + [7])
        for r in rows:
            print("  %-10s %-4s %-*s %-11s %s" % (r["job"], r["chapter"], min(width, 28), r["student"][:28],
                                                 r["state"][:11], r["status"]))
    return 0


def unmerged_jobs(out):
    """The jobs that the latest collect of each cluster run in `out` could not merge."""
    found = []
    base = os.path.join(out, "runs")
    if not os.path.isdir(base):
        return found
    for run_id in sorted(os.listdir(base)):
        path = os.path.join(base, run_id, "collect.json")
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        for r in doc.get("jobs", []) if isinstance(doc, dict) else []:
            if isinstance(r, dict) and not r.get("merged"):
                found.append({"run_id": run_id, "job": r.get("job"), "student": r.get("student"),
                              "chapter": r.get("chapter"), "state": r.get("state"), "status": r.get("status"),
                              "pending": bool(r.get("pending"))})
    return found


# ----------------------------------------------------------------- expected outcome ---

def cmd_check(args):
    """Compares one run with an expected outcome (tests/leaderboard/*-expected.json); exit 1
    on a miss. Per chapter: `ranked` (each must be ranked), `faster_than` (pairs, both
    ranked), `reasons` ({student: kind or [kinds]}, where the kind "ranked" allows a rank),
    `absent` (students that must have no result at all, such as a forged record's),
    `history_rejected_at_least` (lines of the history that must fail verification), and
    `not_merged` (students of a cluster run whose job record was refused: listed by the
    latest collect, nothing in the history). With --chapter (a run limited to some chapters),
    the expectations of the other chapters are skipped, each with a line that says so."""
    try:
        key = load_key(args.key)
    except KeyError_ as e:
        print("leaderboard: %s" % e, file=sys.stderr)
        return 2
    with open(args.expect) as f:
        expect = json.load(f)
    skipped = []
    every = load_history(args.history, key, skipped, quiet=True)
    records = [r for r in every if r["run_id"] == args.run_id]
    problems = []
    for ch, want in expect.items():
        if not re.match(r"^ch\d\d$", ch):
            continue
        if args.chapter and ch not in args.chapter:
            print("skip %s: not among this run's chapters (%s)" % (ch, " ".join(args.chapter)))
            continue
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
                if "ranked" in kinds:
                    print("ok   %s %-24s ranked (allowed): %.3fx reference" % (ch, student,
                                                                           r["score"]["geomean_vs_reference"]))
                else:
                    problems.append("%s: '%s' was ranked; expected: %s" % (ch, student, " or ".join(kinds)))
            elif r["reasons"][0]["kind"] not in kinds:
                problems.append("%s: '%s' is listed as '%s'; expected: %s" % (ch, student, why(r), " or ".join(kinds)))
            else:
                print("ok   %s %-24s %s" % (ch, student, why(r)))
        for student in want.get("absent", []):
            if any(r["student"] == student and r["chapter"] == ch for r in every):
                problems.append("%s: '%s' has a result in the history; it must have none" % (ch, student))
            else:
                print("ok   %s %-24s no result (as expected)" % (ch, student))
        if want.get("not_merged"):
            waiting = {j["student"]: j for j in unmerged_jobs(os.path.dirname(os.path.abspath(args.history)))
                       if j["run_id"] == args.run_id and j["chapter"] == ch and not j["pending"]}
            for student in want["not_merged"]:
                if student in recs:
                    problems.append("%s: '%s' was merged into the history (%s); its record should have been "
                                    "refused" % (ch, student, why(recs[student]) or "ranked"))
                elif student not in waiting:
                    problems.append("%s: '%s' is not listed as a job without a result" % (ch, student))
                else:
                    print("ok   %s %-24s %s" % (ch, student, waiting[student]["status"]))
        at_least = want.get("history_rejected_at_least", 0)
        if len(skipped) < at_least:
            problems.append("%s: %d line(s) of the history were rejected; expected at least %d"
                            % (ch, len(skipped), at_least))
        elif at_least:
            print("ok   %s history: %d line(s) rejected: %s" % (ch, len(skipped),
                                                              "; ".join("line %d: %s" % p for p in skipped[:3])))
        order = sorted((r for r in recs.values() if r["status"] == "ranked"),
                       key=lambda r: -r["score"]["geomean_vs_reference"])
        for i, r in enumerate(order):
            if r["student"] in want.get("ranked", []):
                print("ok   %s %-24s ranked %d: %.3fx reference" % (ch, r["student"], i + 1,
                                                                  r["score"]["geomean_vs_reference"]))
        seeds = sorted({str(r["seed"].get("tests")) for r in recs.values() if r["seed"].get("tests") is not None})
        print("     %s ran on: %s; %d test seed(s) recorded" % (ch, ", ".join(sorted(gpus)), len(seeds)))
    for p in problems:
        print("MISS " + p)
    print("expected outcome (%s): %s" % (os.path.basename(args.expect),
                                          "as expected" if not problems else "%d unexpected result(s)" % len(problems)))
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
    c = sub.add_parser("runner")
    c.add_argument("--repo", required=True)
    c.add_argument("--chapter", required=True)
    c = sub.add_parser("ncu-target")
    c.add_argument("--entry", required=True)
    c = sub.add_parser("record")
    c.add_argument("--history", required=True)
    c.add_argument("--key", default="")
    c.add_argument("--entry", required=True)
    c.add_argument("--trusted", default="")
    c.add_argument("--run-id", required=True)
    c.add_argument("--gpu-name", default="")
    c.add_argument("--gpu-uuid", default="")
    c.add_argument("--sandbox", required=True)
    c.add_argument("--commit", default="")
    c.add_argument("--logs", default="")
    c = sub.add_parser("job-record")
    for a in ("--entry", "--out", "--run-id", "--job-id", "--student-id", "--chapter", "--sandbox"):
        c.add_argument(a, required=True)
    c.add_argument("--task", type=int, required=True)
    for a in ("--node", "--gpu-name", "--gpu-uuid", "--no-gpu", "--node-problem"):
        c.add_argument(a, default="")
    c = sub.add_parser("run-file")
    for a in ("--run-dir", "--run-id", "--plan", "--entries"):
        c.add_argument(a, required=True)
    c.add_argument("--commit", default="")
    c.add_argument("--unsafe-no-sandbox", action="store_true")
    c = sub.add_parser("add-job")
    for a in ("--run-dir", "--array-job", "--tasks"):
        c.add_argument(a, required=True)
    c = sub.add_parser("jobs")
    c.add_argument("--run-dir", required=True)
    c = sub.add_parser("collect")
    for a in ("--run-dir", "--history", "--out"):
        c.add_argument(a, required=True)
    c.add_argument("--key", default="")
    c.add_argument("--quiet", action="store_true")
    for name in ("report", "check", "check-fixture", "verify"):
        c = sub.add_parser(name)
        c.add_argument("--history", required=True)
        c.add_argument("--key", default="")
        if name == "report":
            c.add_argument("--out", required=True)
            c.add_argument("--run-id", default="")
            c.add_argument("--quiet", action="store_true")
        elif name != "verify":
            c.add_argument("--run-id", required=True)
            c.add_argument("--expect", required=True)
            c.add_argument("--chapter", action="append", default=[],
                           help="the chapters the run was limited to (repeatable): the expected outcome "
                                "of any other chapter is skipped")
    args = p.parse_args(argv)
    return {"chapters": cmd_chapters, "plan": cmd_plan, "record": cmd_record, "report": cmd_report,
            "check": cmd_check, "check-fixture": cmd_check, "verify": cmd_verify,
            "ncu-target": cmd_ncu_target, "runner": cmd_runner, "job-record": cmd_job_record, "run-file": cmd_run_file,
            "add-job": cmd_add_job, "jobs": cmd_jobs, "collect": cmd_collect}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
