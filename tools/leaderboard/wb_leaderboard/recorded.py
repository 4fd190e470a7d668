"""The recorded results the leaderboard's tests classify without a GPU (one folder per case, as a
run leaves an entry: meta.json, steps.tsv, the logs, tests.json, bench.json, ...), made when a
test needs them from a few base folders and a declared table of what each case changes, never
kept as copies.

  tests/leaderboard/results/base/<set>/   the base files: `fast` (a whole entry, ranked),
                                          `schema3` (its bench.json as the benchmark writes it
                                          now) and `ncu` (a profile that agrees with it)
  tests/leaderboard/results/changes.py    the table: per case, what it simulates and its edits

A case's folder is made in this order from its entry in the table (every key but `what` is
optional):
  what     what the case simulates (required; read by people, not by the maker)
  from     base sets, each one's files over the previous ones' (default: ["fast"])
  without  [file, ...]: files the entry does not have
  meta     {key: value}: meta.json's keys set to these values, the others kept in their order
  steps    [[step, exit code, seconds], ...]: the lines of steps.tsv
  tests    [["Suite.Test", outcome], ...]: the test cases that ran, tests.json made from them
           (a failure record for any outcome but pass and skipped; outcome None: none recorded)
  log      tests.log after the lines every run prints before its first test (the base's first
           three: the seed, the count of tests, the set-up)
  bench    changes to bench.json, in this order (ROWS: "SHAPE IMPL" for one row, or a role,
           "student" or "reference", for every row of it):
             times    {ROWS: median µs}: the figures derived from the median follow it
             slower   {ROWS: factor}: the median times factor, the derived figures following
             untimed  {ROWS: outcome}: the outcome of a kernel that was not timed, no figures
             set      {ROWS: {field: value}}: fields as given, nothing derived from them
             drop     [key, ...]: top-level keys removed
             rename   {old: new}: every row's field old written as new, last
             then     {the same changes}: a second document after the first, in the same
                      file: both written compact, one line each
  edit     {file: [[old text, new text, count], ...]}: each old text must be found count times
           (1 if not given), every one replaced
  files    {file: text}: a file as given, bytes exact (malformed ones included)
  append   {file: text}: text added at the end of the file
  twice    [file, ...]: the file written twice, the copy after a newline (a second document)

JSON files are written as the base ones are: one space of indent, no newline at the end.

  python3 -m wb_leaderboard.recorded DEST    makes every case in DEST (a folder that does not exist)
"""

import json
import os
import sys

from .atomic import new_folder_main, publish_files, read_files, read_literal
from .repository import REPO

RESULTS_DIR = os.path.join(REPO, "tests", "leaderboard", "results")
RECIPE_KEYS = (
    "what",
    "from",
    "without",
    "meta",
    "steps",
    "tests",
    "log",
    "bench",
    "edit",
    "files",
    "append",
    "twice",
)
BENCH_KEYS = ("times", "slower", "untimed", "set", "drop", "rename", "then")
# A row's figures derived from its median, as the recorded runs computed them: the spread
# (10th and 90th percentiles), bandwidth against the H100's DRAM (3350 GB/s as specified,
# 3700 GB/s as measured) and the speed-up over the reference row of the same shape.
TIMING_FIELDS = (
    "median_us",
    "p10_us",
    "p90_us",
    "samples",
    "hot_median_us",
    "gbps",
    "tflops",
    "roofline_spec_pct",
    "roofline_measured_pct",
    "vs_reference",
)
LOG_PREAMBLE_LINES = 3


class TableProblem(ValueError):
    """The table asks for something the base files cannot give."""


def load_table(path=None):
    """The table of changes: a Python literal (a dict), read as data, never run."""
    return read_literal(path or os.path.join(RESULTS_DIR, "changes.py"))


def read_base(base_dir, base_set):
    """{file name: text} of a base set."""
    folder = os.path.join(base_dir, base_set)
    if not os.path.isdir(folder):
        raise TableProblem("no base set %s in %s" % (base_set, base_dir))
    return read_files(folder)


def dump(doc):
    return json.dumps(doc, indent=1)


def rows_of(doc, key, where):
    """The rows of a results document that `key` names ("SHAPE IMPL", or a role)."""
    if " " in key:
        shape, impl = key.split(" ", 1)
        rows = [r for r in doc["results"] if r["shape"] == shape and r["impl"] == impl]
    else:
        rows = [r for r in doc["results"] if r["role"] == key]
    if not rows:
        raise TableProblem("%s: no row %r in bench.json" % (where, key))
    return rows


def timed(row, median, reference_us):
    """The row with its median and every figure derived from it."""
    row["median_us"] = median
    row["p10_us"] = median * 0.98
    row["p90_us"] = median * 1.03
    row["hot_median_us"] = median
    row["gbps"] = row["bytes"] / (median * 1e-6) / 1e9
    row["roofline_spec_pct"] = 100 * row["gbps"] / 3350
    row["roofline_measured_pct"] = row["bytes"] / (median * 1e3) / 3700 * 100
    row["vs_reference"] = reference_us / median


