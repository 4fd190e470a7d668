"""Talking to Slurm, from the teacher's machine: submitting a run as a job array (sbatch), the
job states sacct and scontrol report and what each means for a job that wrote no record,
waiting for a run, collecting it, running jobs again. The run's folder and its records are
cluster.py's; what runs on a node is node.py's (through tools/leaderboard/slurm-job.sh).
docs/leaderboard.md, "Running on a cluster".
"""

import os
import re
import shutil
import subprocess
import time

from . import cluster, expect, history, report, submissions
from .atomic import publish_folder
from .repository import Refused, commit_of, new_run_id, source_items

BUSY = {
    "PENDING",
    "RUNNING",
    "CONFIGURING",
    "COMPLETING",
    "REQUEUED",
    "RESIZING",
    "SUSPENDED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
}
EXPORTED = ("LD_LIBRARY_PATH", "CUDAARCHS", "CUDA_HOME", "CUDA_PATH", "CCACHE_DIR")  # reach the jobs where set


def slurm_states(array_jobs, runner=None):
    """{'ARRAY_TASK': {'state', 'exit', 'node'}} from sacct, and from scontrol for what sacct
    does not know (no accounting database, or a job too recent for it). A line of one job
    wins over a line of a range of them (sacct lists the tasks of an array that never
    started as one range). A job neither knows is absent."""
    run = runner or (lambda argv: subprocess.run(argv, capture_output=True, text=True, timeout=120))
    exact, ranges = {}, []
    ids = sorted(set(array_jobs), key=int)
    if not ids:
        return {}

    def note(job_text, info):
        jobs = expand_array_ids(job_text)
        if re.match(r"^\d+_\d+$", job_text.strip()):
            exact.setdefault(job_text.strip(), info)
        else:
            ranges.append((jobs, info))

    try:
        p = run(["sacct", "-n", "-P", "-X", "--format=JobID,State,ExitCode,NodeList", "-j", ",".join(ids)])
        if p.returncode == 0:
            for line in p.stdout.splitlines():
                parts = line.split("|")
                if len(parts) >= 4:
                    note(
                        parts[0],
                        {"state": parts[1].split()[0] if parts[1].split() else "", "exit": parts[2], "node": parts[3]},
                    )
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    for array in ids:
        try:
            p = run(["scontrol", "-o", "show", "job", array])
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        if p.returncode != 0:
            continue
        for line in p.stdout.splitlines():
            kv = dict(re.findall(r"(\w+)=(\S*)", line))
            a, t = kv.get("ArrayJobId"), kv.get("ArrayTaskId")
            if a == array and t is not None:
                note(
                    "%s_%s" % (a, t),
                    {"state": kv.get("JobState", ""), "exit": kv.get("ExitCode", ""), "node": kv.get("NodeList", "")},
                )
    states = dict(exact)
    for jobs, info in ranges:
        for job in jobs:
            states.setdefault(job, info)
    return states


def expand_array_ids(text):
    """'57_3' -> ['57_3']; '57_[2-4,7%2]' -> ['57_2', '57_3', '57_4', '57_7']; anything else -> []."""
    m = re.match(r"^(\d+)_(\d+)$", text.strip())
    if m:
        return [text.strip()]
    m = re.match(r"^(\d+)_\[?([\d,\-]+)(?:%\d+)?\]?$", text.strip())
    if not m:
        return []
    return ["%s_%d" % (m.group(1), t) for t in cluster.parse_task_list(m.group(2))]


def need(*tools):
    for tool in tools:
        if not shutil.which(tool):
            raise Refused(
                "'%s' is needed and was not found on PATH (run this where Slurm's commands work, e.g. a "
                "login node)" % tool
            )


def shared_folder(o):
    return o.shared or os.path.join(o.out, "cluster")


def resource_options(o, gres=None):
    """sbatch's options for the resources asked for (a rerun may add some): --partition,
    --account, --time, and --gres (`gres` when given: the default of a new run)."""
    args = []
    for name, value in (
        ("--partition", o.partition),
        ("--account", o.account),
        ("--time", o.time),
        ("--gres", gres or o.gres),
    ):
        if value and value != "none":
            args += [name, value]
    return args


def job_states(run_dir):
    """[(task, job, state, record, student)] of a run now."""
    run = cluster.read_run(run_dir)
    latest = cluster.latest_jobs(run)
    states = slurm_states({j.split("_")[0] for j in latest.values()})
    return [
        (
            item["task"],
            item["job"] or "-",
            item["state"] or "UNKNOWN",
            "ok" if item["record"] else item["problem"],
            item["student"],
        )
        for item in cluster.job_status(run, run_dir, states)
    ]


