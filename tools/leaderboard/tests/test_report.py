"""report.py: the ranking per chapter and GPU model (each student's latest result), the three
reports and the terminal table, a warning in every report of a history holding an unsandboxed
run, cells that cannot break the markdown table or run as spreadsheet formulas."""

import csv
import json
import os
import shutil
import unittest

from support import captured, make_key, record, result, result_entries, temp_folder
from wb_leaderboard import history as H, report as R


class Reports(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)
        self.out = os.path.join(self.tmp, "out")
        self.history = os.path.join(self.out, "history.jsonl")
        self.key = make_key(self.tmp)

    def load(self, problems=None):
        records, _, _ = captured(H.load_history, self.history, H.load_key(self.key), problems)
        return records

    def report(self, run_id=""):
        _, out, err = captured(R.write_reports, self.history, H.load_key(self.key), self.out, run_id)
        return out + err

    def run_a(self, sandbox="bubblewrap"):
        for n in result_entries():
            record(self.history, self.key, result(n), "run-a", sandbox=sandbox)

    def test_ranking_per_chapter_and_gpu(self):
        self.run_a()
        boards = R.boards(self.load())
        self.assertEqual(list(boards), [("ch01", "NVIDIA H100 80GB HBM3")])
        recs = boards[("ch01", "NVIDIA H100 80GB HBM3")]
        ranked = [r["student"] for r in recs if r["rank"]]
        # current-schema is fast's run as the benchmark writes it now (schema 3): the same score.
        self.assertEqual(ranked, ["current-schema", "fast", "ncu-agrees", "name with spaces", "slow"])
        self.assertEqual([r["rank"] for r in recs if r["rank"]], [1, 2, 3, 4, 5])
        text = self.report("run-a")
        self.assertIn("ch01 on NVIDIA H100 80GB HBM3", text)
        self.assertIn("stale output after timing", text)
        self.assertIn("left work running", text)
        self.assertIn("review own-stream: uses streams or callbacks of its own", text)
        self.assertNotIn("UNSANDBOXED", text)

    def test_history_is_kept_and_the_latest_result_counts(self):
        self.run_a()
        with open(self.history, "rb") as f:
            first_run = f.read()
        # A second run: "slow" resubmits something faster than the reference, "fast" is also
        # measured on another GPU, and an unreadable line sneaks into the file.
        better = os.path.join(self.tmp, "slow-again")
        shutil.copytree(result("slow"), better)
        with open(os.path.join(better, "bench.json")) as f:
            doc = json.load(f)
        for r in doc["results"]:
            if r["role"] == "student":
                r["median_us"] = r["median_us"] / 40.5
                r["gbps"] = r["bytes"] / (r["median_us"] * 1e3)
        with open(os.path.join(better, "bench.json"), "w") as f:
            json.dump(doc, f)
        with open(self.history, "a") as f:
            f.write("{not json\n")
        record(self.history, self.key, better, "run-b")
        record(self.history, self.key, result("fast"), "run-b", gpu="NVIDIA H200")
        with open(self.history, "rb") as f:
            both = f.read()
        self.assertTrue(both.startswith(first_run), "earlier results must never be rewritten")
        self.assertEqual(both.count(b"\n"), first_run.count(b"\n") + 3)

        text = self.report()
        self.assertIn("history.jsonl:%d: skipped: not JSON" % (first_run.count(b"\n") + 1), text)
        problems = []
        boards = R.boards(self.load(problems))
        self.assertEqual(len(problems), 1, "the records after the bad line still verify")
        self.assertEqual(sorted(boards), [("ch01", "NVIDIA H100 80GB HBM3"), ("ch01", "NVIDIA H200")])
        h100 = [r for r in boards[("ch01", "NVIDIA H100 80GB HBM3")] if r["rank"]]
        self.assertEqual(
            [r["student"] for r in h100], ["slow", "current-schema", "fast", "ncu-agrees", "name with spaces"]
        )
        self.assertEqual(h100[0]["run_id"], "run-b")
        self.assertEqual(h100[0]["runs_seen"], 2)
        self.assertEqual([r["student"] for r in boards[("ch01", "NVIDIA H200")]], ["fast"])

        with open(os.path.join(self.out, "leaderboard.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["boards"]), 2)
        self.assertEqual([r["run_id"] for r in doc["runs"]], ["run-a", "run-b"])
        self.assertEqual(len(doc["rejected_history_lines"]), 1)
        with open(os.path.join(self.out, "leaderboard.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len(result_entries()) + 1)
        dash = [r for r in rows if r["student_id"] == "dash_dots-1642b7a4"]
        self.assertEqual(dash[0]["student"], "'-dash ..dots", "cells starting with '-' are quoted for spreadsheets")
        self.assertEqual(dash[0]["reason"], "missing-files")
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            md = f.read()
        self.assertIn("## ch01 on NVIDIA H200", md)
        self.assertIn("| 1 | slow |", md)
        self.assertIn("run-a", md)
        self.assertIn("1 line(s) of the history were rejected", md)
        self.assertEqual(
            sorted(os.listdir(self.out)),
            ["history.jsonl", "leaderboard.csv", "leaderboard.json", "leaderboard.md"],
            "no temporary file is left",
        )

    def test_reports_of_an_unsandboxed_run_say_so(self):
        self.run_a(sandbox="none")
        text = self.report("run-a")
        self.assertIn("UNSANDBOXED", text.splitlines()[0])
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            md = f.read().splitlines()
        self.assertIn("UNSANDBOXED", md[2])
        with open(os.path.join(self.out, "leaderboard.json")) as f:
            self.assertIn("UNSANDBOXED", json.load(f)["warning"])
        with open(os.path.join(self.out, "leaderboard.csv"), newline="") as f:
            self.assertEqual({r["sandbox"] for r in csv.DictReader(f)}, {"none (UNSANDBOXED)"})

    def test_markdown_cells_cannot_break_the_table(self):
        self.assertEqual(R.md_cell("a|b`c<d>\nx"), "a\\|b\\`c&lt;d&gt; x")
        self.assertEqual(R.csv_safe("=cmd()"), "'=cmd()")
        self.assertEqual(R.csv_safe("plain"), "plain")


if __name__ == "__main__":
    unittest.main(verbosity=2)
