"""What went wrong with one (student, chapter) entry, from what its steps left in its folder:
the build log, the test program's results (the `outcome` code of every test in GoogleTest's
JSON, the one record of a test's outcome the leaderboard reads; without a JSON, the test its
log left unfinished and its exit code), the benchmark's results
(crosscheck.py) and the Nsight Compute re-measurement (ncu.py). The result is a history record
without the run's details (history.py adds them and signs it).
"""

import json
import math
import os
import re

from .crosscheck import classify_bench
from .ncu import classify_ncu
from .outcomes import OUTCOME_KIND, REASON_ORDER, crash_or_hang, parse_one_document, read_text, reason, timed_out

SCHEMA = 2  # history records written by this version

RUN_RE = re.compile(r"^\[ RUN      \] (\S+)")
# gtest ends a test with "[  FAILED  ] Suite/Test.Name/param, where GetParam() = ... (3 ms)".
END_RE = re.compile(r"^\[(       OK |  FAILED  |  SKIPPED )\] ([^\s,]+)(?:,| \()")
SEED_RE = re.compile(r"^kernel-workbook: seed (\d{1,20})\b", re.MULTILINE)
ERROR_LINE_RE = re.compile(
    r"(?:^|\s)(?:[^\s:]*/)?([^/\s:]+\.(?:cu|cuh|cpp|cc|h|hpp))(?:\((\d+)\)|:(\d+)(?::\d+)?):?\s*"
    r"(?:fatal )?error[:\s]\s*(.*)$"
)


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
    a JSON (the program did not finish), the test it was in and its exit code."""
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
        test = unfinished_test(log)
        kind = crash_or_hang(rc)
        if test:
            add(kind, test if kind == "hung" else "%s (the test program stopped, exit code %s)" % (test, rc))
        elif timed_out(rc):
            add("hung", "before any test ran")
        elif rc is not None and rc != 0:
            add(
                "faulted" if (rc >= 128 or rc < 0) else "no-result",
                "the test program stopped with exit code %s and wrote no results file" % rc,
            )
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
        reasons.append(
            reason(
                "missing-files",
                "no %s folder with %s" % (meta["chapter"], ", ".join(meta["missing"]))
                if meta.get("no_folder")
                else "none of " + ", ".join(meta["missing"]),
            )
        )
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
                    r, shapes, n = classify_bench(
                        bench["rc"], read_text(os.path.join(entry, "bench.json")), trusted, legacy
                    )
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
