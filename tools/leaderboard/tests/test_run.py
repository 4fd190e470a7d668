"""run.py: a whole run on this machine, end to end, with a toolchain that plays the GPU machine
(support.fake_toolchain): the builds (one that does not compile), the baseline, the tests and
benchmarks through the sandbox and the results pipe (a crash, a hang, wrong answers, stale
output, a forged second document), the signed history, the reports and the expected outcome;
and nothing left behind but the output folder."""

import json
import os
import signal
import subprocess
import unittest

from support import SCRIPT, captured, fake_class, fake_machine
from wb_leaderboard import cli, history
from wb_leaderboard.sandbox import Sandbox

STUDENTS = {
    "fast": None,
    "slow": "slow",
    "wrong": "wrong",
    "crashing": "crash",
    "hanging": "hang",
    "not-compiling": "compile-error",
    "caching": "cached",
    "forger": "forge",
    "no-files": "",
}
EXPECTED = {
    "ch01": {
        "ranked": ["fast", "slow"],
        "faster_than": [["fast", "slow"]],
        "reasons": {
            "wrong": "wrong",
            "crashing": "faulted",
            "hanging": "hung",
            "not-compiling": "build-failed",
            "caching": "stale-output",
            "forger": "implausible",
            "no-files": "missing-files",
        },
    }
}


def read_cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


class LocalRun(unittest.TestCase):
    def setUp(self):
        fake_machine(self)
        self.subs = fake_class(os.path.join(self.tmp, "class"), STUDENTS)
        self.out = os.path.join(self.tmp, "out")
        self.expect = os.path.join(self.tmp, "expected.json")
        with open(self.expect, "w") as f:
            json.dump(EXPECTED, f)

    def leaderboard(self, *args):
        rc, out, err = captured(
            cli.main, ["--key", self.key, "--out", self.out, "--timeout", "60", "--no-ncu"] + list(args)
        )
        return rc, out + err

    def check_run(self, sandbox_args, sandbox):
        rc, text = self.leaderboard(*sandbox_args, "--expect", self.expect, self.subs)
        self.assertEqual(rc, 0, text)
        self.assertIn("expected outcome (expected.json): as expected", text)
        self.assertIn("[build 0] ch01 not-compiling: did not build", text)
        records = history.load_history(os.path.join(self.out, "history.jsonl"), history.load_key(self.key))
        self.assertEqual(sorted(r["student"] for r in records), sorted(STUDENTS))
        by_name = {r["student"]: r for r in records}
        self.assertEqual({r["sandbox"] for r in records}, {sandbox})
        self.assertEqual(by_name["fast"]["gpu"], {"name": "Fake GPU 80GB", "uuid": "GPU-00000000-fake"})
        self.assertEqual(by_name["fast"]["seed"], {"tests": 4242, "bench": 4343})
        self.assertAlmostEqual(by_name["fast"]["score"]["geomean_vs_reference"], 1 / 0.9)
        with open(os.path.join(self.subs, "not-compiling", "ch01", "ex1_vector_add.cu")) as f:
            last = len(f.readlines())
        self.assertEqual(
            by_name["not-compiling"]["reasons"][0]["detail"],
            'ex1_vector_add.cu:%d: error: identifier "offset" is undefined' % last,
        )
        self.assertIn("written to again", by_name["forger"]["reasons"][0]["detail"])
        logs = os.path.join(self.out, by_name["fast"]["logs"])
        self.assertEqual(
            sorted(os.listdir(logs)),
            ["bench.json", "bench.log", "build.log", "meta.json", "steps.tsv", "tests.json", "tests.log"],
        )
        for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.json"):
            self.assertTrue(os.path.isfile(os.path.join(self.out, name)))
        self.assertEqual(os.listdir(self.work_parent), [], "the work folder is removed")
        return records

    def test_a_run_unsandboxed(self):
        rc, text = self.leaderboard("--bwrap", "/bin/false", self.subs)
        self.assertEqual(rc, 1)
        self.assertIn("refusing to rank without a sandbox", text)
        self.assertFalse(os.path.exists(self.out), "a refused run makes no output folder")
        self.check_run(["--bwrap", "/bin/false", "--unsafe-no-sandbox"], "none")
        with open(os.path.join(self.out, "leaderboard.md")) as f:
            self.assertIn("UNSANDBOXED", f.read())

    def test_a_run_in_the_sandbox(self):
        if Sandbox().kind != "bubblewrap":
            self.skipTest("bubblewrap cannot start a sandbox here")
        if self.bin.startswith("/tmp/"):
            self.skipTest("no folder outside /tmp for the toolchain (/var/tmp is not writable)")
        records = self.check_run([], "bubblewrap")
        # A second run adds to the history and keeps the first.
        rc, text = self.leaderboard("--chapter", "ch01", "--expect", self.expect, self.subs)
        self.assertEqual(rc, 0, text)
        again = history.load_history(os.path.join(self.out, "history.jsonl"), history.load_key(self.key))
        self.assertEqual(again[: len(records)], records)
        self.assertEqual(len(again), 2 * len(records))

    def test_an_interrupted_run_stops_its_steps_and_keeps_what_it_recorded(self):
        subs = fake_class(os.path.join(self.tmp, "class2"), {"fast": None, "sleepy": "sleep"})
        seen = []
        argv = [
            "bash",
            SCRIPT,
            "--key",
            self.key,
            "--out",
            self.out,
            "--no-ncu",
            "--bwrap",
            "/bin/false",
            "--unsafe-no-sandbox",
            subs,
        ]
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
            for line in p.stdout:
                seen.append(line)
                if "ch01 sleepy: tests ..." in line:
                    p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
        text = "".join(seen)
        self.assertEqual(p.returncode, 130, text)
        self.assertIn("interrupted; the submissions in flight were stopped", text)
        records = history.load_history(os.path.join(self.out, "history.jsonl"), history.load_key(self.key))
        self.assertEqual([r["student"] for r in records], ["fast"])
        self.assertEqual(os.listdir(self.work_parent), [], "the work folder is removed")
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and self.work_parent in read_cmdline(pid)]
        self.assertEqual(left, [], "no step is left running")

    def test_without_a_gpu_nothing_is_made(self):
        with open(os.path.join(self.bin, "nvidia-smi"), "w") as f:
            f.write("#!/bin/sh\nexit 9\n")
        rc, text = self.leaderboard("--bwrap", "/bin/false", "--unsafe-no-sandbox", self.subs)
        self.assertEqual(rc, 1)
        self.assertIn("no NVIDIA GPU is visible", text)
        self.assertFalse(os.path.exists(self.out))
        self.assertEqual(os.listdir(self.work_parent), [])
        self.assertEqual(sorted(os.listdir(os.path.dirname(self.key))), ["leaderboard.key"])

    def test_a_repository_that_does_not_build_ranks_nothing(self):
        with open(os.path.join(self.bin, "cmake"), "w") as f:
            f.write("#!/bin/sh\necho 'CMake Error: no compiler'\nexit 1\n")
        rc, text = self.leaderboard("--bwrap", "/bin/false", "--unsafe-no-sandbox", "--keep-work", self.subs)
        self.assertEqual(rc, 1)
        self.assertIn("the repository's own ch01 does not build", text)
        self.assertIn("CMake Error: no compiler", text)
        self.assertFalse(os.path.exists(self.out), "nothing was recorded: no output folder")
        self.assertEqual(len(os.listdir(self.work_parent)), 1, "--keep-work keeps the work folder and its logs")


if __name__ == "__main__":
    unittest.main(verbosity=2)
