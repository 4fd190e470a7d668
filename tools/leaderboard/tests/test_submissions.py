"""submissions.py: reading a class's folder. Awkward folder names get safe, unique ids; only
the chapter's stub files are taken; the plan copies them, with what was ignored and the review
notes; the repository's fixture and hostile classes are planned as their expected outcomes say."""

import json
import os
import shutil
import tempfile
import unittest

from support import FIXTURE_CLASS, FIXTURE_EXPECT, HOSTILE_CLASS, HOSTILE_EXPECT, REPO
from wb_leaderboard import chapters, outcomes, submissions as S


class Names(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.tmp)
        self.subs = os.path.join(self.tmp, "subs")
        os.makedirs(self.subs)

    def student(self, raw_name, files):
        d = os.path.join(os.fsencode(self.subs), raw_name, b"ch01")
        os.makedirs(d)
        for name, text in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(text)
        return d

    def test_awkward_folder_names_get_safe_unique_ids(self):
        names = [b"name with spaces", b"..dots", b"-rf", b"--help", b"\xff\xfe bad utf8", b"tab\tand\nnewline",
                 b"$(touch pwned)", b"a;b|c&d", b"Name With Spaces", b"name_with_spaces"]
        for n in names:
            self.student(n, {b"ex1_vector_add.cu": b"// mine\n"})
        ids = [S.safe_id(n) for n in names]
        self.assertEqual(len(set(ids)), len(ids))
        for i in ids:
            self.assertRegex(i, S.SAFE_ID_RE)
        self.assertEqual(S.display_name(b"tab\tand\nnewline"), "tab\\x09and\\x0anewline")
        self.assertEqual(S.display_name(b"\xff\xfe bad utf8"), "\\xff\\xfe bad utf8")

        work = os.path.join(self.tmp, "work")
        entries, _ = S.plan(REPO, self.subs, work, ["ch01"])
        self.assertEqual(len(entries), len(names))
        for e in entries:
            self.assertRegex(e["id"], S.SAFE_ID_RE)
            self.assertEqual((e["chapter"], e["state"]), ("ch01", "build"))
            self.assertNotIn("\n", e["student"])
            self.assertNotIn("\t", e["student"])
        # Nothing was created outside the work folder, and only under entries/<safe id>.
        self.assertEqual(sorted(os.listdir(work)), ["entries"])
        self.assertEqual(sorted(os.listdir(os.path.join(work, "entries"))), sorted(ids))

    def test_only_the_chapters_stub_files_are_taken(self):
        d = self.student(b"alice", {b"ex1_vector_add.cu": b"// one\n",
                                    b"ex4_matrix_add.cu": b"void f() {\n  static int calls = 0;\n}\n",
                                    b"helper.cuh": b"// not taken\n", b"ex9.cu": b"#error never\n"})
        os.makedirs(os.path.join(d, b"ex2_vector_add_x2.cu"))  # a folder with a stub's name
        os.symlink("/etc/passwd", os.path.join(d, b"ex3_rgb_to_grey.cu"))
        with open(os.path.join(d, b"big.cu"), "wb") as f:
            f.write(b"x" * 10)
        os.symlink(d, os.path.join(os.fsencode(self.subs), b"linked-student"))
        with open(os.path.join(self.subs, "README.txt"), "w") as f:
            f.write("not a student\n")
        taken, ignored, missing = S.scan_student(os.path.join(os.fsencode(self.subs), b"alice"), "ch01",
                                                 "ch01_indexing", chapters.stub_names(REPO, "ch01_indexing"))
        self.assertEqual(sorted(taken), ["ex1_vector_add.cu", "ex4_matrix_add.cu"])
        self.assertEqual(missing, ["ex0_host_program.cu", "ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu"])
        joined = "\n".join(ignored)
        for what in ("helper.cuh", "ex9.cu", "big.cu", "ex2_vector_add_x2.cu/ (a folder)",
                     "ex3_rgb_to_grey.cu (a symbolic link)"):
            self.assertIn(what, joined)

        work = os.path.join(self.tmp, "work")
        entries, top_ignored = S.plan(REPO, self.subs, work, ["ch01"])
        self.assertEqual(len(entries), 1, "the symbolic link and the file are not students")
        self.assertEqual(top_ignored, ["README.txt", "linked-student"])
        sid = S.safe_id(b"alice")
        with open(os.path.join(work, "entries", sid, "ch01", "meta.json")) as f:
            meta = json.load(f)
        self.assertEqual(meta["taken"], ["ex1_vector_add.cu", "ex4_matrix_add.cu"])
        self.assertIn("keeps state between calls (a static variable)", meta["review"])
        self.assertEqual(sorted(os.listdir(os.path.join(work, "entries", sid, "ch01", "submission"))),
                         ["ex1_vector_add.cu", "ex4_matrix_add.cu"])

    def test_the_chapters_submitted(self):
        self.student(b"alice", {b"ex1_vector_add.cu": b"// one\n"})
        os.makedirs(os.path.join(self.subs, "bob", "ch03_coarsening"))
        os.makedirs(os.path.join(self.subs, "carol", "chapter1"))
        self.assertEqual(S.submitted_chapters(REPO, self.subs), ["ch01", "ch03"])


