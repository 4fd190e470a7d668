"""A run on a Slurm cluster, as files: its folder on the shared file system, the record each
job writes on its node, and the collect that merges the records into the signed history.

The run's folder (--shared DIR/RUN_ID, which every node sees at the same path) holds:
  run.json                 the run: its tasks (one per job), the entries without files, the
                           arrays submitted (a rerun adds one); written by the leaderboard
  tasks.tsv                task, student id, chapter, entry folder: what a job reads
  settings.tsv, sbatch.args  the run's settings and sbatch's options (a rerun asks the same)
  src.tar                  the repository's sources
  entries/<random>/...     the students' files, as the plan copied them
  records/<task>-<array job>.json   what the job found, written by the job (node.py)
  slurm/<array job>_<task>.out      the job's own output
A record holds no verdict and no signature: the collect, on the teacher's machine, checks it,
classifies it like a local run's results and signs it into the history. The key never leaves
the teacher's machine.
"""

import fcntl
import json
import os
import re
import shutil
import tempfile

from .atomic import publish_folder, write_json
from .classify import classify_entry
from .crosscheck import usable_baseline
from .history import RUN_ID_RE, append_history, load_history, utc_now
from .job_record import read_job_record
from .outcomes import parse_one_document, reason
from .report import why
from .submissions import SAFE_ID_RE

# Slurm's job states (sacct, scontrol) and what they mean here. A state not listed counts
# as still running when the job has no record.
SLURM_DONE = {"COMPLETED", "FAILED"}
SLURM_FAULTS = {
    "CANCELLED": ("cancelled", "cancelled by scancel or an administrator"),
    "PREEMPTED": ("cancelled", "preempted by a job of higher priority"),
    "DEADLINE": ("cancelled", "its deadline passed"),
    "TIMEOUT": ("job-timeout", "Slurm ended it at its time limit (--time)"),
    "NODE_FAIL": ("node-failed", "its node stopped answering while it ran"),
    "BOOT_FAIL": ("node-failed", "its node failed to boot"),
    "OUT_OF_MEMORY": ("node-problem", "the job ran out of memory"),
}


def read_run(run_dir):
    path = os.path.join(run_dir, "run.json")
    try:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s is not a cluster run's file (%s)" % (path, str(e).split(":")[0]))
    if (
        not isinstance(run, dict)
        or run.get("schema") != 1
        or not isinstance(run.get("tasks"), list)
        or not isinstance(run.get("jobs"), list)
        or not RUN_ID_RE.match(str(run.get("run_id", "")))
    ):
        raise ValueError("%s is not a cluster run's file of schema 1" % path)
    for i, t in enumerate(run["tasks"] + run.get("missing", [])):
        if (
            not isinstance(t, dict)
            or not SAFE_ID_RE.match(str(t.get("student_id")))
            or not re.match(r"^ch\d\d$", str(t.get("chapter")))
            or not isinstance(t.get("student"), str)
            or not isinstance(t.get("entry"), str)
            or t["entry"].startswith("/")
            or ".." in t["entry"].split("/")
            or (i < len(run["tasks"]) and t.get("task") != i)
        ):
            raise ValueError("%s: entry %d is not as `run-file` writes it" % (path, i))
    return run


def write_run_file(run_dir, run_id, entries, entries_rel, commit, unsafe_no_sandbox=False):
    """Writes run.json and tasks.tsv of a new cluster run from the plan's entries (entries_rel:
    the folder of the entries, relative to the run folder); returns the number of tasks."""
    tasks, missing = [], []
    for e in entries:
        item = {
            "student_id": e["id"],
            "chapter": e["chapter"],
            "student": e["student"],
            "entry": os.path.join(entries_rel, e["id"], e["chapter"]),
        }
        if e["state"] == "build":
            tasks.append(dict(item, task=len(tasks)))
        else:
            missing.append(item)
    run = {
        "schema": 1,
        "run_id": run_id,
        "commit": commit,
        "created": utc_now(),
        "tasks": tasks,
        "missing": missing,
        "jobs": [],
        "sandbox_optional": bool(unsafe_no_sandbox),
    }
    write_json(os.path.join(run_dir, "run.json"), run)
    with open(os.path.join(run_dir, "tasks.tsv"), "w", encoding="utf-8") as f:
        for t in tasks:
            f.write("%d\t%s\t%s\t%s\n" % (t["task"], t["student_id"], t["chapter"], t["entry"]))
    return len(tasks)


def run_lock(run_dir):
    f = open(os.path.join(run_dir, ".lock"), "a")
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    return f


def add_job(run_dir, array_job, task_list):
    """Adds a submitted array (the first submission or a rerun) to run.json."""
    tasks = parse_task_list(task_list)
    with run_lock(run_dir):
        run = read_run(run_dir)
        known = {t["task"] for t in run["tasks"]}
        if not tasks or not set(tasks) <= known or not re.match(r"^\d+$", array_job):
            raise ValueError("bad array job '%s' or tasks '%s'" % (array_job, task_list))
        run["jobs"].append({"array_job": array_job, "tasks": tasks, "submitted": utc_now()})
        write_json(os.path.join(run_dir, "run.json"), run)


