"""The reports, regenerated from the whole history after every run: per chapter and GPU model
the ranking of each student's latest result (by the geometric mean of reference time / student
time), the unranked with their reasons, the files not taken, the runs, the history lines
rejected and the cluster jobs without a result. Written as leaderboard.md, leaderboard.csv and
leaderboard.json (each through a temporary file and a rename) and shown on the terminal.
"""

import csv
import datetime
import io
import json
import os

from .atomic import write_text
from .history import load_history


def boards(records):
    """{(chapter, gpu name): [latest record per student]}, each list ranked first (best
    first), then the rest by name. The latest is the last in the history (file order, which
    the records' chain fixes), whatever dates the records hold."""
    latest = {}
    for i, rec in enumerate(records):
        key = (rec["chapter"], rec["gpu"]["name"] or "unknown GPU", rec["student_id"])
        latest[key] = (i, rec)
    counts = {}
    for rec in records:
        key = (rec["chapter"], rec["gpu"]["name"] or "unknown GPU", rec["student_id"])
        counts[key] = counts.get(key, 0) + 1
    out = {}
    for (ch, gpu, sid), (_, rec) in latest.items():
        rec = dict(rec)
        rec["runs_seen"] = counts[(ch, gpu, sid)]
        out.setdefault((ch, gpu), []).append(rec)
    for key, recs in out.items():
        ranked = [r for r in recs if r["status"] == "ranked"]
        ranked.sort(
            key=lambda r: (
                -r["score"]["geomean_vs_reference"],
                -(r["score"]["roofline_measured_pct"] or 0),
                r["student"],
            )
        )
        for i, r in enumerate(ranked):
            r["rank"] = i + 1
        rest = sorted((r for r in recs if r["status"] != "ranked"), key=lambda r: r["student"])
        for r in rest:
            r["rank"] = None
        out[key] = ranked + rest
    return dict(sorted(out.items()))


def runs_summary(records):
    runs = {}
    for rec in records:
        r = runs.setdefault(
            rec["run_id"],
            {
                "run_id": rec["run_id"],
                "date": rec["date"],
                "entries": 0,
                "chapters": set(),
                "gpus": set(),
                "sandbox": rec.get("sandbox", ""),
            },
        )
        r["entries"] += 1
        r["date"] = min(r["date"], rec["date"])
        r["chapters"].add(rec["chapter"])
        r["gpus"].add(rec["gpu"]["name"])
    out = []
    for r in sorted(runs.values(), key=lambda r: r["date"]):
        r = dict(r, chapters=sorted(r["chapters"]), gpus=sorted(r["gpus"]))
        out.append(r)
    return out


def fmt(v, digits):
    return "-" if v is None else ("%." + str(digits) + "f") % v


def why(rec):
    if not rec["reasons"]:
        return ""
    r = rec["reasons"][0]
    return r["label"] + (": " + r["detail"] if r["detail"] else "")


def terminal_table(key, recs, width=None):
    ch, gpu = key
    headers = ["rank", "student", "x ref (geomean)", "% roofline (meas)", "shapes", "result"]
    rows = []
    for r in recs:
        s = r["score"]
        name = r["student"] if len(r["student"]) <= 28 else r["student"][:27] + "~"
        if r["rank"]:
            rows.append(
                [
                    str(r["rank"]),
                    name,
                    fmt(s["geomean_vs_reference"], 3),
                    fmt(s["roofline_measured_pct"], 1),
                    str(s["shapes"]),
                    "ranked",
                ]
            )
        else:
            text = why(r)
            rows.append(["-", name, "-", "-", "-", text if len(text) <= 90 else text[:89] + "~"])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h) for i, h in enumerate(headers)]
    out = io.StringIO()
    out.write("%s on %s\n" % (ch, gpu))
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out.write(line.rstrip() + "\n" + "-" * len(line.rstrip()) + "\n")
    for row in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n")
    notes = [(r["student"], r["review"]) for r in recs if r.get("review")]
    for student, review in notes:
        out.write("  review %s: %s\n" % (student, "; ".join(review)))
    return out.getvalue()


def md_cell(text):
    text = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def unsafe_warning(runs):
    """The header line every report carries when a run it shows ran without a sandbox."""
    unsafe = [r["run_id"] for r in runs if r.get("sandbox") != "bubblewrap"]
    if not unsafe:
        return ""
    return (
        "WARNING: UNSANDBOXED RESULTS: run(s) %s ran without a sandbox (--unsafe-no-sandbox): their "
        "submissions could read other students' files and the history key, and rewrite their own results. "
        "Do not trust their ranks without reading the code." % ", ".join(unsafe)
    )


