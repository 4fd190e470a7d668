"""Host test of timeline_plot.py on a small fake Nsight Systems export (no GPU, no nsys).

    cd scripts/lib && python3 -m unittest -v test_timeline_plot
"""
import os
import sqlite3
import tempfile
import unittest

import timeline_plot as tp


def fake_export(path):
    """Two streams of a two-chunk pipeline: copy in, kernel, copy out each; chunk 1 overlaps chunk 0."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, streamId INTEGER, " "shortName INTEGER)"
    )
    db.execute(
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, streamId INTEGER, "
        "copyKind INTEGER, bytes INTEGER)"
    )
    db.execute("INSERT INTO StringIds VALUES (7, 'axpb_kernel')")
    ms = 1000000
    rows = [
        (0, 10 * ms, 13, 1, 4096),
        (10 * ms, 20 * ms, 14, 1, 4096),  # copies in
        (10 * ms, 11 * ms, 13, 2, 4096),
        (21 * ms, 31 * ms, 14, 2, 4096),
    ]  # copies out
    db.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?, ?, ?, ?, ?)", rows)
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, ?)",
        [(10 * ms, 10 * ms + ms // 2, 13, 7), (20 * ms, 21 * ms, 14, 7)],
    )
    db.commit()
    db.close()


class TimelineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.export = os.path.join(self.dir.name, "run.sqlite")
        fake_export(self.export)

    def tearDown(self):
        self.dir.cleanup()

    def test_reads_every_copy_and_kernel_in_time_order(self):
        work = tp.read_export(self.export)
        self.assertEqual(len(work), 6)
        self.assertEqual([w["start"] for w in work], sorted(w["start"] for w in work))
        kinds = {w["kind"] for w in work}
        self.assertEqual(kinds, {"copy in (HtoD)", "copy out (DtoH)", "kernel"})
        self.assertIn("axpb_kernel", {w["name"] for w in work})

    def test_per_stream_busy_time_and_overlap(self):
        work = tp.read_export(self.export)
        streams = tp.per_stream(work)
        self.assertEqual(list(streams), [13, 14])
        self.assertEqual(streams[13]["count"], 3)
        self.assertEqual(streams[13]["busy_ns"], 10_000_000 + 1_000_000 + 500_000)
        # 32.5 ms of work over a 31 ms span: a little more than one thing at a time.
        self.assertAlmostEqual(tp.overlap(work), 32.5 / 31, places=6)
        self.assertIn("overlap: 1.05", tp.table(work))

    def test_last_window_keeps_the_end_of_the_run(self):
        work = tp.last_window(tp.read_export(self.export), 11.0)
        self.assertTrue(all(w["end"] >= 20_000_000 for w in work))
        self.assertEqual(len(work), 3)

    def test_refuses_what_is_not_an_export(self):
        other = os.path.join(self.dir.name, "other.sqlite")
        sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
        with self.assertRaises(tp.ExportError):
            tp.read_export(other)
        with self.assertRaises(tp.ExportError):
            tp.read_export(os.path.join(self.dir.name, "missing.sqlite"))
        self.assertEqual(tp.main([other, "--out", os.path.join(self.dir.name, "x.png")]), 2)

    def test_draws_a_png(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is missing")
        out = os.path.join(self.dir.name, "timeline.png")
        self.assertEqual(tp.main([self.export, "--out", out]), 0)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


if __name__ == "__main__":
    unittest.main()
