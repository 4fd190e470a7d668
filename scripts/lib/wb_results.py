"""The one reader of the workbook's results files (standard library only).

Every program that measures something writes one results file, in the schema of
harness/report/results.schema.json (schema_version 3, written through harness/report/results.h):

  kind "benchmark"  a chapter's benchmark (chNN_bench): Google Benchmark's JSON ("context",
                    "benchmarks") with the workbook's context (chapter, device, spec_ceilings,
                    measured_ceilings, commit, seed, timing) and one row per case in "results"
  kind "tuning"     an autotuner (chNN_tune): one row per point of the sweep
  kind "model"      a model tool (gpt2): "tool" and one entry per set of kernels in "runs"

Rows of "results": op, shape, impl, role, outcome (a code: pass, wrong, not_implemented, ...)
and, when timed, median_us, cv_pct, samples, gbps, tflops, roofline_spec_pct,
roofline_measured_pct, vs_reference, throttled.

Older files still read: benchmark results of schema 2 (the same rows, at the top level, without
program and kind) and of schema 1 (no schema_version; rows with `verdict` instead of `outcome`),
and the gpt2 tool's schema 1 ({tool, gpu, runs}). `load` and `parse` give every document the
current shape: kind and program filled in, every row with both `outcome` and `verdict`.

The plotting scripts, scripts/gpu-suite.sh, scripts/lib/profile_tool.py and the leaderboard
read results through this module; `validate` checks a document against the JSON Schema.
"""
import json
import os
import re
import sys

SCHEMA_VERSION = 3
SCHEMA_PATH = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "harness", "report", "results.schema.json"
)
KINDS = ("benchmark", "tuning", "model")
# The versions each kind is read in. A fresh run writes SCHEMA_VERSION; schema 2 benchmark rows
# are the same rows, so a program of the previous version is still read.
READABLE = {"benchmark": (2, 3), "tuning": (3,), "model": (1, 3)}

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


# --- reading --------------------------------------------------------------------------------


def kind_of(doc):
    """benchmark, tuning or model: the `kind` a document names, or the one its content says
    (files before schema 3 had no kind)."""
    k = doc.get("kind")
    if isinstance(k, str):
        return k
    return "model" if "runs" in doc and "results" not in doc else "benchmark"


def version_of(doc):
    """The document's schema_version; files of schema 1 of the benchmark had none."""
    v = doc.get("schema_version", 1 if kind_of(doc) == "benchmark" else None)
    return v if isinstance(v, int) and not isinstance(v, bool) else v


def unreadable(doc, kind=None, versions=None):
    """Why `doc` is not a results document of `kind` (any kind when None) in one of
    `versions` (default: every version this module reads for that kind), or None."""
    if not isinstance(doc, dict):
        return "is not a JSON object"
    k = kind_of(doc)
    if k not in KINDS:
        return "has kind %s, not one of %s" % (json.dumps(k)[:40], ", ".join(KINDS))
    if kind is not None and k != kind:
        return "is a %s results file, not a %s one" % (k, kind)
    allowed = tuple(versions) if versions is not None else READABLE[k]
    v = doc.get("schema_version")
    if v not in allowed and not (v is None and 1 in allowed and k == "benchmark"):
        return "has schema_version %s, not %s" % (json.dumps(v)[:20], " or ".join(str(a) for a in allowed))
    return None


def _verdict(outcome):
    return str(outcome).replace("_", " ")