def markdown(all_boards, runs, history_path, skipped_lines=(), unmerged=()):
    out = io.StringIO()
    out.write("# Class leaderboard\n\n")
    if unsafe_warning(runs):
        out.write("**%s**\n\n" % md_cell(unsafe_warning(runs)))
    if skipped_lines:
        out.write(
            "**%d line(s) of the history were rejected** (lines %s): see `scripts/leaderboard.sh --verify`.\n\n"
            % (len(skipped_lines), ", ".join(str(n) for n, _ in skipped_lines[:20]))
        )
    out.write(
        "Generated %s from `%s` (%d runs). Ranked by the geometric mean, over the benchmark shapes, "
        "of reference time / submission time (higher is faster); the mean %% of the measured roofline "
        "is shown beside it. Each student's latest result per chapter and GPU is shown. "
        "See docs/leaderboard.md.\n\n"
        % (
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            os.path.basename(history_path),
            len(runs),
        )
    )
    for (ch, gpu), recs in all_boards.items():
        out.write("## %s on %s\n\n" % (md_cell(ch), md_cell(gpu)))
        ranked = [r for r in recs if r["rank"]]
        if ranked:
            out.write(
                "| rank | student | x reference (geomean) | % of roofline (measured, mean) | shapes | run | review |\n"
            )
            out.write("| ---: | --- | ---: | ---: | ---: | --- | --- |\n")
            for r in ranked:
                s = r["score"]
                out.write(
                    "| %d | %s | %s | %s | %d | %s | %s |\n"
                    % (
                        r["rank"],
                        md_cell(r["student"]),
                        fmt(s["geomean_vs_reference"], 3),
                        fmt(s["roofline_measured_pct"], 1),
                        s["shapes"],
                        md_cell(r["run_id"]),
                        md_cell("; ".join(r.get("review", []))),
                    )
                )
            out.write("\n")
        rest = [r for r in recs if not r["rank"]]
        if rest:
            out.write("Not ranked:\n\n| student | reason | detail | also | run |\n| --- | --- | --- | --- | --- |\n")
            for r in rest:
                first = r["reasons"][0] if r["reasons"] else {"label": "", "detail": ""}
                also = ", ".join(x["label"] for x in r["reasons"][1:])
                out.write(
                    "| %s | %s | %s | %s | %s |\n"
                    % (
                        md_cell(r["student"]),
                        md_cell(first["label"]),
                        md_cell(first["detail"]),
                        md_cell(also),
                        md_cell(r["run_id"]),
                    )
                )
            out.write("\n")
        ignored = [(r["student"], r["ignored"]) for r in recs if r.get("ignored")]
        if ignored:
            out.write(
                "Files not taken: "
                + "; ".join("%s: %s" % (md_cell(s), md_cell(", ".join(i))) for s, i in ignored)
                + "\n\n"
            )
    if unmerged:
        out.write(
            "## Cluster jobs without a result\n\nAs the latest `--collect` of each cluster run found them; "
            "the history holds nothing of these jobs.\n\n| run | job | chapter | student | Slurm state | status |\n"
            "| --- | --- | --- | --- | --- | --- |\n"
        )
        for j in unmerged:
            out.write(
                "| %s | %s | %s | %s | %s | %s |\n"
                % tuple(md_cell(j.get(k) or "") for k in ("run_id", "job", "chapter", "student", "state", "status"))
            )
        out.write("\n")
    out.write(
        "## Runs\n\n| run | date | entries | chapters | GPUs | sandbox |\n| --- | --- | ---: | --- | --- | --- |\n"
    )
    for r in runs:
        out.write(
            "| %s | %s | %d | %s | %s | %s |\n"
            % (
                md_cell(r["run_id"]),
                r["date"],
                r["entries"],
                " ".join(r["chapters"]),
                md_cell(", ".join(r["gpus"])),
                md_cell(r["sandbox"]),
            )
        )
    return out.getvalue()


def csv_safe(v):
    """Spreadsheets run cells that start with = + - @ as formulas: quote those as text."""
    if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + v
    return v


