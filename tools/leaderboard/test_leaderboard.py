#!/usr/bin/env python3
"""Host tests of the leaderboard's bookkeeping (no GPU): reading submissions with awkward
folder names, classifying fixture results by their outcome codes, the cross-checks of the
numbers (ceilings, the baseline, ncu), every chapter's score (the library reference, chapter
9's whole-model score), what a chapter runs, ranking, the signed history and its validation,
reports, the expected-outcome check, a cluster run's records and collects (with sacct and
scontrol played by scripts), and the scripts' refusal of bad input and of running without a
sandbox. The same on a real Slurm cluster: tests/leaderboard/slurm-check.sh.

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
        self.assertEqual(missing, ["ex0_host_program.cu", "ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu"])
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
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        stubs = L.stub_names(REPO, chapters["ch01"])
        for entry in os.scandir(os.fsencode(FIXTURE_CLASS)):
            taken, ignored, missing = L.scan_student(entry.path, "ch01", chapters["ch01"], stubs)
            if entry.name == b"-dash ..dots":
                self.assertEqual((taken, missing), ({}, stubs))
                self.assertEqual(len(ignored), 2)
            elif taken is None:  # a student of the later chapters only
                self.assertNotIn(entry.name.decode(), expected["ch01"]["reasons"])
                self.assertNotIn(entry.name.decode(), expected["ch01"]["ranked"])
            else:
                self.assertEqual(sorted(taken), stubs, entry.name)

    def test_the_fixture_class_covers_every_chapter(self):
        """Chapters 1 to 9 each have an expected outcome; every student it names with a result
        other than missing files has the chapter's folder with every stub and nothing else, and
        every student listed as missing files has no folder for that chapter."""
        chapters = L.chapter_dirs(REPO)
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        self.assertEqual(sorted(expected), sorted(chapters))
        students = set(os.listdir(FIXTURE_CLASS))
        for ch, want in sorted(expected.items()):
            stubs = L.stub_names(REPO, chapters[ch])
            with self.subTest(chapter=ch):
                self.assertIn("fast", want["ranked"])
                self.assertIn("slow", want["ranked"])
                self.assertIn(["fast", "slow"], want["faster_than"])
                self.assertIn("wrong", want["reasons"].values())
                for before, after in want["faster_than"]:
                    self.assertIn(before, want["ranked"])
                    self.assertIn(after, want["ranked"])
                for name in set(want["ranked"]) | set(want["reasons"]):
                    self.assertIn(name, students)
                    kinds = want["reasons"].get(name, "ranked")
                    for k in [kinds] if isinstance(kinds, str) else kinds:
                        self.assertTrue(k == "ranked" or k in L.REASON_LABEL, k)
                    if ch == "ch01" and name == "-dash ..dots":
                        continue  # a ch01 folder without one of the chapter's files
                    path = os.path.join(os.fsencode(FIXTURE_CLASS), os.fsencode(name))
                    taken, ignored, missing = L.scan_student(path, ch, chapters[ch], stubs)
                    if kinds == "missing-files":
                        self.assertIsNone(taken, (ch, name))
                    else:
                        self.assertEqual((sorted(taken), ignored, missing), (stubs, [], []), (ch, name))
                        if ch != "ch01":  # chapter 1's class has cheats on purpose; the later ones none
                            # (chapter 11 teaches streams of one's own: that note is expected there)
                            allowed = {"uses streams or callbacks of its own"} if ch == "ch11" else set()
                            notes = L.review_notes([v.decode() for v in taken.values()])
                            self.assertEqual(sorted(set(notes) - allowed), [], (ch, name))


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

    def test_ncu_target_prints_the_benchmarks_own_selection(self):
        import argparse
        import contextlib
        with tempfile.TemporaryDirectory() as entry:
            shutil.copy(os.path.join(RESULTS, "fast", "bench.json"), entry)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = L.cmd_ncu_target(argparse.Namespace(entry=entry))
            self.assertEqual(rc, 0)
            t = json.load(open(os.path.join(entry, "ncu-target.json")))
            # One argument per line, each a selection option of the chapter's benchmark.
            self.assertEqual(out.getvalue().splitlines(),
                             ["--op=" + t["op"], "--shape=" + t["shape"], "--impl=" + t["impl"]])
            # A row whose names hold a line break would smuggle in another argument: refused.
            with open(os.path.join(entry, "bench.json")) as f:
                doc = json.load(f)
            for r in doc["results"]:
                if r["role"] == "student":
                    r["impl"] = r["impl"] + "\n--remeasure"
            with open(os.path.join(entry, "bench.json"), "w") as f:
                json.dump(doc, f)
            with contextlib.redirect_stdout(io.StringIO()) as refused:
                self.assertEqual(L.cmd_ncu_target(argparse.Namespace(entry=entry)), 1)
            self.assertEqual(refused.getvalue(), "")
            # ... and the row itself is not scored: the benchmark never writes such a name.
            reasons, _, _ = L.classify_bench(0, json.dumps(doc))
            self.assertIn("implausible", [r["kind"] for r in reasons])

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

    def test_cases_not_run_after_the_first_failure_are_not_a_reason(self):
        with open(os.path.join(RESULTS, "fast", "tests.json")) as f:
            doc = json.load(f)
        cases = doc["testsuites"][0]["testsuite"]
        self.assertGreaterEqual(len(cases), 2)
        # --gtest_fail_fast: the first case fails, the rest are reported as skipped, without a code.
        cases[0]["outcome"] = "cached"
        for c in cases[1:]:
            c.pop("outcome", None)
            c["result"] = "SKIPPED"
        self.assertEqual([r["kind"] for r in L.classify_tests(1, "", json.dumps(doc))], ["stale-output"])
        # With no failure before them, cases without a code are still no result: nothing is ranked
        # by skipping its own tests.
        cases[0]["outcome"] = "pass"
        self.assertEqual([r["kind"] for r in L.classify_tests(0, "", json.dumps(doc))], ["no-result"])

    def test_the_seed_the_run_printed_is_recorded(self):
        rec = L.classify_entry(os.path.join(RESULTS, "fast"), trusted=trusted())
        self.assertEqual(rec["seed"]["tests"], 771)


DECODER = os.path.join(REPO, "tests", "leaderboard", "decoder")


def decoder_text(name):
    with open(os.path.join(DECODER, name)) as f:
        return f.read()


class ChapterScores(unittest.TestCase):
    """Chapters after the first five: several references per shape (the library first),
    rows without a reference, and chapter 9's whole-model score."""

    def doc(self):
        """A chapter 6-like run: per shape the library (cuDNN), an unfused baseline, a student."""
        rows = []
        for shape, lib_us, unfused_us, student_us in (("N=16384,C=4096", 100.0, 180.0, 80.0),
                                                      ("N=1,C=4096", 4.0, 9.0, 5.0)):
            for impl, role, us in (("cudnn_norm", "reference", lib_us), ("unfused_add_then_norm", "reference", unfused_us),
                                   ("ex2_residual_layernorm", "student", student_us)):
                rows.append({"op": "residual_layernorm/bf16", "shape": shape, "impl": impl, "role": role,
                             "bytes": 1e6, "flops": 0.0, "peak": "bf16-tensor", "median_us": us,
                             "gbps": 1e6 / (us * 1e3), "outcome": "pass"})
        return {"schema_version": 2, "chapter": "ch06", "measured_ceilings": {"copy_gbps": 3700.0},
                "spec_ceilings": {"dram_gbps": 3352.0}, "results": rows}

    def base(self):
        d = self.doc()
        d["results"] = [r for r in d["results"] if r["role"] == "reference"]
        return d

    def test_the_library_is_the_first_reference_of_a_shape(self):
        reasons, shapes, _ = L.classify_bench(0, json.dumps(self.doc()), self.base())
        self.assertEqual(reasons, [])
        self.assertEqual([round(s["vs_reference"], 6) for s in shapes], [1.25, 0.8])
        self.assertEqual([s["reference_us"] for s in shapes], [100.0, 4.0])

    def test_each_reference_is_checked_against_its_own_baseline(self):
        doc = self.doc()
        for r in doc["results"]:
            if r["impl"] == "unfused_add_then_norm":
                r["median_us"] *= 2  # the unfused baseline slowed down in the student's process
        reasons, _, _ = L.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("[unfused_add_then_norm]", reasons[0]["detail"])

    def test_a_run_without_a_reference_the_baseline_timed_is_implausible(self):
        doc = self.doc()
        doc["results"] = [r for r in doc["results"] if not (r["impl"] == "cudnn_norm" and r["shape"] == "N=1,C=4096")]
        reasons, _, _ = L.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons[0]["kind"], "implausible")
        self.assertIn("the baseline timed this reference", reasons[0]["detail"])

    def test_a_row_without_a_library_reference_is_shown_not_scored(self):
        doc = self.doc()
        doc["results"].append({"op": "layernorm_decode/bf16", "shape": "N=1,C=4096", "impl": "ex4", "role": "student",
                               "bytes": 1e4, "flops": 0.0, "peak": "bf16-tensor", "median_us": 3.0,
                               "gbps": 1e4 / 3e3, "outcome": "pass"})
        reasons, shapes, notes = L.classify_bench(0, json.dumps(doc), self.base())
        self.assertEqual(reasons, [])
        self.assertEqual(len(shapes), 3)
        self.assertIsNone(shapes[2]["vs_reference"])
        self.assertIn("1 timed row(s) have no library reference", " ".join(notes))

    def test_decoder_score_is_the_geomean_of_decode_rate_and_first_token_time(self):
        base = json.loads(decoder_text("baseline.json"))
        reasons, shapes, _ = L.classify_bench(0, decoder_text("faster.json"), base)
        self.assertEqual(reasons, [])
        self.assertEqual([s["shape"] for s in shapes], ["decode", "ttft"])
        self.assertAlmostEqual(shapes[0]["vs_reference"], 2000.0 / 1000.0)
        self.assertAlmostEqual(shapes[1]["vs_reference"], 4.0 / 5.0)
        self.assertAlmostEqual(L.geomean([s["vs_reference"] for s in shapes]), (2.0 * 0.8) ** 0.5)
        reasons, shapes, _ = L.classify_bench(0, decoder_text("slower.json"), base)
        self.assertEqual(reasons, [])
        self.assertAlmostEqual(L.geomean([s["vs_reference"] for s in shapes]), ((245 / 980) * (4.2 / 16.8)) ** 0.5)

    def test_decoder_results_that_cannot_rank(self):
        base = json.loads(decoder_text("baseline.json"))
        for name, kind, words in (("no-student.json", "no-result", "no run of the student kernels"),
                                  ("two-student-runs.json", "no-result", "two runs of the student kernels"),
                                  ("zero-rate.json", "no-result", "no valid decode_tok_s"),
                                  ("library-slowed.json", "implausible", "when the leaderboard ran the library alone"),
                                  ("schema-2.json", "no-result", "schema_version 2, not 1")):
            with self.subTest(name=name):
                reasons, shapes, _ = L.classify_bench(0, decoder_text(name), base)
                self.assertEqual(reasons[0]["kind"], kind, reasons)
                self.assertIn(words, reasons[0]["detail"])
        text = decoder_text("faster.json")
        self.assertEqual(L.classify_bench(0, text + text, base)[0][0]["kind"], "implausible")
        self.assertEqual(L.classify_bench(124, text, base)[0][0]["kind"], "hung")

    def test_a_decoder_chapter_ranks_like_any_other(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        entry = os.path.join(tmp, "entry")
        shutil.copytree(os.path.join(RESULTS, "fast"), entry)
        with open(os.path.join(entry, "meta.json")) as f:
            meta = json.load(f)
        meta.update(chapter="ch09", chapter_dir="ch09_transformer")
        with open(os.path.join(entry, "meta.json"), "w") as f:
            json.dump(meta, f)
        shutil.copy(os.path.join(DECODER, "faster.json"), os.path.join(entry, "bench.json"))
        rec = L.classify_entry(entry, trusted=json.loads(decoder_text("baseline.json")))
        self.assertEqual(rec["status"], "ranked", rec["reasons"])
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], (2.0 * 0.8) ** 0.5)
        self.assertEqual(rec["score"]["shapes"], 2)
        self.assertIsNone(rec["score"]["roofline_measured_pct"])


