#!/usr/bin/env python3
"""Host tests of the leaderboard's bookkeeping (no GPU): reading submissions with awkward
folder names, classifying fixture results, ranking, history and reports, the fixture check,
and scripts/leaderboard.sh's refusal of bad input.

  python3 tools/leaderboard/test_leaderboard.py      (ctest runs it: label host)
"""

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import leaderboard as L  # noqa: E402

RESULTS = os.path.join(REPO, "tests", "leaderboard", "results")
FIXTURE_CLASS = os.path.join(REPO, "tests", "leaderboard", "fixture-class")
FIXTURE_EXPECT = os.path.join(REPO, "tests", "leaderboard", "fixture-expected.json")
SCRIPT = os.path.join(REPO, "scripts", "leaderboard.sh")


def record(history, entry, run_id, gpu="NVIDIA H100 80GB HBM3", date="2025-01-01T10:00:00Z"):
    with open(os.devnull, "w") as null:
        old = sys.stdout
        sys.stdout = null
        try:
            L.main(["record", "--history", history, "--entry", entry, "--run-id", run_id, "--gpu-name", gpu,
                    "--gpu-uuid", "GPU-x", "--date", date, "--sandbox", "none", "--commit", "test"])
        finally:
            sys.stdout = old


def report(history, out, run_id=""):
    buf = io.StringIO()
    old = sys.stdout
    sys.stdout = buf
    try:
        rc = L.main(["report", "--history", history, "--out", out] + (["--run-id", run_id] if run_id else []))
    finally:
        sys.stdout = old
    return rc, buf.getvalue()


class Names(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.subs = os.path.join(self.tmp, "subs")
        os.makedirs(self.subs)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def student(self, raw_name, files):
        d = os.path.join(os.fsencode(self.subs), raw_name, b"ch01")
        os.makedirs(d)
        for name, text in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(text)
        return d

    def test_awkward_folder_names_get_safe_unique_ids(self):
        names = [b"name with spaces", b"..dots", b"-rf", b"--help", b"\xff\xfe bad utf8", b"tab\tand\nnewline",
                 b"$(touch pwned)", b"a;b|c&d", b"Name With Spaces", b"name_with_spaces"]
        for n in names:
            self.student(n, {b"ex1_vector_add.cu": b"// mine\n"})
        ids = [L.safe_id(n) for n in names]
        self.assertEqual(len(set(ids)), len(ids))
        for i in ids:
            self.assertRegex(i, L.SAFE_ID_RE)
        self.assertEqual(L.display_name(b"tab\tand\nnewline"), "tab\\x09and\\x0anewline")
        self.assertEqual(L.display_name(b"\xff\xfe bad utf8"), "\\xff\\xfe bad utf8")

        work = os.path.join(self.tmp, "work")
        buf = io.StringIO()
        old = sys.stdout
        sys.stdout = buf
        try:
            L.main(["plan", "--repo", REPO, "--submissions", self.subs, "--work", work, "--chapter", "ch01"])
        finally:
            sys.stdout = old
        lines = [l.split("\t") for l in buf.getvalue().splitlines()]
        self.assertEqual(len(lines), len(names))
        for sid, ch, state, shown in lines:
            self.assertRegex(sid, L.SAFE_ID_RE)
            self.assertEqual((ch, state), ("ch01", "build"))
            self.assertNotIn("\n", shown)
            self.assertNotIn("\t", shown)
        # Nothing was created outside the work folder, and only under entries/<safe id>.
        self.assertEqual(sorted(os.listdir(work)), ["entries"])
        self.assertEqual(sorted(os.listdir(os.path.join(work, "entries"))), sorted(ids))

    def test_only_the_chapters_stub_files_are_taken(self):
        d = self.student(b"alice", {b"ex1_vector_add.cu": b"// one\n", b"ex4_matrix_add.cu": b"void f() {\n  static int calls = 0;\n}\n",
                                    b"helper.cuh": b"// not taken\n", b"ex9.cu": b"#error never\n"})
        os.makedirs(os.path.join(d, b"ex2_vector_add_x2.cu"))  # a folder with a stub's name
        os.symlink("/etc/passwd", os.path.join(d, b"ex3_rgb_to_grey.cu"))
        with open(os.path.join(d, b"big.cu"), "wb") as f:
            f.write(b"x" * 10)
        os.symlink(d, os.path.join(os.fsencode(self.subs), b"linked-student"))
        with open(os.path.join(self.subs, "README.txt"), "w") as f:
            f.write("not a student\n")
        taken, ignored, missing = L.scan_student(os.path.join(os.fsencode(self.subs), b"alice"), "ch01",
                                                 "ch01_indexing", L.stub_names(REPO, "ch01_indexing"))
        self.assertEqual(sorted(taken), ["ex1_vector_add.cu", "ex4_matrix_add.cu"])
        self.assertEqual(missing, ["ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu"])
        joined = "\n".join(ignored)
        for what in ("helper.cuh", "ex9.cu", "big.cu", "ex2_vector_add_x2.cu/ (a folder)",
                     "ex3_rgb_to_grey.cu (a symbolic link)"):
            self.assertIn(what, joined)

        work = os.path.join(self.tmp, "work")
        buf = io.StringIO()
        old = sys.stdout
        sys.stdout = buf
        try:
            L.main(["plan", "--repo", REPO, "--submissions", self.subs, "--work", work, "--chapter", "ch01"])
        finally:
            sys.stdout = old
        self.assertEqual(len(buf.getvalue().splitlines()), 1, "the symbolic link and the file are not students")
        sid = L.safe_id(b"alice")
        with open(os.path.join(work, "entries", sid, "ch01", "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["taken"], ["ex1_vector_add.cu", "ex4_matrix_add.cu"])
        self.assertIn("keeps state between calls (a static variable)", meta["review"])
        self.assertEqual(sorted(os.listdir(os.path.join(work, "entries", sid, "ch01", "submission"))),
                         ["ex1_vector_add.cu", "ex4_matrix_add.cu"])

    def test_the_fixture_class_is_planned_as_expected(self):
        chapters = L.chapter_dirs(REPO)
        self.assertIn("ch01", chapters)
        stubs = L.stub_names(REPO, chapters["ch01"])
        for entry in os.scandir(os.fsencode(FIXTURE_CLASS)):
            taken, ignored, missing = L.scan_student(entry.path, "ch01", chapters["ch01"], stubs)
            if entry.name == b"-dash ..dots":
                self.assertEqual((taken, missing), ({}, stubs))
                self.assertEqual(len(ignored), 2)
            else:
                self.assertEqual(sorted(taken), stubs, entry.name)


class Classification(unittest.TestCase):
    def test_each_fixture_result_gets_its_reason(self):
        with open(os.path.join(RESULTS, "expected.json")) as f:
            expected = json.load(f)
        for name, kind in sorted(expected.items()):
            rec = L.classify_entry(os.path.join(RESULTS, name))
            with self.subTest(entry=name):
                if kind is None:
                    self.assertEqual(rec["status"], "ranked", rec["reasons"])
                    self.assertGreater(rec["score"]["geomean_vs_reference"], 0)
                    self.assertEqual(rec["score"]["shapes"], 6)
                else:
                    self.assertEqual(rec["status"], "not ranked")
                    self.assertEqual(rec["reasons"][0]["kind"], kind, rec["reasons"])

    def test_details_name_the_test_the_file_and_the_error(self):
        def first(name):
            return L.classify_entry(os.path.join(RESULTS, name))["reasons"][0]["detail"]
        self.assertEqual(first("not-compiling"), 'ex2_vector_add_x2.cu:11: error: identifier "offset" is undefined')
        self.assertEqual(first("hanging"), "Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1")
        self.assertEqual(first("wrong-rectangles"), "Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3")
        self.assertEqual(first("not-implemented"), "chapters/ch01_indexing/ex3_rgb_to_grey.cu")
        self.assertEqual(first("partial"), "ex4_matrix_add.cu")
        self.assertNotIn("/tmp/", first("not-compiling"))

    def test_geometric_mean_of_reference_over_student_time(self):
        rec = L.classify_entry(os.path.join(RESULTS, "slow"))
        ratios = [s["reference_us"] / s["student_us"] for s in rec["shapes"]]
        product = 1.0
        for r in ratios:
            product *= r
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], product ** (1.0 / len(ratios)))
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], 1 / 40 * L.geomean(
            [s["reference_us"] / (s["student_us"] / 40) for s in rec["shapes"]]))


