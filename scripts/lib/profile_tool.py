#!/usr/bin/env python3
"""Helpers of scripts/profile.sh (standard library only).

  profile_tool.py plan LIST.json [--op OP] [--shape S] [--student IMPL] [--solution IMPL]
      Reads the results file a benchmark wrote while only listing its cases, and prints
      shell assignments: which op and shape to profile, the learner's case and the
      solution ladder's first and best steps (the benchmark selects each by --op, --shape, --impl).

  profile_tool.py verdict RESULTS.json IMPL
      Prints the verdict of IMPL in a benchmark results file ("pass", "not implemented" ...).

  profile_tool.py table --side LABEL=CSV [--side LABEL=CSV ...] [--title TEXT]
      Reads Nsight Compute exports (ncu --import R --csv --page raw --print-units base) and
      prints them side by side, with a hint wherever the first side is far from the last.

  profile_tool.py metrics [--core]
      Prints the comma-separated metric list to collect.
"""
import argparse
import csv
import os
import re
import shlex
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wb_results  # noqa: E402  (the one reader of results files)

# --- the metrics ------------------------------------------------------------------------

CORE_METRICS = [
    "gpu__time_duration.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "l1tex__t_sector_hit_rate.pct",
    "lts__t_sector_hit_rate.pct",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
]
# How much of each 32-byte sector a global access uses (100% = perfectly coalesced, whatever
# the access width), and tensor-pipe activity: mma.sync (HMMA, Ampere and later) and wgmma
# (GMMA, Hopper). Not every GPU has all of them; profile.sh retries with the core list alone
# if ncu refuses one.
EFFICIENCY_METRICS = [
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
]
TENSOR_METRICS = [
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
]
OPTIONAL_METRICS = EFFICIENCY_METRICS + TENSOR_METRICS

TIME_TO_US = {
    "nsecond": 1e-3,
    "ns": 1e-3,
    "usecond": 1.0,
    "us": 1.0,
    "msecond": 1e3,
    "ms": 1e3,
    "second": 1e6,
    "s": 1e6,
}
BYTES = {
    "byte": 1,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "Tbyte": 1e12,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}


def fail(message, code=2):
    print(f"profile_tool: {message}", file=sys.stderr)
    sys.exit(code)


# --- plan ---------------------------------------------------------------------------------


def load_results(path):
    try:
        return wb_results.load(path)
    except wb_results.ResultsError as e:
        fail(str(e))


def cmd_plan(args):
    doc = load_results(args.list)
    rows = [r for r in doc["results"] if isinstance(r, dict) and "op" in r and "impl" in r]
    if not rows:
        fail(f"the benchmark listed no cases ({args.list})")
    ops = list(dict.fromkeys(r["op"] for r in rows))
    if args.op:
        if args.op not in ops:
            fail(f"no op '{args.op}' in this chapter's benchmark; ops: {', '.join(ops)}")
        op = args.op
    else:
        # The op with the longest solution ladder (first listed on a tie): the one the
        # chapter is about (ch02: the transpose, not the plain copy).
        def ladder_len(o):
            return len({r["impl"] for r in rows if r["op"] == o and r.get("role") == "solution"})

        op = max(ops, key=lambda o: (ladder_len(o), -ops.index(o)))
    op_rows = [r for r in rows if r["op"] == op]
    shapes = list(dict.fromkeys(r["shape"] for r in op_rows))
    if args.shape:
        if args.shape in shapes:
            shape = args.shape
        else:
            hits = [s for s in shapes if args.shape in s]
            if len(hits) != 1:
                fail(
                    f"shape '{args.shape}' {'is ambiguous' if hits else 'is not benchmarked'} for {op}; "
                    f"shapes: {'; '.join(shapes)}"
                )
            shape = hits[0]
    else:
        # The largest problem (most bytes; first listed on a tie): where the targets are set.
        size = {s: max(float(r.get("bytes") or 0) for r in op_rows if r["shape"] == s) for s in shapes}
        shape = max(shapes, key=lambda s: (size[s], -shapes.index(s)))
    cases = [r for r in op_rows if r["shape"] == shape]
    impls = [r["impl"] for r in cases]
    students = [r["impl"] for r in cases if r.get("role") == "student"]
    solutions = [r["impl"] for r in cases if r.get("role") == "solution"]
    if args.student:
        if args.student not in impls:
            fail(f"no case '{args.student}' for {op} {shape}; cases: {', '.join(impls)}")
        student = args.student
    else:
        student = "student" if "student" in students else (students[0] if students else "")
    # Compare like with like: "student/x2" against the solutions of the same exercise ("/x2").
    suffix = student.partition("/")[2]
    same = [s for s in solutions if s.partition("/")[2] == suffix] or solutions
    if args.solution:
        if args.solution not in impls:
            fail(f"no case '{args.solution}' for {op} {shape}; cases: {', '.join(impls)}")
        best = args.solution
    else:
        best = same[-1] if same else ""
    first = same[0] if same else ""
    if not best:
        fail(f"{op} {shape} has no solution case to compare with; cases: {', '.join(impls)}")
    out = {
        "op": op,
        "shape": shape,
        "student": student,
        "best": best,
        "first": first,
        "ops": " ".join(ops),
        "shapes": "; ".join(shapes),
    }
    for key, value in out.items():
        print(f"plan_{key}={shlex.quote(value)}")


