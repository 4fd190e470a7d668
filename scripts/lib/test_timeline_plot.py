"""Host test of timeline_plot.py on a small fake Nsight Systems export (no GPU, no nsys).

    cd scripts/lib && python3 -m unittest -v test_timeline_plot
"""
import json
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


def temp_file(test, name, make):
    """The path of the file `name` that make(path) writes into a temporary folder, test.dir,
    which is removed when the test ends."""
    test.dir = tempfile.TemporaryDirectory()
    test.addCleanup(test.dir.cleanup)
    path = os.path.join(test.dir.name, name)
    make(path)
    return path


def draws_png(test, source, name):
    """timeline_plot draws `source` into test.dir/name, a PNG (the test is skipped without
    matplotlib)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        test.skipTest("matplotlib is missing")
    out = os.path.join(test.dir.name, name)
    test.assertEqual(tp.main([source, "--out", out]), 0)
    with open(out, "rb") as f:
        test.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")


class TimelineTest(unittest.TestCase):
    def setUp(self):
        self.export = temp_file(self, "run.sqlite", fake_export)

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
        draws_png(self, self.export, "timeline.png")


def fake_trace(path):
    """A Chrome trace as ActivityTrace writes it: a serial call (one stream) and a two-stream
    pipeline, each in its section; one kernel outside every section."""
    ev = []

    def x(name, cat, pid, tid, ts_us, dur_us):
        ev.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": ts_us, "dur": dur_us})

    x("pipeline: serial", "section", 1, 0, 1000.0, 30.0)
    x("copy in (HtoD) 4096 B", "copy in (HtoD)", 0, 7, 1000.0, 10.0)
    x("axpb_kernel", "kernel", 0, 7, 1010.0, 10.0)
    x("copy out (DtoH) 4096 B", "copy out (DtoH)", 0, 7, 1020.0, 10.0)
    x("pipeline: v3_n_streams", "section", 1, 0, 2000.0, 20.0)
    for k, tid in enumerate((8, 9)):
        x("copy in (HtoD) 2048 B", "copy in (HtoD)", 0, tid, 2000.0 + 5 * k, 5.0)
        x("axpb_kernel", "kernel", 0, tid, 2005.0 + 5 * k, 5.0)
        x("copy out (DtoH) 2048 B", "copy out (DtoH)", 0, tid, 2010.0 + 5 * k, 5.0)
    x("untraced", "kernel", 0, 7, 5000.0, 1.0)
    with open(path, "w") as f:
        json.dump({"traceEvents": ev, "displayTimeUnit": "ns"}, f)


class ChromeTraceTest(unittest.TestCase):
    def setUp(self):
        self.trace = temp_file(self, "trace.json", fake_trace)

    def test_reads_work_and_sections_in_ns(self):
        work, sections = tp.read_trace(self.trace)
        self.assertEqual(len(work), 10)
        self.assertEqual([s["name"] for s in sections], ["pipeline: serial", "pipeline: v3_n_streams"])
        self.assertEqual(sections[0]["end"] - sections[0]["start"], 30_000)

    def test_a_section_holds_its_own_work_from_its_start(self):
        work, sections = tp.read_trace(self.trace)
        serial = tp.in_section(work, sections[0])
        self.assertEqual(len(serial), 3)
        self.assertEqual(serial[0]["start"], 0)
        self.assertAlmostEqual(tp.overlap(serial), 1.0)
        piped = tp.in_section(work, sections[1])
        self.assertEqual(len(piped), 6)
        self.assertAlmostEqual(tp.overlap(piped), 30 / 20)

    def test_sections_picked_by_name_or_prefix_and_absent_ones_refused(self):
        _, sections = tp.read_trace(self.trace)
        self.assertEqual(len(tp.pick_sections(sections, ["pipeline:"])), 2)
        self.assertEqual(tp.pick_sections(sections, ["pipeline: serial"])[0]["name"], "pipeline: serial")
        with self.assertRaises(tp.ExportError):
            tp.pick_sections(sections, ["graph:"])
        self.assertEqual(tp.main([self.trace, "--section", "graph:", "--out", os.path.join(self.dir.name, "x.png")]), 2)

    def test_refuses_a_json_that_is_not_a_trace(self):
        bad = os.path.join(self.dir.name, "bad.json")
        with open(bad, "w") as f:
            f.write('{"schema": 3}')
        with self.assertRaises(tp.ExportError):
            tp.read_trace(bad)

    def test_draws_panels(self):
        draws_png(self, self.trace, "panels.png")


if __name__ == "__main__":
    unittest.main()
