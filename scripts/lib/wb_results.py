"""Reading the benchmark's results files, for the plotting scripts (standard library only).

A results file (results/chNN-<date>.json, written by every chapter's benchmark) holds:
  schema_version (2; absent in the older files of schema 1), chapter, title, date, device{name, uuid, ...},
  spec_ceilings{dram_gbps, fp32_tflops, fp16_tflops, bf16_tflops, int8_tops},
  measured_ceilings{copy_gbps, fp32_tflops, fp16_tflops, bf16_tflops, int8_tops},
  results[]{op, shape, impl, role, bytes, flops, peak, outcome, median_us, gbps, tflops,
            roofline_spec_pct, roofline_measured_pct, vs_reference, throttled}
A row's `outcome` is a code (pass, wrong, not_implemented, outside_stream, ...); schema 1 rows
have `verdict` (pass, wrong, not implemented, ...) instead. `load` gives every row both.
"""
import json
import os
import sys

# The compute ceiling each op's FLOPs run on, by the `peak` field of a result.
PEAK_KEYS = {
    "fp32": ("fp32_tflops", "FP32", "TFLOP/s"),
    "fp16-tensor": ("fp16_tflops", "FP16 tensor", "TFLOP/s"),
    "bf16-tensor": ("bf16_tflops", "BF16 tensor", "TFLOP/s"),
    "int8-tensor": ("int8_tops", "INT8 tensor", "TOP/s"),
}
ROLE_ORDER = {"reference": 0, "solution": 1, "student": 2}


class ResultsError(Exception):
    pass


def load(path):
    """The parsed results file, or ResultsError with a message that names the problem."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file")
    except OSError as e:
        raise ResultsError(f"{path}: cannot read it ({e.strerror})")
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path} does not parse as JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
                           "was the benchmark interrupted while writing it?")
    if not isinstance(doc, dict):
        raise ResultsError(f"{path} is JSON but not a results file (expected an object at the top)")
    missing = [k for k in ("chapter", "results") if k not in doc]
    if "spec_ceilings" not in doc and "measured_ceilings" not in doc:
        missing.append("spec_ceilings or measured_ceilings")
    if missing:
        raise ResultsError(f"{path} is not a benchmark results file: it has no {', '.join(missing)}")
    if not isinstance(doc["results"], list):
        raise ResultsError(f"{path}: 'results' is not a list")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not all(k in r for k in ("op", "shape", "impl", "role")):
            raise ResultsError(f"{path}: results[{i}] lacks op, shape, impl or role")
        if "outcome" in r and "verdict" not in r:
            r["verdict"] = str(r["outcome"]).replace("_", " ")
        elif "verdict" in r and "outcome" not in r:
            r["outcome"] = str(r["verdict"]).replace(" ", "_")
    doc["_path"] = path
    return doc


def load_all(paths, prog):
    docs = []
    for p in paths:
        try:
            docs.append(load(p))
        except ResultsError as e:
            print(f"{prog}: {e}", file=sys.stderr)
            sys.exit(2)
    return docs


def measured(r):
    """True when the result has a time (the kernel passed its check and was timed)."""
    return isinstance(r.get("median_us"), (int, float)) and r["median_us"] > 0


def num(d, key):
    v = (d or {}).get(key)
    return float(v) if isinstance(v, (int, float)) and v > 0 else 0.0


def ceilings(doc, peak):
    """(spec_gbps, spec_compute, measured_gbps, measured_compute) for a peak type; 0 = unknown."""
    key = PEAK_KEYS.get(peak, PEAK_KEYS["fp32"])[0]
    spec, meas = doc.get("spec_ceilings") or {}, doc.get("measured_ceilings") or {}
    return num(spec, "dram_gbps"), num(spec, key), num(meas, "copy_gbps") or num(meas, "dram_gbps"), num(meas, key)


def ops_in_order(doc):
    return list(dict.fromkeys(r["op"] for r in doc["results"]))


def largest_shape(doc, op):
    """The op's shape with the most bytes (the first listed on a tie)."""
    shapes = list(dict.fromkeys(r["shape"] for r in doc["results"] if r["op"] == op))
    size = {s: max(float(r.get("bytes") or 0) for r in doc["results"] if r["op"] == op and r["shape"] == s)
            for s in shapes}
    return max(shapes, key=lambda s: (size[s], -shapes.index(s)))


def pick_shape(doc, op, wanted):
    """`wanted` (exact, or a unique part of the name) among the op's shapes, else the largest."""
    shapes = list(dict.fromkeys(r["shape"] for r in doc["results"] if r["op"] == op))
    if not wanted:
        return largest_shape(doc, op)
    if wanted in shapes:
        return wanted
    hits = [s for s in shapes if wanted in s]
    return hits[0] if len(hits) == 1 else None


def need_matplotlib(prog):
    """Imports matplotlib (Agg backend). The python3 first on PATH may lack it while the
    system's /usr/bin/python3 (Debian's python3-matplotlib) has it: then re-run with that."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        return matplotlib
    except ImportError:
        pass
    system = "/usr/bin/python3"
    if (os.access(system, os.X_OK) and not os.environ.get("WORKBOOK_PLOT_REEXEC")
            and os.path.realpath(sys.executable) != os.path.realpath(system)):
        os.environ["WORKBOOK_PLOT_REEXEC"] = "1"
        os.execv(system, [system] + sys.argv)
    print(f"{prog}: matplotlib is not installed for {sys.executable}. Install it with scripts/install-deps.sh "
          "(Debian/Ubuntu package python3-matplotlib) or `python3 -m pip install matplotlib`.", file=sys.stderr)
    sys.exit(3)