class TheClasses(unittest.TestCase):
    """The repository's fixture and hostile classes are planned as their expected outcomes say."""

    def test_the_fixture_class_is_planned_as_expected(self):
        dirs = chapters.chapter_dirs(REPO)
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        stubs = chapters.stub_names(REPO, dirs["ch01"])
        for entry in os.scandir(os.fsencode(FIXTURE_CLASS)):
            taken, ignored, missing = S.scan_student(entry.path, "ch01", dirs["ch01"], stubs)
            if entry.name == b"-dash ..dots":
                self.assertEqual((taken, missing), ({}, stubs))
                self.assertEqual(len(ignored), 2)
            elif taken is None:  # a student of the later chapters only
                self.assertNotIn(entry.name.decode(), expected["ch01"]["reasons"])
                self.assertNotIn(entry.name.decode(), expected["ch01"]["ranked"])
            else:
                self.assertEqual(sorted(taken), stubs, entry.name)

    def test_the_fixture_class_covers_every_chapter(self):
        """Chapters 1 to 9 each have an expected outcome; every student it names with a result
        other than missing files has the chapter's folder with every stub and nothing else, and
        every student listed as missing files has no folder for that chapter."""
        dirs = chapters.chapter_dirs(REPO)
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        self.assertEqual(sorted(expected), sorted(dirs))
        students = set(os.listdir(FIXTURE_CLASS))
        for ch, want in sorted(expected.items()):
            stubs = chapters.stub_names(REPO, dirs[ch])
            with self.subTest(chapter=ch):
                self.assertIn("fast", want["ranked"])
                self.assertIn("slow", want["ranked"])
                self.assertIn(["fast", "slow"], want["faster_than"])
                self.assertIn("wrong", want["reasons"].values())
                for before, after in want["faster_than"]:
                    self.assertIn(before, want["ranked"])
                    self.assertIn(after, want["ranked"])
                for name in set(want["ranked"]) | set(want["reasons"]):
                    self.assertIn(name, students)
                    kinds = want["reasons"].get(name, "ranked")
                    for k in [kinds] if isinstance(kinds, str) else kinds:
                        self.assertTrue(k == "ranked" or k in outcomes.REASON_LABEL, k)
                    if ch == "ch01" and name == "-dash ..dots":
                        continue  # a ch01 folder without one of the chapter's files
                    path = os.path.join(os.fsencode(FIXTURE_CLASS), os.fsencode(name))
                    taken, ignored, missing = S.scan_student(path, ch, dirs[ch], stubs)
                    if kinds == "missing-files":
                        self.assertIsNone(taken, (ch, name))
                    else:
                        self.assertEqual((sorted(taken), ignored, missing), (stubs, [], []), (ch, name))
                        if ch != "ch01":  # chapter 1's class has cheats on purpose; the later ones none
                            self.assertEqual(S.review_notes([v.decode() for v in taken.values()]), [], (ch, name))

    def test_every_hostile_submission_is_taken_whole(self):
        dirs = chapters.chapter_dirs(REPO)
        stubs = chapters.stub_names(REPO, dirs["ch01"])
        names = sorted(os.listdir(HOSTILE_CLASS))
        self.assertEqual(names, ["caching", "fast", "forged-results", "hang", "history-forger", "plagiarist",
                                 "seed-thief", "slow", "stream-escape"])
        notes = {}
        for n in names:
            taken, ignored, missing = S.scan_student(os.path.join(os.fsencode(HOSTILE_CLASS), os.fsencode(n)),
                                                     "ch01", dirs["ch01"], stubs)
            self.assertEqual((sorted(taken), ignored, missing), (stubs, [], []), n)
            notes[n] = S.review_notes([v.decode() for v in taken.values()])
        self.assertIn("defines a destructor (code that can run after main)", notes["forged-results"])
        self.assertIn("runs code before or after main", notes["seed-thief"])
        self.assertIn("calls the harness's seed functions", notes["seed-thief"])
        self.assertIn("reads the environment", notes["seed-thief"])
        self.assertIn("includes a file by path or macro", notes["plagiarist"])
        self.assertIn("reads /proc", notes["history-forger"])
        self.assertIn("uses streams or callbacks of its own", notes["stream-escape"])
        self.assertEqual(notes["fast"], [])

    def test_the_hostile_expected_outcome_names_every_student(self):
        with open(HOSTILE_EXPECT) as f:
            want = json.load(f)["ch01"]
        named = set(want["ranked"]) | set(want["reasons"])
        self.assertEqual(named, set(os.listdir(HOSTILE_CLASS)))
        for kinds in want["reasons"].values():
            for k in [kinds] if isinstance(kinds, str) else kinds:
                self.assertTrue(k == "ranked" or k in outcomes.REASON_LABEL, k)


if __name__ == "__main__":
    unittest.main(verbosity=2)
