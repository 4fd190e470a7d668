"""The signed history: history.jsonl is written by the leaderboard only, one record per line,
only ever appended to (under a lock). Each record carries
  prev: the SHA-256 of the line before it in the file (as written, "" for the first), and
  mac:  an HMAC-SHA256 of the rest of the record under the teacher's key,
so a line appended, edited, copied from elsewhere or moved by anyone without the key does not
verify, and neither does the next genuine line after a line removed or inserted. The key lives
in a file outside the work and output folders (default ~/.config/kernel-workbook/leaderboard.key,
created on first use, mode 0600), hidden from the sandbox. The date is set here, when the
record is written. Every line that fails is reported with its number and skipped, never
rewritten.
"""

import datetime
import fcntl
import hashlib
import hmac
import json
import os
import re
import sys

from .classify import SCHEMA, classify_entry
from .crosscheck import usable_baseline
from .outcomes import REASON_LABEL, num, parse_one_document, pos, read_text
from .submissions import SAFE_ID_RE

RECORD_FIELDS = {
    "schema": int,
    "chapter": str,
    "student": str,
    "student_id": str,
    "source_hash": str,
    "files": list,
    "ignored": list,
    "missing": list,
    "review": list,
    "status": str,
    "reasons": list,
    "notes": list,
    "score": dict,
    "shapes": list,
    "steps": dict,
    "seed": dict,
    "run_id": str,
    "date": str,
    "gpu": dict,
    "sandbox": str,
    "commit": str,
    "logs": str,
    "prev": str,
    "mac": str,
}
SANDBOXES = ("bubblewrap", "none")
DATE_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HEX64_RE = re.compile(r"^[0-9a-f]{64}$")


class KeyProblem(Exception):
    """The history key cannot be used (missing, unreadable, readable by others, too short)."""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_key_path():
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "kernel-workbook", "leaderboard.key")


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
        raise KeyProblem(
            "cannot read the history key %s (%s); it is made by the first run, or give --key" % (path, e.strerror)
        )
    if st.st_mode & 0o077:
        raise KeyProblem(
            "the history key %s can be read by others (mode %o): chmod 600 it" % (path, st.st_mode & 0o777)
        )
    if len(key) < 32:
        raise KeyProblem("the history key %s is too short" % path)
    return key


def canonical(rec):
    return json.dumps(
        {k: v for k, v in rec.items() if k != "mac"}, sort_keys=True, ensure_ascii=True, separators=(",", ":")
    ).encode()


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
            x
            for x in (
                "unexpected: " + ", ".join(extra)[:80] if extra else "",
                "missing: " + ", ".join(missing)[:80] if missing else "",
            )
            if x
        )
    for k, t in RECORD_FIELDS.items():
        if not isinstance(rec[k], t) or (t is int and isinstance(rec[k], bool)):
            return "field '%s' is not a %s" % (k, t.__name__)
    if not re.match(r"^ch\d\d$", rec["chapter"]) or not SAFE_ID_RE.match(rec["student_id"]):
        return "bad chapter or student id"
    if not DATE_RE.match(rec["date"]) or not RUN_ID_RE.match(rec["run_id"]):
        return "bad date or run id"
    if rec["sandbox"] not in SANDBOXES or rec["status"] not in ("ranked", "not ranked"):
        return "bad sandbox or status"
    if (
        not isinstance(rec["gpu"].get("name"), str)
        or not isinstance(rec["gpu"].get("uuid"), str)
        or len(rec["gpu"]) != 2
    ):
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


def read_trusted(path):
    """The baseline's results (the leaderboard's own run of the repository's benchmark, or of
    its decoder tool), or None when there are none usable: a benchmark or model results file
    in a version scripts/lib/wb_results.py reads."""
    if not path:
        return None
    doc, _ = parse_one_document(read_text(path))
    return usable_baseline(doc)


def record_entry(history, key, entry, run_id, gpu_name, gpu_uuid, sandbox, commit, logs, trusted=None):
    """Classifies one entry folder, signs the record into the history and returns the line
    that says what became of it ("ranked: ..." or "not ranked: ...")."""
    if sandbox not in SANDBOXES:
        raise ValueError("the sandbox must be one of %s" % ", ".join(SANDBOXES))
    rec = classify_entry(entry, trusted=trusted)
    rec.update(
        {
            "run_id": run_id,
            "date": utc_now(),
            "gpu": {"name": gpu_name or "unknown GPU", "uuid": gpu_uuid},
            "sandbox": sandbox,
            "commit": commit,
            "logs": logs,
        }
    )
    append_history(history, rec, key)
    return verdict(rec)


def verdict(rec):
    """One line: what became of a record."""
    r = rec["reasons"][0] if rec["reasons"] else None
    if r:
        return "not ranked: %s%s" % (r["label"], (": " + r["detail"]) if r["detail"] else "")
    s = rec["score"]
    return "ranked: %.3fx reference (geometric mean over %d shapes), %.1f%% of the measured roofline" % (
        s["geomean_vs_reference"],
        s["shapes"],
        s["roofline_measured_pct"] or 0,
    )


def verify(history, key):
    """Checks every line of a history; prints the summary. True when every line verifies."""
    problems = []
    records = load_history(history, key, problems)
    print("%s: %d record(s) verify, %d line(s) skipped" % (history, len(records), len(problems)))
    return not problems
