"""classes.py: the repository's fixture and hostile classes, made from the base kernels and the
table of changes. Each class is planned as its expected outcome says; the table's rules (base
sets, renames, edits found exactly once, summaries and headers) do what they say; a class is
made whole or not at all; and what is made is what the verdicts were recorded on (a fingerprint
of every file: tests/leaderboard/classes/compare.py REV checks it against an older commit's
folders file by file)."""

import json
import os
import unittest

from support import FIXTURE_EXPECT, HOSTILE_EXPECT, REPO, fingerprint, made_class, temp_folder
from wb_leaderboard import chapters, classes as K, outcomes, submissions as S

# SHA-256 over (path, bytes) of every file of each class, in path order. A change to base/ or
# changes.py that alters what a student submits changes it: check the outcome on a GPU
# (scripts/leaderboard.sh --fixture / --hostile), then write the new value here.
FINGERPRINTS = {
    "fixture": "d6dbe5be47176b2f58cad9816b86a2dcf48604362be49f8f6b841822fb3b8b22",
    "hostile": "5b97eec85b4704404561d0985125bd2ad94f5d0d072329d5654430cd004baa28",
}


class TheClasses(unittest.TestCase):
    """The classes as made: every student and chapter the expected outcomes name."""

    def test_what_is_made_is_what_was_recorded(self):
        for klass, want in FINGERPRINTS.items():
            with self.subTest(klass=klass):
                self.assertEqual(fingerprint(made_class(klass)), want)

    def test_the_fixture_class_is_planned_as_expected(self):
        fixture = made_class("fixture")
        dirs = chapters.chapter_dirs(REPO)
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        stubs = chapters.stub_names(REPO, dirs["ch01"])
        for entry in os.scandir(os.fsencode(fixture)):
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
        fixture = made_class("fixture")
        dirs = chapters.chapter_dirs(REPO)
        with open(FIXTURE_EXPECT) as f:
            expected = json.load(f)
        self.assertEqual(sorted(expected), sorted(dirs))
        students = set(os.listdir(fixture))
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
                    path = os.path.join(os.fsencode(fixture), os.fsencode(name))
                    taken, ignored, missing = S.scan_student(path, ch, dirs[ch], stubs)
                    if kinds == "missing-files":
                        self.assertIsNone(taken, (ch, name))
                    else:
                        self.assertEqual((sorted(taken), ignored, missing), (stubs, [], []), (ch, name))
                        if ch != "ch01":  # chapter 1's class has cheats on purpose; the later ones none
                            # (chapter 11 teaches streams of one's own: that note is expected there)
                            allowed = {"uses streams or callbacks of its own"} if ch == "ch11" else set()
                            notes = S.review_notes([v.decode() for v in taken.values()])
                            self.assertEqual(sorted(set(notes) - allowed), [], (ch, name))

    def test_every_hostile_submission_is_taken_whole(self):
        hostile = made_class("hostile")
        dirs = chapters.chapter_dirs(REPO)
        stubs = chapters.stub_names(REPO, dirs["ch01"])
        names = sorted(os.listdir(hostile))
        self.assertEqual(
            names,
            [
                "caching",
                "fast",
                "forged-results",
                "hang",
                "history-forger",
                "plagiarist",
                "seed-thief",
                "slow",
                "stream-escape",
            ],
        )
        notes = {}
        for n in names:
            taken, ignored, missing = S.scan_student(
                os.path.join(os.fsencode(hostile), os.fsencode(n)), "ch01", dirs["ch01"], stubs
            )
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
        self.assertEqual(named, set(os.listdir(made_class("hostile"))))
        for kinds in want["reasons"].values():
            for k in [kinds] if isinstance(kinds, str) else kinds:
                self.assertTrue(k == "ranked" or k in outcomes.REASON_LABEL, k)

    def test_every_base_kernel_is_used(self):
        table = K.load_table()
        used = set()
        for klass in table:
            for student, chs in table[klass].items():
                for ch, recipe in chs.items():
                    sets = list(recipe.get("from", [])) + list(recipe.get("take", {}).values())
                    used |= {(b, ch) for b in sets}
        base = os.path.join(K.CLASSES_DIR, "base")
        present = {(b, ch) for b in os.listdir(base) for ch in os.listdir(os.path.join(base, b))}
        self.assertEqual(present - used, set())