class ChapterRunner(unittest.TestCase):
    """What a chapter builds and runs: chNN_bench unless its folder's leaderboard.json says."""

    def setUp(self):
        self.repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.repo)
        for name in ("ch01_indexing", "ch09_transformer"):
            os.makedirs(os.path.join(self.repo, "chapters", name))

    def runner_file(self, text):
        with open(os.path.join(self.repo, "chapters", "ch09_transformer", "leaderboard.json"), "w") as f:
            f.write(text)

    def test_default_is_the_chapters_benchmark(self):
        r = L.chapter_runner(self.repo, "ch01")
        self.assertEqual(r["build"], ["ch01_tests", "ch01_bench"])
        self.assertEqual(r["bench"], ["{bin}/ch01_bench", "--impl=student,reference", "--json={json}"])
        self.assertEqual(r["baseline"][1], "--impl=reference")
        rc, out, _ = quietly(["runner", "--repo", self.repo, "--chapter", "ch01"])
        self.assertEqual(rc, 0)
        self.assertEqual(out.splitlines()[0], "build\tch01_tests\tch01_bench")
        self.assertEqual(out.splitlines()[1], "prepare")

    def test_a_chapter_file_names_its_programs(self):
        self.runner_file(decoder_text("leaderboard.json"))
        r = L.chapter_runner(self.repo, "ch09")
        self.assertEqual(r["build"], ["ch09_tests", "gpt2", "gpt2_random_weights"])
        self.assertEqual(r["prepare"][0], "{bin}/gpt2_random_weights")
        self.assertIn("--json={json}", r["bench"])

    def test_a_bad_chapter_file_is_refused_by_name(self):
        cases = [("{not json", "not readable JSON"), ("[1]", "must be a JSON object"),
                 ('{"bench": "x"}', "must be a list"), ('{"benchmark": []}', "unknown key 'benchmark'"),
                 ('{"build": ["gpt2"]}', "must start with ch09_tests"),
                 ('{"build": ["ch09_tests", "a;b"]}', "is not a build target name"),
                 ('{"bench": ["/bin/sh", "--json={json}"]}', "must run a program of the build"),
                 ('{"bench": ["{bin}/gpt2"]}', "writes its results to {json}"),
                 ('{"bench": ["{bin}/gpt2", "--out={home}"]}', "uses {home}")]
        for text, words in cases:
            with self.subTest(text=text):
                self.runner_file(text)
                with self.assertRaises(ValueError) as e:
                    L.chapter_runner(self.repo, "ch09")
                self.assertIn("chapters/ch09_transformer/leaderboard.json", str(e.exception))
                self.assertIn(words, str(e.exception))
                rc, _, err = quietly(["runner", "--repo", self.repo, "--chapter", "ch09"])
                self.assertEqual(rc, 2)
                self.assertIn(words, err)