def bench_doc(doc, changes, where):
    """The results document with the table's changes."""
    unknown = sorted(set(changes) - set(BENCH_KEYS))
    if unknown:
        raise TableProblem(
            "%s: unknown bench key(s) %s (known: %s)" % (where, ", ".join(unknown), ", ".join(BENCH_KEYS))
        )
    reference = {r["shape"]: r["median_us"] for r in doc["results"] if r["role"] == "reference"}
    for key, median in changes.get("times", {}).items():
        for row in rows_of(doc, key, where):
            timed(row, median, reference[row["shape"]])
    for key, factor in changes.get("slower", {}).items():
        for row in rows_of(doc, key, where):
            timed(row, row["median_us"] * factor, reference[row["shape"]])
    for key, outcome in changes.get("untimed", {}).items():
        for row in rows_of(doc, key, where):
            for field in TIMING_FIELDS:
                row.pop(field, None)
            row["outcome"] = outcome
    for key, fields in changes.get("set", {}).items():
        for row in rows_of(doc, key, where):
            row.update(fields)
    for key in changes.get("drop", []):
        if key not in doc:
            raise TableProblem("%s: bench.json has no key %r to drop" % (where, key))
        del doc[key]
    for old, new in changes.get("rename", {}).items():
        for row in doc["results"]:
            row[new] = row.pop(old)
    return doc


def bench_file(text, changes, where):
    first = bench_doc(json.loads(text), changes, where)
    if "then" not in changes:
        return dump(first)
    second = bench_doc(json.loads(text), changes["then"], where + " (then)")
    return json.dumps(first) + "\n" + json.dumps(second) + "\n"


def tests_file(text, cases):
    """tests.json of the test cases that ran, in the shape of the base's (Google Test's JSON
    with the harness's outcome code per case)."""
    doc = json.loads(text)
    suites, failures = {}, 0
    for full_name, outcome in cases:
        suite, name = full_name.split(".", 1)
        case = {"name": name, "classname": suite, "status": "RUN"}
        case["result"] = "SKIPPED" if outcome == "skipped" else "COMPLETED"
        case["time"] = "0.003s"
        if outcome is not None:
            case["outcome"] = outcome
        if outcome not in (None, "pass", "skipped"):
            case["failures"] = [{"failure": "see the log", "type": ""}]
            failures += 1
        suites.setdefault(suite, []).append(case)
    doc["tests"] = len(cases)
    doc["failures"] = failures
    doc["testsuites"] = [{"name": s, "tests": len(c), "testsuite": c} for s, c in suites.items()]
    return dump(doc)


def edit(text, changes, where):
    for i, change in enumerate(changes, 1):
        old, new = change[0], change[1]
        want = change[2] if len(change) > 2 else 1
        n = text.count(old)
        if n != want:
            raise TableProblem(
                "%s: change %d: the text to replace is found %d times, not %d: %r" % (where, i, n, want, old[:60])
            )
        text = text.replace(old, new)
    return text


def case_files(table, case, base_dir=None):
    """{file name: text} of one case's folder, as the table makes it."""
    base_dir = base_dir or os.path.join(RESULTS_DIR, "base")
    recipe = table[case]
    unknown = sorted(set(recipe) - set(RECIPE_KEYS))
    if unknown:
        raise TableProblem("%s: unknown key(s) %s (known: %s)" % (case, ", ".join(unknown), ", ".join(RECIPE_KEYS)))
    if not recipe.get("what"):
        raise TableProblem("%s: no `what`: say what the case simulates" % case)
    files = {}
    for base_set in recipe.get("from", ["fast"]):
        files.update(read_base(base_dir, base_set))

    def has(name, key):
        if name not in files:
            raise TableProblem("%s: %s: a change to %s, which it does not have" % (case, key, name))

    if "meta" in recipe:
        has("meta.json", "meta")
        meta = json.loads(files["meta.json"])
        meta.update(recipe["meta"])
        files["meta.json"] = dump(meta)
    if "steps" in recipe:
        files["steps.tsv"] = "".join("%s\t%d\t%r\n" % (step, code, float(s)) for step, code, s in recipe["steps"])
    if "tests" in recipe:
        has("tests.json", "tests")
        files["tests.json"] = tests_file(files["tests.json"], recipe["tests"])
    if "log" in recipe:
        has("tests.log", "log")
        preamble = files["tests.log"].split("\n")[:LOG_PREAMBLE_LINES]
        files["tests.log"] = "\n".join(preamble) + "\n" + recipe["log"]
    if "bench" in recipe:
        has("bench.json", "bench")
        files["bench.json"] = bench_file(files["bench.json"], recipe["bench"], case)
    for name, changes in recipe.get("edit", {}).items():
        has(name, "edit")
        files[name] = edit(files[name], changes, "%s/%s" % (case, name))
    files.update(recipe.get("files", {}))
    for name, text in recipe.get("append", {}).items():
        has(name, "append")
        files[name] += text
    for name in recipe.get("twice", []):
        has(name, "twice")
        files[name] = files[name] + "\n" + files[name]
    for name in recipe.get("without", []):
        has(name, "without")
        del files[name]
    return files


def all_files(table=None, base_dir=None):
    """{(case, file): text} of every case."""
    table = table or load_table()
    return {(case, name): text for case in table for name, text in case_files(table, case, base_dir).items()}


def make_results(dest, table=None, base_dir=None):
    """Makes every case in the folder `dest` (which must not exist), whole or not at all."""
    return publish_files(dest, all_files(table, base_dir))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return new_folder_main("recorded", "DEST", 1, argv, make_results, (TableProblem, OSError))


if __name__ == "__main__":
    sys.exit(main())