class Rules(unittest.TestCase):
    """The table's rules, on a small base of its own."""

    def setUp(self):
        self.tmp = temp_folder(self)
        self.base = os.path.join(self.tmp, "base")
        files = {
            ("plain", "ch01", "ex1.cu"): "// Plain, exercise 1: one add.\nint f() { return 1; }\n",
            ("plain", "ch01", "ex2.cu"): "// Plain, exercise 2.\nint g() { return 2; }\n",
            ("fast", "ch01", "ex2.cu"): '// Fixture submission "fast", exercise 2: the solution\'s step v4 ('
            + "vectors). The solution's file is compiled into this one with its namespace renamed so that the "
            "benchmark sees\n// none twice.\nint g() { return fast_ex2::g(); }\n",
        }
        for (b, ch, name), text in files.items():
            os.makedirs(os.path.join(self.base, b, ch), exist_ok=True)
            with open(os.path.join(self.base, b, ch, name), "w") as f:
                f.write(text)

    def make(self, recipe):
        return K.chapter_files(
            {"c": {"s": {"ch01": recipe}, "t": {"ch01": {"from": ["plain"]}}}}, "c", "s", "ch01", self.base
        )

    def test_later_base_sets_win_and_a_file_can_be_taken_from_another(self):
        files = self.make({"from": ["plain", "fast"]})
        self.assertIn("fast_ex2", files["ex2.cu"])
        self.assertEqual(files["ex1.cu"], "// Plain, exercise 1: one add.\nint f() { return 1; }\n")
        files = self.make({"from": ["fast"], "take": {"ex1.cu": "plain"}})
        self.assertEqual(sorted(files), ["ex1.cu", "ex2.cu"])
        self.assertEqual(self.make({"as": "c/t"}), self.make({"from": ["plain"]}))

    def test_a_rename_changes_the_name_and_namespace_and_rewraps_the_comment(self):
        text = self.make({"from": ["fast"], "rename": ["fast", "wrong-answers"]})["ex2.cu"]
        head, rest = K.split_header(text)
        self.assertEqual(rest, "int g() { return wrong_answers_ex2::g(); }\n")
        self.assertTrue(head[0].startswith('// Fixture submission "wrong-answers", exercise 2:'))
        self.assertTrue(all(len(line) <= K.WIDTH for line in head))
        self.assertEqual(
            K.unwrap_header(head),
            K.unwrap_header(K.split_header(self.make({"from": ["fast"]})["ex2.cu"])[0]).replace(
                '"fast"', '"wrong-answers"'
            ),
        )

    def test_a_summary_replaces_the_first_sentence(self):
        summary = {"ex2.cu": "Mine, exercise 2: a mistake. On purpose."}
        text = self.make({"from": ["fast"], "summary": summary})["ex2.cu"]
        self.assertEqual(
            K.unwrap_header(K.split_header(text)[0]),
            "Mine, exercise 2: a mistake. On purpose. The solution's file is compiled into this one with "
            "its namespace renamed so that the benchmark sees none twice.",
        )
        text = self.make({"from": ["plain"], "header": {"ex1.cu": "line one\n\nline two"}})["ex1.cu"]
        self.assertEqual(text, "// line one\n//\n// line two\nint f() { return 1; }\n")

    def test_each_edit_must_find_its_text_once(self):
        files = self.make({"from": ["plain"], "edit": {"ex1.cu": [["return 1", "return 0"]]}})
        self.assertIn("return 0;", files["ex1.cu"])
        for changes in ([["return 7", "x"]], [["e", "x"]]):
            with self.subTest(changes=changes), self.assertRaises(K.TableProblem):
                self.make({"from": ["plain"], "edit": {"ex1.cu": changes}})
        with self.assertRaises(K.TableProblem):
            self.make({"from": ["plain"], "edit": {"ex9.cu": []}})
        with self.assertRaises(K.TableProblem):
            self.make({"from": ["plain"], "extra": 1})
        with self.assertRaises(K.TableProblem):
            self.make({"from": ["missing-set"]})

    def test_a_class_is_made_whole_or_not_at_all(self):
        table = {
            "c": {
                "good": {"ch01": {"from": ["plain"]}},
                "bad": {"ch01": {"from": ["plain"], "edit": {"ex1.cu": [["nowhere", "x"]]}}},
            }
        }
        dest = os.path.join(self.tmp, "class")
        with self.assertRaises(K.TableProblem):
            K.make_class("c", dest, table, self.base)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["base"], "nothing is left behind")
        del table["c"]["bad"]
        K.make_class("c", dest, table, self.base)
        self.assertEqual(sorted(os.listdir(os.path.join(dest, "good", "ch01"))), ["ex1.cu", "ex2.cu"])
        with self.assertRaises(K.TableProblem):
            K.make_class("nope", os.path.join(self.tmp, "other"), table, self.base)

    def test_the_command_line(self):
        dest = os.path.join(self.tmp, "hostile")
        self.assertEqual(K.main(["hostile", dest]), 0)
        self.assertEqual(fingerprint(dest), FINGERPRINTS["hostile"])
        self.assertEqual(K.main(["hostile", dest]), 1, "an existing folder is never written into")
        self.assertEqual(K.main([]), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
