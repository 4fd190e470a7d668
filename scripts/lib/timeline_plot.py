#!/usr/bin/env python3
"""Draws the per-stream timeline of a program from an Nsight Systems SQLite export or a Chrome trace.

    python3 scripts/lib/timeline_plot.py run.sqlite --out timeline.png [--title T] [--last-ms MS]
    python3 scripts/lib/timeline_plot.py trace.json --out timeline.png [--section NAME ...]

The Chrome trace (JSON) is what a program writes with the harness's ActivityTrace (CUPTI's
activity API: ch11_overlap --trace=FILE) where Nsight Systems is missing; its sections (named
spans, one call of one form each) are drawn as panels one above the other on one time scale,
each from its own start, so a serial form and its pipeline compare at a glance.

One row per CUDA stream, one bar per copy or kernel: copies to the device, copies from it,
kernels and memsets each in their own colour, so a pipeline's overlap (or its absence) is
seen at a glance. Beside the picture it prints, per stream, the work's count and busy time,
and the overlap: the sum of the busy times over the span they cover (1.0 = nothing ran at
once; 3.0 = three engines busy all along). scripts/timeline.sh makes the export and calls
this. Exit 2 for a file that is not an export, 77 when matplotlib is missing (the table is
printed all the same).
"""
import argparse
import json
import os
import sqlite3
import sys

# Nsight Systems' copy kinds (ENUM_CUDA_MEMCPY_OPER): 1 host to device, 2 device to host,
# 8 device to device; the rest are drawn as "copy".
COPY_KINDS = {1: "copy in (HtoD)", 2: "copy out (DtoH)", 8: "copy (DtoD)"}
COLOURS = {
    "copy in (HtoD)": "#1f77b4",
    "copy out (DtoH)": "#d62728",
    "copy (DtoD)": "#9467bd",
    "copy": "#8c564b",
    "kernel": "#2ca02c",
    "memset": "#7f7f7f",
}


class ExportError(Exception):
    pass