def parse_task_list(text):
    """'0-3,7' -> [0, 1, 2, 3, 7]; [] when it is not such a list."""
    out = []
    for part in str(text).split(","):
        m = re.match(r"^(\d+)(?:-(\d+))?$", part.strip())
        if not m:
            return []
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        if b < a or b - a > 100000:
            return []
        out.extend(range(a, b + 1))
    return sorted(set(out))


def latest_jobs(run):
    """{task: 'ARRAY_TASK'}: the last job submitted for each task."""
    out = {}
    for job in run["jobs"]:
        for t in job.get("tasks", []):
            out[t] = "%s_%d" % (job["array_job"], t)
    return out


def job_status(run, run_dir, states):
    """One line per task and per entry without files: what is known of it now."""
    latest = latest_jobs(run)
    out = []
    for t in run["tasks"]:
        job = latest.get(t["task"])
        item = {
            "task": t["task"],
            "student": t["student"],
            "student_id": t["student_id"],
            "chapter": t["chapter"],
            "job": job or "",
            "state": "",
            "record": None,
            "problem": "",
        }
        if job:
            st = states.get(job, {})
            item["state"], item["node"] = st.get("state", ""), st.get("node", "")
            array = job.split("_")[0]
            rec, problem = read_job_record(
                os.path.join(run_dir, "records", "%d-%s.json" % (t["task"], array)), t["task"]
            )
            if rec is not None and (
                rec["job_id"] != job
                or rec["run_id"] != run["run_id"]
                or rec["student_id"] != t["student_id"]
                or rec["chapter"] != t["chapter"]
            ):
                rec, problem = None, "the record is of another run, job or student"
            item["record"], item["problem"] = rec, problem or ""
        out.append(item)
    return out


def merge_record(rec, entry_src, task, job, merge):
    """Rebuilds a job's entry folder from its record (the plan's meta.json, the steps, the
    files) and merges it with what the node said (no GPU, a problem of the node)."""
    with tempfile.TemporaryDirectory() as tmp:
        entry = os.path.join(tmp, "entry")
        os.makedirs(entry)
        with open(os.path.join(entry_src, "meta.json"), "rb") as f, open(os.path.join(entry, "meta.json"), "wb") as g:
            g.write(f.read())
        with open(os.path.join(entry, "steps.tsv"), "w") as f:
            for name, step in rec["steps"].items():
                f.write("%s\t%d\t%s\n" % (name, step["rc"], step["seconds"]))
        for name, text in rec["files"].items():
            with open(os.path.join(entry, name), "w", encoding="utf-8") as f:
                f.write(text)
        trusted = None
        if "trusted.json" in rec["files"]:
            doc, _ = parse_one_document(rec["files"]["trusted.json"])
            trusted = usable_baseline(doc)
        reasons = []
        if rec["node_problem"]:
            reasons.append(reason("node-problem", rec["node_problem"]))
        if rec["no_gpu"]:
            reasons.append(reason("no-gpu", rec["no_gpu"]))
        notes = ["ran on node %s as job %s" % (rec["node"] or "?", job)]
        return merge(
            entry,
            task["student_id"],
            task["chapter"],
            job,
            trusted=trusted,
            gpu=rec["gpu"],
            sandbox=rec["sandbox"],
            job_reasons=reasons,
            job_notes=notes,
            files=rec["files"],
        )


def logs_key(run_id, sid, ch, job):
    return "runs/%s/%s/%s/%s" % (run_id, sid, ch, job or "no-job")


