"""build.py: the repository's own build of a chapter (its log when it fails), and a submission's
build in a copy of that tree: its files over the stubs and nothing else, the old programs gone,
the new ones kept with the entry, the step in steps.tsv (with support.fake_toolchain's cmake)."""

import os
import unittest

from support import REPO, fake_class, fake_machine
from wb_leaderboard import build as B, submissions
from wb_leaderboard.classify import read_steps
from wb_leaderboard.sandbox import Sandbox


class Builds(unittest.TestCase):
    def setUp(self):
        fake_machine(self)
        self.src = os.path.join(self.tmp, "tree", "src")
        os.makedirs(os.path.join(self.src, "chapters"))
        B.copy_tree(os.path.join(REPO, "chapters", "ch01_indexing"), os.path.join(self.src, "chapters"))
        self.build = os.path.join(self.tmp, "tree", "build")
        self.log = os.path.join(self.tmp, "base.log")
        self.box = Sandbox("/nonexistent")

    def repository_build(self):
        return B.repository_build(
            self.src, self.build, "ch01", ["ch01_tests", "ch01_bench"], [], "c0ffee", 2, self.log, self.tmp
        )

    def entry(self, name, marker):
        subs = fake_class(os.path.join(self.tmp, "class-" + name), {name: marker})
        entries, _ = submissions.plan(REPO, subs, os.path.join(self.tmp, "work-" + name), ["ch01"])
        return os.path.join(self.tmp, "work-" + name, "entries", entries[0]["id"], "ch01")

    def test_the_repository_build(self):
        self.assertTrue(self.repository_build())
        self.assertEqual(
            sorted(os.listdir(os.path.join(self.build, "bin"))), ["ch01_bench", "ch01_tests", "devicequery"]
        )
        with open(os.path.join(self.src, "chapters", "ch01_indexing", "ex1_vector_add.cu"), "a") as f:
            f.write("// FAKE: compile-error\n")
        self.assertFalse(self.repository_build())
        with open(self.log) as f:
            self.assertIn('error: identifier "offset" is undefined', f.read())

    def test_a_submissions_build(self):
        self.assertTrue(self.repository_build())
        tree = os.path.dirname(self.src)
        entry = self.entry("alice", "slow")
        rc = B.student_build(self.box, tree, entry, "ch01_indexing", ["ch01_tests", "ch01_bench"], 2, 30)
        self.assertEqual(rc, 0)
        with open(os.path.join(self.src, "chapters", "ch01_indexing", "ex1_vector_add.cu")) as f:
            self.assertIn("FAKE: slow", f.read(), "the student's file is over the stub")
        self.assertEqual(sorted(os.listdir(os.path.join(entry, "bin"))), ["ch01_bench", "ch01_tests"])
        self.assertEqual(read_steps(entry)["build"]["rc"], 0)

        broken = self.entry("bob", "compile-error")
        rc = B.student_build(self.box, tree, broken, "ch01_indexing", ["ch01_tests", "ch01_bench"], 2, 30)
        self.assertEqual(rc, 1)
        self.assertFalse(os.path.exists(os.path.join(self.build, "bin", "ch01_tests")), "no program of before is kept")
        self.assertFalse(os.path.exists(os.path.join(broken, "bin")))
        self.assertEqual(read_steps(broken)["build"]["rc"], 1)
        with open(os.path.join(broken, "build.log")) as f:
            self.assertIn("error:", f.read())

    def test_a_program_the_build_did_not_make_fails_the_build(self):
        self.assertTrue(self.repository_build())
        entry = self.entry("carol", None)
        rc = B.student_build(
            self.box,
            os.path.dirname(self.src),
            entry,
            "ch01_indexing",
            ["ch01_tests", "ch01_bench"],
            2,
            30,
            env=["X=1"],
        )
        self.assertEqual(rc, 0)
        with open(os.path.join(self.bin, "cmake"), "a") as f:
            f.write("os.remove(os.path.join(build, 'bin', 'ch01_bench'))\n")
        rc = B.student_build(
            self.box, os.path.dirname(self.src), entry, "ch01_indexing", ["ch01_tests", "ch01_bench"], 2, 30
        )
        self.assertEqual(rc, 1)

    def test_trees_are_copied_with_their_times_and_removed_when_read_only(self):
        self.assertTrue(self.repository_build())
        copy = os.path.join(self.tmp, "copy")
        B.copy_tree(os.path.dirname(self.src), copy)
        a, b = (os.path.join(p, "build", "fake.json") for p in (os.path.dirname(self.src), copy))
        self.assertEqual(os.stat(a).st_mtime_ns, os.stat(b).st_mtime_ns)
        os.chmod(os.path.join(copy, "build"), 0o500)
        B.remove_tree(copy)
        self.assertFalse(os.path.exists(copy))


if __name__ == "__main__":
    unittest.main(verbosity=2)
