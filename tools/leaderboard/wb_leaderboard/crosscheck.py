"""The benchmark's results of a submission, read and cross-checked: the outcome code of every
row, the library reference of each op and shape (the first reference row), the score's ratios,
and the leaderboard's own checks of every passing row against the baseline (the repository's
programs, run by the leaderboard on the same GPU): the measured ceilings, the bytes and FLOPs
the chapter declares, numbers that follow from the time, reference times close to the
baseline's. A decoder tool's whole-model results (chapter 9's gpt2) are scored the same way.
docs/leaderboard.md, "Cross-checks of every ranked row" and "Every chapter's score".
"""

import json

from .outcomes import CONTROL_CHARS, OUTCOME_KIND, num, parse_one_document, pos, reason, timed_out, wb_results

# The cross-checks of a benchmark row (docs/leaderboard.md, "Cross-checks").
CEILING_SLACK = 1.05  # a row may exceed a measured ceiling by this factor, no more
REFERENCE_BAND = (0.75, 1.35)  # the run's reference time / the leaderboard's own, allowed
FIELD_TOLERANCE = 0.02  # a row's derived numbers (GB/s, TFLOP/s, x ref) vs its time and bytes

COMPUTE_KEYS = {
    "fp32": "fp32_tflops",
    "fp16-tensor": "fp16_tflops",
    "bf16-tensor": "bf16_tflops",
    "int8-tensor": "int8_tops",
}


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
    """A schema 1 results file (rows with `verdict`, no schema_version) as rows with an `outcome`
    code; old history only."""
    names = {
        "pass": "pass",
        "implausible": "implausible",
        "wrong": "wrong",
        "fault": "fault",
        "launch error": "launch_error",
        "not implemented": "not_implemented",
    }
    rows = []
    for r in doc.get("results", []):
        if isinstance(r, dict):
            r = dict(r)
            r["outcome"] = names.get(r.pop("verdict", None), "unknown")
            rows.append(r)
    return rows


def usable_baseline(doc):
    """`doc` when it can serve as a baseline (the leaderboard's own run of the repository's
    benchmark or decoder tool): a benchmark or model results file in a version
    scripts/lib/wb_results.py reads; None otherwise."""
    if wb_results.unreadable(doc, "benchmark") and wb_results.unreadable(doc, "model"):
        return None
    return doc


def check_row(r, trusted_row, copy_gbps, compute):
    """Why a student row's numbers cannot be right, or None."""
    us, nbytes, flops = pos(r.get("median_us")), pos(r.get("bytes")), pos(r.get("flops"))
    if trusted_row is not None:
        tb, tf = pos(trusted_row.get("bytes")), pos(trusted_row.get("flops"))
        if (tb and nbytes and abs(nbytes - tb) > 1e-6 * tb) or (tf and flops and abs(flops - tf) > 1e-6 * tf):
            return "declares %s bytes and %s FLOPs per call, the chapter %s and %s" % (
                r.get("bytes"),
                r.get("flops"),
                trusted_row.get("bytes"),
                trusted_row.get("flops"),
            )
        nbytes, flops = tb or nbytes, tf or flops
    if nbytes and copy_gbps:
        gbps = nbytes / (us * 1e3)
        if gbps > copy_gbps * CEILING_SLACK:
            return "%.0f GB/s in %.3g us, %.0f%% of the measured copy ceiling (%.0f GB/s)" % (
                gbps,
                us,
                100 * gbps / copy_gbps,
                copy_gbps,
            )
    peak = compute.get(r.get("peak") if r.get("peak") in compute else "fp32")
    if flops and peak:
        rate = flops / (us * 1e6)
        if rate > peak * CEILING_SLACK:
            return "%.1f TFLOP/s in %.3g us, above the compute ceiling (%.1f)" % (rate, us, peak)
    for key, want in (
        ("gbps", nbytes / (us * 1e3) if nbytes else None),
        ("tflops", flops / (us * 1e6) if flops else None),
    ):
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


