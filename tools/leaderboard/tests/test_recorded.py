"""recorded.py: the recorded results, made from the base entries and the table of changes. Every
case says what it simulates and has its expected reason; every base set is used; the rules
(derived timing figures, test cases, edits found as often as said, a second document) do what
they say; malformed files come out byte for byte; the entries are made whole or not at all; and
what is made is what the tests were written against (a fingerprint of every file)."""

import json
import os
import unittest

from support import RESULTS_EXPECT, captured, fingerprint, made_results, result, temp_folder
from wb_leaderboard import recorded as R

# SHA-256 over (path, bytes) of every file of every case, in path order: the same bytes as the
# hand-kept folders of tests/leaderboard/results/ before the table replaced them (commit
# 8348eef). A change to base/, changes.py or recorded.py that alters a recorded entry changes it:
# check that every test still checks what it did, then write the new value here.
FINGERPRINT = "1af426f3d0445a91a7554827b3ebaed616ac68609e12eb8295906cf3bfbb2180"


def read(case, name):
    with open(os.path.join(result(case), name), encoding="utf-8", newline="") as f:
        return f.read()


class TheEntries(unittest.TestCase):
    def test_what_is_made_is_what_the_tests_were_written_against(self):
        self.assertEqual(fingerprint(made_results()), FINGERPRINT)

    def test_every_case_says_what_it_simulates_and_has_its_expected_reason(self):
        table = R.load_table()
        with open(RESULTS_EXPECT) as f:
            expected = json.load(f)
        self.assertEqual(sorted(table), sorted(expected))
        self.assertEqual(sorted(os.listdir(made_results())), sorted(table))
        for case, recipe in table.items():
            self.assertTrue(recipe.get("what"), case)

    def test_every_base_set_is_used(self):
        base = os.path.join(R.RESULTS_DIR, "base")
        used = set()
        for recipe in R.load_table().values():
            used |= set(recipe.get("from", ["fast"]))
        self.assertEqual(sorted(os.listdir(base)), sorted(used))

    def test_malformed_files_are_made_byte_for_byte(self):
        self.assertEqual(
            read("forged-json", "bench.json"),
            '{"results": [{"role": "student", "verdict": "pass", "median_us": "fast"}]}',
        )
        self.assertEqual(read("forged-json", "bench.log"), "")
        first, second, end = read("forged-stream", "bench.json").split("\n")
        self.assertEqual((json.loads(first), end), (json.loads(read("fast", "bench.json")), ""))
        self.assertEqual(json.loads(second)["results"][1]["median_us"], 5.8)
        self.assertEqual(
            read("tests-forged", "tests.json"), read("fast", "tests.json") + "\n" + read("fast", "tests.json")
        )
        with self.assertRaises(json.JSONDecodeError):
            json.loads(read("tests-forged", "tests.json"))
        self.assertTrue(read("current-schema", "meta.json").endswith("}\n"))
        self.assertFalse(read("fast", "meta.json").endswith("\n"))

    def test_absent_files_are_absent(self):
        self.assertEqual(sorted(os.listdir(result("missing"))), ["meta.json", "steps.tsv"])
        self.assertEqual(read("missing", "steps.tsv"), "")
        self.assertNotIn("tests.json", os.listdir(result("hanging")))
        self.assertNotIn("bench.json", os.listdir(result("bench-crashed")))


