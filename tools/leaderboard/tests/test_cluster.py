"""cluster.py: a cluster run's bookkeeping, with sacct and scontrol played by small scripts:
records merged once, Slurm's fault states listed with their reason, bad records refused and
listed until a rerun replaces them, the history only appended to."""

import json
import os
import shutil
import unittest

from support import REPO, TRUSTED, captured, made_class, make_key, result, temp_folder
from wb_leaderboard import chapters, cluster as K, history as H, job_record as J, report as R, slurm, submissions


class ClusterJobs(unittest.TestCase):
    STUDENTS = [
        "ok",
        "cancelled",
        "timeout",
        "node-died",
        "truncated",
        "garbage",
        "no-record",
        "running",
        "no-gpu",
        "wrong-task",
        "oom",
    ]

    def setUp(self):
        self.tmp = temp_folder(self)
        subs = os.path.join(self.tmp, "subs")
        for n in self.STUDENTS + ["empty"]:
            d = os.path.join(subs, n, "ch01")
            os.makedirs(d)
            if n != "empty":
                for stub in chapters.stub_names(REPO, "ch01_indexing"):
                    shutil.copy(os.path.join(made_class("fixture"), "fast", "ch01", stub), d)
        self.run_dir = os.path.join(self.tmp, "shared", "run-1")
        os.makedirs(os.path.join(self.run_dir, "records"))
        entries, _ = submissions.plan(REPO, subs, os.path.join(self.run_dir, "entries", "r"), ["ch01"])
        n = K.write_run_file(self.run_dir, "run-1", entries, "entries/r/entries", "c")
        self.assertEqual(n, len(self.STUDENTS))
        with open(os.path.join(self.run_dir, "run.json")) as f:
            self.task = {t["student"]: t for t in json.load(f)["tasks"]}
        K.add_job(self.run_dir, "57", "0-%d" % (len(self.STUDENTS) - 1))
        self.out = os.path.join(self.tmp, "out")
        self.history = os.path.join(self.out, "history.jsonl")
        self.key = make_key(self.tmp)
        # sacct and scontrol: scripts that print what the test puts in files.
        self.bin = os.path.join(self.tmp, "bin")
        os.makedirs(self.bin)
        for tool in ("sacct", "scontrol"):
            with open(os.path.join(self.bin, tool), "w") as f:
                f.write(
                    '#!/bin/sh\ncat "%s/%s.out" 2>/dev/null\nexit $(cat "%s/%s.rc" 2>/dev/null || echo 0)\n'
                    % (self.tmp, tool, self.tmp, tool)
                )
            os.chmod(os.path.join(self.bin, tool), 0o755)
        old_path = os.environ["PATH"]
        os.environ["PATH"] = self.bin + os.pathsep + old_path
        self.addCleanup(os.environ.__setitem__, "PATH", old_path)

    def slurm(self, states, via="sacct"):
        """states: {student: state}; given as sacct prints them, or (sacct failing) as scontrol does."""
        jobs = {self.task[n]["task"]: st for n, st in states.items()}
        if via == "sacct":
            text = "".join("57_%d|%s|0:0|node1\n" % (t, st) for t, st in sorted(jobs.items()))
            files = {"sacct.out": text, "sacct.rc": "0", "scontrol.out": "", "scontrol.rc": "1"}
        else:
            text = "".join(
                "JobId=%d ArrayJobId=57 ArrayTaskId=%d JobName=kwb JobState=%s Reason=None ExitCode=0:0 "
                "NodeList=node1\n" % (100 + t, t, st)
                for t, st in sorted(jobs.items())
            )
            files = {
                "sacct.out": "Slurm accounting storage is disabled\n",
                "sacct.rc": "1",
                "scontrol.out": text,
                "scontrol.rc": "0",
            }
        for name, text in files.items():
            with open(os.path.join(self.tmp, name), "w") as f:
                f.write(text)

    def record(self, student, array="57", gpu="NVIDIA H100 80GB HBM3", no_gpu="", task=None, source="fast"):
        t = self.task[student]
        task = t["task"] if task is None else task
        entry = os.path.join(self.tmp, "job-" + student)
        shutil.copytree(result(source), entry, dirs_exist_ok=True)
        shutil.copy(TRUSTED, os.path.join(entry, "trusted.json"))
        path = os.path.join(self.run_dir, "records", "%d-%s.json" % (t["task"], array))
        J.write_job_record(
            entry,
            path,
            "run-1",
            task,
            "%s_%d" % (array, task),
            t["student_id"],
            "ch01",
            "node1",
            gpu if not no_gpu else "",
            "GPU-1",
            no_gpu,
            "",
            "bubblewrap",
        )
        return path

    def collect(self):
        status, out, _ = captured(
            K.collect, self.run_dir, self.history, H.load_key(self.key), self.out, slurm.slurm_states
        )
        with open(os.path.join(self.out, "runs", "run-1", "collect.json")) as f:
            self.assertEqual(json.load(f)["jobs"], status["jobs"])
        return out, {j["student"]: j for j in status["jobs"]}

    def latest(self):
        records = H.load_history(self.history, H.load_key(self.key), quiet=True)
        return {r["student"]: r for r in records}, records

    def test_records_states_and_faults(self):
        self.record("ok")
        self.record("no-gpu", no_gpu="no GPU on node node1 (nvidia-smi lists none)")
        path = self.record("truncated")
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        with open(os.path.join(self.run_dir, "records", "%d-57.json" % self.task["garbage"]["task"]), "w") as f:
            f.write("\x00 not a record at all")
        self.record("wrong-task", task=self.task["ok"]["task"])  # another task's record under this name
        os.replace(
            os.path.join(self.run_dir, "records", "%d-57.json" % self.task["ok"]["task"]),
            os.path.join(self.run_dir, "records", "%d-57.json" % self.task["wrong-task"]["task"]),
        )
        self.record("ok")
        self.slurm(
            {
                "ok": "COMPLETED",
                "cancelled": "CANCELLED",
                "timeout": "TIMEOUT",
                "node-died": "NODE_FAIL",
                "truncated": "COMPLETED",
                "garbage": "FAILED",
                "no-record": "COMPLETED",
                "running": "RUNNING",
                "no-gpu": "COMPLETED",
                "wrong-task": "COMPLETED",
                "oom": "OUT_OF_MEMORY",
            }
        )
        out, jobs = self.collect()
        latest, records = self.latest()
        self.assertEqual(latest["ok"]["status"], "ranked")
        self.assertEqual(latest["ok"]["gpu"]["name"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(
            latest["ok"]["logs"], "runs/run-1/%s/ch01/57_%d" % (self.task["ok"]["student_id"], self.task["ok"]["task"])
        )
        self.assertTrue(os.path.isfile(os.path.join(self.out, latest["ok"]["logs"], "tests.log")))
        kinds = {n: r["reasons"][0]["kind"] for n, r in latest.items() if r["reasons"]}
        self.assertEqual(
            kinds,
            {
                "cancelled": "cancelled",
                "timeout": "job-timeout",
                "node-died": "node-failed",
                "no-gpu": "no-gpu",
                "oom": "node-problem",
                "empty": "missing-files",
            },
        )
        self.assertEqual(latest["no-gpu"]["gpu"]["name"], "no GPU")
        self.assertIn(
            "job 57_%d, Slurm state CANCELLED" % self.task["cancelled"]["task"],
            latest["cancelled"]["reasons"][0]["detail"],
        )
        for n in ("truncated", "garbage", "no-record", "running", "wrong-task"):
            self.assertNotIn(n, latest, "%s must not be merged" % n)
        self.assertIn("truncated or not valid JSON", jobs["truncated"]["status"])
        self.assertIn("--rerun 57_%d" % self.task["truncated"]["task"], jobs["truncated"]["status"])
        self.assertIn("not valid JSON", jobs["garbage"]["status"])
        self.assertIn("no record", jobs["no-record"]["status"])
        self.assertIn("record of task", jobs["wrong-task"]["status"])
        self.assertEqual(jobs["running"]["status"], "pending (RUNNING)")
        self.assertIn("4 not merged", out)

        # A second collect adds nothing; the jobs it could not merge are still listed.
        with open(self.history, "rb") as f:
            before = f.read()
        out, jobs = self.collect()
        with open(self.history, "rb") as f:
            self.assertEqual(f.read(), before, "two collects of the same run never double-count")
        self.assertEqual(jobs["ok"]["status"], "already merged")
        self.assertIn("0 merged now", out)

        # Reruns of two jobs: merged as the latest results; nothing earlier is rewritten.
        K.add_job(self.run_dir, "60", "%d,%d" % (self.task["cancelled"]["task"], self.task["truncated"]["task"]))
        self.record("cancelled", array="60", source="slow")
        self.record("truncated", array="60")
        with open(os.path.join(self.tmp, "sacct.out"), "a") as f:
            f.write(
                "60_%d|COMPLETED|0:0|node1\n60_%d|COMPLETED|0:0|node1\n"
                % (self.task["cancelled"]["task"], self.task["truncated"]["task"])
            )
        out, jobs = self.collect()
        with open(self.history, "rb") as f:
            after = f.read()
        self.assertTrue(after.startswith(before))
        self.assertEqual(after.count(b"\n"), before.count(b"\n") + 2)
        latest, records = self.latest()
        self.assertEqual((latest["cancelled"]["status"], latest["truncated"]["status"]), ("ranked", "ranked"))
        self.assertEqual(
            len([r for r in records if r["student"] == "cancelled"]), 2, "the cancelled job stays in the history"
        )

        # The report lists the jobs still without a result.
        captured(R.write_reports, self.history, H.load_key(self.key), self.out)
        with open(os.path.join(self.out, "leaderboard.json")) as f:
            waiting = {j["student"] for j in json.load(f)["jobs_without_result"]}
        self.assertEqual(waiting, {"garbage", "no-record", "running", "wrong-task"})
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            self.assertIn("## Cluster jobs without a result", f.read())

    def test_states_from_scontrol_when_sacct_has_no_database(self):
        self.slurm({"cancelled": "CANCELLED", "timeout": "TIMEOUT", "running": "PENDING"}, via="scontrol")
        out, jobs = self.collect()
        latest, _ = self.latest()
        self.assertEqual(latest["cancelled"]["reasons"][0]["kind"], "cancelled")
        self.assertEqual(latest["timeout"]["reasons"][0]["kind"], "job-timeout")
        self.assertEqual(jobs["running"]["status"], "pending (PENDING)")
        self.assertIn("Slurm knows nothing of the job", jobs["ok"]["status"])

    def test_a_job_array_must_be_of_the_runs_tasks(self):
        for array, tasks in (("61", "0-99"), ("x", "0"), ("62", "")):
            with self.subTest(array=array, tasks=tasks), self.assertRaises(ValueError):
                K.add_job(self.run_dir, array, tasks)

    def test_a_folder_that_is_not_a_run(self):
        with self.assertRaises(ValueError) as e:
            K.read_run(self.tmp)
        self.assertIn("is not a cluster run's file", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
