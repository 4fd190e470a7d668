"""classify.py: every recorded entry in tests/leaderboard/results/ gets its reason, by outcome
code and exit code, never by a message; the details name the test, the file and the error; the
score is the geometric mean of reference time over student time; the seed is kept."""

import json
import os
import unittest

from support import RESULTS_EXPECT, TRUSTED, TRUSTED_V3, result, trusted
from wb_leaderboard import classify as C
from wb_leaderboard.outcomes import reason


def entry(name):
    return C.classify_entry(result(name), trusted=trusted())


class Entries(unittest.TestCase):
    def test_each_recorded_result_gets_its_reason(self):
        with open(RESULTS_EXPECT) as f:
            expected = json.load(f)
        for name, kind in sorted(expected.items()):
            rec = entry(name)
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
            return entry(name)["reasons"][0]["detail"]

        self.assertEqual(first("not-compiling"), 'ex2_vector_add_x2.cu:11: error: identifier "offset" is undefined')
        self.assertEqual(first("hanging"), "Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1")
        self.assertEqual(first("wrong-rectangles"), "Matrices/Ch01MatrixAdd.MatchesFloat64/student_r2_c3")
        self.assertEqual(first("not-implemented"), "Images/Ch01RgbToGrey.MatchesFloat64/student_h1_w1")
        self.assertEqual(first("partial"), "ex4_matrix_add.cu")
        self.assertNotIn("/tmp/", first("not-compiling"))

    def test_geometric_mean_of_reference_over_student_time(self):
        rec = entry("slow")
        ratios = [s["reference_us"] / s["student_us"] for s in rec["shapes"]]
        product = 1.0
        for r in ratios:
            product *= r
        self.assertAlmostEqual(rec["score"]["geomean_vs_reference"], product ** (1.0 / len(ratios)))
        self.assertAlmostEqual(
            rec["score"]["geomean_vs_reference"],
            1 / 40 * C.geomean([s["reference_us"] / (s["student_us"] / 40) for s in rec["shapes"]]),
        )

    def test_a_run_of_the_current_schema_scores_as_the_same_run_of_schema_2(self):
        old = entry("fast")
        for base in (TRUSTED, TRUSTED_V3):
            rec = C.classify_entry(result("current-schema"), trusted=trusted(base))
            with self.subTest(baseline=os.path.basename(base)):
                self.assertEqual(rec["status"], "ranked", rec["reasons"])
                self.assertEqual(rec["score"], old["score"])
                self.assertEqual(rec["shapes"], old["shapes"])

    def test_the_seed_the_run_printed_is_recorded(self):
        self.assertEqual(entry("fast")["seed"]["tests"], 771)

    def test_a_cluster_jobs_reasons_come_first(self):
        rec = C.classify_entry(
            result("fast"),
            trusted=trusted(),
            job_reasons=[reason("no-gpu", "node n1")],
            job_notes=["ran on n1"],
        )
        self.assertEqual(rec["status"], "not ranked")
        self.assertEqual(rec["reasons"][0], reason("no-gpu", "node n1"))
        self.assertIn("ran on n1", rec["notes"])


class Tests(unittest.TestCase):
    """The test program's results: codes, not messages."""

    def doc(self):
        with open(os.path.join(result("fast"), "tests.json")) as f:
            return json.load(f)

    def test_tests_read_by_code_not_by_message(self):
        doc = self.doc()
        doc["testsuites"][0]["testsuite"][0]["outcome"] = "race"
        self.assertEqual(C.classify_tests(0, "", json.dumps(doc))[0]["kind"], "race")
        # Without a JSON, a test left unfinished is a hang with exit code 124, a crash otherwise.
        log = "[ RUN      ] A.b\n[       OK ] A.b (1 ms)\n[ RUN      ] A.c\n"
        self.assertEqual(C.classify_tests(124, log, None)[0], reason("hung", "A.c"))
        self.assertEqual(C.classify_tests(139, log, None)[0]["kind"], "faulted")
        # Messages claiming success change nothing.
        self.assertEqual(C.classify_tests(0, "[  PASSED  ] 4 tests.\nall good\n", None)[0]["kind"], "no-result")

    def test_cases_not_run_after_the_first_failure_are_not_a_reason(self):
        doc = self.doc()
        cases = doc["testsuites"][0]["testsuite"]
        self.assertGreaterEqual(len(cases), 2)
        # --gtest_fail_fast: the first case fails, the rest are reported as skipped, without a code.
        cases[0]["outcome"] = "cached"
        for c in cases[1:]:
            c.pop("outcome", None)
            c["result"] = "SKIPPED"
        self.assertEqual([r["kind"] for r in C.classify_tests(1, "", json.dumps(doc))], ["stale-output"])
        # With no failure before them, cases without a code are still no result: nothing is ranked
        # by skipping its own tests.
        cases[0]["outcome"] = "pass"
        self.assertEqual([r["kind"] for r in C.classify_tests(0, "", json.dumps(doc))], ["no-result"])

    def test_a_second_document_in_the_tests_stream_is_implausible(self):
        text = json.dumps(self.doc())
        self.assertEqual(C.classify_tests(0, "", text + text)[0]["kind"], "implausible")

    def test_the_first_build_error_without_folders(self):
        log = '/tmp/x/y/ex1_vector_add.cu(12): error: expected a ";"\n1 error detected\n'
        self.assertEqual(C.first_build_error(log), 'ex1_vector_add.cu:12: error: expected a ";"')
        self.assertEqual(
            C.first_build_error("/usr/bin/ld: undefined reference to `f'\n"), "ld: undefined reference to `f'"
        )


if __name__ == "__main__":
    unittest.main(verbosity=2)
