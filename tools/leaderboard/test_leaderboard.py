#!/usr/bin/env python3
"""Host tests of the leaderboard's bookkeeping (no GPU): reading submissions with awkward
folder names, classifying fixture results by their outcome codes, the cross-checks of the
numbers (ceilings, the baseline, ncu), ranking, the signed history and its validation,
reports, the expected-outcome check, and scripts/leaderboard.sh's refusal of bad input and
of running without a sandbox.

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
TRUSTED = os.path.join(RESULTS, "trusted-ch01.json")
FIXTURE_CLASS = os.path.join(REPO, "tests", "leaderboard", "fixture-class")
FIXTURE_EXPECT = os.path.join(REPO, "tests", "leaderboard", "fixture-expected.json")
HOSTILE_CLASS = os.path.join(REPO, "tests", "leaderboard", "hostile-class")
HOSTILE_EXPECT = os.path.join(REPO, "tests", "leaderboard", "hostile-expected.json")
SCRIPT = os.path.join(REPO, "scripts", "leaderboard.sh")


def trusted():
    with open(TRUSTED) as f:
        return json.load(f)


def make_key(folder):
    path = os.path.join(folder, "keys", "leaderboard.key")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("ab" * 32 + "\n")
    return path


def quietly(argv):
    buf, err = io.StringIO(), io.StringIO()
    old, old_err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = buf, err
    try:
        rc = L.main(argv)
    finally:
        sys.stdout, sys.stderr = old, old_err
    return rc, buf.getvalue(), err.getvalue()


def record(history, key, entry, run_id, gpu="NVIDIA H100 80GB HBM3", sandbox="bubblewrap"):
    rc, out, err = quietly(["record", "--history", history, "--key", key, "--entry", entry, "--run-id", run_id,
                            "--gpu-name", gpu, "--gpu-uuid", "GPU-x", "--sandbox", sandbox, "--commit", "test",
                            "--trusted", TRUSTED])
    assert rc == 0, err
    return out


def report(history, key, out, run_id=""):
    rc, text, err = quietly(["report", "--history", history, "--key", key, "--out", out] +
                            (["--run-id", run_id] if run_id else []))
    return rc, text + err


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
            rec = L.classify_entry(os.path.join(RESULTS, name), trusted=trusted())
            with self.subTest(entry=name):
                if kind is None:
                    self.assertEqual(rec["status"], "ranked", rec["reasons"])
                    self.assertGreater(rec["score"]["geomean_vs_reference"], 0)
                    self.assertEqual(rec["score"]["shapes"], 6)
                    self.assertTrue(rec["shapes"])
                else:
                    self.assertEqual(rec["status"], "not ranked")
                    self.assertEqual(rec["reasons"][0]["kind"], kind, rec["reasons"])

    def test_details_name_the_test_the_file_and_the_error(self):
        def first(name):
            return L.classify_entry(os.path.join(RESULTS, name), trusted=trusted())["reasons"][0]["detail"]
        self.assertEqual(first("not-compiling"), 'ex2_vector_add_x2.cu:11: error: identifier "offset" is undefined')
        self.assertEqual(first("hanging"), "Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1")
        self.assertEqual(first("wrong-rectangles"), "Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3")
        self.assertEqual(first("not-implemented"), "Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1")
        self.assertEqual(first("partial"), "ex4_matrix_add.cu")
        self.assertNotIn("/tmp/", first("not-compiling"))

    def test_geometric_mean_of_reference_over_student_time(self):
        rec = L.classify_entry(os.path.join(RESULTS, "slow"), trusted=trusted())
        ratios = [s["reference_us"] / s["student_us"] for s in rec["shapes"]]
        product = 1.0
        for r in ratios:
            product *= r
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], product ** (1.0 / len(ratios)))
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], 1 / 40 * L.geomean(
            [s["reference_us"] / (s["student_us"] / 40) for s in rec["shapes"]]))


class CrossChecks(unittest.TestCase):
    """The leaderboard's own checks of a benchmark's numbers, whatever outcome code a row has."""

    def setUp(self):
        with open(os.path.join(RESULTS, "fast", "bench.json")) as f:
            self.doc = json.load(f)

    def classify(self, doc, base=None):
        return L.classify_bench(0, json.dumps(doc), trusted() if base is None else base)

    def test_an_honest_run_passes(self):
        reasons, shapes, notes = self.classify(self.doc)
        self.assertEqual(reasons, [])
        self.assertEqual(len(shapes), 6)

    def student(self, doc, shape="n=16777216", impl="student"):
        return [r for r in doc["results"] if r["role"] == "student" and r["shape"] == shape and r["impl"] == impl][0]

    def test_above_the_measured_copy_ceiling_is_implausible(self):
        self.student(self.doc)["median_us"] = 201326592.0 / (3700 * 1.2) / 1e3  # 120% of the copy ceiling
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("120% of the measured copy ceiling (3700 GB/s)", reasons[0]["detail"])

    def test_a_few_percent_above_is_noise(self):
        self.student(self.doc)["median_us"] = 201326592.0 / (3700 * 1.03) / 1e3
        self.student(self.doc)["gbps"] = 3700 * 1.03
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons, [])

    def test_the_baseline_ceilings_win_over_the_runs_own(self):
        self.doc["measured_ceilings"]["copy_gbps"] = 1e9  # a forged ceiling
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("the leaderboard measured 3700", reasons[0]["detail"])

    def test_fewer_bytes_than_the_chapter_declares_is_implausible(self):
        self.student(self.doc)["bytes"] = 1.0
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")

    def test_derived_numbers_must_follow_from_the_time(self):
        self.student(self.doc)["gbps"] = 1.0
        reasons, _, _ = self.classify(self.doc)
        self.assertIn("does not follow from its time", reasons[0]["detail"])

    def test_a_reference_far_from_the_baseline_is_implausible(self):
        for r in self.doc["results"]:
            if r["role"] == "reference":
                r["median_us"] *= 3  # the student slowed the library down in its own process
        reasons, _, _ = self.classify(self.doc)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("when the leaderboard timed it alone", reasons[0]["detail"])

    def test_compute_above_the_ceiling_is_implausible(self):
        row = self.student(self.doc)
        row["flops"] = 1e15
        base = trusted()
        for r in base["results"]:
            r["flops"] = 1e15
        reasons, _, _ = self.classify(self.doc, base)
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("TFLOP/s", reasons[0]["detail"])

    def test_any_code_but_pass_never_ranks(self):
        for code, kind in L.OUTCOME_KIND.items():
            if code == "pass":
                continue
            doc = json.loads(json.dumps(self.doc))
            self.student(doc)["outcome"] = code
            reasons, _, _ = self.classify(doc)
            with self.subTest(code=code):
                self.assertEqual(reasons[0]["kind"], kind)
        doc = json.loads(json.dumps(self.doc))
        self.student(doc)["outcome"] = "PASS"
        self.assertEqual(self.classify(doc)[0][0]["kind"], "no-result")

    def test_a_second_document_in_the_stream_is_rejected(self):
        text = json.dumps(self.doc) + "\n" + json.dumps(self.doc)
        reasons, _, _ = L.classify_bench(0, text, trusted())
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("more than one document", reasons[0]["detail"])

    def test_schema_1_only_for_old_history(self):
        with open(os.path.join(RESULTS, "schema-v1", "bench.json")) as f:
            text = f.read()
        self.assertEqual(L.classify_bench(0, text, trusted())[0][0]["kind"], "no-result")
        reasons, shapes, _ = L.classify_bench(0, text, trusted(), legacy=True)
        self.assertEqual((reasons, len(shapes)), ([], 6))

    def test_ncu_csv_is_read_without_the_harness_kernels(self):
        with open(os.path.join(RESULTS, "ncu-mismatch", "ncu.csv")) as f:
            per_call, seen = L.ncu_kernel_time(f.read())
        self.assertEqual(seen, 48)
        self.assertAlmostEqual(per_call, 2250000.0)
        self.assertEqual(L.ncu_kernel_time("==PROF== error\n"), (None, 0))
        with open(os.path.join(RESULTS, "fast", "bench.json")) as f:
            target = L.ncu_target(f.read())
        self.assertEqual((target["op"], target["impl"]), ("vector_add", "student"))

    def test_tests_read_by_code_not_by_message(self):
        with open(os.path.join(RESULTS, "fast", "tests.json")) as f:
            doc = json.load(f)
        doc["testsuites"][0]["testsuite"][0]["outcome"] = "race"
        self.assertEqual(L.classify_tests(0, "", json.dumps(doc))[0]["kind"], "race")
        # Without a JSON, a test left unfinished is a hang with exit code 124, a crash otherwise.
        log = "[ RUN      ] A.b\n[wb-outcome] pass A.b\n[       OK ] A.b (1 ms)\n[ RUN      ] A.c\n"
        self.assertEqual(L.classify_tests(124, log, None)[0], L.reason("hung", "A.c"))
        self.assertEqual(L.classify_tests(139, log, None)[0]["kind"], "faulted")
        # Messages claiming success change nothing.
        self.assertEqual(L.classify_tests(0, "[  PASSED  ] 4 tests.\nall good\n", None)[0]["kind"], "no-result")

    def test_the_seed_the_run_printed_is_recorded(self):
        rec = L.classify_entry(os.path.join(RESULTS, "fast"), trusted=trusted())
        self.assertEqual(rec["seed"]["tests"], 771)


class HistoryAndReports(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.history = os.path.join(self.tmp, "out", "history.jsonl")
        self.out = os.path.join(self.tmp, "out")
        self.key = make_key(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def load(self, problems=None):
        err = io.StringIO()
        old = sys.stderr
        sys.stderr = err
        try:
            return L.load_history(self.history, L.load_key(self.key), problems)
        finally:
            sys.stderr = old

    def run_a(self, sandbox="bubblewrap"):
        names = sorted(n for n in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, n)))
        for n in names:
            record(self.history, self.key, os.path.join(RESULTS, n), "run-a", sandbox=sandbox)
        return names

    def test_ranking_per_chapter_and_gpu(self):
        self.run_a()
        boards = L.boards(self.load())
        self.assertEqual(list(boards), [("ch01", "NVIDIA H100 80GB HBM3")])
        recs = boards[("ch01", "NVIDIA H100 80GB HBM3")]
        ranked = [r["student"] for r in recs if r["rank"]]
        self.assertEqual(ranked, ["fast", "ncu-agrees", "name with spaces", "slow"])
        self.assertEqual([r["rank"] for r in recs if r["rank"]], [1, 2, 3, 4])
        rc, text = report(self.history, self.key, self.out, "run-a")
        self.assertEqual(rc, 0)
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
        shutil.copytree(os.path.join(RESULTS, "slow"), better)
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
        record(self.history, self.key, os.path.join(RESULTS, "fast"), "run-b", gpu="NVIDIA H200")
        with open(self.history, "rb") as f:
            both = f.read()
        self.assertTrue(both.startswith(first_run), "earlier results must never be rewritten")
        self.assertEqual(both.count(b"\n"), first_run.count(b"\n") + 3)

        rc, text = report(self.history, self.key, self.out)
        self.assertEqual(rc, 0)
        self.assertIn("history.jsonl:%d: skipped: not JSON" % (first_run.count(b"\n") + 1), text)
        problems = []
        boards = L.boards(self.load(problems))
        self.assertEqual(len(problems), 1, "the records after the bad line still verify")
        self.assertEqual(sorted(boards), [("ch01", "NVIDIA H100 80GB HBM3"), ("ch01", "NVIDIA H200")])
        h100 = [r for r in boards[("ch01", "NVIDIA H100 80GB HBM3")] if r["rank"]]
        self.assertEqual([r["student"] for r in h100], ["slow", "fast", "ncu-agrees", "name with spaces"])
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
        self.assertEqual(len(rows), len([n for n in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, n))]) + 1)
        dash = [r for r in rows if r["student_id"] == "dash_dots-1642b7a4"]
        self.assertEqual(dash[0]["student"], "'-dash ..dots", "cells starting with '-' are quoted for spreadsheets")
        self.assertEqual(dash[0]["reason"], "missing-files")
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            md = f.read()
        self.assertIn("## ch01 on NVIDIA H200", md)
        self.assertIn("| 1 | slow |", md)
        self.assertIn("run-a", md)
        self.assertIn("1 line(s) of the history were rejected", md)

    def test_bad_lines_are_reported_with_their_number_and_skipped(self):
        record(self.history, self.key, os.path.join(RESULTS, "fast"), "run-a")
        with open(self.history) as f:
            good = f.read().splitlines()[0]
        rec = json.loads(good)
        edited = dict(rec, score=dict(rec["score"], geomean_vs_reference=50.0))
        extra = dict(rec, bonus=1)
        bad_lines = ['{"schema": 1}', '{"schema": 2, "student": "x"', "[1, 2]", json.dumps(edited),
                     json.dumps(extra), good, "\x00\xff not text"]
        with open(self.history, "a") as f:
            f.write("\n".join(bad_lines) + "\n")
        record(self.history, self.key, os.path.join(RESULTS, "slow"), "run-b")
        problems = []
        records = self.load(problems)
        self.assertEqual([r["student"] for r in records], ["fast", "slow"])
        self.assertEqual([n for n, _ in problems], [2, 3, 4, 5, 6, 7, 8])
        whys = dict(problems)
        self.assertIn("schema", whys[2])
        self.assertIn("not JSON", whys[3])
        self.assertIn("signature does not verify", whys[5])
        self.assertIn("fields not as written by the leaderboard (unexpected: bonus)", whys[6])
        self.assertIn("does not follow the line before it", whys[7], "a copied genuine line is a replay")
        rc, out, err = quietly(["verify", "--history", self.history, "--key", self.key])
        self.assertEqual(rc, 1)
        self.assertIn("2 record(s) verify, 7 line(s) skipped", out)

    def test_a_forged_record_never_ranks(self):
        record(self.history, self.key, os.path.join(RESULTS, "slow"), "run-a")
        forged = open(os.path.join(HOSTILE_CLASS, "history-forger", "ch01", "ex1_vector_add.cu")).read()
        line = forged.split("const char kForged[] =")[1].split(";")[0]
        text = "".join(re_part.encode().decode("unicode_escape") for re_part in
                       [p.strip()[1:-1] for p in line.strip().splitlines()])
        forged_rec = json.loads(text)
        self.assertIsNone(L.validate_record(forged_rec), "the forgery has the right shape; only its signature fails")
        with open(self.history, "a") as f:
            f.write(text)
        # Signed with another key, the record does not verify either.
        other = os.path.join(self.tmp, "other.key")
        fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("cd" * 32)
        record(self.history, other, os.path.join(RESULTS, "fast"), "run-x")
        problems = []
        records = self.load(problems)
        self.assertEqual([r["student"] for r in records], ["slow"])
        self.assertEqual(len(problems), 2)
        self.assertNotIn("forged-winner", [r["student"] for recs in L.boards(records).values() for r in recs])

    def test_the_key_must_be_private(self):
        os.chmod(self.key, 0o644)
        with self.assertRaises(L.KeyError_):
            L.load_key(self.key)
        rc, _, err = quietly(["report", "--history", self.history, "--key", self.key, "--out", self.out])
        self.assertEqual(rc, 2)
        self.assertIn("can be read by others", err)

    def test_reports_of_an_unsandboxed_run_say_so(self):
        self.run_a(sandbox="none")
        rc, text = report(self.history, self.key, self.out, "run-a")
        self.assertIn("UNSANDBOXED", text.splitlines()[0])
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            md = f.read().splitlines()
        self.assertIn("UNSANDBOXED", md[2])
        with open(os.path.join(self.out, "leaderboard.json")) as f:
            self.assertIn("UNSANDBOXED", json.load(f)["warning"])
        with open(os.path.join(self.out, "leaderboard.csv"), newline="") as f:
            self.assertEqual({r["sandbox"] for r in csv.DictReader(f)}, {"none (UNSANDBOXED)"})

    def test_markdown_cells_cannot_break_the_table(self):
        self.assertEqual(L.md_cell("a|b`c<d>\nx"), "a\\|b\\`c&lt;d&gt; x")

    def test_fixture_check_accepts_the_expected_class_and_rejects_a_wrong_order(self):
        self.run_a()
        rc, out, _ = quietly(["check", "--history", self.history, "--key", self.key, "--run-id", "run-a",
                              "--expect", FIXTURE_EXPECT])
        self.assertEqual(rc, 0, out)
        with open(FIXTURE_EXPECT) as f:
            want = json.load(f)
        want["ch01"]["faster_than"] = [["slow", "fast"]]
        want["ch01"]["reasons"]["caching"] = "wrong"
        want["ch01"]["reasons"]["slow"] = ["implausible", "ranked"]
        want["ch01"]["absent"] = ["fast", "forged-winner"]
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            json.dump(want, f)
        rc, out, _ = quietly(["check", "--history", self.history, "--key", self.key, "--run-id", "run-a",
                              "--expect", bad])
        self.assertEqual(rc, 1)
        self.assertIn("MISS ch01: 'slow'", out)
        self.assertIn("MISS ch01: 'caching' is listed as 'stale output", out)
        self.assertIn("ok   ch01 slow                     ranked (allowed)", out)
        self.assertIn("MISS ch01: 'fast' has a result in the history", out)
        self.assertIn("ok   ch01 forged-winner            no result", out)


class HostileClass(unittest.TestCase):
    """The hostile class is planned like any other, and its expected outcome is well formed."""

    def test_every_hostile_submission_is_taken_whole(self):
        chapters = L.chapter_dirs(REPO)
        stubs = L.stub_names(REPO, chapters["ch01"])
        names = sorted(os.listdir(HOSTILE_CLASS))
        self.assertEqual(names, ["caching", "fast", "forged-results", "hang", "history-forger", "plagiarist",
                                 "seed-thief", "slow", "stream-escape"])
        notes = {}
        for n in names:
            taken, ignored, missing = L.scan_student(os.path.join(os.fsencode(HOSTILE_CLASS), os.fsencode(n)), "ch01",
                                                     chapters["ch01"], stubs)
            self.assertEqual((sorted(taken), ignored, missing), (stubs, [], []), n)
            notes[n] = L.review_notes([v.decode() for v in taken.values()])
        self.assertIn("defines a destructor (code that can run after main)", notes["forged-results"])
        self.assertIn("runs code before or after main", notes["seed-thief"])
        self.assertIn("calls the harness's seed functions", notes["seed-thief"])
        self.assertIn("reads the environment", notes["seed-thief"])
        self.assertIn("includes a file by path or macro", notes["plagiarist"])
        self.assertIn("reads /proc", notes["history-forger"])
        self.assertIn("uses streams or callbacks of its own", notes["stream-escape"])
        self.assertEqual(notes["fast"], [])

    def test_the_expected_outcome_names_every_student(self):
        with open(HOSTILE_EXPECT) as f:
            want = json.load(f)["ch01"]
        named = set(want["ranked"]) | set(want["reasons"])
        self.assertEqual(named, set(os.listdir(HOSTILE_CLASS)))
        for kinds in want["reasons"].values():
            for k in [kinds] if isinstance(kinds, str) else kinds:
                self.assertTrue(k == "ranked" or k in L.REASON_LABEL, k)


class Script(unittest.TestCase):
    """scripts/leaderboard.sh refuses bad input before it looks for a GPU, and refuses to run
    without a sandbox unless told to."""

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
            (["--hostile", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--fixture", "--hostile"], "one class at a time"),
            (["--no-sandbox", FIXTURE_CLASS], "--no-sandbox is now --unsafe-no-sandbox"),
            (["--expect", "/nonexistent.json", FIXTURE_CLASS], "--expect: '/nonexistent.json' is not a file"),
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
        self.assertIn("--unsafe-no-sandbox", text)

    def test_without_a_sandbox_it_refuses_to_rank(self):
        for bwrap, why in (("/nonexistent/bwrap", "is not an executable file"), ("/bin/false", "cannot start a sandbox")):
            for args in ([FIXTURE_CLASS], ["--hostile"]):
                with self.subTest(bwrap=bwrap, args=args):
                    rc, text = self.run_script("--bwrap", bwrap, *args)
                    self.assertEqual(rc, 1, text)
                    self.assertIn("refusing to rank without a sandbox", text)
                    self.assertIn(why, text)
                    self.assertIn("--unsafe-no-sandbox", text)

    def test_without_a_gpu_it_says_so(self):
        if shutil.which("nvidia-smi"):
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip():
                self.skipTest("a GPU is visible here")
        for args in ([FIXTURE_CLASS], ["--fixture"], ["--hostile"]):
            rc, text = self.run_script("--bwrap", "/bin/false", "--unsafe-no-sandbox", *args)
            self.assertEqual(rc, 1, text)
            self.assertIn("running UNSANDBOXED", text)
            self.assertIn("no NVIDIA GPU is visible", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