def upgrade(doc, where="results"):
    """`doc` (already parsed) in the current shape, or ResultsError saying why it is not a
    results file. The document is changed in place and returned."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{where} is JSON but not a results file (expected an object at the top)")
    k = kind_of(doc)
    if k == "model":
        if not isinstance(doc.get("runs"), list):
            raise ResultsError(f"{where} is not a results file: a model run with no 'runs' list")
        doc.setdefault("kind", "model")
        doc.setdefault("program", doc.get("tool") or "model")
        if "device" not in doc and isinstance(doc.get("gpu"), str):
            doc["device"] = {"name": doc["gpu"]}
        return doc
    missing = [key for key in ("chapter", "results") if key not in doc]
    if k == "benchmark" and "spec_ceilings" not in doc and "measured_ceilings" not in doc:
        missing.append("spec_ceilings or measured_ceilings")
    if missing:
        raise ResultsError(f"{where} is not a benchmark results file: it has no {', '.join(missing)}")
    if not isinstance(doc["results"], list):
        raise ResultsError(f"{where}: 'results' is not a list")
    doc.setdefault("kind", k)
    doc.setdefault("program", f"{doc['chapter']}_bench")
    for i, r in enumerate(doc["results"]):
        if not isinstance(r, dict) or not all(key in r for key in ("op", "shape", "impl", "role")):
            raise ResultsError(f"{where}: results[{i}] lacks op, shape, impl or role")
        if "outcome" in r and "verdict" not in r:
            r["verdict"] = _verdict(r["outcome"])
        elif "verdict" in r and "outcome" not in r:
            r["outcome"] = str(r["verdict"]).replace(" ", "_")
    return doc


def parse(text, where="results"):
    """The results document in `text` (current shape), or ResultsError naming the problem."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ResultsError(
            f"{where} does not parse as JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "was the program interrupted while writing it?"
        )
    return upgrade(doc, where)