def submit(repo, run_dir, tasks, extra=()):
    """One array of jobs for those tasks ("0-3", "1,4") of the run; its id."""
    with open(os.path.join(run_dir, "sbatch.args")) as f:
        saved = f.read().splitlines()
    p = subprocess.run(
        ["sbatch", "--parsable"]
        + saved
        + list(extra)
        + ["--array", tasks, os.path.join(repo, "tools", "leaderboard", "slurm-job.sh"), run_dir],
        capture_output=True,
        text=True,
    )
    reply = (p.stdout + p.stderr).strip()
    if p.returncode != 0:
        raise Refused("sbatch refused the jobs: %s" % reply)
    array = reply.split(";")[0]
    if not re.match(r"^[0-9]+$", array):
        raise Refused("sbatch answered '%s', not a job id" % reply)
    cluster.add_job(run_dir, array, tasks)
    return array


def wait(run_dir, say=print):
    """Until no job of the run is queued or running, looking every LEADERBOARD_POLL_S seconds."""
    run_id = os.path.basename(run_dir)
    say("waiting for the jobs of run %s (squeue shows them as kwb-%s) ..." % (run_id, run_id))
    last = None
    while True:
        busy = [(job, state) for _, job, state, _, _ in job_states(run_dir) if state in BUSY]
        if not busy:
            say("  every job of the run has ended")
            return
        if busy != last:
            say("  %d job(s) queued or running: %s" % (len(busy), "".join("%s %s; " % b for b in busy)))
            last = busy
        time.sleep(float(os.environ.get("LEADERBOARD_POLL_S", "10")))


def collect_and_report(o, run_dir, key_file):
    """Merges the run's finished jobs, writes the reports, and compares with --expect."""
    key = history.load_key(key_file, create=True)
    hist = os.path.join(o.out, "history.jsonl")
    cluster.collect(run_dir, hist, key, o.out, slurm_states)
    print()
    report.write_reports(hist, key, o.out, os.path.basename(run_dir))
    if o.expect:
        print()
        print("checking run %s against %s:" % (os.path.basename(run_dir), o.expect))
        return 0 if expect.check(hist, key, os.path.basename(run_dir), o.expect) else 1
    return 0


def runs_in(shared):
    return (
        sorted(n for n in os.listdir(shared) if os.path.isfile(os.path.join(shared, n, "run.json")))
        if os.path.isdir(shared)
        else []
    )


def arrays_of(run_dir):
    """The job arrays a run submitted (none when its run.json cannot be read)."""
    try:
        return {j["array_job"] for j in cluster.read_run(run_dir)["jobs"]}
    except (ValueError, KeyError, TypeError):
        return set()


def cluster_mode(o, repo, key_path_of):
    """--collect RUN_ID, --rerun JOB..., --status RUN_ID: on a run submitted before. Nothing is
    made (no output folder, no key) before the run is found."""
    need("python3", *(("sbatch", "squeue", "scontrol") if o.rerun else ()))
    shared = shared_folder(o)
    if o.collect or o.status:
        run_id = o.collect or o.status
        run_dir = os.path.join(shared, run_id)
        if not os.path.isfile(os.path.join(run_dir, "run.json")):
            raise Refused(
                "no cluster run '%s' in %s (runs there: %s); give the --shared folder (or --out) it was "
                "submitted with" % (run_id, shared, " ".join(runs_in(shared)) or "none")
            )
        try:
            cluster.read_run(run_dir)
        except ValueError as e:
            raise Refused(str(e))
        if o.status:
            for row in job_states(run_dir):
                print("%d\t%s\t%s\t%s\t%s" % row)
            return 0
        key_file = key_path_of([os.path.realpath(shared), os.path.realpath(o.out), repo])
        if o.wait:
            wait(run_dir)
        return collect_and_report(o, run_dir, key_file)
    # --rerun: each job's run, found by its array, and its latest job must have ended.
    tasks_of = {}
    for job in o.rerun:
        array, task = job.split("_")
        found = [r for r in runs_in(shared) if array in arrays_of(os.path.join(shared, r))]
        if not found:
            raise Refused("--rerun: no run in %s submitted job array %s" % (shared, array))
        run_dir = os.path.join(shared, found[-1])
        rows = {str(t): (j, st) for t, j, st, _, _ in job_states(run_dir)}
        if task not in rows:
            raise Refused("--rerun: run %s has no task %s" % (found[-1], task))
        if rows[task][1] in BUSY - {"REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED"}:
            raise Refused(
                "--rerun: the latest job of task %s is still %s (%s); wait for it or scancel it first"
                % (task, rows[task][1], rows[task][0])
            )
        tasks_of.setdefault(run_dir, []).append(task)
    key_file = key_path_of([os.path.realpath(shared), os.path.realpath(o.out), repo]) if o.wait else None
    status = 0
    for run_dir, tasks in tasks_of.items():
        array = submit(repo, run_dir, ",".join(tasks), resource_options(o))
        print(
            "run %s: task(s) %s submitted again as job array %s" % (os.path.basename(run_dir), ",".join(tasks), array)
        )
        if o.wait:
            wait(run_dir)
            status = collect_and_report(o, run_dir, key_file) or status
        else:
            print(
                "  then: scripts/leaderboard.sh --collect %s --out %s --shared %s"
                % (os.path.basename(run_dir), o.out, shared)
            )
    return status


