"""The class leaderboard (scripts/leaderboard.sh runs `python3 -m wb_leaderboard`;
docs/leaderboard.md), one module per role:

  cli          the command line: the options, their checks, the modes
  submissions  a class's folder: students, chapters, the files taken, the layout check, the plan
  chapters     the repository's chapters: stubs, what each builds and runs
  repository   what a build copies of the repository, its commit, a run's id
  sandbox      one step: time limit, clean environment, bubblewrap, output cap, the results pipe
  build        the repository's build of a chapter and each submission's build
  run          a run on this machine: the GPUs, the baseline, tests and benchmarks, records
  outcomes     the reasons and the harness's outcome codes
  classify     what went wrong with an entry, from what its steps left
  crosscheck   a benchmark's numbers, checked against the baseline; the score
  ncu          the Nsight Compute re-measurement
  history      the signed, append-only history
  report       the reports (markdown, CSV, JSON, the terminal)
  expect       an expected outcome compared with a run
  cluster      a run on Slurm as files: the run folder, job records, the collect
  slurm        talking to Slurm: submitting, states, waiting, collecting, reruns
  node         one job on a cluster node (started by tools/leaderboard/slurm-job.sh)
  classes      the repository's own test classes, made from base kernels and a table of changes
  atomic       writing files and folders whole or not at all

Standard library only. What a submission's programs report is read as machine-readable data
only (outcome codes, numbers, exit codes); the wording of messages is never read.
"""
