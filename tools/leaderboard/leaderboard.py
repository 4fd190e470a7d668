#!/usr/bin/env python3
"""The sub-commands scripts/leaderboard.sh calls; the work is done by the package
wb_leaderboard (tools/leaderboard/wb_leaderboard/), one module per role.

  leaderboard.py chapters   --repo R --submissions S [--chapter chNN ...]
  leaderboard.py plan       --repo R --submissions S --work W --chapter chNN [...]
  leaderboard.py runner     --repo R --chapter chNN   what to build and run for a chapter
  leaderboard.py ncu-target --entry DIR            the benchmark row to re-measure with ncu (its selection arguments)
  leaderboard.py record     --history H --key K --entry DIR [--trusted FILE --run-id ID ...]
  leaderboard.py report     --history H --key K --out DIR [--run-id ID] [--quiet]
  leaderboard.py check      --history H --key K --run-id ID --expect FILE
  leaderboard.py verify     --history H --key K    every line of the history, checked
  leaderboard.py run-file | add-job | jobs | job-record | collect ...   a run on a Slurm cluster
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from wb_leaderboard import chapters, cluster, expect, history, ncu, report, slurm, submissions  # noqa: E402


def fail(message, rc=2):
    print("leaderboard: %s" % message, file=sys.stderr)
    return rc


def key_or_none(path, create=False):
    try:
        return history.load_key(path, create=create), None
    except history.KeyProblem as e:
        return None, fail(e)


def cmd_chapters(args):
    known = chapters.chapter_dirs(args.repo)
    if args.chapter:
        for ch in args.chapter:
            if ch not in known:
                print("unknown chapter '%s' (chapters present: %s)" % (ch, " ".join(known)), file=sys.stderr)
                return 2
        print(" ".join(args.chapter))
        return 0
    print(" ".join(submissions.submitted_chapters(args.repo, args.submissions)))
    return 0


def cmd_plan(args):
    entries, top_ignored = submissions.plan(args.repo, args.submissions, args.work, args.chapter)
    for name in top_ignored:
        print("note: ignored %s in the submissions folder (not a folder)" % name, file=sys.stderr)
    print("\n".join("%s\t%s\t%s\t%s" % (e["id"], e["chapter"], e["state"], e["student"]) for e in entries))
    return 0


def cmd_runner(args):
    try:
        runner = chapters.chapter_runner(args.repo, args.chapter)
    except ValueError as e:
        return fail(e)
    for k in chapters.RUNNER_KEYS:
        print("\t".join([k] + runner[k]))
    return 0


def cmd_ncu_target(args):
    selection = ncu.ncu_selection(args.entry)
    if selection is None:
        return 1
    print("\n".join(selection))
    return 0


def cmd_record(args):
    key, rc = key_or_none(args.key, create=True)
    if key is None:
        return rc
    try:
        print(history.record_entry(args.history, key, args.entry, args.run_id, args.gpu_name, args.gpu_uuid,
                                   args.sandbox, args.commit, args.logs, history.read_trusted(args.trusted)))
    except ValueError as e:
        return fail(e)
    return 0


def cmd_verify(args):
    key, rc = key_or_none(args.key)
    if key is None:
        return rc
    return 0 if history.verify(args.history, key) else 1


def cmd_report(args):
    key, rc = key_or_none(args.key)
    if key is None:
        return rc
    report.write_reports(args.history, key, args.out, args.run_id, args.quiet)
    return 0


def cmd_check(args):
    key, rc = key_or_none(args.key)
    if key is None:
        return rc
    return 0 if expect.check(args.history, key, args.run_id, args.expect, args.chapter) else 1


def cmd_job_record(args):
    try:
        cluster.write_job_record(args.entry, args.out, args.run_id, args.task, args.job_id, args.student_id,
                                 args.chapter, args.node, args.gpu_name, args.gpu_uuid, args.no_gpu,
                                 args.node_problem, args.sandbox)
    except ValueError as e:
        return fail(e)
    return 0


def cmd_run_file(args):
    entries = []
    with open(args.plan, encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 4:
                entries.append({"id": parts[0], "chapter": parts[1], "state": parts[2], "student": parts[3]})
    print(cluster.write_run_file(args.run_dir, args.run_id, entries, args.entries, args.commit,
                                 args.unsafe_no_sandbox))
    return 0


def cmd_add_job(args):
    try:
        cluster.add_job(args.run_dir, args.array_job, args.tasks)
    except ValueError as e:
        return fail(e)
    return 0


def cmd_jobs(args):
    try:
        run = cluster.read_run(args.run_dir)
    except ValueError as e:
        return fail(e)
    latest = cluster.latest_jobs(run)
    states = slurm.slurm_states({j.split("_")[0] for j in latest.values()})
    for item in cluster.job_status(run, args.run_dir, states):
        print("%d\t%s\t%s\t%s\t%s" % (item["task"], item["job"] or "-", item["state"] or "UNKNOWN",
                                      "ok" if item["record"] else item["problem"], item["student"]))
    return 0


def cmd_collect(args):
    key, rc = key_or_none(args.key, create=True)
    if key is None:
        return rc
    try:
        cluster.collect(args.run_dir, args.history, key, args.out, args.quiet)
    except ValueError as e:
        return fail(e)
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chapters")
    c.add_argument("--repo", required=True)
    c.add_argument("--submissions", required=True)
    c.add_argument("--chapter", action="append", default=[])
    c = sub.add_parser("plan")
    c.add_argument("--repo", required=True)
    c.add_argument("--submissions", required=True)
    c.add_argument("--work", required=True)
    c.add_argument("--chapter", action="append", required=True)
    c = sub.add_parser("runner")
    c.add_argument("--repo", required=True)
    c.add_argument("--chapter", required=True)
    c = sub.add_parser("ncu-target")
    c.add_argument("--entry", required=True)
    c = sub.add_parser("record")
    c.add_argument("--history", required=True)
    c.add_argument("--key", default="")
    c.add_argument("--entry", required=True)
    c.add_argument("--trusted", default="")
    c.add_argument("--run-id", required=True)
    c.add_argument("--gpu-name", default="")
    c.add_argument("--gpu-uuid", default="")
    c.add_argument("--sandbox", required=True)
    c.add_argument("--commit", default="")
    c.add_argument("--logs", default="")
    c = sub.add_parser("job-record")
    for a in ("--entry", "--out", "--run-id", "--job-id", "--student-id", "--chapter", "--sandbox"):
        c.add_argument(a, required=True)
    c.add_argument("--task", type=int, required=True)
    for a in ("--node", "--gpu-name", "--gpu-uuid", "--no-gpu", "--node-problem"):
        c.add_argument(a, default="")
    c = sub.add_parser("run-file")
    for a in ("--run-dir", "--run-id", "--plan", "--entries"):
        c.add_argument(a, required=True)
    c.add_argument("--commit", default="")
    c.add_argument("--unsafe-no-sandbox", action="store_true")
    c = sub.add_parser("add-job")
    for a in ("--run-dir", "--array-job", "--tasks"):
        c.add_argument(a, required=True)
    c = sub.add_parser("jobs")
    c.add_argument("--run-dir", required=True)
    c = sub.add_parser("collect")
    for a in ("--run-dir", "--history", "--out"):
        c.add_argument(a, required=True)
    c.add_argument("--key", default="")
    c.add_argument("--quiet", action="store_true")
    for name in ("report", "check", "check-fixture", "verify"):
        c = sub.add_parser(name)
        c.add_argument("--history", required=True)
        c.add_argument("--key", default="")
        if name == "report":
            c.add_argument("--out", required=True)
            c.add_argument("--run-id", default="")
            c.add_argument("--quiet", action="store_true")
        elif name != "verify":
            c.add_argument("--run-id", required=True)
            c.add_argument("--expect", required=True)
            c.add_argument("--chapter", action="append", default=[],
                           help="the chapters the run was limited to (repeatable): the expected outcome "
                                "of any other chapter is skipped")
    args = p.parse_args(argv)
    return {"chapters": cmd_chapters, "plan": cmd_plan, "record": cmd_record, "report": cmd_report,
            "check": cmd_check, "check-fixture": cmd_check, "verify": cmd_verify,
            "ncu-target": cmd_ncu_target, "runner": cmd_runner, "job-record": cmd_job_record, "run-file": cmd_run_file,
            "add-job": cmd_add_job, "jobs": cmd_jobs, "collect": cmd_collect}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
