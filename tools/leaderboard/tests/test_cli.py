"""cli.py, through scripts/leaderboard.sh as a teacher runs it: bad input is refused with what is
wrong and how to fix it, a non-zero exit and nothing made; a class folder's layout is checked
before any sandbox or GPU is looked for (and --check-only stops there); without a sandbox it
refuses to rank unless told to, and says so without a GPU; --verify checks a history."""

import os
import shutil
import subprocess
import unittest

from support import REPO, SCRIPT, made_class, make_key, record, result, temp_folder

FIXTURE_CLASS = made_class("fixture")  # any class folder, for the options around it


class CommandLine(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)

    def run_script(self, *args, **env):
        p = subprocess.run(
            ["bash", SCRIPT] + list(args), capture_output=True, text=True, timeout=120, env=dict(os.environ, **env)
        )
        return p.returncode, p.stdout + p.stderr

    def test_bad_input_is_refused_with_a_message(self):
        cases = [
            (["--frobnicate", FIXTURE_CLASS], "unknown option '--frobnicate'"),
            ([], "give the SUBMISSIONS_DIR"),
            (["/nonexistent/folder"], "is not a folder"),
            (["--chapter", "ch99", FIXTURE_CLASS], "unknown chapter 'ch99'"),
            (["--chapter", "bogus", FIXTURE_CLASS], "unknown chapter 'bogus'"),
            (["--timeout", "0", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", "-5", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", "abc", FIXTURE_CLASS], "--timeout must be a positive number"),
            (["--timeout", FIXTURE_CLASS], "--timeout must be a positive number of seconds, not '/"),
            (["--timeout"], "--timeout needs a value"),
            (["--out", "", FIXTURE_CLASS], "--out needs a value"),
            (["--kernel-timeout", "x", FIXTURE_CLASS], "--kernel-timeout must be a positive number"),
            (["--build-jobs", "0", FIXTURE_CLASS], "--build-jobs must be a whole number"),
            ([FIXTURE_CLASS, FIXTURE_CLASS], "one SUBMISSIONS_DIR only"),
            (["--fixture", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--hostile", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--fixture", "--hostile"], "one class at a time"),
            (["--no-sandbox", FIXTURE_CLASS], "--no-sandbox is now --unsafe-no-sandbox"),
            (["--expect", "/nonexistent.json", FIXTURE_CLASS], "--expect: '/nonexistent.json' is not a file"),
            (["--arch", "sm_90$", FIXTURE_CLASS], "is not a list of CUDA architectures"),
            (["--slurm", "--gres", "gpu;rm -rf", FIXTURE_CLASS], "--gres: 'gpu;rm -rf' is not a generic resource"),
            (["--slurm", "--time", "soon", FIXTURE_CLASS], "--time: 'soon' is not a Slurm time"),
            (["--slurm", "--partition", "a b", FIXTURE_CLASS], "--partition: 'a b' is not a partition name"),
            (["--slurm", "--account", "-x", FIXTURE_CLASS], "--account: '-x' is not an account name"),
            (["--slurm", "--cpus-per-task", "0", FIXTURE_CLASS], "--cpus-per-task must be a whole number"),
            (["--rerun", "57", "--out", "/tmp"], "--rerun: '57' is not a job of an array"),
            (["--rerun"], "--rerun needs a value"),
            (["--collect", "../up"], "--collect: '../up' is not a run id"),
            (["--status", "a/b"], "--status: 'a/b' is not a run id"),
            (["--collect", "run-1", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--slurm", "--collect", "run-1"], "one at a time"),
            (["--collect", "run-1", "--check-only"], "--check-only checks a class folder"),
            (["--partition", "gpu", FIXTURE_CLASS], "--partition is an option of --slurm"),
            (["--wait", FIXTURE_CLASS], "--wait is an option of --slurm"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 2, text)
                self.assertIn(message, text)
                self.assertIn("run 'scripts/leaderboard.sh --help' for the options", text)

    def test_the_scripts_parse_and_the_job_script_refuses_to_run_outside_slurm(self):
        for path in (
            "scripts/leaderboard.sh",
            "tools/leaderboard/slurm-job.sh",
            "scripts/slurm-local-cluster.sh",
            "tests/leaderboard/slurm-check.sh",
        ):
            p = subprocess.run(["bash", "-n", os.path.join(REPO, path)], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, path + ": " + p.stderr)
        cluster = os.path.join(REPO, "scripts", "slurm-local-cluster.sh")
        for args, rc, message in (
            ([], 2, "say what to do"),
            (["begin"], 2, "unknown command 'begin'"),
            (["start", "--port", "1"], 2, "unknown argument '--port'"),
            (["start", "--dir"], 2, "--dir needs a folder"),
            (["stop", "--dir", "/etc"], 1, "give a folder of its own"),
        ):
            with self.subTest(args=args):
                p = subprocess.run(["bash", cluster] + args, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, rc, p.stderr)
                self.assertIn(message, p.stderr)
        p = subprocess.run(
            ["bash", cluster, "status", "--dir", os.path.join(self.tmp, "none")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(p.returncode, 1)
        self.assertIn("not running", p.stdout)
        job = ["bash", os.path.join(REPO, "tools", "leaderboard", "slurm-job.sh"), self.tmp]

        def slurm_job(**slurm_env):
            return subprocess.run(job, capture_output=True, text=True, timeout=60, env=dict(os.environ, **slurm_env))

        p = slurm_job(SLURM_ARRAY_TASK_ID="")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("this is a Slurm array job", p.stderr)
        p = slurm_job(SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_JOB_ID="5")
        self.assertEqual(p.returncode, 1)
        self.assertIn("is not readable from node", p.stdout)

    def test_no_folder_of_the_run_inside_the_sources(self):
        for args, where in (
            (["--out", os.path.join(REPO, "chapters", "lb-out"), FIXTURE_CLASS], "chapters"),
            (["--slurm", "--shared", os.path.join(REPO, "harness", "lb-shared"), FIXTURE_CLASS], "harness"),
        ):
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 1, text)
                self.assertIn("is inside the repository's %s/, which every build copies" % where, text)
                self.assertFalse(os.path.exists(args[1]), "nothing is created")

    def test_collect_of_an_unknown_run_says_which_runs_exist_and_makes_nothing(self):
        os.makedirs(os.path.join(self.tmp, "cluster", "20260101-000000-abcd"))
        with open(os.path.join(self.tmp, "cluster", "20260101-000000-abcd", "run.json"), "w") as f:
            f.write("{}")
        rc, text = self.run_script("--collect", "20260101-999999-0000", "--out", self.tmp)
        self.assertEqual(rc, 1, text)
        self.assertIn("no cluster run '20260101-999999-0000'", text)
        self.assertIn("20260101-000000-abcd", text)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["cluster"])
        rc, text = self.run_script("--collect", "20260101-999999-0000", "--out", os.path.join(self.tmp, "new"))
        self.assertEqual(rc, 1, text)
        self.assertIn("(runs there: none)", text)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "new")), "a failed collect leaves nothing behind")

    def test_help(self):
        rc, text = self.run_script("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: scripts/leaderboard.sh", text)
        for option in (
            "--unsafe-no-sandbox",
            "--check-only",
            "--verify",
            "--slurm",
            "--collect RUN_ID",
            "--rerun JOB",
            "--status RUN_ID",
            "--partition",
            "--gres",
            "--account",
            "--time",
        ):
            self.assertIn(option, text)

    def test_the_layout_is_checked_first_and_check_only_stops_there(self):
        rc, text = self.run_script("--check-only", "--bwrap", "/bin/false", FIXTURE_CLASS)
        self.assertEqual(rc, 0, text)
        self.assertIn("11 student folder(s); chapters ch01 ch02 ch03 ch04 ch05 ch06 ch07 ch08 ch09", text)
        self.assertIn("39 entries to build", text)
        self.assertIn("check: -dash ..dots/ch01: none of its files (ex9_bonus.cu, notes.txt)", text)
        self.assertNotIn("sandbox", text)
        rc, text = self.run_script("--hostile", "--check-only")
        self.assertEqual(rc, 0, text)
        self.assertIn("review: includes a file by path or macro", text)
        bad = os.path.join(self.tmp, "class")
        os.makedirs(os.path.join(bad, "alice", "Chapter 1"))
        os.makedirs(os.path.join(bad, "bob"))
        open(os.path.join(bad, "bob", "ex1_vector_add.cu"), "w").close()
        open(os.path.join(bad, "class.zip"), "w").close()
        for args in (["--check-only"], ["--unsafe-no-sandbox", "--bwrap", "/bin/false"], ["--slurm"]):
            with self.subTest(args=args):
                rc, text = self.run_script(*args, "--out", os.path.join(self.tmp, "out"), bad)
                self.assertEqual(rc, 1, text)
                self.assertIn("no student folder holds the files of a chapter that can be ranked", text)
                self.assertIn("check: alice/Chapter 1/: not a chapter folder: rename it ch01 (or ch01_indexing)", text)
                self.assertIn(
                    "check: bob/ex1_vector_add.cu: a chapter's file directly in the student's folder: "
                    "move it to bob/ch01/",
                    text,
                )
                self.assertIn("check: class.zip: not a folder", text)
                self.assertNotIn("GPU", text)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        rc, text = self.run_script(empty)
        self.assertEqual(rc, 1, text)
        self.assertIn("no student folders in '%s'" % empty, text)

    def test_without_a_sandbox_it_refuses_to_rank(self):
        for bwrap, why in (
            ("/nonexistent/bwrap", "is not an executable file"),
            ("/bin/false", "cannot start a sandbox"),
        ):
            for args in ([FIXTURE_CLASS], ["--hostile"]):
                with self.subTest(bwrap=bwrap, args=args):
                    rc, text = self.run_script("--bwrap", bwrap, "--out", os.path.join(self.tmp, "out"), *args)
                    self.assertEqual(rc, 1, text)
                    self.assertIn("refusing to rank without a sandbox", text)
                    self.assertIn(why, text)
                    self.assertIn("--unsafe-no-sandbox", text)
                    self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))

    def test_without_a_gpu_it_says_so(self):
        if shutil.which("nvidia-smi"):
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip():
                self.skipTest("a GPU is visible here")
        for args in ([FIXTURE_CLASS], ["--fixture"], ["--hostile"]):
            rc, text = self.run_script(
                "--bwrap", "/bin/false", "--unsafe-no-sandbox", "--out", os.path.join(self.tmp, "out"), *args
            )
            self.assertEqual(rc, 1, text)
            self.assertIn("running UNSANDBOXED", text)
            self.assertIn("no NVIDIA GPU is visible", text)
            self.assertIn("--check-only", text)
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "out")))

    def test_verify(self):
        out = os.path.join(self.tmp, "out")
        key = make_key(self.tmp)
        rc, text = self.run_script("--verify", "--out", out, "--key", key)
        self.assertEqual(rc, 1)
        self.assertIn("no history in '%s'" % out, text)
        record(os.path.join(out, "history.jsonl"), key, result("fast"), "run-a")
        rc, text = self.run_script("--verify", "--out", out, "--key", key)
        self.assertEqual(rc, 0, text)
        self.assertIn("1 record(s) verify, 0 line(s) skipped", text)
        with open(os.path.join(out, "history.jsonl"), "a") as f:
            f.write("{}\n")
        rc, text = self.run_script("--verify", "--out", out, "--key", key)
        self.assertEqual(rc, 1, text)
        self.assertIn("history.jsonl:2: skipped", text)
        os.chmod(key, 0o644)
        rc, text = self.run_script("--verify", "--out", out, "--key", key)
        self.assertEqual(rc, 1, text)
        self.assertIn("can be read by others", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
