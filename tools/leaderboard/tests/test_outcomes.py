"""outcomes.py: the reasons in their order, every outcome code's reason, and a results file read
as exactly one JSON document."""

import unittest

import support  # noqa: F401  (the package's path)
from wb_leaderboard import outcomes as O


class Outcomes(unittest.TestCase):
    def test_every_code_gives_a_known_reason_and_only_pass_ranks(self):
        self.assertIsNone(O.OUTCOME_KIND["pass"])
        for code, kind in O.OUTCOME_KIND.items():
            if code != "pass":
                self.assertIn(kind, O.REASON_LABEL, code)
        self.assertEqual(O.REASONS[0][0], "missing-files")
        self.assertLess(O.REASON_ORDER["build-failed"], O.REASON_ORDER["wrong"])
        self.assertEqual(O.reason("hung", "A.b"), {"kind": "hung", "label": "hung (time limit)", "detail": "A.b"})

    def test_one_document_and_nothing_after_it(self):
        self.assertEqual(O.parse_one_document(' {"a": 1}\n'), ({"a": 1}, None))
        self.assertEqual(O.parse_one_document(None), (None, "empty"))
        self.assertEqual(O.parse_one_document("  "), (None, "empty"))
        self.assertTrue(O.parse_one_document("{nope")[1].startswith("not JSON"))
        self.assertIn("more than one document", O.parse_one_document('{"a": 1}{"a": 2}')[1])

    def test_numbers_and_exit_codes(self):
        self.assertEqual([O.num(v) for v in (1, 2.5, True, float("nan"), "3")], [1.0, 2.5, None, None, None])
        self.assertEqual([O.pos(v) for v in (1, 0, -1)], [1.0, None, None])
        self.assertEqual([O.timed_out(rc) for rc in (124, 137, 1)], [True, True, False])
        self.assertEqual((O.crash_or_hang(124), O.crash_or_hang(139)), ("hung", "faulted"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
