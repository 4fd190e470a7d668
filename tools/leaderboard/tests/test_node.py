"""node.py: one job on a node, run as Slurm runs it (tools/leaderboard/slurm-job.sh with the
array's variables), with support.fake_toolchain: without a GPU it builds and runs the tests only
and says so; a node where the repository does not build records that, and runs nothing of the
student's; a job stopped by a signal writes no record; every job removes its work folder."""

import glob
import json
import os
import re
import signal
import subprocess
import time
import unittest

from support import TOOL, captured, fake_class, fake_machine, run_job
from wb_leaderboard import cli, cluster


class Jobs(unittest.TestCase):
    def setUp(self):
        fake_machine(self)
        subs = fake_class(os.path.join(self.tmp, "class"), {"alice": None, "bob": "wrong"})
        rc, out, err = captured(
            cli.main,
            [
                "--slurm",
                "--gres",
                "none",
                "--timeout",
                "60",
                "--key",
                self.key,
                "--out",
                os.path.join(self.tmp, "out"),
                subs,
            ],
        )
        self.assertEqual(rc, 0, out + err)
        self.run_dir = os.path.join(self.tmp, "out", "cluster", re.search(r"on Slurm, run (\S+) ", out).group(1))
        self.tasks = {t["student"]: t["task"] for t in cluster.read_run(self.run_dir)["tasks"]}

    def record(self, student):
        with open(os.path.join(self.run_dir, "records", "%d-77.json" % self.tasks[student])) as f:
            return json.load(f)

    def test_a_job_with_a_gpu(self):
        rc, out = run_job(self.run_dir, self.tasks["alice"], 77)
        self.assertEqual(rc, 0, out)
        rec = self.record("alice")
        self.assertEqual(rec["gpu"], {"name": "Fake GPU 80GB", "uuid": "GPU-00000000-fake"})
        self.assertEqual({k: v["rc"] for k, v in rec["steps"].items()}, {"build": 0, "tests": 0, "bench": 0})
        self.assertEqual(
            sorted(rec["files"]), ["bench.json", "bench.log", "build.log", "tests.json", "tests.log", "trusted.json"]
        )
        self.assertIn("kernel-workbook: seed 4242", rec["files"]["tests.log"])
        self.assertEqual(os.listdir(self.work_parent), [])

    def test_without_a_gpu_the_tests_only(self):
        with open(os.path.join(self.bin, "nvidia-smi"), "w") as f:
            f.write("#!/bin/sh\nexit 9\n")
        rc, out = run_job(self.run_dir, self.tasks["bob"], 77)
        self.assertEqual(rc, 0, out)
        self.assertIn("no GPU: the build and the host-side tests run, nothing is timed", out)
        rec = self.record("bob")
        self.assertIsNone(rec["gpu"])
        self.assertIn("nvidia-smi lists none", rec["no_gpu"])
        self.assertEqual({k: v["rc"] for k, v in rec["steps"].items()}, {"build": 0, "tests": 1})

    def test_a_node_where_the_repository_does_not_build(self):
        with open(os.path.join(self.bin, "cmake"), "w") as f:
            f.write("#!/bin/sh\necho 'CMake Error: the CUDA compiler is broken'\nexit 1\n")
        rc, out = run_job(self.run_dir, self.tasks["alice"], 77)
        self.assertEqual(rc, 0, out)
        rec = self.record("alice")
        self.assertIn(
            "the repository's own ch01 does not build here: CMake Error: the CUDA compiler is broken",
            rec["node_problem"],
        )
        self.assertEqual(rec["steps"], {})

    def test_a_task_the_run_does_not_have(self):
        rc, out = run_job(self.run_dir, 9, 77)
        self.assertEqual(rc, 1, out)
        self.assertIn("task 9 is not in", out)
        self.assertEqual(os.listdir(self.work_parent), [])

    def test_a_job_stopped_by_a_signal_writes_no_record(self):
        with open(os.path.join(self.bin, "cmake"), "w") as f:
            f.write("#!/bin/sh\nsleep 30\n")
        p = subprocess.Popen(
            [os.path.join(TOOL, "slurm-job.sh"), self.run_dir],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=dict(os.environ, SLURM_ARRAY_TASK_ID=str(self.tasks["alice"]), SLURM_ARRAY_JOB_ID="77"),
        )
        deadline = time.time() + 30  # until the job is building the repository's chapter
        while time.time() < deadline and not glob.glob(os.path.join(self.work_parent, "*", "tree", "src")):
            time.sleep(0.1)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 143, out)
        self.assertIn("stopped by a signal", out)
        self.assertEqual(os.listdir(os.path.join(self.run_dir, "records")), [])
        self.assertEqual(os.listdir(self.work_parent), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
