"""The class leaderboard (scripts/leaderboard.sh; docs/leaderboard.md), one module per role
(tools/leaderboard/leaderboard.py: the sub-commands the scripts call):

  submissions  a class's folder: students, chapters, the files taken, the plan
  chapters     the repository's chapters: stubs, what each builds and runs
  outcomes     the reasons and the harness's outcome codes
  classify     what went wrong with an entry, from what its steps left
  crosscheck   a benchmark's numbers, checked against the baseline; the score
  ncu          the Nsight Compute re-measurement
  history      the signed, append-only history
  report       the reports (markdown, CSV, JSON, the terminal)
  expect       an expected outcome compared with a run
  cluster      a run on Slurm as files: the run folder, job records, the collect
  slurm        talking to Slurm: job states, array ids
  classes      the repository's own test classes, made from base kernels and a table of changes
  atomic       writing files and folders whole or not at all

Standard library only. What a submission's programs report is read as machine-readable data
only (outcome codes, numbers, exit codes); the wording of messages is never read.
"""
