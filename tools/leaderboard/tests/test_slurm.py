"""slurm.py: a run on a cluster from the teacher's side, end to end with sbatch and sacct played
by scripts and each job run as Slurm would run it on a node (tools/leaderboard/slurm-job.sh):
the run folder made whole before anything is submitted and removed when sbatch refuses, the
collect, the status, a rerun, a collect of an unknown run that leaves nothing behind; and the
states sacct and scontrol report (a task's own line wins over a range), the array syntax."""

import json
import os
import re
import unittest

from support import captured, fake_class, fake_machine, run_job
from wb_leaderboard import cli, cluster, history, slurm as S

STUDENTS = {"fast": None, "slow": "slow", "not-compiling": "compile-error", "wrong": "wrong", "no-files": ""}


class States(unittest.TestCase):
    def test_array_ranges_never_hide_a_tasks_own_line(self):
        def fake(argv):
            class P:
                returncode = 0
                stdout = (
                    "57_0|COMPLETED|0:0|n1\n57_1|COMPLETED|0:0|n1\n57_[0-2]|CANCELLED by 0|0:0|None assigned\n"
                    if argv[0] == "sacct"
                    else ""
                )

            return P()

        states = S.slurm_states(["57"], runner=fake)
        self.assertEqual(
            {k: v["state"] for k, v in states.items()}, {"57_0": "COMPLETED", "57_1": "COMPLETED", "57_2": "CANCELLED"}
        )

    def test_scontrol_fills_in_what_sacct_does_not_know(self):
        def fake(argv):
            class P:
                returncode = 1 if argv[0] == "sacct" else 0
                stdout = (
                    ""
                    if argv[0] == "sacct"
                    else ("JobId=9 ArrayJobId=57 ArrayTaskId=3 JobState=RUNNING ExitCode=0:0 NodeList=n2\n")
                )

            return P()

        self.assertEqual(
            S.slurm_states(["57"], runner=fake), {"57_3": {"state": "RUNNING", "exit": "0:0", "node": "n2"}}
        )
        self.assertEqual(S.slurm_states([], runner=fake), {})

    def test_ids_and_task_lists(self):
        self.assertEqual(S.expand_array_ids("57_[2-4,7%2]"), ["57_2", "57_3", "57_4", "57_7"])
        self.assertEqual(S.expand_array_ids("57_3"), ["57_3"])
        self.assertEqual(S.expand_array_ids("57"), [])
        self.assertEqual(cluster.parse_task_list("0-3,7"), [0, 1, 2, 3, 7])
        self.assertEqual(cluster.parse_task_list("3-1"), [])
        self.assertEqual(cluster.parse_task_list("a"), [])