def collect(run_dir, history, key, out, states_of, quiet=False):
    """Merges the finished jobs of a cluster run into the history, once each: a job's
    record, checked and classified like a local run's results; or, for a job that Slurm
    ended (cancelled, time limit, node failure) without one, that reason. A record that is
    missing, truncated or not a valid record is reported and not merged. states_of(array job
    ids) gives each job's Slurm state (slurm.slurm_states). Returns the summary (also kept as
    OUT/runs/RUN_ID/collect.json). Raises ValueError when run_dir is not a run."""
    run = read_run(run_dir)
    run_id = run["run_id"]
    os.makedirs(out, exist_ok=True)
    lock = open(os.path.join(out, ".collect.lock"), "a")
    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # two collects at once merge each job once
    latest = latest_jobs(run)
    states = states_of({j.split("_")[0] for j in latest.values()}) if latest else {}
    merged = {(r["run_id"], r["logs"]) for r in load_history(history, key, quiet=True)}
    rows = []
    n_new = 0

    def merge(
        entry, sid, ch, job, trusted=None, gpu=None, sandbox="bubblewrap", job_reasons=(), job_notes=(), files=None
    ):
        logs = logs_key(run_id, sid, ch, job)
        rec = classify_entry(entry, trusted=trusted, job_reasons=job_reasons, job_notes=job_notes)
        rec.update(
            {
                "run_id": run_id,
                "date": utc_now(),
                "gpu": gpu or {"name": "no GPU", "uuid": ""},
                "sandbox": sandbox,
                "commit": str(run.get("commit", "")),
                "logs": logs,
            }
        )
        keep_logs(os.path.join(out, logs), files or {})
        append_history(history, rec, key)
        merged.add((run_id, logs))
        return "merged: " + (
            "ranked, %.3fx reference" % rec["score"]["geomean_vs_reference"] if not rec["reasons"] else why(rec)
        )

    # Entries without files never had a job: recorded once, like a local run does.
    for m in run.get("missing", []):
        logs = logs_key(run_id, m["student_id"], m["chapter"], None)
        if (run_id, logs) in merged:
            status = "already merged"
        else:
            status = merge(os.path.join(run_dir, m["entry"]), m["student_id"], m["chapter"], None)
            n_new += 1
        rows.append(
            {
                "job": "-",
                "student": m["student"],
                "chapter": m["chapter"],
                "state": "no job",
                "status": status,
                "merged": True,
            }
        )

    for item in job_status(run, run_dir, states):
        job, t = item["job"], item
        row = {
            "job": job or "-",
            "task": t["task"],
            "student": t["student"],
            "chapter": t["chapter"],
            "state": t["state"] or "UNKNOWN",
            "node": t.get("node", ""),
            "merged": False,
        }
        rows.append(row)
        if not job:
            row["status"] = "never submitted"
            continue
        logs = logs_key(run_id, t["student_id"], t["chapter"], job)
        if (run_id, logs) in merged:
            row.update(status="already merged", merged=True)
            continue
        entry_src = os.path.join(run_dir, [x for x in run["tasks"] if x["task"] == t["task"]][0]["entry"])
        state = t["state"]
        rec = t["record"]
        if rec is not None:
            try:
                row["status"] = merge_record(rec, entry_src, t, job, merge)
            except (OSError, ValueError, KeyError) as e:
                row["status"] = (
                    "NOT MERGED: its record could not be classified (%s); rerun it: "
                    "scripts/leaderboard.sh --rerun %s" % (e, job)
                )
                row["problem"] = str(e)
                continue
            row["merged"] = True
            n_new += 1
        elif state in SLURM_FAULTS:
            kind, detail = SLURM_FAULTS[state]
            detail = "job %s, Slurm state %s: %s; %s" % (job, state, detail, t["problem"] or "no record")
            row["status"] = merge(
                entry_src,
                t["student_id"],
                t["chapter"],
                job,
                job_reasons=[reason(kind, detail)],
                job_notes=["Slurm ended job %s as %s on node %s" % (job, state, t.get("node") or "?")],
            )
            row["merged"] = True
            n_new += 1
        elif state in SLURM_DONE or (state == "" and t["problem"] and not t["problem"].startswith("no record")):
            row["status"] = "NOT MERGED: %s; rerun it: scripts/leaderboard.sh --rerun %s" % (t["problem"], job)
            row["problem"] = t["problem"]
        elif state == "":
            row[
                "status"
            ] = "NOT MERGED: %s, and Slurm knows nothing of the job; rerun it: scripts/leaderboard.sh " "--rerun %s" % (
                t["problem"],
                job,
            )
            row["problem"] = t["problem"]
        else:
            row["status"] = "pending (%s)" % state
            row["pending"] = True
    status = {
        "run_id": run_id,
        "collected": utc_now(),
        "jobs": rows,
        "merged_now": n_new,
        "pending": sum(1 for r in rows if r.get("pending")),
        "not_merged": sum(1 for r in rows if not r["merged"] and not r.get("pending")),
    }
    keep = os.path.join(out, "runs", run_id)
    os.makedirs(keep, exist_ok=True)
    write_json(os.path.join(keep, "collect.json"), status)
    lock.close()
    if not quiet:
        print(
            "cluster run %s: %d job(s) and entries, %d merged now, %d pending, %d not merged"
            % (run_id, len(rows), n_new, status["pending"], status["not_merged"])
        )
        width = max([len(r["student"]) for r in rows] + [7])
        for r in rows:
            print(
                "  %-10s %-4s %-*s %-11s %s"
                % (r["job"], r["chapter"], min(width, 28), r["student"][:28], r["state"][:11], r["status"])
            )
    return status


def keep_logs(dest, files):
    """A merged job's logs, {name: text}, as the folder `dest` (replacing what an interrupted
    collect may have left there)."""

    def fill(tmp):
        for name, text in files.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)

    shutil.rmtree(dest, ignore_errors=True)
    publish_folder(dest, fill)
