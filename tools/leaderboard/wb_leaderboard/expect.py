"""An expected outcome (tests/leaderboard/*-expected.json, what `--expect` reads) compared with
one run: which students must be ranked, in which order, for which reason each other one is not
ranked, which must have no result at all, how many history lines must be rejected, and (for a
cluster run) which jobs' records must have been refused. An `ok` line per expectation met, a
`MISS` line per difference.
"""

import json
import os
import re

from .history import load_history
from .report import unmerged_jobs, why


def check(history, key, run_id, expect_path, chapters=()):
    """Compares one run with an expected outcome (tests/leaderboard/*-expected.json); True when
    it is as expected. Per chapter: `ranked` (each must be ranked), `faster_than` (pairs, both
    ranked), `reasons` ({student: kind or [kinds]}, where the kind "ranked" allows a rank),
    `absent` (students that must have no result at all, such as a forged record's),
    `history_rejected_at_least` (lines of the history that must fail verification), and
    `not_merged` (students of a cluster run whose job record was refused: listed by the
    latest collect, nothing in the history). With `chapters` (a run limited to those),
    the expectations of the other chapters are skipped, each with a line that says so."""
    with open(expect_path) as f:
        expect = json.load(f)
    skipped = []
    every = load_history(history, key, skipped, quiet=True)
    records = [r for r in every if r["run_id"] == run_id]
    problems = []
    for ch, want in expect.items():
        if not re.match(r"^ch\d\d$", ch):
            continue
        if chapters and ch not in chapters:
            print("skip %s: not among this run's chapters (%s)" % (ch, " ".join(chapters)))
            continue
        recs = {r["student"]: r for r in records if r["chapter"] == ch}
        if not recs:
            problems.append("%s: no results in run %s" % (ch, run_id))
            continue
        gpus = {r["gpu"]["name"] for r in recs.values()}
        for student in want.get("ranked", []):
            r = recs.get(student)
            if r is None:
                problems.append("%s: '%s' has no result" % (ch, student))
            elif r["status"] != "ranked":
                problems.append("%s: '%s' should be ranked, but: %s" % (ch, student, why(r)))
        for before, after in want.get("faster_than", []):
            a, b = recs.get(before), recs.get(after)
            if a and b and a["status"] == b["status"] == "ranked":
                ga, gb = a["score"]["geomean_vs_reference"], b["score"]["geomean_vs_reference"]
                if not ga > gb:
                    problems.append("%s: '%s' (%.3fx) should rank above '%s' (%.3fx)" % (ch, before, ga, after, gb))
        for student, kinds in want.get("reasons", {}).items():
            kinds = [kinds] if isinstance(kinds, str) else kinds
            r = recs.get(student)
            if r is None:
                problems.append("%s: '%s' has no result" % (ch, student))
            elif r["status"] == "ranked":
                if "ranked" in kinds:
                    print(
                        "ok   %s %-24s ranked (allowed): %.3fx reference"
                        % (ch, student, r["score"]["geomean_vs_reference"])
                    )
                else:
                    problems.append("%s: '%s' was ranked; expected: %s" % (ch, student, " or ".join(kinds)))
            elif r["reasons"][0]["kind"] not in kinds:
                problems.append("%s: '%s' is listed as '%s'; expected: %s" % (ch, student, why(r), " or ".join(kinds)))
            else:
                print("ok   %s %-24s %s" % (ch, student, why(r)))
        for student in want.get("absent", []):
            if any(r["student"] == student and r["chapter"] == ch for r in every):
                problems.append("%s: '%s' has a result in the history; it must have none" % (ch, student))
            else:
                print("ok   %s %-24s no result (as expected)" % (ch, student))
        if want.get("not_merged"):
            waiting = {
                j["student"]: j
                for j in unmerged_jobs(os.path.dirname(os.path.abspath(history)))
                if j["run_id"] == run_id and j["chapter"] == ch and not j["pending"]
            }
            for student in want["not_merged"]:
                if student in recs:
                    problems.append(
                        "%s: '%s' was merged into the history (%s); its record should have been "
                        "refused" % (ch, student, why(recs[student]) or "ranked")
                    )
                elif student not in waiting:
                    problems.append("%s: '%s' is not listed as a job without a result" % (ch, student))
                else:
                    print("ok   %s %-24s %s" % (ch, student, waiting[student]["status"]))
        at_least = want.get("history_rejected_at_least", 0)
        if len(skipped) < at_least:
            problems.append(
                "%s: %d line(s) of the history were rejected; expected at least %d" % (ch, len(skipped), at_least)
            )
        elif at_least:
            print(
                "ok   %s history: %d line(s) rejected: %s"
                % (ch, len(skipped), "; ".join("line %d: %s" % p for p in skipped[:3]))
            )
        order = sorted(
            (r for r in recs.values() if r["status"] == "ranked"), key=lambda r: -r["score"]["geomean_vs_reference"]
        )
        for i, r in enumerate(order):
            if r["student"] in want.get("ranked", []):
                print(
                    "ok   %s %-24s ranked %d: %.3fx reference"
                    % (ch, r["student"], i + 1, r["score"]["geomean_vs_reference"])
                )
        seeds = sorted({str(r["seed"].get("tests")) for r in recs.values() if r["seed"].get("tests") is not None})
        print("     %s ran on: %s; %d test seed(s) recorded" % (ch, ", ".join(sorted(gpus)), len(seeds)))
    for p in problems:
        print("MISS " + p)
    print(
        "expected outcome (%s): %s"
        % (os.path.basename(expect_path), "as expected" if not problems else "%d unexpected result(s)" % len(problems))
    )
    return not problems