def csv_text(all_boards):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        [
            "chapter",
            "gpu",
            "rank",
            "student",
            "student_id",
            "status",
            "geomean_vs_reference",
            "roofline_measured_pct",
            "roofline_spec_pct",
            "shapes",
            "reason",
            "detail",
            "review",
            "run_id",
            "date",
            "source_hash",
            "sandbox",
        ]
    )
    for (ch, gpu), recs in all_boards.items():
        for r in recs:
            s = r["score"]
            first = r["reasons"][0] if r["reasons"] else {"kind": "", "detail": ""}
            w.writerow(
                [
                    csv_safe(x)
                    for x in [
                        ch,
                        gpu,
                        r["rank"] or "",
                        r["student"],
                        r["student_id"],
                        r["status"],
                        fmt(s["geomean_vs_reference"], 4) if s["geomean_vs_reference"] else "",
                        fmt(s["roofline_measured_pct"], 2) if s["roofline_measured_pct"] is not None else "",
                        fmt(s["roofline_spec_pct"], 2) if s["roofline_spec_pct"] is not None else "",
                        s["shapes"],
                        first["kind"],
                        first["detail"],
                        "; ".join(r.get("review", [])),
                        r["run_id"],
                        r["date"],
                        r.get("source_hash", ""),
                        r.get("sandbox", "") if r.get("sandbox") == "bubblewrap" else "none (UNSANDBOXED)",
                    ]
                ]
            )
    return out.getvalue()


def json_doc(all_boards, runs, history_path, skipped_lines=(), unmerged=()):
    doc = {
        "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "warning": unsafe_warning(runs) or None,
        "history": os.path.basename(history_path),
        "metric": "geometric mean of reference time / student time",
        "rejected_history_lines": [{"line": n, "why": w} for n, w in skipped_lines],
        "jobs_without_result": list(unmerged),
        "boards": [],
        "runs": runs,
    }
    for (ch, gpu), recs in all_boards.items():
        doc["boards"].append(
            {
                "chapter": ch,
                "gpu": gpu,
                "ranked": [
                    {
                        k: r.get(k)
                        for k in (
                            "rank",
                            "student",
                            "student_id",
                            "score",
                            "shapes",
                            "run_id",
                            "date",
                            "source_hash",
                            "review",
                            "runs_seen",
                        )
                    }
                    for r in recs
                    if r["rank"]
                ],
                "not_ranked": [
                    {
                        k: r.get(k)
                        for k in (
                            "student",
                            "student_id",
                            "reasons",
                            "run_id",
                            "date",
                            "source_hash",
                            "review",
                            "ignored",
                            "missing",
                            "runs_seen",
                        )
                    }
                    for r in recs
                    if not r["rank"]
                ],
            }
        )
    return doc


def unmerged_jobs(out):
    """The jobs that the latest collect of each cluster run in `out` could not merge."""
    found = []
    base = os.path.join(out, "runs")
    if not os.path.isdir(base):
        return found
    for run_id in sorted(os.listdir(base)):
        path = os.path.join(base, run_id, "collect.json")
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        for r in doc.get("jobs", []) if isinstance(doc, dict) else []:
            if isinstance(r, dict) and not r.get("merged"):
                found.append(
                    {
                        "run_id": run_id,
                        "job": r.get("job"),
                        "student": r.get("student"),
                        "chapter": r.get("chapter"),
                        "state": r.get("state"),
                        "status": r.get("status"),
                        "pending": bool(r.get("pending")),
                    }
                )
    return found


def write_reports(history, key, out, run_id="", quiet=False):
    """Writes the three reports into `out` from the history; unless quiet, shows the tables of
    the chapters and GPUs this run touched (every one without a run id)."""
    skipped = []
    records = load_history(history, key, skipped)
    os.makedirs(out, exist_ok=True)
    all_boards = boards(records)
    runs = runs_summary(records)
    warning = unsafe_warning(runs)
    unmerged = unmerged_jobs(out)
    write_text(os.path.join(out, "leaderboard.md"), markdown(all_boards, runs, history, skipped, unmerged))
    write_text(os.path.join(out, "leaderboard.csv"), csv_text(all_boards))
    write_text(
        os.path.join(out, "leaderboard.json"),
        json.dumps(json_doc(all_boards, runs, history, skipped, unmerged), indent=1, ensure_ascii=False) + "\n",
    )
    if quiet:
        return
    if warning:
        print(warning + "\n")
    shown = all_boards
    if run_id:
        touched = {(r["chapter"], r["gpu"]["name"]) for r in records if r["run_id"] == run_id}
        shown = {k: v for k, v in all_boards.items() if k in touched}
    for board, recs in shown.items():
        print(terminal_table(board, recs))
    print(
        "%d result(s) from %d run(s) in %s; reports: %s/leaderboard.{md,csv,json}"
        % (len(records), len(runs), history, out)
    )
    if skipped:
        print("%d line(s) of the history were rejected (listed above, on stderr)" % len(skipped))
    for j in unmerged:
        print("cluster job %s (%s %s): %s" % (j["job"], j["chapter"], j["student"], j["status"]))
