"""sandbox.py: one step under a time limit, with a clean environment, its output capped and its
results through file descriptor 3; in bubblewrap (where it can start here) the step sees the
hidden folders empty, the system read-only and writes only its own folder."""

import os
import shutil
import tempfile
import unittest
from unittest import mock

import support  # noqa: F401  (the package's path)
from wb_leaderboard import sandbox as S


class Steps(unittest.TestCase):
    def setUp(self):
        self.tmp = support.temp_folder(self)
        self.rw = os.path.join(self.tmp, "rw")
        self.log, self.results = os.path.join(self.tmp, "log"), os.path.join(self.tmp, "results")
        self.box = S.Sandbox("/nonexistent/bwrap")

    def step(self, script, limit=20, box=None, **kw):
        rc = S.run_step(box or self.box, ["bash", "-c", script], self.log, limit, self.rw, **kw)
        with open(self.log) as f:
            return rc, f.read()

    def test_a_sandbox_that_cannot_start_is_said_why(self):
        self.assertEqual(
            (self.box.kind, self.box.problem), ("none", "--bwrap: '/nonexistent/bwrap' is not an " "executable file")
        )
        box = S.Sandbox("/bin/false")
        self.assertEqual(box.kind, "none")
        self.assertIn("cannot start a sandbox here", box.problem)

    def test_the_command_line_of_a_step(self):
        argv = self.box.argv(["prog", "--x"], 30, self.rw, env=["A=1"])
        self.assertEqual(argv[:6], ["timeout", "-k", "10", "30", "env", "-i"])
        self.assertIn("--chdir=" + self.rw, argv)
        self.assertIn("HOME=%s/home" % self.rw, argv)
        self.assertIn("TMPDIR=%s/tmp" % self.rw, argv)
        self.assertLess(argv.index("A=1"), argv.index("prog"))
        self.assertEqual(argv[-2:], ["prog", "--x"])

    def test_the_secret_places_of_the_home_are_hidden(self):
        home = os.path.join(self.tmp, "home")
        os.makedirs(os.path.join(home, ".ssh"))
        open(os.path.join(home, ".netrc"), "w").close()
        with mock.patch.dict(os.environ, {"HOME": home}):
            self.box.hide([self.tmp, os.path.join(self.tmp, "not-there")])
        self.assertEqual(
            self.box.hidden,
            [
                "--tmpfs",
                self.tmp,
                "--tmpfs",
                os.path.join(home, ".ssh"),
                "--ro-bind",
                "/dev/null",
                os.path.join(home, ".netrc"),
            ],
        )

    def test_output_exit_code_environment_and_results(self):
        rc, log = self.step(
            'echo out; echo err >&2; echo "{\\"a\\": 1}" >&3; pwd; ' 'echo "HOME=$HOME SECRET=${SECRET:-}"; exit 3',
            env=["X=1"],
            results_path=self.results,
        )
        self.assertEqual(rc, 3)
        self.assertEqual(log.splitlines(), ["out", "err", self.rw, "HOME=%s/home SECRET=" % self.rw])
        with open(self.results) as f:
            self.assertEqual(f.read(), '{"a": 1}\n')

    def test_the_time_limit_and_signals(self):
        self.assertEqual(self.step("sleep 30", limit=1)[0], 124)
        self.assertEqual(self.step("kill -SEGV $$")[0], 139)

    def test_output_is_capped(self):
        with mock.patch.object(S, "LOG_LIMIT", 1000):
            rc, log = self.step(
                "yes 0123456789 | head -c 100000 >&3; yes abc | head -c 100000", results_path=self.results
            )
        self.assertEqual(len(log), 1000)
        self.assertEqual(os.path.getsize(self.results), 1000)

    def test_no_step_starts_once_the_run_is_stopped(self):
        with mock.patch.object(S, "_stopped", [True]):
            self.assertEqual(S.run_step(self.box, ["true"], self.log, 5, self.rw), 130)

    def test_in_bubblewrap_a_step_sees_little_and_writes_less(self):
        box = S.Sandbox()
        if box.kind != "bubblewrap":
            self.skipTest("bubblewrap cannot start a sandbox here: %s" % box.problem)
        # Outside /tmp, which every step gets a private one of anyway.
        secret = tempfile.mkdtemp(dir="/var/tmp" if os.access("/var/tmp", os.W_OK) else None)
        self.addCleanup(shutil.rmtree, secret)
        with open(os.path.join(secret, "key"), "w") as f:
            f.write("k")
        ro = os.path.join(self.tmp, "ro")
        os.makedirs(ro)
        box.hide([secret])
        rc, log = self.step(
            "test -d %s && ls -A %s | wc -l; touch %s/x 2>/dev/null || echo ro-refused; "
            "touch $HOME/ok && echo home-ok; touch /usr/x 2>/dev/null || echo system-refused; "
            "echo >&3 done" % (secret, secret, ro),
            box=box,
            ro=[ro],
            results_path=self.results,
        )
        self.assertEqual(rc, 0, log)
        self.assertEqual(log.split(), ["0", "ro-refused", "home-ok", "system-refused"])
        with open(self.results) as f:
            self.assertEqual(f.read(), "done\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
