"""The leaderboard's vocabulary: why a submission is not ranked (the reasons, most serious
first), the harness's outcome codes and the reason each gives, and how a results file that a
submission's process wrote is read (one JSON document, nothing after it; which schema versions
of a results file are read is for scripts/lib/wb_results.py to say). Nothing here knows a
chapter; the wording of a program's messages is never read.
"""

import importlib.util
import json
import math
import os
import re

# The one reader of the workbook's results files, which says which schema versions of a
# benchmark's or a model tool's results are read: scripts/lib/wb_results.py of the repository
# this package lies in (tools/leaderboard/wb_leaderboard), on the teacher's machine and in the
# unpacked sources of a cluster job alike.
RESULTS_READER = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts", "lib", "wb_results.py")
)


def _results_reader():
    spec = importlib.util.spec_from_file_location("wb_results", RESULTS_READER)
    if spec is None or not os.path.isfile(RESULTS_READER):
        raise ImportError(
            "the results reader %s is missing: the leaderboard runs from a whole copy of the "
            "repository" % RESULTS_READER
        )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


wb_results = _results_reader()

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

CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def reason(kind, detail=""):
    return {"kind": kind, "label": REASON_LABEL[kind], "detail": detail}


def read_text(path, limit=4 << 20):
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
        return data.decode("utf-8", errors="replace")
    except OSError:
        return None


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


def num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def pos(v):
    v = num(v)
    return v if v is not None and v > 0 else None
