"""Talking to Slurm: the job states sacct and scontrol report, and what each state means for a
job that wrote no record; the array syntax of job ids.
"""

import re
import subprocess

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
                    note(parts[0], {"state": parts[1].split()[0] if parts[1].split() else "", "exit": parts[2],
                                    "node": parts[3]})
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
                note("%s_%s" % (a, t), {"state": kv.get("JobState", ""), "exit": kv.get("ExitCode", ""),
                                        "node": kv.get("NodeList", "")})
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
    return ["%s_%d" % (m.group(1), t) for t in parse_task_list(m.group(2))]
