"""slurm.py: the states sacct and scontrol report (a task's own line wins over a range), the
array syntax of job ids and task lists."""

import unittest

import support  # noqa: F401  (the package's path)
from wb_leaderboard import slurm as S


class States(unittest.TestCase):
    def test_array_ranges_never_hide_a_tasks_own_line(self):
        def fake(argv):
            class P:
                returncode = 0
                stdout = ("57_0|COMPLETED|0:0|n1\n57_1|COMPLETED|0:0|n1\n57_[0-2]|CANCELLED by 0|0:0|None assigned\n"
                          if argv[0] == "sacct" else "")
            return P()
        states = S.slurm_states(["57"], runner=fake)
        self.assertEqual({k: v["state"] for k, v in states.items()},
                         {"57_0": "COMPLETED", "57_1": "COMPLETED", "57_2": "CANCELLED"})

    def test_scontrol_fills_in_what_sacct_does_not_know(self):
        def fake(argv):
            class P:
                returncode = 1 if argv[0] == "sacct" else 0
                stdout = "" if argv[0] == "sacct" else (
                    "JobId=9 ArrayJobId=57 ArrayTaskId=3 JobState=RUNNING ExitCode=0:0 NodeList=n2\n")
            return P()
        self.assertEqual(S.slurm_states(["57"], runner=fake), {"57_3": {"state": "RUNNING", "exit": "0:0",
                                                                       "node": "n2"}})
        self.assertEqual(S.slurm_states([], runner=fake), {})

    def test_ids_and_task_lists(self):
        self.assertEqual(S.expand_array_ids("57_[2-4,7%2]"), ["57_2", "57_3", "57_4", "57_7"])
        self.assertEqual(S.expand_array_ids("57_3"), ["57_3"])
        self.assertEqual(S.expand_array_ids("57"), [])
        self.assertEqual(S.parse_task_list("0-3,7"), [0, 1, 2, 3, 7])
        self.assertEqual(S.parse_task_list("3-1"), [])
        self.assertEqual(S.parse_task_list("a"), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