def _tables(db):
    return {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def read_trace(path):
    """The GPU work and the sections of a Chrome trace from ActivityTrace: (work, sections),
    both lists of dicts with stream, kind, name, start and end (ns)."""
    try:
        with open(path) as f:
            doc = json.load(f)
        events = doc["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExportError("%s: not a Chrome trace with traceEvents (%s)" % (path, e))
    work, sections = [], []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            start = int(round(float(e["ts"]) * 1000))
            item = {
                "stream": e.get("tid", 0),
                "kind": e.get("cat", "kernel"),
                "name": str(e.get("name", "")),
                "start": start,
                "end": start + int(round(float(e["dur"]) * 1000)),
            }
        except (KeyError, TypeError, ValueError) as err:
            raise ExportError("%s: an event without a time (%s): %r" % (path, err, e))
        (sections if item["kind"] == "section" else work).append(item)
    work.sort(key=lambda w: (w["start"], w["stream"]))
    sections.sort(key=lambda w: w["start"])
    return work, sections


def in_section(work, section):
    """The work that starts inside a section, its times from the section's start."""
    out = []
    for w in work:
        if section["start"] <= w["start"] < section["end"]:
            out.append(dict(w, start=w["start"] - section["start"], end=w["end"] - section["start"]))
    return out


def read_export(path):
    """The GPU work of an export: a list of dicts with stream, kind, name, start and end (ns)."""
    if not os.path.exists(path):
        raise ExportError("%s: no such file" % path)
    if path.endswith(".json"):
        return read_trace(path)[0]
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        tables = _tables(db)
    except sqlite3.DatabaseError as e:
        raise ExportError("%s: not an SQLite file (%s)" % (path, e))
    work = []
    names = {}
    if "StringIds" in tables:
        names = dict(db.execute("SELECT id, value FROM StringIds"))
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        for start, end, stream, short in db.execute(
            "SELECT start, end, streamId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL"
        ):
            work.append(
                {"stream": stream, "kind": "kernel", "name": names.get(short, str(short)), "start": start, "end": end}
            )
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        for start, end, stream, kind, size in db.execute(
            "SELECT start, end, streamId, copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"
        ):
            label = COPY_KINDS.get(kind, "copy")
            work.append(
                {"stream": stream, "kind": label, "name": "%s %d B" % (label, size), "start": start, "end": end}
            )
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for start, end, stream, size in db.execute(
            "SELECT start, end, streamId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"
        ):
            work.append({"stream": stream, "kind": "memset", "name": "memset %d B" % size, "start": start, "end": end})
    db.close()
    if not {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"} & tables:
        raise ExportError(
            "%s: no CUDA kernel or copy tables: was it made with `nsys profile --trace=cuda` "
            "and `nsys export --type sqlite`?" % path
        )
    work.sort(key=lambda w: (w["start"], w["stream"]))
    return work


def last_window(work, ms):
    """Only the work that ends in the last `ms` milliseconds of the run (a benchmark's last sample)."""
    if not work or ms is None:
        return work
    end = max(w["end"] for w in work)
    cut = end - ms * 1e6
    return [w for w in work if w["end"] >= cut]


def per_stream(work):
    """{stream: {"count", "busy_ns", "first", "last"}}, streams in order of first use."""
    out = {}
    for w in work:
        s = out.setdefault(w["stream"], {"count": 0, "busy_ns": 0, "first": w["start"], "last": w["end"]})
        s["count"] += 1
        s["busy_ns"] += w["end"] - w["start"]
        s["first"] = min(s["first"], w["start"])
        s["last"] = max(s["last"], w["end"])
    return out


def overlap(work):
    """Sum of the busy times over the span they cover: how many things ran at once, on average."""
    if not work:
        return 0.0
    span = max(w["end"] for w in work) - min(w["start"] for w in work)
    busy = sum(w["end"] - w["start"] for w in work)
    return busy / span if span > 0 else 0.0


def table(work):
    lines = ["%-10s %7s %12s" % ("stream", "items", "busy (ms)")]
    for stream, s in per_stream(work).items():
        lines.append("%-10s %7d %12.3f" % (stream, s["count"], s["busy_ns"] / 1e6))
    lines.append("overlap: %.2f (busy time / span; 1.00 = one thing at a time)" % overlap(work))
    return "\n".join(lines)


def draw(work, out, title):
    """The picture: one row per stream, time in ms from the first item. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    streams = list(per_stream(work).keys())
    row = {s: i for i, s in enumerate(streams)}
    t0 = min(w["start"] for w in work)
    fig, ax = plt.subplots(figsize=(12, 1.0 + 0.5 * len(streams)))
    for w in work:
        ax.barh(
            row[w["stream"]],
            (w["end"] - w["start"]) / 1e6,
            left=(w["start"] - t0) / 1e6,
            height=0.7,
            color=COLOURS.get(w["kind"], "#bcbd22"),
            edgecolor="black",
            linewidth=0.3,
        )
    ax.set_yticks(range(len(streams)))
    ax.set_yticklabels(["stream %s" % s for s in streams])
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title("%s   (overlap %.2f)" % (title, overlap(work)))
    kinds = sorted({w["kind"] for w in work})
    ax.legend(
        handles=[Patch(color=COLOURS.get(k, "#bcbd22"), label=k) for k in kinds], loc="upper right", fontsize="small"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def draw_sections(panels, out, title):
    """One panel per (name, work) on one time scale, each from its section's start."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = [list(per_stream(work).keys()) for _, work in panels]
    heights = [max(1, len(r)) for r in rows]
    fig, axes = plt.subplots(
        len(panels),
        1,
        sharex=True,
        figsize=(12, 1.2 + 0.45 * sum(heights) + 0.5 * len(panels)),
        gridspec_kw={"height_ratios": heights},
        squeeze=False,
    )
    kinds = set()
    for ax, (name, work), streams in zip(axes[:, 0], panels, rows):
        row = {s: i for i, s in enumerate(streams)}
        for w in work:
            kinds.add(w["kind"])
            ax.barh(
                row[w["stream"]],
                (w["end"] - w["start"]) / 1e6,
                left=w["start"] / 1e6,
                height=0.7,
                color=COLOURS.get(w["kind"], "#bcbd22"),
                edgecolor="black",
                linewidth=0.3,
            )
        span = max((w["end"] for w in work), default=0) / 1e6
        ax.set_yticks(range(len(streams)))
        ax.set_yticklabels(["stream %s" % s for s in streams], fontsize="small")
        ax.invert_yaxis()
        ax.set_title("%s: %.2f ms, overlap %.2f" % (name, span, overlap(work)), fontsize="medium", loc="left")
    axes[-1, 0].set_xlabel("time from the call's start (ms)")
    fig.suptitle(title)
    fig.legend(
        handles=[Patch(color=COLOURS.get(k, "#bcbd22"), label=k) for k in sorted(kinds)],
        loc="upper right",
        fontsize="small",
    )
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def pick_sections(sections, wanted):
    """The sections named in `wanted` (a name, or a prefix such as "pipeline:"), in that order;
    every section when `wanted` is empty. Raises ExportError naming one that is absent."""
    if not wanted:
        return sections
    picked = []
    for name in wanted:
        found = [s for s in sections if s["name"] == name] or [s for s in sections if s["name"].startswith(name)]
        if not found:
            raise ExportError(
                "no section '%s' in the trace (it has: %s)" % (name, ", ".join(s["name"] for s in sections) or "none")
            )
        picked += [s for s in found if s not in picked]
    return picked


def picture(draw_it, out):
    """Draws (draw_it()) and says where; 77 with the reason when matplotlib is missing."""
    try:
        draw_it()
    except ImportError:
        print(
            "timeline_plot: skipped the picture: matplotlib is missing (scripts/install-deps.sh installs "
            "python3-matplotlib)",
            file=sys.stderr,
        )
        return 77
    print("timeline_plot: wrote %s" % out)
    return 0


def trace_panels(a):
    """[(section name, its work)] of the Chrome trace a.export, the sections a.section picks.
    Raises ExportError when the trace cannot be read or there is no section to draw."""
    work, sections = read_trace(a.export)
    chosen = pick_sections(sections, a.section)
    if not chosen:
        raise ExportError("%s: no sections to draw (record with ActivityTrace::section)" % a.export)
    return [(s["name"], in_section(work, s)) for s in chosen]


def export_work(a):
    """The work of the nsys export a.export (its last a.last_ms milliseconds when given).
    Raises ExportError when the export cannot be read or holds no GPU work."""
    work = last_window(read_export(a.export), a.last_ms)
    if not work:
        raise ExportError("%s: no GPU work recorded" % a.export)
    return work


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("export", help="the SQLite file of `nsys export --type sqlite`, or a Chrome trace (.json)")
    p.add_argument("--out", default="timeline.png", help="the PNG to write (default: timeline.png)")
    p.add_argument("--title", default=None, help="the picture's title (default: the export's name)")
    p.add_argument("--last-ms", type=float, default=None, help="draw only the last MS milliseconds of the run")
    p.add_argument(
        "--section",
        action="append",
        default=[],
        help="(Chrome trace) draw this section, or every section whose name starts so; repeat for more panels "
        "(default: every section)",
    )
    a = p.parse_args(argv)
    trace = a.export.endswith(".json")
    try:
        got = trace_panels(a) if trace else export_work(a)
    except ExportError as e:
        print("timeline_plot: %s" % e, file=sys.stderr)
        return 2
    title = a.title or os.path.basename(a.export)
    if trace:
        for name, part in got:
            print("== %s" % name)
            print(table(part) if part else "(no GPU work recorded)")
        return picture(lambda: draw_sections(got, a.out, title), a.out)
    print(table(got))
    return picture(lambda: draw(got, a.out, title), a.out)


if __name__ == "__main__":
    sys.exit(main())