def submit_mode(o, repo, subs, wanted, key_path_of):
    """--slurm: the run's folder in the shared folder (made under a temporary name and renamed
    when whole), then one job array for its tasks; with --wait, the collect."""
    need("sbatch", "squeue", "scontrol", "tar")
    shared = shared_folder(o)
    made_shared = not os.path.isdir(shared)
    os.makedirs(shared, exist_ok=True)
    out, shared, subs = os.path.realpath(o.out), os.path.realpath(shared), os.path.realpath(subs)
    if (shared + os.sep).startswith(subs + os.sep):
        raise Refused("--shared must be outside the submissions folder")
    if (subs + os.sep).startswith(shared + os.sep):
        raise Refused("the submissions folder must be outside --shared")
    run_id, commit = new_run_id(), commit_of(repo)
    run_dir = os.path.join(shared, run_id)
    rand = os.urandom(8).hex()  # the students' files wait in a folder whose name nobody can guess
    gres = o.gres or "gpu:1"
    found = {}

    def fill(tmp):
        os.chmod(tmp, 0o700)
        for d in ("records", "slurm", "entries"):
            os.makedirs(os.path.join(tmp, d))
        p = subprocess.run(
            ["tar", "-C", repo, "-cf", os.path.join(tmp, "src.tar"), "--"] + source_items(repo, [subs, out, shared]),
            capture_output=True,
            text=True,
        )
        if p.returncode:
            raise Refused("cannot pack the repository's sources: %s" % p.stderr.strip())
        entries, _ = submissions.plan(repo, subs, os.path.join(tmp, "entries", rand), wanted)
        found["entries"] = entries
        found["tasks"] = cluster.write_run_file(
            tmp, run_id, entries, "entries/%s/entries" % rand, commit, o.unsafe_no_sandbox
        )
        with open(os.path.join(tmp, "settings.tsv"), "w") as f:
            for k, v in (
                ("timeout", o.timeout),
                ("kernel_timeout", o.kernel_timeout),
                ("arch", o.arch),
                ("ncu", 0 if o.no_ncu else 1),
                ("unsafe", 1 if o.unsafe_no_sandbox else 0),
                ("bwrap", o.bwrap or ""),
                ("commit", commit),
            ):
                f.write("%s\t%s\n" % (k, v))
        exports = ",".join(["PATH", "HOME"] + [v for v in EXPORTED if os.environ.get(v)])
        # The environment of a job is these names only: nothing else of the caller's reaches the
        # node (and no seed is in any of them: the harness draws it there, after main starts).
        with open(os.path.join(tmp, "sbatch.args"), "w") as f:
            f.write(
                "\n".join(
                    [
                        "--job-name",
                        "kwb-" + run_id,
                        "--no-requeue",
                        "--export",
                        exports,
                        "--chdir",
                        run_dir,
                        "--output",
                        os.path.join(run_dir, "slurm", "%A_%a.out"),
                        "--cpus-per-task",
                        str(o.cpus_per_task),
                    ]
                    + resource_options(o, gres)
                )
                + "\n"
            )

    try:
        publish_folder(run_dir, fill)
    except BaseException:
        if made_shared:
            shutil.rmtree(shared, ignore_errors=True)
        raise
    n = found["tasks"]
    print("kernel-workbook leaderboard on Slurm, run %s (commit %s)" % (run_id, commit))
    print(
        "  submissions: %s (%d entries; chapters %s); %d job(s) to run"
        % (subs, len(found["entries"]), " ".join(wanted), n)
    )
    print("  run folder (must be visible to the nodes at this path): %s" % run_dir)
    print(
        "  each job: --cpus-per-task %d%s%s%s%s"
        % (
            o.cpus_per_task,
            " --partition " + o.partition if o.partition else "",
            " --account " + o.account if o.account else "",
            " --time " + o.time if o.time else "",
            " --gres " + gres if gres != "none" else "",
        )
    )
    print("  time limits per step: %s s, per kernel: %s s" % (o.timeout, o.kernel_timeout))
    if n:
        try:
            array = submit(repo, run_dir, "0-%d" % (n - 1))
        except Refused:
            # Nothing was submitted: nothing of the run is kept.
            shutil.rmtree(shared if made_shared else run_dir, ignore_errors=True)
            raise
        print("  submitted: job array %s (tasks 0-%d); squeue -j %s shows them" % (array, n - 1, array))
    print()
    if o.wait or not n:
        if n:
            wait(run_dir)
        return collect_and_report(o, run_dir, key_path_of([shared, out, repo]))
    print("when the jobs have ended (or at any time, for those that have):")
    print("  scripts/leaderboard.sh --collect %s --out %s --shared %s" % (run_id, out, shared))
    return 0
