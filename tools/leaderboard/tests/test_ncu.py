"""ncu.py: the row to re-measure (the one that claims the most over the reference), the
benchmark's own selection of it (a row whose names hold a line break is refused), ncu's CSV
read without the harness's kernels, and a reported median far below ncu's kernel time."""

import json
import os
import shutil
import tempfile
import unittest

from support import result, trusted
from wb_leaderboard import classify, ncu as N


class Ncu(unittest.TestCase):
    def test_ncu_csv_is_read_without_the_harness_kernels(self):
        with open(os.path.join(result("ncu-mismatch"), "ncu.csv")) as f:
            per_call, seen = N.ncu_kernel_time(f.read())
        self.assertEqual(seen, 48)
        self.assertAlmostEqual(per_call, 2250000.0)
        self.assertEqual(N.ncu_kernel_time("==PROF== error\n"), (None, 0))
        with open(os.path.join(result("fast"), "bench.json")) as f:
            target = N.ncu_target(f.read())
        self.assertEqual((target["op"], target["impl"]), ("vector_add", "student"))
        # The benchmark's results as it writes them now (schema 3) give the same row; a file of
        # a version or kind not read gives none.
        with open(os.path.join(result("current-schema"), "bench.json")) as f:
            doc = json.load(f)
        self.assertEqual(N.ncu_target(json.dumps(doc)), target)
        for key, value in (("kind", "tuning"), ("schema_version", 4)):
            with self.subTest(key=key):
                self.assertIsNone(N.ncu_target(json.dumps(dict(doc, **{key: value}))))

    def test_the_selection_is_the_benchmarks_own(self):
        with tempfile.TemporaryDirectory() as entry:
            shutil.copy(os.path.join(result("fast"), "bench.json"), entry)
            selection = N.ncu_selection(entry)
            with open(os.path.join(entry, "ncu-target.json")) as f:
                t = json.load(f)
            # One argument each, each a selection option of the chapter's benchmark.
            self.assertEqual(selection, ["--op=" + t["op"], "--shape=" + t["shape"], "--impl=" + t["impl"]])
            # A row whose names hold a line break would smuggle in another argument: refused.
            with open(os.path.join(entry, "bench.json")) as f:
                doc = json.load(f)
            for r in doc["results"]:
                if r["role"] == "student":
                    r["impl"] = r["impl"] + "\n--remeasure"
            with open(os.path.join(entry, "bench.json"), "w") as f:
                json.dump(doc, f)
            self.assertIsNone(N.ncu_selection(entry))

    def test_no_row_to_remeasure(self):
        with tempfile.TemporaryDirectory() as entry:
            self.assertIsNone(N.ncu_selection(entry))
            self.assertFalse(os.path.exists(os.path.join(entry, "ncu-target.json")))

    def test_a_median_far_below_the_kernels_time_is_implausible(self):
        agrees = classify.classify_entry(result("ncu-agrees"), trusted=trusted())
        self.assertEqual(agrees["status"], "ranked", agrees["reasons"])
        self.assertTrue(any(n.startswith("ncu: ") for n in agrees["notes"]))
        rec = classify.classify_entry(result("ncu-mismatch"), trusted=trusted())
        self.assertEqual(rec["reasons"][0]["kind"], "implausible")
        self.assertIn("under ncu", rec["reasons"][0]["detail"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
