#!/usr/bin/env python3
"""Roofline pictures of a chapter's benchmark results (PNG and SVG).

usage: scripts/plot_roofline.py RESULTS.json [RESULTS.json ...] [--out DIR] [--shape SHAPE]
                                [--op OP] [--all-shapes]

One picture per results file (results/chNN-<date>.json, written by chNN_bench), one panel
per op at its largest shape (or --shape). Each panel shows both ceilings: the device's spec
(dashed) and the ceilings measured on this GPU (solid), each a memory-bandwidth slope meeting
the compute roof for the op's precision at the ridge point, and the points of your kernels,
every step of the solution ladder and the library reference, labelled with their % of the
measured roofline. Ops that do no arithmetic (copies, transposes) get a bandwidth panel: the
roofline of an op with no FLOPs is the bandwidth ceiling alone.

Writes DIR/chNN-roofline.png and .svg (DIR defaults to results/plots).
Needs matplotlib (scripts/install-deps.sh installs python3-matplotlib); if the python3 on
PATH lacks it, the script runs itself again with /usr/bin/python3.
Exit status: 0 written, 2 bad input (a results file that does not parse ...), 3 no matplotlib.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import wb_results as wr  # noqa: E402

PROG = "plot_roofline"
STUDENT = "#d62728"
REFERENCE = "#222222"
SPEC_STYLE = dict(color="#7f7f7f", linestyle="--", linewidth=1.4)
MEAS_STYLE = dict(color="#2b6cb0", linestyle="-", linewidth=2.0)


def ladder_colors(n):
    """Light to dark blue-green for v1 ... vN."""
    import matplotlib

    cmap = (
        matplotlib.colormaps.get_cmap("viridis")
        if hasattr(matplotlib, "colormaps")
        else matplotlib.cm.get_cmap("viridis")
    )
    if n == 1:
        return [cmap(0.35)]
    return [cmap(0.85 - 0.7 * i / (n - 1)) for i in range(n)]


def point_style(r, ladder_index, n_ladder):
    if r["role"] == "student":
        return dict(marker="*", s=260, color=STUDENT, zorder=6, edgecolor="white", linewidth=0.6)
    if r["role"] == "reference":
        return dict(marker="s", s=90, color=REFERENCE, zorder=5, edgecolor="white", linewidth=0.6)
    return dict(
        marker="o", s=80, color=ladder_colors(n_ladder)[ladder_index], zorder=5, edgecolor="white", linewidth=0.6
    )


def label_of(r):
    pct = r.get("roofline_measured_pct")
    who = "yours" if r["impl"] == "student" else r["impl"]
    if r["role"] == "reference":
        who = f"{r['impl']} (library)"
    return f"{who}  {pct:.0f}%" if isinstance(pct, (int, float)) and pct > 0 else who


def spread(ys, gap):
    """Moves sorted label positions apart by at least `gap`, keeping their mean."""
    if not ys:
        return ys
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    pos = [ys[i] for i in order]
    for _ in range(200):
        moved = False
        for i in range(1, len(pos)):
            if pos[i] - pos[i - 1] < gap:
                push = (gap - (pos[i] - pos[i - 1])) / 2 + 1e-9
                pos[i - 1] -= push
                pos[i] += push
                moved = True
        if not moved:
            break
    out = [0.0] * len(ys)
    for k, i in enumerate(order):
        out[i] = pos[k]
    return out


def place_labels(ax, points, xlim, ylim, right):
    """Labels beside their points, spread apart vertically (log space), with leader lines."""
    ly0, ly1 = math.log10(ylim[0]), math.log10(ylim[1])
    gap = 0.058 * (ly1 - ly0)
    wanted = [math.log10(y) for _, y, _, _ in points]
    placed = spread(wanted, gap)
    lo, hi = ly0 + 0.03 * (ly1 - ly0), ly1 - 0.03 * (ly1 - ly0)
    if placed and (min(placed) < lo or max(placed) > hi):  # keep the stack inside the panel
        shift = max(lo - min(placed), 0) - max(max(placed) - hi, 0)
        placed = [p + shift for p in placed]
    for (x, y, text, color), ly in zip(points, placed):
        lx = x * (3.2 if right else 1 / 3.2)
        ax.annotate(
            text,
            xy=(x, y),
            xytext=(lx, 10**ly),
            textcoords="data",
            fontsize=8.5,
            ha="left" if right else "right",
            va="center",
            color=color,
            zorder=7,
            bbox=dict(facecolor="white", edgecolor="none", alpha=0.75, pad=0.4),
            arrowprops=dict(arrowstyle="-", color="#999999", linewidth=0.7, shrinkA=2, shrinkB=5),
        )


def roofline_panel(ax, doc, op, shape, rows):
    peak = rows[0].get("peak", "fp32")
    _, peak_label, unit = wr.PEAK_KEYS.get(peak, wr.PEAK_KEYS["fp32"])
    spec_bw, spec_c, meas_bw, meas_c = wr.ceilings(doc, peak)
    pts = [r for r in rows if wr.measured(r) and float(r.get("flops") or 0) > 0 and float(r.get("bytes") or 0) > 0]
    xs = [float(r["flops"]) / float(r["bytes"]) for r in pts]
    ys = [float(r["flops"]) / (float(r["median_us"]) * 1e-6) / 1e12 for r in pts]
    ridges = [c * 1e3 / bw for bw, c in ((spec_bw, spec_c), (meas_bw, meas_c)) if bw > 0 and c > 0]
    anchors = xs + ridges or [1.0]
    xlim = (min(anchors) / 30, max(anchors) * 30)
    tops = [c for c in (spec_c, meas_c) if c > 0] + ys or [1.0]
    bottoms = ys + [xlim[0] * bw / 1e3 for bw in (spec_bw, meas_bw) if bw > 0]
    ylim = (max(min(bottoms) / 4, 1e-6), max(tops) * 3)
    grid = [xlim[0] * (xlim[1] / xlim[0]) ** (i / 400) for i in range(401)]

    slope_labels, boxed = [], []
    for bw, comp, style, name in ((spec_bw, spec_c, SPEC_STYLE, "spec"), (meas_bw, meas_c, MEAS_STYLE, "measured")):
        if bw <= 0:
            continue
        roof = [min(x * bw / 1e3, comp) if comp > 0 else x * bw / 1e3 for x in grid]
        ax.plot(grid, roof, **style, label=f"{name} ceiling")
        above = name == "spec"
        if comp > 0:
            # The ridge point: where the bandwidth slope meets the compute roof.
            ridge = comp * 1e3 / bw
            ax.plot([ridge], [comp], marker="D", markersize=6, color=style["color"], zorder=4)
            ax.plot([ridge, ridge], [ylim[0], comp], color=style["color"], linestyle=":", linewidth=0.9)
            boxed.append(f"{name:<8}  {bw:>6,.0f} GB/s   {comp:>7.1f} {unit}   ridge {ridge:5.1f} FLOP/B")
        else:
            boxed.append(f"{name:<8}  {bw:>6,.0f} GB/s   (no {peak_label} ceiling)")
        # The bandwidth slope's label, along the line near the left edge (rotated once laid out).
        x0 = xlim[0] * 1.6
        label = ax.text(
            x0,
            x0 * bw / 1e3 * (1.35 if above else 0.74),
            f"{name} {bw:,.0f} GB/s",
            fontsize=7.5,
            color=style["color"],
            va="bottom" if above else "top",
            ha="left",
            rotation_mode="anchor",
        )
        slope_labels.append((label, x0, x0 * bw / 1e3))
    ax._wb_slope_labels = slope_labels

    solutions = [r for r in rows if r["role"] == "solution"]
    ladder = list(dict.fromkeys(r["impl"] for r in solutions))
    labels = []
    for r, x, y in zip(pts, xs, ys):
        idx = ladder.index(r["impl"]) if r["impl"] in ladder else 0
        style = point_style(r, idx, max(len(ladder), 1))
        ax.scatter([x], [y], **style)
        labels.append((x, y, label_of(r), style["color"] if r["role"] != "solution" else "#1b3a57"))
    right = not pts or math.log10(sum(xs) / len(xs)) < (math.log10(xlim[0]) + math.log10(xlim[1])) / 2
    place_labels(ax, labels, xlim, ylim, right)
    # The ceilings in numbers, in the corner away from the points (below the roof, empty).
    ax.text(
        0.98 if right else 0.02,
        0.03,
        "\n".join(boxed),
        transform=ax.transAxes,
        fontsize=7.5,
        family="monospace",
        ha="right" if right else "left",
        va="bottom",
        color="#333333",
        bbox=dict(facecolor="white", edgecolor="#cccccc", alpha=0.9, pad=3),
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel("arithmetic intensity (FLOP per byte of DRAM traffic)")
    ax.set_ylabel(f"performance ({unit})")
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_title(f"{op}   {shape}   ({peak_label})", fontsize=10.5)
    return [r for r in rows if not wr.measured(r)]


def bandwidth_panel(ax, doc, op, shape, rows):
    peak = rows[0].get("peak", "fp32")
    spec_bw, _, meas_bw, _ = wr.ceilings(doc, peak)
    pts = [r for r in rows if wr.measured(r)]
    solutions = list(dict.fromkeys(r["impl"] for r in rows if r["role"] == "solution"))
    colors = ladder_colors(max(len(solutions), 1))
    names, values, cols = [], [], []
    for r in pts:
        gbps = float(r["bytes"]) / (float(r["median_us"]) * 1e-6) / 1e9
        names.append(label_of(r).split("  ")[0])
        values.append(gbps)
        if r["role"] == "student":
            cols.append(STUDENT)
        elif r["role"] == "reference":
            cols.append(REFERENCE)
        else:
            cols.append(colors[solutions.index(r["impl"])])
    ypos = list(range(len(values)))[::-1]
    ax.barh(ypos, values, color=cols, height=0.62, zorder=3)
    top = max([spec_bw, meas_bw] + values + [1.0])
    for y, v, r in zip(ypos, values, pts):
        pct = r.get("roofline_measured_pct")
        text = f"{v:,.0f} GB/s" + (f"  ({pct:.0f}%)" if isinstance(pct, (int, float)) else "")
        inside = v > 0.55 * top
        ax.text(
            v * (0.98 if inside else 1.0) + (0 if inside else top * 0.01),
            y,
            text,
            va="center",
            ha="right" if inside else "left",
            fontsize=8.5,
            color="white" if inside else "#222222",
            zorder=4,
        )
    for bw, style, name, label, ha in (
        (spec_bw, SPEC_STYLE, "spec", f" spec\n {spec_bw:,.0f}", "left"),
        (meas_bw, MEAS_STYLE, "measured", f"measured \n{meas_bw:,.0f} ", "right"),
    ):
        if bw > 0:
            ax.axvline(bw, **style, label=name + " ceiling", zorder=2)
            ax.text(bw, len(values) - 0.35, label, fontsize=7.5, color=style["color"], va="bottom", ha=ha)
    ax.set_yticks(ypos)
    ax.set_yticklabels(names, fontsize=8.5)
    ax.set_ylim(-0.7, len(values) + 0.6)
    ax.set_xlim(0, top * 1.12)
    ax.set_xlabel("achieved bandwidth (GB/s); no FLOPs, so the roofline is the bandwidth")
    ax.grid(True, axis="x", color="#dddddd", linewidth=0.6, zorder=0)
    ax.set_title(f"{op}   {shape}   (bytes only)", fontsize=10.5)
    return [r for r in rows if not wr.measured(r)]


def not_timed_note(ax, rows):
    if not rows:
        return
    text = "not timed: " + "; ".join(
        f"{'yours' if r['impl'] == 'student' else r['impl']} " f"({r.get('verdict', '?')})" for r in rows
    )
    ax.text(
        0.02,
        0.97,
        text,
        transform=ax.transAxes,
        fontsize=7.5,
        color=STUDENT,
        va="top",
        ha="left",
        wrap=True,
        bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=1.5),
    )


def panels_of(doc, args):
    ops = wr.ops_in_order(doc)
    if args.op:
        if args.op not in ops:
            raise wr.ResultsError(f"{doc['_path']}: no op '{args.op}'; ops: {', '.join(ops)}")
        ops = [args.op]
    out = []
    for op in ops:
        if args.all_shapes:
            shapes = list(dict.fromkeys(r["shape"] for r in doc["results"] if r["op"] == op))
        else:
            shape = wr.pick_shape(doc, op, args.shape)
            if shape is None:
                if args.op:
                    raise wr.ResultsError(f"{doc['_path']}: {op} has no shape '{args.shape}'")
                shape = wr.largest_shape(doc, op)
            shapes = [shape]
        for shape in shapes:
            rows = [r for r in doc["results"] if r["op"] == op and r["shape"] == shape]
            rows.sort(key=lambda r: wr.ROLE_ORDER.get(r["role"], 3))
            out.append((op, shape, rows))
    return out


def draw(doc, args, plt):
    panels = panels_of(doc, args)
    if not panels:
        raise wr.ResultsError(f"{doc['_path']} holds no results to draw")
    ncols = min(len(panels), 3)
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(max(6.6 * ncols, 11.0), 5.4 * nrows + 1.1), squeeze=False)
    for ax, (op, shape, rows) in zip(axes.flat, panels):
        flops = any(float(r.get("flops") or 0) > 0 for r in rows)
        missing = (roofline_panel if flops else bandwidth_panel)(ax, doc, op, shape, rows)
        not_timed_note(ax, missing)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    dev = doc.get("device") or {}
    title = f"{doc['chapter']}: {doc.get('title', '')}"
    sub = f"{dev.get('name', 'unknown GPU')}   ·   {doc.get('date', '')}   ·   " f"{os.path.basename(doc['_path'])}"
    fig.suptitle(title + "\n" + sub, fontsize=11.5)
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], **SPEC_STYLE, label="spec ceiling (datasheet)"),
        Line2D([], [], **MEAS_STYLE, label="measured ceiling (this GPU: copy, cuBLAS)"),
        Line2D([], [], marker="*", color=STUDENT, linestyle="none", markersize=13, label="your kernel"),
        Line2D(
            [],
            [],
            marker="o",
            color=ladder_colors(3)[1],
            linestyle="none",
            markersize=8,
            label="solution ladder v1 ... vN (light to dark)",
        ),
        Line2D([], [], marker="s", color=REFERENCE, linestyle="none", markersize=8, label="library reference"),
    ]
    fig.legend(handles=handles, loc="lower center", ncol=5 if ncols > 1 else 3, fontsize=8.5, frameon=False)
    fig.text(0.995, 0.005, "labels: % of the measured roofline", ha="right", va="bottom", fontsize=7.5, color="#666666")
    fig.tight_layout(rect=(0, 0.05 if ncols > 1 else 0.08, 1, 0.93))
    fig.canvas.draw()
    for ax in axes.flat:  # turn the slope labels to the slope's angle on the page
        for label, x, y in getattr(ax, "_wb_slope_labels", []):
            (x1, y1), (x2, y2) = ax.transData.transform([(x, y), (x * 10, y * 10)])
            label.set_rotation(math.degrees(math.atan2(y2 - y1, x2 - x1)))
    return fig


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0], epilog="See docs/tools.md.")
    parser.add_argument("results", nargs="+", help="results JSON files written by chNN_bench")
    parser.add_argument("--out", default="results/plots", help="output folder (default: results/plots)")
    parser.add_argument("--shape", help="draw this shape (exact or a unique part of its name) where an op has it")
    parser.add_argument("--op", help="draw only this op")
    parser.add_argument("--all-shapes", action="store_true", help="one panel per op and shape")
    parser.add_argument("--formats", default="png,svg", help="comma-separated: png, svg, pdf (default: png,svg)")
    args = parser.parse_args()
    docs = wr.load_all(args.results, PROG)
    matplotlib = wr.need_matplotlib(PROG)
    import matplotlib.pyplot as plt

    del matplotlib
    try:
        os.makedirs(args.out, exist_ok=True)
    except OSError as e:
        print(f"{PROG}: cannot create {args.out}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    seen = {}
    for doc in docs:
        try:
            fig = draw(doc, args, plt)
        except wr.ResultsError as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            sys.exit(2)
        stem = f"{doc['chapter']}-roofline"
        seen[stem] = seen.get(stem, 0) + 1
        if seen[stem] > 1:  # several files of one chapter: keep them all
            stem += "-" + str(doc.get("date", seen[stem])).replace(":", "").replace("T", "-")
        for fmt in [f.strip() for f in args.formats.split(",") if f.strip()]:
            path = os.path.join(args.out, f"{stem}.{fmt}")
            fig.savefig(path, dpi=130 if fmt == "png" else None)
            print(f"{PROG}: wrote {path}")
        plt.close(fig)


if __name__ == "__main__":
    main()