class ClusterJobs(unittest.TestCase):
    """A cluster run's bookkeeping, with sacct and scontrol played by small scripts: records
    merged once, Slurm's fault states listed with their reason, bad records refused."""

    STUDENTS = ["ok", "cancelled", "timeout", "node-died", "truncated", "garbage", "no-record", "running",
                "no-gpu", "wrong-task", "oom"]

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        subs = os.path.join(self.tmp, "subs")
        for n in self.STUDENTS + ["empty"]:
            d = os.path.join(subs, n, "ch01")
            os.makedirs(d)
            if n != "empty":
                for stub in L.stub_names(REPO, "ch01_indexing"):
                    shutil.copy(os.path.join(FIXTURE_CLASS, "fast", "ch01", stub), d)
        self.run_dir = os.path.join(self.tmp, "shared", "run-1")
        os.makedirs(os.path.join(self.run_dir, "records"))
        rc, plan, err = quietly(["plan", "--repo", REPO, "--submissions", subs, "--work",
                                 os.path.join(self.run_dir, "entries", "r"), "--chapter", "ch01"])
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.tmp, "plan.tsv"), "w") as f:
            f.write(plan)
        rc, n, err = quietly(["run-file", "--run-dir", self.run_dir, "--run-id", "run-1", "--plan",
                              os.path.join(self.tmp, "plan.tsv"), "--entries", "entries/r/entries", "--commit", "c"])
        self.assertEqual((rc, n.strip()), (0, str(len(self.STUDENTS))), err)
        with open(os.path.join(self.run_dir, "run.json")) as f:
            self.task = {t["student"]: t for t in json.load(f)["tasks"]}
        rc, _, err = quietly(["add-job", "--run-dir", self.run_dir, "--array-job", "57",
                              "--tasks", "0-%d" % (len(self.STUDENTS) - 1)])
        self.assertEqual(rc, 0, err)
        self.out = os.path.join(self.tmp, "out")
        self.history = os.path.join(self.out, "history.jsonl")
        self.key = make_key(self.tmp)
        # sacct and scontrol: scripts that print what the test puts in files.
        self.bin = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin)
        for tool in ("sacct", "scontrol"):
            with open(os.path.join(self.bin, tool), "w") as f:
                f.write('#!/bin/sh\ncat "%s/%s.out" 2>/dev/null\nexit $(cat "%s/%s.rc" 2>/dev/null || echo 0)\n'
                        % (self.tmp, tool, self.tmp, tool))
            os.chmod(os.path.join(self.bin, tool), 0o755)
        old_path = os.environ["PATH"]
        os.environ["PATH"] = self.bin + os.pathsep + old_path
        self.addCleanup(os.environ.__setitem__, "PATH", old_path)

    def slurm(self, states, via="sacct"):
        """states: {student: state}; given as sacct prints them, or (sacct failing) as scontrol does."""
        jobs = {self.task[n]["task"]: st for n, st in states.items()}
        if via == "sacct":
            text = "".join("57_%d|%s|0:0|node1\n" % (t, st) for t, st in sorted(jobs.items()))
            files = {"sacct.out": text, "sacct.rc": "0", "scontrol.out": "", "scontrol.rc": "1"}
        else:
            text = "".join("JobId=%d ArrayJobId=57 ArrayTaskId=%d JobName=kwb JobState=%s Reason=None ExitCode=0:0 "
                           "NodeList=node1\n" % (100 + t, t, st) for t, st in sorted(jobs.items()))
            files = {"sacct.out": "Slurm accounting storage is disabled\n", "sacct.rc": "1",
                     "scontrol.out": text, "scontrol.rc": "0"}
        for name, text in files.items():
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)

    def record(self, student, array="57", gpu="NVIDIA H100 80GB HBM3", no_gpu="", task=None, source="fast"):
        t = self.task[student]
        task = t["task"] if task is None else task
        entry = os.path.join(self.tmp, "job-" + student)
        shutil.copytree(os.path.join(RESULTS, source), entry, dirs_exist_ok=True)
        shutil.copy(TRUSTED, os.path.join(entry, "trusted.json"))
        path = os.path.join(self.run_dir, "records", "%d-%s.json" % (t["task"], array))
        rc, _, err = quietly(["job-record", "--entry", entry, "--out", path, "--run-id", "run-1", "--task", str(task),
                              "--job-id", "%s_%d" % (array, task), "--student-id", t["student_id"], "--chapter", "ch01",
                              "--node", "node1", "--gpu-name", gpu if not no_gpu else "", "--gpu-uuid", "GPU-1",
                              "--no-gpu", no_gpu, "--sandbox", "bubblewrap"])
        self.assertEqual(rc, 0, err)
        return path

    def collect(self):
        rc, out, err = quietly(["collect", "--run-dir", self.run_dir, "--history", self.history, "--key", self.key,
                                "--out", self.out])
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.out, "runs", "run-1", "collect.json")) as f:
            return out, {j["student"]: j for j in json.load(f)["jobs"]}

    def latest(self):
        records = L.load_history(self.history, L.load_key(self.key), quiet=True)
        return {r["student"]: r for r in records}, records

    def test_records_states_and_faults(self):
        self.record("ok")
        self.record("no-gpu", no_gpu="no GPU on node node1 (nvidia-smi lists none)")
        path = self.record("truncated")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        with open(os.path.join(self.run_dir, "records", "%d-57.json" % self.task["garbage"]["task"]), "w") as f:
            f.write("\x00 not a record at all")
        self.record("wrong-task", task=self.task["ok"]["task"])  # another task's record under this name
        os.replace(os.path.join(self.run_dir, "records", "%d-57.json" % self.task["ok"]["task"]),
                   os.path.join(self.run_dir, "records", "%d-57.json" % self.task["wrong-task"]["task"]))
        self.record("ok")
        self.slurm({"ok": "COMPLETED", "cancelled": "CANCELLED", "timeout": "TIMEOUT", "node-died": "NODE_FAIL",
                    "truncated": "COMPLETED", "garbage": "FAILED", "no-record": "COMPLETED", "running": "RUNNING",
                    "no-gpu": "COMPLETED", "wrong-task": "COMPLETED", "oom": "OUT_OF_MEMORY"})
        out, jobs = self.collect()
        latest, records = self.latest()
        self.assertEqual(latest["ok"]["status"], "ranked")
        self.assertEqual(latest["ok"]["gpu"]["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(latest["ok"]["logs"], "runs/run-1/%s/ch01/57_%d" % (self.task["ok"]["student_id"],
                                                                            self.task["ok"]["task"]))
        self.assertTrue(os.path.isfile(os.path.join(self.out, latest["ok"]["logs"], "tests.log")))
        kinds = {n: r["reasons"][0]["kind"] for n, r in latest.items() if r["reasons"]}
        self.assertEqual(kinds, {"cancelled": "cancelled", "timeout": "job-timeout", "node-died": "node-failed",
                                 "no-gpu": "no-gpu", "oom": "node-problem", "empty": "missing-files"})
        self.assertEqual(latest["no-gpu"]["gpu"]["name"], "no GPU")
        self.assertIn("job 57_%d, Slurm state CANCELLED" % self.task["cancelled"]["task"],
                      latest["cancelled"]["reasons"][0]["detail"])
        for n in ("truncated", "garbage", "no-record", "running", "wrong-task"):
            self.assertNotIn(n, latest, "%s must not be merged" % n)
        self.assertIn("truncated or not valid JSON", jobs["truncated"]["status"])
        self.assertIn("--rerun 57_%d" % self.task["truncated"]["task"], jobs["truncated"]["status"])
        self.assertIn("not valid JSON", jobs["garbage"]["status"])
        self.assertIn("no record", jobs["no-record"]["status"])
        self.assertIn("record of task", jobs["wrong-task"]["status"])
        self.assertEqual(jobs["running"]["status"], "pending (RUNNING)")
        self.assertIn("4 not merged", out)

        # A second collect adds nothing; the jobs it could not merge are still listed.
        with open(self.history, "rb") as f:
            before = f.read()
        out, jobs = self.collect()
        with open(self.history, "rb") as f:
            self.assertEqual(f.read(), before, "two collects of the same run never double-count")
        self.assertEqual(jobs["ok"]["status"], "already merged")
        self.assertIn("0 merged now", out)

        # Reruns of two jobs: merged as the latest results; nothing earlier is rewritten.
        rc, _, err = quietly(["add-job", "--run-dir", self.run_dir, "--array-job", "60", "--tasks", "%d,%d" % (
            self.task["cancelled"]["task"], self.task["truncated"]["task"])])
        self.assertEqual(rc, 0, err)
        self.record("cancelled", array="60", source="slow")
        self.record("truncated", array="60")
        with open(os.path.join(self.tmp, "sacct.out"), "a") as f:
            f.write("60_%d|COMPLETED|0:0|node1\n60_%d|COMPLETED|0:0|node1\n" % (
                self.task["cancelled"]["task"], self.task["truncated"]["task"]))
        out, jobs = self.collect()
        with open(self.history, "rb") as f:
            after = f.read()
        self.assertTrue(after.startswith(before))
        self.assertEqual(after.count(b"\n"), before.count(b"\n") + 2)
        latest, records = self.latest()
        self.assertEqual((latest["cancelled"]["status"], latest["truncated"]["status"]), ("ranked", "ranked"))
        self.assertEqual(len([r for r in records if r["student"] == "cancelled"]), 2, "the cancelled job stays in the history")

        # The report lists the jobs still without a result.
        rc, text = report(self.history, self.key, self.out)
        self.assertEqual(rc, 0)
        with open(os.path.join(self.out, "leaderboard.json")) as f:
            waiting = {j["student"] for j in json.load(f)["jobs_without_result"]}
        self.assertEqual(waiting, {"garbage", "no-record", "running", "wrong-task"})
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            self.assertIn("## Cluster jobs without a result", f.read())

    def test_states_from_scontrol_when_sacct_has_no_database(self):
        self.slurm({"cancelled": "CANCELLED", "timeout": "TIMEOUT", "running": "PENDING"}, via="scontrol")
        out, jobs = self.collect()
        latest, _ = self.latest()
        self.assertEqual(latest["cancelled"]["reasons"][0]["kind"], "cancelled")
        self.assertEqual(latest["timeout"]["reasons"][0]["kind"], "job-timeout")
        self.assertEqual(jobs["running"]["status"], "pending (PENDING)")
        self.assertIn("Slurm knows nothing of the job", jobs["ok"]["status"])

    def test_array_ranges_never_hide_a_tasks_own_line(self):
        def fake(argv):
            class P:
                returncode = 0
                stdout = ("57_0|COMPLETED|0:0|n1\n57_1|COMPLETED|0:0|n1\n57_[0-2]|CANCELLED by 0|0:0|None assigned\n"
                          if argv[0] == "sacct" else "")
            return P()
        states = L.slurm_states(["57"], runner=fake)
        self.assertEqual({k: v["state"] for k, v in states.items()},
                         {"57_0": "COMPLETED", "57_1": "COMPLETED", "57_2": "CANCELLED"})
        self.assertEqual(L.expand_array_ids("57_[2-4,7%2]"), ["57_2", "57_3", "57_4", "57_7"])
        self.assertEqual(L.expand_array_ids("57"), [])

    def test_job_records_are_checked(self):
        path = self.record("ok")
        with open(path) as f:
            good = json.load(f)
        task = self.task["ok"]["task"]
        self.assertIsNone(L.validate_job_record(good, task))
        for change, words in ((dict(complete=False), "not a complete job record"), (dict(extra=1), "fields"),
                              (dict(student_id="../x"), "bad student id"), (dict(sandbox="chroot"), "bad sandbox"),
                              (dict(files={"../../etc/passwd": "x"}), "bad file"),
                              (dict(steps={"build": {"rc": "0", "seconds": 1}}), "bad step"),
                              (dict(gpu=None), "gpu and no_gpu disagree")):
            with self.subTest(change=change):
                self.assertIn(words, L.validate_job_record(dict(good, **change), task))
        self.assertIn("record of task", L.validate_job_record(good, task + 1))


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
        # The recorded results are chapter 1's: the other chapters' expectations need a GPU run.
        rc, out, _ = quietly(["check", "--history", self.history, "--key", self.key, "--run-id", "run-a",
                              "--expect", FIXTURE_EXPECT])
        self.assertEqual(rc, 1, out)
        self.assertIn("MISS ch02: no results in run run-a", out)
        rc, out, _ = quietly(["check", "--history", self.history, "--key", self.key, "--run-id", "run-a",
                              "--expect", FIXTURE_EXPECT, "--chapter", "ch01"])
        self.assertEqual(rc, 0, out)
        self.assertIn("skip ch09: not among this run's chapters (ch01)", out)
        with open(FIXTURE_EXPECT) as f:
            want = {"ch01": json.load(f)["ch01"]}
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
            (["--slurm", "--gres", "gpu;rm -rf", FIXTURE_CLASS], "--gres: 'gpu;rm -rf' is not a generic resource"),
            (["--slurm", "--time", "soon", FIXTURE_CLASS], "--time: 'soon' is not a Slurm time"),
            (["--slurm", "--partition", "a b", FIXTURE_CLASS], "--partition: 'a b' is not a partition name"),
            (["--slurm", "--account", "-x", FIXTURE_CLASS], "--account: '-x' is not an account name"),
            (["--slurm", "--cpus-per-task", "0", FIXTURE_CLASS], "--cpus-per-task must be a whole number"),
            (["--rerun", "57", "--out", "/tmp"], "--rerun: '57' is not a job of an array"),
            (["--rerun"], "--rerun needs a value"),
            (["--collect", "../up"], "--collect: '../up' is not a run id"),
            (["--collect", "run-1", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--slurm", "--collect", "run-1"], "one at a time"),
            (["--partition", "gpu", FIXTURE_CLASS], "--partition is an option of --slurm"),
            (["--wait", FIXTURE_CLASS], "--wait is an option of --slurm"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 2, text)
                self.assertIn(message, text)

    def test_the_cluster_scripts_parse_and_refuse_bad_input(self):
        for path in ("tools/leaderboard/sandbox.sh", "tools/leaderboard/slurm-job.sh", "scripts/lib/slurm-leaderboard.sh",
                     "scripts/slurm-local-cluster.sh", "tests/leaderboard/slurm-check.sh"):
            p = subprocess.run(["bash", "-n", os.path.join(REPO, path)], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, path + ": " + p.stderr)
        cluster = os.path.join(REPO, "scripts", "slurm-local-cluster.sh")
        for args, rc, message in (([], 2, "say what to do"), (["begin"], 2, "unknown command 'begin'"),
                                  (["start", "--port", "1"], 2, "unknown argument '--port'"),
                                  (["start", "--dir"], 2, "--dir needs a folder"),
                                  (["stop", "--dir", "/etc"], 1, "give a folder of its own")):
            with self.subTest(args=args):
                p = subprocess.run(["bash", cluster] + args, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, rc, p.stderr)
                self.assertIn(message, p.stderr)
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        p = subprocess.run(["bash", cluster, "status", "--dir", os.path.join(tmp, "none")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not running", p.stdout)
        p = subprocess.run(["bash", os.path.join(REPO, "tools", "leaderboard", "slurm-job.sh"), tmp], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, SLURM_ARRAY_TASK_ID=""))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("this is a Slurm array job", p.stderr)

    def test_no_folder_of_the_run_inside_the_sources(self):
        for args, where in ((["--out", os.path.join(REPO, "chapters", "lb-out"), FIXTURE_CLASS], "chapters"),
                            (["--slurm", "--shared", os.path.join(REPO, "harness", "lb-shared"), FIXTURE_CLASS], "harness")):
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 1, text)
                self.assertIn("is inside the repository's %s/, which every build copies" % where, text)
                self.assertFalse(os.path.exists(args[1]), "nothing is created")

    def test_collect_of_an_unknown_run_says_which_runs_exist(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, "cluster", "20260101-000000-abcd"))
        rc, text = self.run_script("--collect", "20260101-999999-0000", "--out", tmp)
        self.assertEqual(rc, 1, text)
        self.assertIn("no cluster run '20260101-999999-0000'", text)
        self.assertIn("20260101-000000-abcd", text)

    def test_help(self):
        rc, text = self.run_script("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: scripts/leaderboard.sh", text)
        self.assertIn("--unsafe-no-sandbox", text)
        for option in ("--slurm", "--collect RUN_ID", "--rerun JOB", "--partition", "--gres", "--account", "--time"):
            self.assertIn(option, text)

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
