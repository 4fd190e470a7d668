"""wb_leaderboard.job_record: a job's record is written whole, and a record read back is
believed only when every field is what a job writes (no GPU needed)."""

import json
import os
import shutil
import tempfile
import unittest

from support import TRUSTED, result
from wb_leaderboard import job_record as J

TASK = 3


def write(entry, path, task=TASK, job_id=None, no_gpu=""):
    J.write_job_record(
        entry,
        path,
        "run-1",
        task,
        job_id or "57_%d" % task,
        "ok-0000abcd",
        "ch01",
        "node1",
        "" if no_gpu else "NVIDIA H100 80GB HBM3",
        "" if no_gpu else "GPU-1",
        no_gpu,
        "",
        "bubblewrap",
    )


class JobRecord(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="lb-record-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.entry = os.path.join(self.tmp, "entry")
        shutil.copytree(result("fast"), self.entry)
        shutil.copy(TRUSTED, os.path.join(self.entry, "trusted.json"))
        self.path = os.path.join(self.tmp, "records", "%d-57.json" % TASK)
        os.makedirs(os.path.dirname(self.path))

    def test_a_written_record_reads_back_whole(self):
        write(self.entry, self.path)
        doc, problem = J.read_job_record(self.path, TASK)
        self.assertIsNone(problem)
        self.assertEqual(doc["student_id"], "ok-0000abcd")
        self.assertEqual(doc["gpu"], {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1"})
        self.assertIn("trusted.json", doc["files"])
        self.assertTrue(set(doc["files"]) <= set(J.JOB_FILES))

    def test_every_field_is_checked(self):
        write(self.entry, self.path)
        with open(self.path) as f:
            good = json.load(f)
        self.assertIsNone(J.validate_job_record(good, TASK))
        for change, words in (
            (dict(complete=False), "not a complete job record"),
            (dict(extra=1), "fields"),
            (dict(task=True), "wrong type"),
            (dict(student_id="../x"), "bad student id"),
            (dict(job_id="57-3"), "bad run id or job id"),
            (dict(sandbox="chroot"), "bad sandbox"),
            (dict(files={"../../etc/passwd": "x"}), "bad file"),
            (dict(steps={"build": {"rc": "0", "seconds": 1}}), "bad step"),
            (dict(gpu=None), "gpu and no_gpu disagree"),
        ):
            with self.subTest(change=change):
                self.assertIn(words, J.validate_job_record(dict(good, **change), TASK))
        self.assertIn("record of task", J.validate_job_record(good, TASK + 1))

    def test_a_job_id_of_another_task_is_refused_and_nothing_is_written(self):
        with self.assertRaises(ValueError):
            write(self.entry, self.path, job_id="57_%d" % (TASK + 1))
        self.assertFalse(os.path.exists(self.path))

    def test_a_job_without_a_gpu_says_why(self):
        write(self.entry, self.path, no_gpu="nvidia-smi found no GPU")
        doc, problem = J.read_job_record(self.path, TASK)
        self.assertIsNone(problem)
        self.assertIsNone(doc["gpu"])

    def test_unusable_files_say_why(self):
        self.assertIn("no record", J.read_job_record(self.path, TASK)[1])
        for data, words in (
            (b"", "empty"),
            (b"\xff\xfe{", "not UTF-8"),
            (b'{"schema": 1, "kind"', "truncated"),
            (b"[1, 2]", "not a valid job record"),
        ):
            with self.subTest(words=words):
                with open(self.path, "wb") as f:
                    f.write(data)
                doc, problem = J.read_job_record(self.path, TASK)
                self.assertIsNone(doc)
                self.assertIn(words, problem)


if __name__ == "__main__":
    unittest.main()
