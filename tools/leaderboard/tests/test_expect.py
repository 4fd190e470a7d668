"""expect.py: a run compared with an expected outcome: accepted when as expected, a MISS line
per difference otherwise; a run limited to some chapters is compared on those only."""

import json
import os
import unittest

from support import FIXTURE_EXPECT, captured, make_key, record, result, result_entries, temp_folder
from wb_leaderboard import expect as E, history as H


class Expect(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)
        self.history = os.path.join(self.tmp, "out", "history.jsonl")
        self.key = make_key(self.tmp)
        for n in result_entries():
            record(self.history, self.key, result(n), "run-a")

    def check(self, path, chapters=()):
        return captured(E.check, self.history, H.load_key(self.key), "run-a", path, chapters)[:2]

    def test_the_fixture_expectation_of_chapter_1_holds_for_the_recorded_results(self):
        # The recorded results are chapter 1's: the other chapters' expectations need a GPU run.
        ok, out = self.check(FIXTURE_EXPECT)
        self.assertFalse(ok, out)
        self.assertIn("MISS ch02: no results in run run-a", out)
        ok, out = self.check(FIXTURE_EXPECT, ["ch01"])
        self.assertTrue(ok, out)
        self.assertIn("skip ch09: not among this run's chapters (ch01)", out)
        self.assertIn("expected outcome (fixture-expected.json): as expected", out)

    def test_a_wrong_order_or_reason_is_a_miss(self):
        with open(FIXTURE_EXPECT) as f:
            want = {"ch01": json.load(f)["ch01"]}
        want["ch01"]["faster_than"] = [["slow", "fast"]]
        want["ch01"]["reasons"]["caching"] = "wrong"
        want["ch01"]["reasons"]["slow"] = ["implausible", "ranked"]
        want["ch01"]["absent"] = ["fast", "forged-winner"]
        want["ch01"]["history_rejected_at_least"] = 1
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            json.dump(want, f)
        ok, out = self.check(bad)
        self.assertFalse(ok)
        self.assertIn("MISS ch01: 'slow'", out)
        self.assertIn("MISS ch01: 'caching' is listed as 'stale output", out)
        self.assertIn("ok   ch01 slow                     ranked (allowed)", out)
        self.assertIn("MISS ch01: 'fast' has a result in the history", out)
        self.assertIn("ok   ch01 forged-winner            no result", out)
        self.assertIn("MISS ch01: 0 line(s) of the history were rejected; expected at least 1", out)
        self.assertIn("expected outcome (bad.json): 4 unexpected result(s)", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