class Rules(unittest.TestCase):
    """The table's rules, on the base entry."""

    def make(self, recipe, name="c"):
        return R.case_files({name: dict({"what": "a test"}, **recipe)}, name)

    def base(self, name):
        with open(os.path.join(R.RESULTS_DIR, "base", "fast", name), encoding="utf-8", newline="") as f:
            return f.read()

    def test_the_base_as_it_is(self):
        files = self.make({})
        self.assertEqual(
            sorted(files), ["bench.json", "bench.log", "meta.json", "steps.tsv", "tests.json", "tests.log"]
        )
        self.assertEqual(files["bench.json"], self.base("bench.json"))

    def test_derived_figures_follow_the_median_as_recorded(self):
        # The base's own medians give its own figures back, bit for bit.
        doc = json.loads(self.base("bench.json"))
        times = {"%s %s" % (r["shape"], r["impl"]): r["median_us"] for r in doc["results"]}
        self.assertEqual(self.make({"bench": {"times": times}})["bench.json"], self.base("bench.json"))
        rows = json.loads(self.make({"bench": {"slower": {"student": 2}}})["bench.json"])["results"]
        for before, after in zip(doc["results"], rows):
            factor = 2 if before["role"] == "student" else 1
            self.assertEqual(after["median_us"], before["median_us"] * factor)
            self.assertAlmostEqual(after["vs_reference"], before["vs_reference"] / factor)
            self.assertAlmostEqual(after["gbps"], before["gbps"] / factor)

    def test_untimed_rows_lose_their_figures_and_set_changes_only_what_it_names(self):
        rows = json.loads(self.make({"bench": {"untimed": {"4096x4096 student": "stale_after_timing"}}})["bench.json"])
        row = rows["results"][-1]
        self.assertEqual(row["outcome"], "stale_after_timing")
        self.assertNotIn("median_us", row)
        doc = json.loads(self.make({"bench": {"set": {"reference": {"median_us": 1.0}}}})["bench.json"])
        self.assertEqual({r["median_us"] for r in doc["results"] if r["role"] == "reference"}, {1.0})
        # Nothing derived follows: the reference's spread and the students' speed-ups are the base's.
        base = json.loads(self.base("bench.json"))["results"]
        self.assertEqual(doc["results"][0]["p10_us"], base[0]["p10_us"])
        self.assertEqual(doc["results"][1]["vs_reference"], base[1]["vs_reference"])

    def test_the_base_test_cases_give_the_base_tests_json(self):
        doc = json.loads(self.base("tests.json"))
        cases = [[s["name"] + "." + c["name"], c["outcome"]] for s in doc["testsuites"] for c in s["testsuite"]]
        self.assertEqual(self.make({"tests": cases})["tests.json"], self.base("tests.json"))
        made = json.loads(self.make({"tests": [["A/B.c/d", "wrong"], ["A/B.e", "skipped"]]})["tests.json"])
        self.assertEqual((made["tests"], made["failures"]), (2, 1))
        self.assertEqual([c["result"] for c in made["testsuites"][0]["testsuite"]], ["COMPLETED", "SKIPPED"])

    def test_the_log_keeps_the_preamble(self):
        log = self.make({"log": "[ RUN      ] A.b\n"})["tests.log"]
        self.assertEqual(log, "".join(self.base("tests.log").splitlines(True)[:3]) + "[ RUN      ] A.b\n")

    def test_meta_keeps_its_key_order(self):
        meta = json.loads(self.make({"meta": {"student": "x", "review": ["y"]}})["meta.json"])
        self.assertEqual(list(meta), list(json.loads(self.base("meta.json"))))
        self.assertEqual((meta["student"], meta["review"]), ("x", ["y"]))

    def test_an_edit_is_found_as_often_as_said(self):
        with self.assertRaisesRegex(R.TableProblem, "found 4 times, not 1"):
            self.make({"edit": {"tests.log": [["(3 ms)", "(4 ms)"]]}})
        log = self.make({"edit": {"tests.log": [["(3 ms)", "(4 ms)", 4]]}})["tests.log"]
        self.assertEqual(log.count("(4 ms)"), 4)

    def test_mistakes_in_the_table_are_named(self):
        with self.assertRaisesRegex(R.TableProblem, "unknown key"):
            self.make({"stpes": []})
        with self.assertRaisesRegex(R.TableProblem, "unknown bench key"):
            self.make({"bench": {"time": {}}})
        with self.assertRaisesRegex(R.TableProblem, "no row 'n=1 student'"):
            self.make({"bench": {"times": {"n=1 student": 1.0}}})
        with self.assertRaisesRegex(R.TableProblem, "does not have"):
            self.make({"edit": {"ncu.csv": []}})
        with self.assertRaisesRegex(R.TableProblem, "no base set"):
            self.make({"from": ["nonexistent"]})
        with self.assertRaisesRegex(R.TableProblem, "no `what`"):
            R.case_files({"c": {}}, "c")


class Making(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)

    def test_whole_or_not_at_all(self):
        dest = os.path.join(self.tmp, "results")
        table = {"a": {"what": "the base"}, "b": {"what": "a mistake", "edit": {"meta.json": [["absent", ""]]}}}
        with self.assertRaises(R.TableProblem):
            R.make_results(dest, table)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_the_command(self):
        dest = os.path.join(self.tmp, "results")
        self.assertEqual(captured(R.main, [dest])[0], 0)
        self.assertEqual(fingerprint(dest), FINGERPRINT)
        rc, _, err = captured(R.main, [dest])
        self.assertEqual(rc, 1)
        self.assertIn("exists already", err)
        self.assertEqual(captured(R.main, [])[0], 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
