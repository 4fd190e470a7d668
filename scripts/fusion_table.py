#!/usr/bin/env python3
"""The fusion table: for each pattern the book fuses, the separate form against the fused one,
from benchmark results of ONE run on one GPU, beside the lecture's published numbers.

usage: scripts/fusion_table.py RESULTS.json [RESULTS.json ...] [--markdown FILE]
  RESULTS.json   chapter benchmark results (chNN_bench --json=...), e.g. chapters 6, 8 and 10's
  --markdown F   also write the table as Markdown to F (for the docs)

Each row names an op, the implementation that runs the pattern as separate kernels and the
book's steps that fuse it (the fastest of them in the results is used), and the bytes the fusion
saves: the intermediate tensor written to DRAM by one kernel and read back by the next. The
shape is the one whose fusion saves the most bytes (the op's largest where that is not known).
Where the library has a fused form of its own (cuDNN's fused convolution graph, its attention),
it has a column too: how far the book's fused kernel is from the library's is a different
question from what fusing buys. A row whose op or implementations are not in the results says
so; the files must all come from one GPU.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import wb_results as R  # noqa: E402


def conv_pq(d):
    """The output's P, Q from the input, filter, padding and stride."""
    st, pad = d.get("stride", 1), d.get("pad", 0)
    return (d["H"] + 2 * pad - d["R"]) // st + 1, (d["W"] + 2 * pad - d["S"]) // st + 1


def conv_saved(d):
    p, q = conv_pq(d)
    # Two BF16 intermediates of the three-kernel form (the conv's output, BN's), each written and read back.
    return 2 * 2 * 2 * d["N"] * p * q * d["K"]


# name, op, separate implementation, the book's fused steps (the fastest present is used), bytes saved
# from the shape's dimensions, the lecture's (separate, fused) microseconds (GPU not stated), the
# library's own fused implementation (None: the library has none).
ROWS = [
    ("MatMul + ReLU", None, None, [], None, (45, 42), None),
    ("MatMul + bias + ReLU", None, None, [], None, (52, 42), None),
    (
        "MatMul + bias + GELU",
        "linear_bias_gelu/bf16",
        None,
        ["v8_mma_epilogue", "v3_wmma_epilogue"],
        None,
        (58, 43),
        "cublaslt",
    ),
    (
        "Conv + BN + ReLU",
        "conv2d_bn_relu/bf16",
        "cudnn_three_kernels",  # conv, BN, ReLU as three kernels, as the lecture's row
        [
            "v13_implicit_gemm_im2col_tma",
            "v14_implicit_gemm_mma_tma",
            "v12_implicit_gemm_wgmma_persistent",
            "v11_implicit_gemm_cluster_splitk",
            "v8_implicit_gemm_wgmma",
            "v6_implicit_gemm_pipelined",
            "v4_implicit_gemm_mma",
            "v3_implicit_gemm_wmma",
        ],
        conv_saved,
        (120, 85),
        "cudnn_fused",
    ),
    (
        "Residual + LayerNorm",
        "residual_layernorm/bf16",
        "unfused_add_then_norm",
        ["v6_persistent", "v5_welford", "v4_row_in_registers", "v3_warp_shuffle"],
        lambda d: 2 * 2 * d["N"] * d["C"],  # the BF16 sum, written and read back
        (35, 18),
        None,
    ),
    (
        "Attention",
        "attention/bf16",
        "cublas_unfused",
        ["v7_flash_wgmma_tma", "v4_flash_mma_sync"],
        lambda d: (4 + 4 + 2 + 2) * d["B"] * d["H"] * d["Sq"] * d["Sk"],  # FP32 scores, BF16 probabilities
        (150, 45),
        "cudnn_sdpa",
    ),
]


def dims(shape):
    """{name: int} from a shape's text ("N=32 C=64 ...") or label ("N32_C64_...")."""
    pairs = re.findall(r"(?:^|[\s_])([A-Za-z]+)=?(-?\d+)(?=[\s_.]|$)", shape)
    return {k: int(v) for k, v in pairs}


def row_of(docs, op, impl, shape):
    for doc in docs:
        r = R.find_row(doc, impl, op=op, shape=shape)
        if r and R.measured(r):
            return r
    return None


