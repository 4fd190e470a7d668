"""wb_leaderboard.gpus: the GPUs nvidia-smi lists, and those --gpus picks (a stand-in
nvidia-smi plays the machine; no GPU needed)."""

import os
import stat
import tempfile
import unittest
from unittest import mock

from support import REPO  # noqa: F401  (puts the package on the path)
from wb_leaderboard import gpus as G
from wb_leaderboard.repository import Refused


def fake_nvidia_smi(folder, lines, rc=0):
    path = os.path.join(folder, "nvidia-smi")
    with open(path, "w") as f:
        # echo is the shell's own: the test's PATH holds this folder alone
        f.write("#!/bin/sh\n%s\nexit %d\n" % ("\n".join("echo '%s'" % line for line in lines), rc))
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


class Gpus(unittest.TestCase):
    def test_gpus_are_picked_by_index_or_uuid(self):
        gpus = [("0", "GPU-a", "90", "H100"), ("1", "GPU-b", "80", "A100")]
        self.assertEqual(G.pick_gpus(gpus, ""), gpus)
        self.assertEqual(G.pick_gpus(gpus, "1"), [gpus[1]])
        self.assertEqual(G.pick_gpus(gpus, "GPU-a, 1"), gpus)
        with self.assertRaises(Refused) as e:
            G.pick_gpus(gpus, "2")
        self.assertIn("nvidia-smi lists: 0 1", str(e.exception))

    def test_the_list_is_read_from_nvidia_smi(self):
        with tempfile.TemporaryDirectory() as d:
            fake_nvidia_smi(d, ["0, GPU-a, 9.0, NVIDIA H100 80GB HBM3", "1, GPU-b, 8.0, NVIDIA A100, PCIe", "junk"])
            with mock.patch.dict(os.environ, {"PATH": d}):
                self.assertEqual(
                    G.list_gpus(),
                    [("0", "GPU-a", "90", "NVIDIA H100 80GB HBM3"), ("1", "GPU-b", "80", "NVIDIA A100, PCIe")],
                )

    def test_no_nvidia_smi_or_a_failing_one_means_no_gpus(self):
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.dict(os.environ, {"PATH": d}):
                self.assertEqual(G.list_gpus(), [])
            fake_nvidia_smi(d, ["0, GPU-a, 9.0, H100"], rc=9)
            with mock.patch.dict(os.environ, {"PATH": d}):
                self.assertEqual(G.list_gpus(), [])


if __name__ == "__main__":
    unittest.main()
