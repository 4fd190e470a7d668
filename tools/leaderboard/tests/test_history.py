"""history.py: the signed, append-only history. Records are signed and chained; a line that is
not JSON, has other fields, is edited, signed with another key, replayed or forged is reported
with its number and skipped, never rewritten; the key must be private; the baseline a run
records against is a results file of a version still read."""

import json
import os
import stat
import unittest

from support import DECODER, TRUSTED, TRUSTED_V3, captured, made_class, make_key, record, result, temp_folder
from wb_leaderboard import history as H


class History(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)
        self.history = os.path.join(self.tmp, "out", "history.jsonl")
        self.key = make_key(self.tmp)

    def load(self, problems=None):
        records, _, _ = captured(H.load_history, self.history, H.load_key(self.key), problems)
        return records

    def test_records_are_signed_chained_and_only_appended(self):
        record(self.history, self.key, result("fast"), "run-a")
        with open(self.history, "rb") as f:
            first = f.read()
        verdict = record(self.history, self.key, result("wrong-rectangles"), "run-a")
        self.assertTrue(verdict.startswith("not ranked: wrong answers: "), verdict)
        with open(self.history, "rb") as f:
            both = f.read()
        self.assertTrue(both.startswith(first))
        a, b = [json.loads(line) for line in both.splitlines()]
        self.assertEqual(a["prev"], "")
        self.assertEqual(b["prev"], H.line_hash(first))
        self.assertEqual(b["mac"], H.sign(b, H.load_key(self.key)))
        self.assertIsNone(H.validate_record(a))

    def test_bad_lines_are_reported_with_their_number_and_skipped(self):
        record(self.history, self.key, result("fast"), "run-a")
        with open(self.history) as f:
            good = f.read().splitlines()[0]
        rec = json.loads(good)
        edited = dict(rec, score=dict(rec["score"], geomean_vs_reference=50.0))
        extra = dict(rec, bonus=1)
        bad_lines = [
            '{"schema": 1}',
            '{"schema": 2, "student": "x"',
            "[1, 2]",
            json.dumps(edited),
            json.dumps(extra),
            good,
            "\x00\xff not text",
        ]
        with open(self.history, "a") as f:
            f.write("\n".join(bad_lines) + "\n")
        record(self.history, self.key, result("slow"), "run-b")
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
        ok, out, err = captured(H.verify, self.history, H.load_key(self.key))
        self.assertFalse(ok)
        self.assertIn("2 record(s) verify, 7 line(s) skipped", out)
        self.assertIn("history.jsonl:2: skipped:", err)

    def test_a_forged_record_never_ranks(self):
        record(self.history, self.key, result("slow"), "run-a")
        forged = open(os.path.join(made_class("hostile"), "history-forger", "ch01", "ex1_vector_add.cu")).read()
        line = forged.split("const char kForged[] =")[1].split(";")[0]
        text = "".join(
            part.encode().decode("unicode_escape") for part in [p.strip()[1:-1] for p in line.strip().splitlines()]
        )
        forged_rec = json.loads(text)
        self.assertIsNone(H.validate_record(forged_rec), "the forgery has the right shape; only its signature fails")
        with open(self.history, "a") as f:
            f.write(text)
        # Signed with another key, the record does not verify either.
        other = make_key(self.tmp, "other.key", "cd" * 32)
        record(self.history, other, result("fast"), "run-x")
        problems = []
        records = self.load(problems)
        self.assertEqual([r["student"] for r in records], ["slow"])
        self.assertEqual(len(problems), 2)

    def test_the_key_must_be_private(self):
        os.chmod(self.key, 0o644)
        with self.assertRaises(H.KeyProblem) as e:
            H.load_key(self.key)
        self.assertIn("can be read by others", str(e.exception))
        with self.assertRaises(H.KeyProblem):
            H.load_key(os.path.join(self.tmp, "none.key"))

    def test_a_key_is_made_on_first_use(self):
        path = os.path.join(self.tmp, "config", "kernel-workbook", "leaderboard.key")
        key = H.load_key(path, create=True)
        self.assertEqual(len(key), 64)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode), 0o700)
        self.assertEqual(H.load_key(path), key)

    def test_the_baseline_is_read_in_the_versions_still_read(self):
        self.assertEqual(H.read_trusted(TRUSTED)["schema_version"], 2)
        self.assertEqual(H.read_trusted(TRUSTED_V3)["schema_version"], 3)
        self.assertEqual(H.read_trusted(os.path.join(DECODER, "baseline-v3.json"))["kind"], "model")
        self.assertEqual(H.read_trusted(os.path.join(DECODER, "baseline.json"))["tool"], "gpt2")
        for path in (
            os.path.join(result("schema-v1"), "bench.json"),
            os.path.join(DECODER, "schema-2.json"),
            os.path.join(self.tmp, "absent.json"),
            "",
        ):
            with self.subTest(path=path):
                self.assertIsNone(H.read_trusted(path))

    def test_an_unknown_sandbox_is_refused(self):
        with self.assertRaises(ValueError):
            H.record_entry(self.history, H.load_key(self.key), result("fast"), "run-a", "GPU", "", "chroot", "", "")
        self.assertFalse(os.path.exists(self.history))


if __name__ == "__main__":
    unittest.main(verbosity=2)