def classify_bench(rc, bench_text, trusted=None, legacy=False):
    """Reasons, per-shape metrics and notes from the results file of a chapter's benchmark
    step (text; None if it wrote none), cross-checked against `trusted`: the repository's own
    run of the same step, by the leaderboard, on the same GPU. Two kinds of results file are
    read, told apart by their content, never by the chapter: a benchmark's (a `results` list of
    rows) and a decoder tool's (a `tool` and a `runs` list; see classify_decoder). Which schema
    versions of each are read is scripts/lib/wb_results.py's `unreadable`."""
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
    if isinstance(doc, dict) and wb_results.kind_of(doc) == "model":
        return classify_decoder(rc, doc, trusted)
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        add("no-result", "the benchmark's results file has no 'results' list")
        return reasons, shapes, notes
    problem = wb_results.unreadable(doc, "benchmark")
    if problem is None:
        rows = [r for r in doc["results"] if isinstance(r, dict)]
    elif doc.get("schema_version") is None and legacy:
        rows = legacy_rows(doc)
    else:
        add("no-result", "the benchmark's results file %s (an old harness?)" % problem)
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
            add(
                "implausible",
                "the run reports a measured copy ceiling of %.0f GB/s; the leaderboard measured %.0f"
                % (own_copy, copy_gbps),
            )
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
            add(
                "implausible",
                "%s %s [%s]: the reference took %.4g us in this run and %.4g us when the leaderboard "
                "timed it alone: the run's times are not consistent"
                % (r.get("op"), r.get("shape"), r.get("impl"), us, tus),
            )
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
        shapes.append(
            {
                "op": r.get("op"),
                "shape": r.get("shape"),
                "impl": r.get("impl"),
                "student_us": us,
                "reference_us": ref,
                "vs_reference": (ref / us) if ref else None,
                "roofline_measured_pct": (100.0 * nbytes / (us * 1e3) / copy_gbps)
                if nbytes and copy_gbps
                else num(r.get("roofline_measured_pct")),
                "roofline_spec_pct": num(r.get("roofline_spec_pct")),
            }
        )
    if unscored and len(shapes) > unscored:
        notes.append("%d timed row(s) have no library reference on their shape: shown, not in the score" % unscored)
    if not reasons and not any(s["vs_reference"] for s in shapes):
        add("no-result", "no shape has a reference time to compare with")
    if not reasons and rc not in (0, None):
        add("faulted" if rc >= 128 or rc < 0 else "no-result", "the benchmark exited with code %s" % rc)
    return reasons, shapes, notes


# A decoder tool (chapter 9's `gpt2 --json=FILE`) reports whole-model runs, one per set of
# kernels: {"schema_version": 3, "kind": "model", "tool": "gpt2", ..., "runs": [{"kernels":
# "library", "ttft_ms": X, "decode_tok_s": Y}, {"kernels": "student", ...}, ...]} (files of
# schema 1, with "gpu" instead of "kind" and "device", are read too). The score
# is the geometric mean of the student's decode rate over the library's and of the library's
# time to first token over the student's: two "shapes", each a ratio of times (a decode rate
# becomes the time per token), so it ranks like any other chapter.
DECODER_METRICS = (
    ("decode", "decode_tok_s", lambda v: 1e6 / v),  # us per generated token
    ("ttft", "ttft_ms", lambda v: 1e3 * v),
)  # us to the first token


def decoder_runs(doc):
    """({kernels: run}, problem): the runs of a decoder tool's results, or why they are not
    usable. Each run must have positive, finite numbers; a set of kernels run twice is
    ambiguous."""
    problem = wb_results.unreadable(doc, "model")
    if problem:
        return None, problem
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
                return (
                    [reason("no-result", "the %s run of the %s kernels has no valid %s" % (tool, k, field))],
                    shapes,
                    notes,
                )
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
            reasons.append(
                reason(
                    "implausible",
                    "%s %s [library]: %.4g in this run, %.4g when the leaderboard ran the "
                    "library alone: the run's numbers are not consistent" % (tool, field, runs["library"][field], tv),
                )
            )
            return reasons, [], notes
        shapes.append(
            {
                "op": tool,
                "shape": name,
                "impl": "student",
                "student_us": stu_us,
                "reference_us": lib_us,
                "vs_reference": lib_us / stu_us,
                "roofline_measured_pct": None,
                "roofline_spec_pct": None,
            }
        )
    if rc is not None and rc != 0:
        kind = "hung" if timed_out(rc) else ("faulted" if rc >= 128 or rc < 0 else "no-result")
        reasons.append(reason(kind, "the %s run exited with code %s" % (tool, rc)))
    return reasons, shapes, notes