def cmd_verdict(args):
    doc = load_results(args.results)
    for r in wb_results.rows(doc):
        verdict = r["verdict"]  # the outcome code in words: pass, not implemented, wrong ...
        if r.get("impl") == args.impl and verdict != "not run":
            print(verdict)
            return
    print("not run")


# --- table --------------------------------------------------------------------------------


def read_ncu_csv(path):
    """Kernels of an ncu raw-page CSV export: a list of {metric: (value, unit)}."""
    try:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    start = next((i for i, line in enumerate(lines) if '"Kernel Name"' in line or line.startswith("ID,")), None)
    if start is None:
        fail(
            f"{path} is not an Nsight Compute CSV export (no 'Kernel Name' column); "
            "was anything profiled? (see the ncu log next to it)"
        )
    reader = csv.reader(lines[start:])
    header = next(reader)
    units = {}
    kernels = []
    for row in reader:
        if len(row) != len(header):
            continue
        rec = dict(zip(header, row))
        if not rec.get("Kernel Name") and not rec.get("ID"):
            units = rec  # the units row
            continue
        kernels.append({k: (v, units.get(k, "")) for k, v in rec.items()})
    if not kernels:
        fail(f"{path} holds no profiled kernel")
    return kernels


def number(kernel, metric, scale=None):
    if metric not in kernel:
        return None
    text, unit = kernel[metric]
    text = text.strip().replace(",", "")
    if text in ("", "n/a", "N/A"):
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    if scale is not None:
        value *= scale.get(unit, 1.0)
    return value


def short_kernel(name, width=40):
    name = re.sub(r"^void ", "", name.strip())
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"^(?:[A-Za-z_][A-Za-z0-9_]*::)+", "", name)  # ch02::solution::k -> k
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # drop the argument list
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                name = name[:i]
                break
    return name if len(name) <= width else name[: width - 3] + "..."


