"""submissions.py: reading a class's folder. Awkward folder names get safe, unique ids; only
the chapter's stub files are taken; the plan copies them, with what was ignored and the review
notes; the repository's fixture and hostile classes are planned as their expected outcomes say."""

import json
import os
import unittest

from support import REPO, temp_folder
from wb_leaderboard import chapters, submissions as S


class Names(unittest.TestCase):
    def setUp(self):
        self.tmp = temp_folder(self)
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
        names = [
            b"name with spaces",
            b"..dots",
            b"-rf",
            b"--help",
            b"\xff\xfe bad utf8",
            b"tab\tand\nnewline",
            b"$(touch pwned)",
            b"a;b|c&d",
            b"Name With Spaces",
            b"name_with_spaces",
        ]
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
        d = self.student(
            b"alice",
            {
                b"ex1_vector_add.cu": b"// one\n",
                b"ex4_matrix_add.cu": b"void f() {\n  static int calls = 0;\n}\n",
                b"helper.cuh": b"// not taken\n",
                b"ex9.cu": b"#error never\n",
            },
        )
        os.makedirs(os.path.join(d, b"ex2_vector_add_x2.cu"))  # a folder with a stub's name
        os.symlink("/etc/passwd", os.path.join(d, b"ex3_rgb_to_grey.cu"))
        with open(os.path.join(d, b"big.cu"), "wb") as f:
            f.write(b"x" * 10)
        os.symlink(d, os.path.join(os.fsencode(self.subs), b"linked-student"))
        with open(os.path.join(self.subs, "README.txt"), "w") as f:
            f.write("not a student\n")
        taken, ignored, missing = S.scan_student(
            os.path.join(os.fsencode(self.subs), b"alice"),
            "ch01",
            "ch01_indexing",
            chapters.stub_names(REPO, "ch01_indexing"),
        )
        self.assertEqual(sorted(taken), ["ex1_vector_add.cu", "ex4_matrix_add.cu"])
        self.assertEqual(missing, ["ex0_host_program.cu", "ex2_vector_add_x2.cu", "ex3_rgb_to_grey.cu"])
        joined = "\n".join(ignored)
        for what in (
            "helper.cuh",
            "ex9.cu",
            "big.cu",
            "ex2_vector_add_x2.cu/ (a folder)",
            "ex3_rgb_to_grey.cu (a symbolic link)",
        ):
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
        self.assertEqual(
            sorted(os.listdir(os.path.join(work, "entries", sid, "ch01", "submission"))),
            ["ex1_vector_add.cu", "ex4_matrix_add.cu"],
        )

    def test_the_chapters_submitted(self):
        self.student(b"alice", {b"ex1_vector_add.cu": b"// one\n"})
        os.makedirs(os.path.join(self.subs, "bob", "ch03_coarsening"))
        os.makedirs(os.path.join(self.subs, "carol", "chapter1"))
        self.assertEqual(S.submitted_chapters(REPO, self.subs), ["ch01", "ch03"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
