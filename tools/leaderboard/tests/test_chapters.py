"""chapters.py: the repository's chapters, their stubs, whether each can be ranked, and what
each builds and runs (chNN_bench unless the chapter's leaderboard.json says otherwise)."""

import os
import shutil
import tempfile
import unittest

from support import REPO, decoder_text
from wb_leaderboard import chapters as C


class Chapters(unittest.TestCase):
    def test_the_repositorys_chapters_and_stubs(self):
        dirs = C.chapter_dirs(REPO)
        self.assertEqual(dirs["ch01"], "ch01_indexing")
        self.assertEqual(
            C.stub_names(REPO, dirs["ch01"]),
            [
                "ex0_host_program.cu",
                "ex1_vector_add.cu",
                "ex2_vector_add_x2.cu",
                "ex3_rgb_to_grey.cu",
                "ex4_matrix_add.cu",
            ],
        )
        self.assertTrue(C.chapter_ready(REPO, "ch01"))

    def test_a_chapter_without_its_tests_cannot_be_ranked(self):
        repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, repo)
        for name in ("ch01_new", "ch02_old", "ch03_half"):
            os.makedirs(os.path.join(repo, "chapters", name))
        open(os.path.join(repo, "chapters", "ch02_old", "tests.cu"), "w").close()
        open(os.path.join(repo, "chapters", "ch02_old", "bench.cu"), "w").close()
        open(os.path.join(repo, "chapters", "ch03_half", "tests.cu"), "w").close()
        self.assertEqual([C.chapter_ready(repo, ch) for ch in ("ch01", "ch02", "ch03")], [False, True, False])

    def test_commands_are_expanded_word_by_word(self):
        words = C.default_runner("ch01")["bench"]
        self.assertEqual(
            C.expand_command(words, "/b in", "/dev/fd/3", "/d"),
            ["/b in/ch01_bench", "--impl=student,reference", "--json=/dev/fd/3"],
        )


class ChapterRunner(unittest.TestCase):
    """What a chapter builds and runs: chNN_bench unless its folder's leaderboard.json says."""

    def setUp(self):
        self.repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.repo)
        for name in ("ch01_indexing", "ch09_transformer"):
            os.makedirs(os.path.join(self.repo, "chapters", name))

    def runner_file(self, text):
        with open(os.path.join(self.repo, "chapters", "ch09_transformer", "leaderboard.json"), "w") as f:
            f.write(text)

    def test_default_is_the_chapters_benchmark(self):
        r = C.chapter_runner(self.repo, "ch01")
        self.assertEqual(r["build"], ["ch01_tests", "ch01_bench"])
        self.assertEqual(r["prepare"], [])
        self.assertEqual(r["bench"], ["{bin}/ch01_bench", "--impl=student,reference", "--json={json}"])
        self.assertEqual(r["baseline"][1], "--impl=reference")

    def test_a_chapter_file_names_its_programs(self):
        self.runner_file(decoder_text("leaderboard.json"))
        r = C.chapter_runner(self.repo, "ch09")
        self.assertEqual(r["build"], ["ch09_tests", "gpt2", "gpt2_random_weights"])
        self.assertEqual(r["prepare"][0], "{bin}/gpt2_random_weights")
        self.assertIn("--json={json}", r["bench"])

    def test_the_repositorys_chapter_9_file_is_the_one_tested(self):
        with open(os.path.join(REPO, "chapters", "ch09_gpt2", "leaderboard.json")) as f:
            self.assertEqual(f.read(), decoder_text("leaderboard.json"))

    def test_a_bad_chapter_file_is_refused_by_name(self):
        cases = [
            ("{not json", "not readable JSON"),
            ("[1]", "must be a JSON object"),
            ('{"bench": "x"}', "must be a list"),
            ('{"benchmark": []}', "unknown key 'benchmark'"),
            ('{"build": ["gpt2"]}', "must start with ch09_tests"),
            ('{"build": ["ch09_tests", "a;b"]}', "is not a build target name"),
            ('{"bench": ["/bin/sh", "--json={json}"]}', "must run a program of the build"),
            ('{"bench": ["{bin}/gpt2"]}', "writes its results to {json}"),
            ('{"bench": ["{bin}/gpt2", "--out={home}"]}', "uses {home}"),
        ]
        for text, words in cases:
            with self.subTest(text=text):
                self.runner_file(text)
                with self.assertRaises(ValueError) as e:
                    C.chapter_runner(self.repo, "ch09")
                self.assertIn("chapters/ch09_transformer/leaderboard.json", str(e.exception))
                self.assertIn(words, str(e.exception))

    def test_an_unknown_chapter(self):
        with self.assertRaises(ValueError):
            C.chapter_runner(self.repo, "ch05")


if __name__ == "__main__":
    unittest.main(verbosity=2)
