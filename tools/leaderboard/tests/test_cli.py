"""The command line, scripts/leaderboard.sh: bad input is refused with a message before it looks
for a GPU, it refuses to run without a sandbox unless told to, and says so without a GPU."""

import os
import shutil
import subprocess
import tempfile
import unittest

from support import REPO, SCRIPT, made_class

FIXTURE_CLASS = made_class("fixture")  # any class folder, for the options around it


class Script(unittest.TestCase):
    """scripts/leaderboard.sh refuses bad input before it looks for a GPU, and refuses to run
    without a sandbox unless told to."""

    def run_script(self, *args):
        p = subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, timeout=60)
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
            (["--kernel-timeout", "x", FIXTURE_CLASS], "--kernel-timeout must be a positive number"),
            (["--build-jobs", "0", FIXTURE_CLASS], "--build-jobs must be a whole number"),
            ([FIXTURE_CLASS, FIXTURE_CLASS], "one SUBMISSIONS_DIR only"),
            (["--fixture", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--hostile", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--fixture", "--hostile"], "one class at a time"),
            (["--no-sandbox", FIXTURE_CLASS], "--no-sandbox is now --unsafe-no-sandbox"),
            (["--expect", "/nonexistent.json", FIXTURE_CLASS], "--expect: '/nonexistent.json' is not a file"),
            (["--slurm", "--gres", "gpu;rm -rf", FIXTURE_CLASS], "--gres: 'gpu;rm -rf' is not a generic resource"),
            (["--slurm", "--time", "soon", FIXTURE_CLASS], "--time: 'soon' is not a Slurm time"),
            (["--slurm", "--partition", "a b", FIXTURE_CLASS], "--partition: 'a b' is not a partition name"),
            (["--slurm", "--account", "-x", FIXTURE_CLASS], "--account: '-x' is not an account name"),
            (["--slurm", "--cpus-per-task", "0", FIXTURE_CLASS], "--cpus-per-task must be a whole number"),
            (["--rerun", "57", "--out", "/tmp"], "--rerun: '57' is not a job of an array"),
            (["--rerun"], "--rerun needs a value"),
            (["--collect", "../up"], "--collect: '../up' is not a run id"),
            (["--collect", "run-1", FIXTURE_CLASS], "give no SUBMISSIONS_DIR"),
            (["--slurm", "--collect", "run-1"], "one at a time"),
            (["--partition", "gpu", FIXTURE_CLASS], "--partition is an option of --slurm"),
            (["--wait", FIXTURE_CLASS], "--wait is an option of --slurm"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 2, text)
                self.assertIn(message, text)

    def test_the_cluster_scripts_parse_and_refuse_bad_input(self):
        for path in ("tools/leaderboard/sandbox.sh", "tools/leaderboard/slurm-job.sh", "scripts/lib/slurm-leaderboard.sh",
                     "scripts/slurm-local-cluster.sh", "tests/leaderboard/slurm-check.sh"):
            p = subprocess.run(["bash", "-n", os.path.join(REPO, path)], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, path + ": " + p.stderr)
        cluster = os.path.join(REPO, "scripts", "slurm-local-cluster.sh")
        for args, rc, message in (([], 2, "say what to do"), (["begin"], 2, "unknown command 'begin'"),
                                  (["start", "--port", "1"], 2, "unknown argument '--port'"),
                                  (["start", "--dir"], 2, "--dir needs a folder"),
                                  (["stop", "--dir", "/etc"], 1, "give a folder of its own")):
            with self.subTest(args=args):
                p = subprocess.run(["bash", cluster] + args, capture_output=True, text=True, timeout=60)
                self.assertEqual(p.returncode, rc, p.stderr)
                self.assertIn(message, p.stderr)
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        p = subprocess.run(["bash", cluster, "status", "--dir", os.path.join(tmp, "none")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not running", p.stdout)
        p = subprocess.run(["bash", os.path.join(REPO, "tools", "leaderboard", "slurm-job.sh"), tmp], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, SLURM_ARRAY_TASK_ID=""))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("this is a Slurm array job", p.stderr)

    def test_no_folder_of_the_run_inside_the_sources(self):
        for args, where in ((["--out", os.path.join(REPO, "chapters", "lb-out"), FIXTURE_CLASS], "chapters"),
                            (["--slurm", "--shared", os.path.join(REPO, "harness", "lb-shared"), FIXTURE_CLASS], "harness")):
            with self.subTest(args=args):
                rc, text = self.run_script(*args)
                self.assertEqual(rc, 1, text)
                self.assertIn("is inside the repository's %s/, which every build copies" % where, text)
                self.assertFalse(os.path.exists(args[1]), "nothing is created")

    def test_collect_of_an_unknown_run_says_which_runs_exist(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        os.makedirs(os.path.join(tmp, "cluster", "20260101-000000-abcd"))
        rc, text = self.run_script("--collect", "20260101-999999-0000", "--out", tmp)
        self.assertEqual(rc, 1, text)
        self.assertIn("no cluster run '20260101-999999-0000'", text)
        self.assertIn("20260101-000000-abcd", text)

    def test_help(self):
        rc, text = self.run_script("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: scripts/leaderboard.sh", text)
        self.assertIn("--unsafe-no-sandbox", text)
        for option in ("--slurm", "--collect RUN_ID", "--rerun JOB", "--partition", "--gres", "--account", "--time"):
            self.assertIn(option, text)

    def test_without_a_sandbox_it_refuses_to_rank(self):
        for bwrap, why in (("/nonexistent/bwrap", "is not an executable file"), ("/bin/false", "cannot start a sandbox")):
            for args in ([FIXTURE_CLASS], ["--hostile"]):
                with self.subTest(bwrap=bwrap, args=args):
                    rc, text = self.run_script("--bwrap", bwrap, *args)
                    self.assertEqual(rc, 1, text)
                    self.assertIn("refusing to rank without a sandbox", text)
                    self.assertIn(why, text)
                    self.assertIn("--unsafe-no-sandbox", text)

    def test_without_a_gpu_it_says_so(self):
        if shutil.which("nvidia-smi"):
            p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
            if p.returncode == 0 and p.stdout.strip():
                self.skipTest("a GPU is visible here")
        for args in ([FIXTURE_CLASS], ["--fixture"], ["--hostile"]):
            rc, text = self.run_script("--bwrap", "/bin/false", "--unsafe-no-sandbox", *args)
            self.assertEqual(rc, 1, text)
            self.assertIn("running UNSANDBOXED", text)
            self.assertIn("no NVIDIA GPU is visible", text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