def headline_shape(doc, op, saved):
    """The shape whose fusion keeps the most bytes out of DRAM (the op's largest where the row
    has no bytes rule, or no shape names its dimensions)."""
    if saved is None:
        return R.largest_shape(doc, op)
    shapes = list(dict.fromkeys(r["shape"] for r in R.rows(doc) if r.get("op") == op))
    sized = []
    for i, s in enumerate(shapes):
        try:
            sized.append((saved(dims(s)), -i, s))
        except KeyError:  # a shape that does not name the dimensions the rule needs
            pass
    return max(sized)[2] if sized else R.largest_shape(doc, op)


def table(docs):
    """One dict per row of ROWS: what was found, and why not where it was not."""
    out = []
    for name, op, sep, fused, saved, lecture, lib in ROWS:
        row = {"pattern": name, "lecture": lecture}
        doc = next((d for d in docs if any(r.get("op") == op for r in R.rows(d))), None) if op else None
        if doc is None:
            row["why"] = "no op of the book runs it" if op is None else f"{op} is not in these results"
            out.append(row)
            continue
        shape = headline_shape(doc, op, saved)
        row["shape"] = shape
        s = row_of(docs, op, sep, shape) if sep else None
        timed = [x for x in (row_of(docs, op, i, shape) for i in fused) if x]
        f = min(timed, key=lambda x: x["median_us"]) if timed else None
        if sep is None:
            row["why"] = "the book has no separate form of it yet"
        elif s is None or f is None:
            row["why"] = "not timed in these results: " + (sep if s is None else " / ".join(fused))
        if s:
            row["separate"] = (s["impl"], s["median_us"])
        if f:
            row["fused"] = (f["impl"], f["median_us"])
        lf = row_of(docs, op, lib, shape) if lib else None
        if lf:
            row["library"] = (lf["impl"], lf["median_us"])
        if s and f:
            row["speedup"] = s["median_us"] / f["median_us"]
            if saved:
                try:
                    row["saved_mb"] = saved(dims(shape)) / 1e6
                except KeyError as e:
                    row["why"] = f"the shape '{shape}' has no {e}"
        out.append(row)
    return out


def markdown(rows, gpu):
    lines = [
        f"Measured on {gpu}, one run; the lecture's numbers are as published (GPU not stated).",
        "",
        "| pattern | shape | separate µs | fused µs (the book) | speedup | library fused µs | bytes saved "
        "| lecture: separate / fused µs |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        sep = f"{r['separate'][1]:.1f} ({r['separate'][0]})" if "separate" in r else "—"
        fus = f"{r['fused'][1]:.1f} ({r['fused'][0]})" if "fused" in r else "—"
        spd = f"{r['speedup']:.2f}×" if "speedup" in r else r.get("why", "—")
        mb = f"{r['saved_mb']:.1f} MB" if "saved_mb" in r else "—"
        lib = "—"
        if "library" in r:
            lib = f"{r['library'][1]:.1f} ({r['library'][0]})"
            if "separate" in r:
                lib += f", {r['separate'][1] / r['library'][1]:.2f}×"
        a, b = r["lecture"]
        lines.append(
            f"| {r['pattern']} | {r.get('shape', '—')} | {sep} | {fus} | {spd} | {lib} | {mb} "
            f"| {a} / {b} ({a / b:.2f}×) |"
        )
    return "\n".join(lines) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(prog="fusion_table.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="benchmark results files of one run")
    ap.add_argument("--markdown", help="also write the table to this file")
    a = ap.parse_args(argv)
    try:
        docs = R.load_all(a.results, "fusion_table.py")
    except R.ResultsError as e:
        print(f"fusion_table.py: {e}", file=sys.stderr)
        return 2
    docs = [d for d in docs if R.kind_of(d) == "benchmark"]
    if not docs:
        print("fusion_table.py: none of these files is a benchmark's results (chNN_bench --json=...)", file=sys.stderr)
        return 2
    gpus = {(d.get("device") or {}).get("name", "an unnamed GPU") for d in docs}
    if len(gpus) > 1:
        print(
            f"fusion_table.py: the files come from different GPUs ({', '.join(sorted(gpus))}): "
            "compare within one run on one GPU",
            file=sys.stderr,
        )
        return 2
    text = markdown(table(docs), gpus.pop())
    print(text, end="")
    if a.markdown:
        tmp = a.markdown + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, a.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
