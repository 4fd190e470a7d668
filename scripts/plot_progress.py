#!/usr/bin/env python3
"""One learner's progress through the book: % of the roofline per chapter (PNG and SVG).

usage: scripts/plot_progress.py RESULTS.json [RESULTS.json ...] [--out DIR] [--name NAME]

Give it the results files of your benchmark runs (results/chNN-<date>.json; any number,
any chapters: for each chapter the newest run is used). For each chapter and each op, at the
op's largest shape, it takes the best % of the measured roofline that your kernels reached,
and the same for the solution ladder's best step and for the library reference; a chapter's
bar is the mean over its ops (an op you have not written counts as 0, and the label says how
many are done). Writes DIR/progress.png and .svg (DIR defaults to results/plots) and prints
the numbers as a table.

Exit status: 0 written, 2 bad input (a results file that does not parse ...), 3 no matplotlib.
"""
import argparse
import re
import textwrap
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import wb_results as wr  # noqa: E402

PROG = "plot_progress"


def best_pct(rows, role):
    vals = [
        float(r["roofline_measured_pct"])
        for r in rows
        if r["role"] == role and wr.measured(r) and isinstance(r.get("roofline_measured_pct"), (int, float))
    ]
    return max(vals) if vals else None


def chapter_scores(doc):
    """{'student': mean %, 'solution': ..., 'reference': ..., 'done': n, 'ops': n} at each op's largest shape."""
    per = {"student": [], "solution": [], "reference": []}
    done, ops = 0, 0
    for op in wr.ops_in_order(doc):
        shape = wr.largest_shape(doc, op)
        rows = [r for r in doc["results"] if r["op"] == op and r["shape"] == shape]
        if not any(r["role"] == "student" for r in rows):
            continue  # an op without an exercise (a yardstick) does not count
        ops += 1
        mine = best_pct(rows, "student")
        done += mine is not None
        per["student"].append(mine or 0.0)
        for role in ("solution", "reference"):
            v = best_pct(rows, role)
            if v is not None:
                per[role].append(v)
    mean = {k: (sum(v) / len(v) if v else None) for k, v in per.items()}
    mean.update(done=done, ops=ops)
    return mean


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog="See docs/tools.md.")
    parser.add_argument("results", nargs="+", help="results JSON files written by chNN_bench")
    parser.add_argument("--out", default="results/plots", help="output folder (default: results/plots)")
    parser.add_argument("--name", default="", help="whose progress (for the title)")
    parser.add_argument("--formats", default="png,svg", help="comma-separated: png, svg, pdf (default: png,svg)")
    args = parser.parse_args()
    docs = wr.load_all(args.results, PROG)
    newest = {}
    for doc in docs:  # the newest run of each chapter
        ch = doc["chapter"]
        if ch not in newest or str(doc.get("date", "")) > str(newest[ch].get("date", "")):
            newest[ch] = doc
    chapters = sorted(newest)
    scores = {ch: chapter_scores(newest[ch]) for ch in chapters}
    if not any(s["ops"] for s in scores.values()):
        print(f"{PROG}: none of these files has a result of yours (role 'student'); nothing to draw", file=sys.stderr)
        sys.exit(2)
    wr.need_matplotlib(PROG)  # before any output: it may run the script again with another python3

    print(f"{'chapter':<8} {'done':>6} {'yours %':>8} {'solution %':>11} {'reference %':>12}   run")
    for ch in chapters:
        s = scores[ch]

        def cell(v, w):
            return f"{v:>{w}.1f}" if v is not None else f"{'-':>{w}}"

        print(
            f"{ch:<8} {s['done']:>3}/{s['ops']:<2} {cell(s['student'], 8)} {cell(s['solution'], 11)} "
            f"{cell(s['reference'], 12)}   {newest[ch].get('date', '')}"
        )

    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(max(7.5, 1.6 * len(chapters) + 3.5), 5.2))
    width = 0.26
    colors = {"student": "#d62728", "solution": "#2a788e", "reference": "#444444"}
    names = {"student": "yours", "solution": "solution ladder's best", "reference": "library reference"}
    for i, ch in enumerate(chapters):
        s = scores[ch]
        for j, role in enumerate(("student", "solution", "reference")):
            v = s[role]
            x = i + (j - 1) * width
            if v is None:
                continue
            ax.bar(x, v, width=width * 0.92, color=colors[role], zorder=3)
            ax.text(x, v + 1.5, f"{v:.0f}", ha="center", va="bottom", fontsize=8, color=colors[role])
    ax.axhline(100, color="#2b6cb0", linewidth=1.4, zorder=2)
    ax.text(-0.55, 101, "the measured roofline", ha="left", va="bottom", fontsize=8, color="#2b6cb0")

    def tick(ch):
        s = scores[ch]
        status = "not started" if s["done"] == 0 else f"{s['done']} of {s['ops']} ops done"
        # The chapter's title up to its first ':', ',' or ';', wrapped to fit under its bars.
        short = re.split(r"[:,;]", newest[ch].get("title", ""))[0].strip()
        return "\n".join(textwrap.wrap(f"{ch}: {short}", 22)) + f"\n{status}"

    ax.set_xticks(range(len(chapters)))
    ax.set_xticklabels([tick(ch) for ch in chapters], fontsize=8.5)
    ax.set_xlim(-0.6, len(chapters) - 0.4)
    ax.set_ylim(0, 118)
    ax.set_ylabel("% of the measured roofline\n(mean over the chapter's ops, largest shape)")
    ax.grid(True, axis="y", color="#dddddd", linewidth=0.6, zorder=0)
    gpus = sorted({str((d.get("device") or {}).get("name", "?")) for d in newest.values()})
    who = f" of {args.name}" if args.name else ""
    ax.set_title(f"Progress{who} through the workbook  ·  {', '.join(gpus)}", fontsize=11)
    ax.legend(
        handles=[Patch(color=colors[r], label=names[r]) for r in ("student", "solution", "reference")],
        loc="upper left",
        fontsize=8.5,
        frameon=False,
        ncol=3,
    )
    fig.tight_layout()
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: cannot create {args.out}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
        path = os.path.join(args.out, f"progress.{fmt}")
        fig.savefig(path, dpi=130 if fmt == "png" else None)
        print(f"{PROG}: wrote {path}")


if __name__ == "__main__":
    main()
