"""repository.py: what a build copies of the repository (never the history, build folders,
tests, book, hidden items, or a folder holding the run's own folders), the refusal of a run
folder inside the sources, the commit and a run's id."""

import os
import re
import shutil
import tempfile
import unittest

from support import REPO
from wb_leaderboard import repository as P


class Repository(unittest.TestCase):
    def setUp(self):
        self.repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.repo)
        for d in ("chapters", "harness", "build", "build-debug", "results", "tests", "docs", ".git", "tools"):
            os.makedirs(os.path.join(self.repo, d))
        open(os.path.join(self.repo, "CMakeLists.txt"), "w").close()

    def test_what_a_build_copies(self):
        self.assertEqual(P.copied_items(self.repo), ["CMakeLists.txt", "chapters", "harness", "tools"])
        subs = os.path.join(self.repo, "tools", "class")
        self.assertEqual(P.source_items(self.repo, [subs, None]), ["CMakeLists.txt", "chapters", "harness"])

    def test_no_run_folder_inside_the_sources(self):
        P.sources_guard(self.repo, [os.path.join(self.repo, "results", "x"), os.path.join(self.repo, "build"), None])
        with self.assertRaises(P.Refused) as e:
            P.sources_guard(self.repo, [os.path.join(self.repo, "harness", "out")])
        self.assertIn("inside the repository's harness/", str(e.exception))
        self.assertTrue(P.inside(os.path.join(self.repo, "a"), self.repo))
        self.assertFalse(P.inside(self.repo + "-other", self.repo))

    def test_commit_and_run_id(self):
        self.assertEqual(P.commit_of(self.repo), "unknown")
        self.assertRegex(P.commit_of(REPO), r"^([0-9a-f]{12}|unknown)$")
        self.assertTrue(re.match(r"^\d{8}-\d{6}-[0-9a-f]{4}$", P.new_run_id()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