class HistoryAndReports(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.history = os.path.join(self.tmp, "out", "history.jsonl")
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def run_a(self):
        names = sorted(n for n in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, n)))
        for n in names:
            record(self.history, os.path.join(RESULTS, n), "run-a")
        return names

    def test_ranking_per_chapter_and_gpu(self):
        self.run_a()
        boards = L.boards(L.load_history(self.history))
        self.assertEqual(list(boards), [("ch01", "NVIDIA H100 80GB HBM3")])
        recs = boards[("ch01", "NVIDIA H100 80GB HBM3")]
        ranked = [r["student"] for r in recs if r["rank"]]
        self.assertEqual(ranked, ["fast", "name with spaces", "slow"])
        self.assertEqual([r["rank"] for r in recs if r["rank"]], [1, 2, 3])
        rc, text = report(self.history, self.out, "run-a")
        self.assertEqual(rc, 0)
        self.assertIn("ch01 on NVIDIA H100 80GB HBM3", text)
        self.assertIn("stale output after timing", text)
        self.assertIn("left work running", text)
        self.assertIn("review own-stream: uses streams or callbacks of its own", text)

    def test_history_is_kept_and_the_latest_result_counts(self):
        self.run_a()
        with open(self.history, "rb") as f:
            first_run = f.read()
        # A second run: "slow" resubmits something twice as fast as the reference, "fast" is
        # also measured on another GPU, and an unreadable line sneaks into the file.
        better = os.path.join(self.tmp, "slow-again")
        shutil.copytree(os.path.join(RESULTS, "slow"), better)
        with open(os.path.join(better, "bench.json")) as f:
            doc = json.load(f)
        for r in doc["results"]:
            if r["role"] == "student":
                r["median_us"] = r["median_us"] / 80
        with open(os.path.join(better, "bench.json"), "w") as f:
            json.dump(doc, f)
        with open(self.history, "a") as f:
            f.write("{not json\n")
        record(self.history, better, "run-b", date="2025-01-02T10:00:00Z")
        record(self.history, os.path.join(RESULTS, "fast"), "run-b", gpu="NVIDIA H200", date="2025-01-02T10:00:00Z")
        with open(self.history, "rb") as f:
            both = f.read()
        self.assertTrue(both.startswith(first_run), "earlier results must never be rewritten")
        self.assertEqual(both.count(b"\n"), first_run.count(b"\n") + 3)

        rc, text = report(self.history, self.out)
        self.assertEqual(rc, 0)
        boards = L.boards(L.load_history(self.history))
        self.assertEqual(sorted(boards), [("ch01", "NVIDIA H100 80GB HBM3"), ("ch01", "NVIDIA H200")])
        h100 = [r for r in boards[("ch01", "NVIDIA H100 80GB HBM3")] if r["rank"]]
        self.assertEqual([r["student"] for r in h100], ["slow", "fast", "name with spaces"])
        self.assertEqual(h100[0]["run_id"], "run-b")
        self.assertEqual(h100[0]["runs_seen"], 2)
        self.assertEqual([r["student"] for r in boards[("ch01", "NVIDIA H200")]], ["fast"])

        with open(os.path.join(self.out, "leaderboard.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["boards"]), 2)
        self.assertEqual([r["run_id"] for r in doc["runs"]], ["run-a", "run-b"])
        with open(os.path.join(self.out, "leaderboard.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), len([n for n in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, n))]) + 1)
        dash = [r for r in rows if r["student_id"] == "dash_dots-1642b7a4"]
        self.assertEqual(dash[0]["student"], "'-dash ..dots", "cells starting with '-' are quoted for spreadsheets")
        self.assertEqual(dash[0]["reason"], "missing-files")
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            md = f.read()
        self.assertIn("## ch01 on NVIDIA H200", md)
        self.assertIn("| 1 | slow |", md)
        self.assertIn("run-a", md)

    def test_markdown_cells_cannot_break_the_table(self):
        self.assertEqual(L.md_cell("a|b`c<d>\nx"), "a\\|b\\`c&lt;d&gt; x")

    def test_fixture_check_accepts_the_expected_class_and_rejects_a_wrong_order(self):
        self.run_a()
        buf = io.StringIO()
        old = sys.stdout
        sys.stdout = buf
        try:
            rc = L.main(["check-fixture", "--history", self.history, "--run-id", "run-a", "--expect", FIXTURE_EXPECT])
            self.assertEqual(rc, 0, buf.getvalue())
            with open(FIXTURE_EXPECT) as f:
                want = json.load(f)
            want["ch01"]["faster_than"] = [["slow", "fast"]]
            want["ch01"]["reasons"]["caching"] = "wrong"
            bad = os.path.join(self.tmp, "bad.json")
            with open(bad, "w") as f:
                json.dump(want, f)
            rc = L.main(["check-fixture", "--history", self.history, "--run-id", "run-a", "--expect", bad])
        finally:
            sys.stdout = old
        self.assertEqual(rc, 1)
        self.assertIn("MISS ch01: 'slow'", buf.getvalue())
        self.assertIn("MISS ch01: 'caching' is listed as 'stale output", buf.getvalue())


class Script(unittest.TestCase):
    """scripts/leaderboard.sh refuses bad input before it looks for a GPU."""

    def run_script(self, *args):
        p = subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr

    def test_bad_input_is_refused_with_a_message(self):
        cases = [
            (["--frobnicate", FIXTURE_CLASS], "unknown option '--frobnicate'"),
            ([], "give the SUBMISSIONS_DIR"),
            (["/nonexistent/folder"], "is not a folder"),
            (["--chapter", "ch99", FIXTURE_CLASS], "unknown chapter 'ch99'"),
            (["--chapter", "bogus", FIXTURE_CLASS], "unknown chapter 'bogus'"),
            (["--timeout", "0", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", "-5", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", "abc", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", FIXTURE_CLASS], "--timeout must be a positive number of seconds, not '/"),
            (["--timeout"], "--timeout needs a value"),
            (["--kernel-timeout", "x", FIXTURE_CLASS], "--kernel-timeout must be a positive number"),
            (["--build-jobs", "0", FIXTURE_CLASS], "--build-jobs must be a whole number"),
            ([FIXTURE_CLASS, FIXTURE_CLASS], "one SUBMISSIONS_DIR only"),
            (["--fixture", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 2, text)
                self.assertIn(message, text)

    def test_help(self):
        rc, text = self.run_script("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: scripts/leaderboard.sh", text)

    def test_without_a_gpu_it_says_so(self):
        if shutil.which("nvidia-smi"):
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip():
                self.skipTest("a GPU is visible here")
        for args in ([FIXTURE_CLASS], ["--fixture"]):
            rc, text = self.run_script(*args)
            self.assertEqual(rc, 1, text)
            self.assertIn("no NVIDIA GPU is visible", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