def summarize(kernels):
    """The kernel that took longest (the one to look at) and a note on the others."""
    timed = sorted(kernels, key=lambda k: number(k, "gpu__time_duration.sum", TIME_TO_US) or 0, reverse=True)
    main = timed[0]
    total = sum(number(k, "gpu__time_duration.sum", TIME_TO_US) or 0 for k in kernels)
    return main, len(kernels) - 1, total


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def build_rows(k):
    def n(m, scale=None):
        return number(k, m, scale)

    def add(*ms, scale=None):
        vals = [n(m, scale) for m in ms]
        vals = [v for v in vals if v is not None]
        return sum(vals) if vals else None

    tensor = [v for v in (n(m) for m in TENSOR_METRICS) if v is not None]
    grid = k.get("Grid Size", ("", ""))[0] or "?"
    block = k.get("Block Size", ("", ""))[0] or "?"
    return {
        "kernel": short_kernel(k.get("Kernel Name", ("?", ""))[0]),
        "launch": f"{grid} x {block}".replace(" ", "").replace("x", " x "),
        "duration": n("gpu__time_duration.sum", TIME_TO_US),
        "dram": n("dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "sm": n("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "occupancy": n("sm__warps_active.avg.pct_of_peak_sustained_active"),
        "occupancy_max": n("sm__maximum_warps_per_active_cycle_pct"),
        "registers": n("launch__registers_per_thread"),
        "local": add(
            "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum", scale=BYTES
        ),
        "smem": add("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic", scale=BYTES),
        "l1_hit": n("l1tex__t_sector_hit_rate.pct"),
        "l2_hit": n("lts__t_sector_hit_rate.pct"),
        "ld_spr": ratio(
            n("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), n("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
        ),
        "st_spr": ratio(
            n("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"), n("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum")
        ),
        "ld_use": n(EFFICIENCY_METRICS[0]),
        "st_use": n(EFFICIENCY_METRICS[1]),
        "conflicts": add(
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
        ),
        "tensor": max(tensor) if tensor else None,
    }


# (key, label, format). The hint rules below refer to the keys.
ROWS = [
    ("kernel", "kernel (longest, if several)", "s"),
    ("launch", "grid x block", "s"),
    ("duration", "duration (us)", ".1f"),
    ("dram", "DRAM throughput (% of peak)", ".1f"),
    ("sm", "SM throughput (% of peak)", ".1f"),
    ("occupancy", "achieved occupancy (%)", ".1f"),
    ("occupancy_max", "theoretical occupancy (%)", ".1f"),
    ("registers", "registers per thread", ".0f"),
    ("local", "local-memory traffic, spills (B)", ",.0f"),
    ("smem", "shared memory per block (B)", ",.0f"),
    ("l1_hit", "L1 hit rate (%)", ".1f"),
    ("l2_hit", "L2 hit rate (%)", ".1f"),
    ("ld_spr", "sectors/request, global loads", ".2f"),
    ("st_spr", "sectors/request, global stores", ".2f"),
    ("ld_use", "bytes used per sector, loads (%)", ".1f"),
    ("st_use", "bytes used per sector, stores (%)", ".1f"),
    ("conflicts", "shared-memory bank conflicts", ",.0f"),
    ("tensor", "tensor pipe active (%)", ".1f"),
]


def hints(a, b):
    """(key, text) for each number of `a` (the learner) far from `b` (the solution)."""
    out = []

    def both(key):
        return a.get(key) is not None and b.get(key) is not None

    # Coalescing. Sectors per request depend on the access width (4 for 32 x 4-byte accesses,
    # 16 for 32 x 16-byte ones), so judge by the share of each sector used when ncu has it.
    for kind, word, fix in (
        ("ld", "loads", "let threadIdx.x walk the contiguous dimension"),
        ("st", "stores", "stage the tile in shared memory and write it out along rows"),
    ):
        use, spr = kind + "_use", kind + "_spr"
        if both(use):
            far = a[use] < 60 and a[use] < b[use] - 25
        else:
            far = both(spr) and a[spr] > 1.5 * b[spr] and a[spr] > 4.5
        if far and both(spr):
            used = f" and use {a[use]:.0f}% of each sector's bytes" if a.get(use) is not None else ""
            out.append(
                (
                    spr,
                    f"global {word} touch {a[spr]:.1f} sectors per request{used} (other side: "
                    f"{b[spr]:.1f}{', ' + format(b[use], '.0f') + '%' if b.get(use) is not None else ''})"
                    f": a warp's accesses are scattered; {fix}.",
                )
            )
    if both("conflicts") and a["conflicts"] > 4 * b["conflicts"] + 1000:
        out.append(
            (
                "conflicts",
                f"{a['conflicts']:,.0f} shared-memory bank conflicts against "
                f"{b['conflicts']:,.0f}: pad the tile by one column ([32][33]) or swizzle.",
            )
        )
    if both("local") and a["local"] > 0 and b["local"] == 0:
        out.append(
            (
                "local",
                "local-memory traffic: registers spill, or a per-thread array is indexed at run "
                "time; see scripts/resources.sh for the spill report.",
            )
        )
    if both("occupancy") and a["occupancy"] < 0.6 * b["occupancy"]:
        why = ""
        if both("registers") and a["registers"] > 1.25 * b["registers"]:
            why = f" ({a['registers']:.0f} registers per thread against {b['registers']:.0f})"
        elif both("smem") and a["smem"] > 1.25 * b["smem"]:
            why = f" ({a['smem']:,.0f} B of shared memory per block against {b['smem']:,.0f})"
        out.append(
            (
                "occupancy",
                f"achieved occupancy {a['occupancy']:.0f}% against {b['occupancy']:.0f}%{why}: "
                "fewer warps to hide memory latency.",
            )
        )
    if both("dram") and b["dram"] > 40 and a["dram"] < 0.7 * b["dram"]:
        out.append(
            (
                "dram",
                f"DRAM throughput {a['dram']:.0f}% of peak against {b['dram']:.0f}%: fix coalescing "
                "first, then keep more bytes in flight (16-byte loads, several elements per thread).",
            )
        )
    if both("sm") and b["sm"] > 50 and a["sm"] < 0.5 * b["sm"]:
        out.append(
            (
                "sm",
                f"SM throughput {a['sm']:.0f}% against {b['sm']:.0f}%: the arithmetic units wait; "
                "reuse each loaded value more (shared-memory and register tiles).",
            )
        )
    if both("l2_hit") and a["l2_hit"] < b["l2_hit"] - 25:
        out.append(
            (
                "l2_hit",
                f"L2 hit rate {a['l2_hit']:.0f}% against {b['l2_hit']:.0f}%: data is fetched "
                "from DRAM again that the solution finds in cache.",
            )
        )
    if both("tensor") and b["tensor"] > 10 and a["tensor"] < 0.5 * b["tensor"]:
        out.append(
            (
                "tensor",
                f"tensor pipes {a['tensor']:.0f}% busy against {b['tensor']:.0f}%: keep them fed "
                "(larger tiles, cp.async/TMA pipelines).",
            )
        )
    return out


def fmt(value, spec):
    if value is None:
        return "-"
    if spec == "s":
        return str(value)
    return format(value, spec)


def cmd_table(args):
    sides = []
    for item in args.side:
        label, sep, path = item.partition("=")
        if not sep:
            fail(f"--side wants LABEL=CSV, got '{item}'")
        main, others, total = summarize(read_ncu_csv(path))
        rows = build_rows(main)
        rows["others"] = others
        rows["total"] = total
        sides.append((label, rows))
    width_label, width = 36, max(26, max(len(label) for label, _ in sides) + 2)
    if args.title:
        print(args.title)
    print(" " * width_label + "".join(f"{label:<{width}}" for label, _ in sides))
    found = hints(sides[0][1], sides[-1][1]) if len(sides) > 1 else []
    row_order = [key for key, _, _ in ROWS]
    found.sort(key=lambda h: row_order.index(h[0]) if h[0] in row_order else len(row_order))
    marks = {key: i + 1 for i, (key, _) in enumerate(found)}
    for key, label, spec in ROWS:
        values = [rows.get(key) for _, rows in sides]
        if key == "tensor" and all(v is None or v < 0.05 for v in values):
            continue  # no tensor-core work on either side
        line = f"{label:<{width_label}}" + "".join(f"{fmt(v, spec):<{width}}" for v in values)
        if key in marks:
            line = line.rstrip() + f"   <- {marks[key]}"
        print(line.rstrip())
    for label, rows in sides:
        if rows["others"]:
            print(
                f"  ({label}: {rows['others']} more kernel(s) in the same launch; all together "
                f"{rows['total']:.1f} us)"
            )
    a, b = sides[0][1], sides[-1][1]
    if len(sides) > 1 and a.get("duration") and b.get("duration"):
        print(
            f"\n{sides[0][0]} takes {a['duration'] / b['duration']:.2f}x the time of {sides[-1][0]}\n"
            "(ncu's timing of one launch; quote the benchmark's median instead)."
        )
    if found:
        print("hints:")
        for i, (_, text) in enumerate(found):
            print(textwrap.fill(text, width=100, initial_indent=f" {i + 1}. ", subsequent_indent="    "))
    elif len(sides) > 1:
        print("no number is far from the other side's.")


def main():
    parser = argparse.ArgumentParser(
        prog="profile_tool.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan")
    p.add_argument("list")
    p.add_argument("--op")
    p.add_argument("--shape")
    p.add_argument("--student")
    p.add_argument("--solution")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("verdict")
    p.add_argument("results")
    p.add_argument("impl")
    p.set_defaults(func=cmd_verdict)
    p = sub.add_parser("table")
    p.add_argument("--side", action="append", required=True)
    p.add_argument("--title")
    p.set_defaults(func=cmd_table)
    p = sub.add_parser("metrics")
    p.add_argument("--core", action="store_true")
    p.set_defaults(func=lambda a: print(",".join(CORE_METRICS + ([] if a.core else OPTIONAL_METRICS))))
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