class ClusterRun(unittest.TestCase):
    def setUp(self):
        fake_machine(self)
        self.subs = fake_class(os.path.join(self.tmp, "class"), STUDENTS)
        self.out, self.shared = os.path.join(self.tmp, "out"), os.path.join(self.tmp, "shared")

    def leaderboard(self, *args):
        rc, out, err = captured(cli.main, ["--key", self.key, "--out", self.out, "--shared", self.shared] + list(args))
        return rc, out + err

    def submit(self, *args):
        rc, text = self.leaderboard(
            "--slurm", "--gres", "none", "--partition", "debug", "--timeout", "60", *args, self.subs
        )
        self.assertEqual(rc, 0, text)
        run_id = re.search(r"on Slurm, run (\S+) ", text).group(1)
        return run_id, os.path.join(self.shared, run_id), text

    def test_submit_run_the_jobs_and_collect(self):
        run_id, run_dir, text = self.submit()
        self.assertIn("submitted: job array 77 (tasks 0-3)", text)
        self.assertEqual(sorted(os.listdir(self.shared)), [run_id], "no temporary folder is left")
        for name in ("run.json", "tasks.tsv", "settings.tsv", "sbatch.args", "src.tar"):
            self.assertTrue(os.path.isfile(os.path.join(run_dir, name)), name)
        with open(os.path.join(self.bin, "sbatch.77.args")) as f:
            args = f.read().splitlines()
        for want in (
            ["--job-name", "kwb-" + run_id],
            ["--partition", "debug"],
            ["--array", "0-3"],
            ["--cpus-per-task", "4"],
        ):
            self.assertIn(want, [args[i : i + 2] for i in range(len(args))], args)
        self.assertNotIn("--gres", args)
        self.assertTrue(args[args.index("--export") + 1].startswith("PATH,HOME"), "no other variable of the caller's")
        self.assertEqual(args[-2:], [os.path.join(cli.REPO, "tools", "leaderboard", "slurm-job.sh"), run_dir])

        tasks = {t["student"]: t["task"] for t in cluster.read_run(run_dir)["tasks"]}
        self.assertEqual(sorted(tasks), ["fast", "not-compiling", "slow", "wrong"])
        for student, task in tasks.items():
            rc, out = run_job(run_dir, task, 77)
            self.assertEqual(rc, 0, out)
            self.assertIn("record written", out)
        self.assertEqual(os.listdir(self.work_parent), [], "each job removes its work folder")
        with open(os.path.join(self.bin, "sacct.out"), "w") as f:
            f.write("".join("77_%d|COMPLETED|0:0|node1\n" % t for t in tasks.values()))

        rc, text = self.leaderboard("--status", run_id)
        self.assertEqual(rc, 0, text)
        self.assertIn("%d\t77_%d\tCOMPLETED\tok\tfast" % (tasks["fast"], tasks["fast"]), text.splitlines())

        expected = os.path.join(self.tmp, "expected.json")
        with open(expected, "w") as f:
            json.dump(
                {
                    "ch01": {
                        "ranked": ["fast", "slow"],
                        "faster_than": [["fast", "slow"]],
                        "reasons": {"not-compiling": "build-failed", "wrong": "wrong", "no-files": "missing-files"},
                    }
                },
                f,
            )
        rc, text = self.leaderboard("--collect", run_id, "--expect", expected)
        self.assertEqual(rc, 0, text)
        self.assertIn("expected outcome (expected.json): as expected", text)
        records = history.load_history(os.path.join(self.out, "history.jsonl"), history.load_key(self.key))
        self.assertEqual({r["gpu"]["name"] for r in records if r["student"] != "no-files"}, {"Fake GPU 80GB"})
        self.assertEqual(len(records), len(STUDENTS))

        # A rerun of one job: a new array of the same run, then its record merged as the latest.
        rc, text = self.leaderboard("--rerun", "77_%d" % tasks["wrong"])
        self.assertEqual(rc, 0, text)
        self.assertIn("submitted again as job array 78", text)
        self.assertEqual(len(cluster.read_run(run_dir)["jobs"]), 2)

    def test_without_a_sandbox_a_node_refuses(self):
        run_id, run_dir, _ = self.submit("--bwrap", "/bin/false")
        task = cluster.read_run(run_dir)["tasks"][0]["task"]
        rc, out = run_job(run_dir, task, 77)
        self.assertEqual(rc, 0, out)
        with open(os.path.join(run_dir, "records", "%d-77.json" % task)) as f:
            rec = json.load(f)
        self.assertIn("refusing to run without a sandbox", rec["node_problem"])
        self.assertEqual(rec["steps"], {}, "nothing of the student's ran")

    def test_a_refused_submission_leaves_nothing(self):
        open(os.path.join(self.bin, "sbatch.refuses"), "w").close()
        rc, text = self.leaderboard("--slurm", "--gres", "none", self.subs)
        self.assertEqual(rc, 1, text)
        self.assertIn("sbatch refused the jobs: sbatch: error: Invalid partition", text)
        self.assertFalse(os.path.exists(self.shared), "the shared folder it made is removed: nothing was submitted")
        self.assertFalse(os.path.exists(self.out))
        os.makedirs(self.shared)
        rc, text = self.leaderboard("--slurm", "--gres", "none", self.subs)
        self.assertEqual(rc, 1, text)
        self.assertEqual(os.listdir(self.shared), [], "the run folder is removed")

    def test_a_collect_of_an_unknown_run_leaves_nothing(self):
        os.makedirs(os.path.join(self.shared, "20260101-000000-abcd"))
        with open(os.path.join(self.shared, "20260101-000000-abcd", "run.json"), "w") as f:
            f.write("{}")
        for args in (
            ["--collect", "20260101-999999-0000"],
            ["--status", "20260101-999999-0000"],
            ["--collect", "20260101-999999-0000", "--shared", os.path.join(self.tmp, "nowhere")],
        ):
            with self.subTest(args=args):
                rc, text = self.leaderboard(*args)
                self.assertEqual(rc, 1, text)
                self.assertIn("no cluster run '20260101-999999-0000'", text)
                self.assertFalse(os.path.exists(self.out), "no output folder is made")
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "nowhere")))
        rc, text = self.leaderboard("--collect", "20260101-000000-abcd")
        self.assertEqual(rc, 1, text)
        self.assertIn("is not a cluster run's file", text)
        self.assertFalse(os.path.exists(self.out))
        rc, text = self.leaderboard("--rerun", "99_0")
        self.assertEqual(rc, 1, text)
        self.assertIn("no run in %s submitted job array 99" % self.shared, text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