def load(path):
    """The results file at `path` (current shape, with `_path` set), or ResultsError with a
    message that names the problem."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        raise ResultsError(f"{path}: no such file")
    except OSError as e:
        raise ResultsError(f"{path}: cannot read it ({e.strerror})")
    doc = parse(text, path)
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


# --- rows -----------------------------------------------------------------------------------


def rows(doc):
    """The rows of a benchmark or tuning document (a model document has none)."""
    return [r for r in doc.get("results") or [] if isinstance(r, dict)]


def find_row(doc, impl, op=None, shape=None):
    """The first row of `impl` (and `op`, `shape` when given), or None."""
    for r in rows(doc):
        if r.get("impl") == impl and (op is None or r.get("op") == op) and (shape is None or r.get("shape") == shape):
            return r
    return None


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
    size = {
        s: max(float(r.get("bytes") or 0) for r in doc["results"] if r["op"] == op and r["shape"] == s) for s in shapes
    }
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


# --- the JSON Schema ------------------------------------------------------------------------


def schema():
    with open(SCHEMA_PATH) as f:
        return json.load(f)


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def validate(doc, sch=None):
    """The places where `doc` breaks the JSON Schema (a list of "path: problem"; empty when it
    conforms). A small validator of the keywords results.schema.json uses: type, const, enum,
    required, properties, items, $ref, allOf, if/then, minimum, exclusiveMinimum, minLength,
    pattern, dependentRequired."""
    root = sch if sch is not None else schema()
    problems = []

    def resolve(ref):
        if not ref.startswith("#/"):
            raise ValueError("only local references are supported: " + ref)
        node = root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def check(v, s, path, out):
        if "$ref" in s:
            check(v, resolve(s["$ref"]), path, out)
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(_TYPES[t](v) for t in types):
                out.append(f"{path}: {json.dumps(v)[:40]} is not {' or '.join(types)}")
                return
        if "const" in s and v != s["const"]:
            out.append(f"{path}: {json.dumps(v)[:40]} is not {json.dumps(s['const'])}")
        if "enum" in s and v not in s["enum"]:
            out.append(f"{path}: {json.dumps(v)[:40]} is not one of {', '.join(map(json.dumps, s['enum']))}")
        if _TYPES["number"](v):
            if "minimum" in s and v < s["minimum"]:
                out.append(f"{path}: {v} is below {s['minimum']}")
            if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
                out.append(f"{path}: {v} is not above {s['exclusiveMinimum']}")
        if isinstance(v, str):
            if "minLength" in s and len(v) < s["minLength"]:
                out.append(f"{path}: shorter than {s['minLength']}")
            if "pattern" in s and not re.search(s["pattern"], v):
                out.append(f"{path}: {json.dumps(v)[:40]} does not match {s['pattern']}")
        if isinstance(v, dict):
            for key in s.get("required", []):
                if key not in v:
                    out.append(f"{path}: no '{key}'")
            for key, sub in s.get("properties", {}).items():
                if key in v:
                    check(v[key], sub, f"{path}.{key}", out)
            for key, needs in s.get("dependentRequired", {}).items():
                if key in v:
                    out.extend(f"{path}: has '{key}' but no '{n}'" for n in needs if n not in v)
        if isinstance(v, list) and "items" in s:
            for i, item in enumerate(v):
                check(item, s["items"], f"{path}[{i}]", out)
        for sub in s.get("allOf", []):
            check(v, sub, path, out)
        if "if" in s:
            trial = []
            check(v, s["if"], path, trial)
            if not trial and "then" in s:
                check(v, s["then"], path, out)
            elif trial and "else" in s:
                check(v, s["else"], path, out)

    check(doc, root, "$", problems)
    return problems


# --- plotting -------------------------------------------------------------------------------


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
    if (
        os.access(system, os.X_OK)
        and not os.environ.get("WORKBOOK_PLOT_REEXEC")
        and os.path.realpath(sys.executable) != os.path.realpath(system)
    ):
        os.environ["WORKBOOK_PLOT_REEXEC"] = "1"
        os.execv(system, [system] + sys.argv)
    print(
        f"{prog}: matplotlib is not installed for {sys.executable}. Install it with scripts/install-deps.sh "
        "(Debian/Ubuntu package python3-matplotlib) or `python3 -m pip install matplotlib`.",
        file=sys.stderr,
    )
    sys.exit(3)


# --- summaries --------------------------------------------------------------------------


def summary_lines(doc):
    """One line per timed row: op, shape, impl, median, GB/s, TFLOP/s, % of the measured
    roofline, x reference (what scripts/gpu-suite.sh prints at the end)."""
    out = []
    for r in rows(doc):
        if not measured(r):
            continue
        out.append(
            "  %s  %s  %s  %dus  %d GB/s  %.2f TF  %.1f%%  x%.2f"
            % (
                r["op"],
                r["shape"],
                r["impl"],
                int(r["median_us"]),
                int(num(r, "gbps")),
                num(r, "tflops"),
                num(r, "roofline_measured_pct"),
                num(r, "vs_reference"),
            )
        )
    return out


def run_to_run(first, second, min_us=100.0):
    """The second run's median against the first's, per row timed in both at min_us or more:
    lines "op shape impl: +1.2%"."""
    later = {(r["op"], r["shape"], r["impl"]): r for r in rows(second) if measured(r)}
    out = []
    for r in rows(first):
        s = later.get((r["op"], r["shape"], r["impl"]))
        if measured(r) and s and r["median_us"] >= min_us:
            out.append(
                "    %s %s %s: %+.1f%%"
                % (r["op"], r["shape"], r["impl"], 100.0 * (s["median_us"] / r["median_us"] - 1))
            )
    return out


# --- command line ---------------------------------------------------------------------------

USAGE = """usage: wb_results.py check [--strict] RESULTS.json ...   each file's kind and rows, or what is wrong
                                                  (--strict: also against the JSON Schema)
       wb_results.py summary RESULTS.json [SECOND.json]  the timed rows; with a second run of the same
                                                  program, the run-to-run difference of the medians"""


def main(argv):
    if not argv or argv[0] not in ("check", "summary"):
        print(USAGE, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    strict = "--strict" in args
    paths = [a for a in args if a != "--strict"]
    if not paths or (cmd == "summary" and len(paths) > 2):
        print(USAGE, file=sys.stderr)
        return 2
    docs, status = [], 0
    for p in paths:
        try:
            doc = load(p)
        except ResultsError as e:
            print(f"wb_results: {e}", file=sys.stderr)
            status = 2
            continue
        doc.pop("_path", None)
        problems = validate(doc) if strict else []
        if problems:
            print(f"wb_results: {p} does not conform to results.schema.json:", file=sys.stderr)
            for problem in problems[:20]:
                print(f"  {problem}", file=sys.stderr)
            status = 2
            continue
        docs.append(doc)
        if cmd == "check":
            n = len(doc.get("results") or doc.get("runs") or [])
            print(
                f"{p}: {doc['kind']} results of {doc['program']}, schema_version {doc.get('schema_version', 1)}, "
                f"{n} {'runs' if doc['kind'] == 'model' else 'rows'}"
            )
    if cmd == "summary" and status == 0:
        print("\n".join(summary_lines(docs[0])))
        if len(docs) == 2:
            print("  run-to-run difference of the median (second vs first run), shapes >= 100 us:")
            print("\n".join(run_to_run(docs[0], docs[1])))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
