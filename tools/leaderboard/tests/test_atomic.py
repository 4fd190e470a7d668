"""atomic.py: a file or a folder is there whole or not at all, and no temporary is left."""

import json
import os
import unittest

import support  # noqa: F401  (the package's path)
from wb_leaderboard import atomic as A


class Atomic(unittest.TestCase):
    def setUp(self):
        self.tmp = support.temp_folder(self)

    def test_files(self):
        path = os.path.join(self.tmp, "a.json")
        A.write_json(path, {"b": 1, "a": [2]})
        with open(path) as f:
            self.assertEqual(f.read(), '{"a": [2], "b": 1}\n')
        A.write_text(path, "replaced")
        with open(path) as f:
            self.assertEqual(f.read(), "replaced")
        self.assertEqual(os.listdir(self.tmp), ["a.json"])

    def test_a_folder_whole_or_not_at_all(self):
        dest = os.path.join(self.tmp, "made", "logs")

        def fill(tmp):
            with open(os.path.join(tmp, "x.log"), "w") as f:
                f.write("x")

        A.publish_folder(dest, fill)
        self.assertEqual(os.listdir(dest), ["x.log"])

        def half(tmp):
            fill(tmp)
            raise OSError("disk full")

        other = os.path.join(self.tmp, "made", "other")
        with self.assertRaises(OSError):
            A.publish_folder(other, half)
        self.assertEqual(os.listdir(os.path.join(self.tmp, "made")), ["logs"])
        with self.assertRaises(OSError):
            A.publish_folder(dest, fill)  # it exists already
        self.assertEqual(json.dumps(sorted(os.listdir(os.path.join(self.tmp, "made")))), '["logs"]')


if __name__ == "__main__":
    unittest.main(verbosity=2)
