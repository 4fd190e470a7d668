"""The Nsight Compute cross-check: the student row that claims the most over the reference is
run once more under ncu, and its kernels' time per call (the harness's own kernels left out)
is compared with the median the benchmark reported. docs/leaderboard.md, "Nsight Compute".
"""

import csv
import json
import os
import re

from .outcomes import CONTROL_CHARS, parse_one_document, pos, read_text, reason, wb_results

NCU_MIN_RATIO = 0.5  # reported median / kernel time per call (ncu) below this is rejected
HARNESS_KERNEL_PREFIXES = ("_ZN2wb", "_ZNK2wb", "_ZZN2wb")  # mangled names of the harness's own kernels
NCU_METRIC_ARGS = [
    "--clock-control",
    "none",
    "--print-kernel-base",
    "mangled",
    "--csv",
    "--page",
    "raw",
    "--metrics",
    "gpu__time_duration.sum",
]


def ncu_target(bench_text):
    """The student row to re-measure with ncu: the one that claims the most over the
    reference. None when there is no timed student row."""
    doc, _ = parse_one_document(bench_text)
    if wb_results.unreadable(doc, "benchmark"):
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
    return {
        "op": str(r.get("op")),
        "shape": str(r.get("shape")),
        "impl": str(r.get("impl")),
        "median_us": pos(r.get("median_us")),
    }


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
    scale = {
        "nsecond": 1.0,
        "ns": 1.0,
        "usecond": 1e3,
        "us": 1e3,
        "msecond": 1e6,
        "ms": 1e6,
        "second": 1e9,
        "s": 1e9,
        "": 1.0,
    }.get(unit.strip(), None)
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
    reported = next(
        (
            s["student_us"]
            for s in shapes
            if (s["op"], s["shape"], s["impl"]) == (target.get("op"), target.get("shape"), target.get("impl"))
        ),
        None,
    )
    if reported is None:
        return None, "ncu check: the row %s is not among the timed rows" % where
    per_call_us = per_call_ns / 1e3
    if reported and reported < NCU_MIN_RATIO * per_call_us:
        return (
            reason(
                "implausible",
                "%s: the reported median is %.4g us, but its kernels run %.4g us per call "
                "under ncu" % (where, reported, per_call_us),
            ),
            "ncu: %s kernels %.4g us per call" % (where, per_call_us),
        )
    return None, "ncu: %s kernels %.4g us per call, reported %.4g us" % (where, per_call_us, reported)


def ncu_selection(entry):
    """The benchmark's own selection of the row to re-measure (a list of arguments), after
    writing it to the entry's ncu-target.json; None when there is no such row. The op by its
    full name, the shape by its exact text (an exact text selects that shape alone), the
    variant by name. The row comes from a file the submission's process wrote: a value with a
    line break or a tab (another argument smuggled in) is refused."""
    t = ncu_target(read_text(os.path.join(entry, "bench.json")))
    if t is None:
        return None
    with open(os.path.join(entry, "ncu-target.json"), "w") as f:
        json.dump(t, f)
    if any(CONTROL_CHARS.search(t[k]) for k in ("op", "shape", "impl")):
        return None
    return ["--op=%s" % t["op"], "--shape=%s" % t["shape"], "--impl=%s" % t["impl"]]
