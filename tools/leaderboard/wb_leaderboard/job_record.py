"""A Slurm job's record: the one file a job writes on its node (node.py) and the teacher's
collect reads back (cluster.py). It carries what the job found (its steps' exit codes and
times, the GPU, the sandbox, the files its steps wrote, each capped), never a verdict or a
signature; this module writes it whole, and checks a record read back field by field before
anything in it is believed.
"""

import json
import os
import re

from .atomic import write_json
from .classify import read_steps
from .history import RUN_ID_RE, SANDBOXES
from .outcomes import num, read_text
from .run import STEP_FILES
from .submissions import SAFE_ID_RE

JOB_RECORD_SCHEMA = 1
JOB_RECORD_KIND = "kernel-workbook leaderboard job record"
JOB_RECORD_FIELDS = {
    "schema": int,
    "kind": str,
    "run_id": str,
    "task": int,
    "job_id": str,
    "student_id": str,
    "chapter": str,
    "node": str,
    "gpu": (dict, type(None)),
    "no_gpu": str,
    "node_problem": str,
    "sandbox": str,
    "steps": dict,
    "files": dict,
    "complete": bool,
}
JOB_FILES = STEP_FILES + ("trusted.json",)  # and the baseline the job measured on its node
JOB_RECORD_MAX = 64 << 20
JOB_FILE_MAX = 4 << 20
JOB_ID_RE = re.compile(r"^(\d+)_(\d+)$")


def write_job_record(
    entry, out, run_id, task, job_id, student_id, chapter, node, gpu_name, gpu_uuid, no_gpu, node_problem, sandbox
):
    """On the node, after the job's steps: its entry folder as one record file, written whole or
    not at all."""
    files = {}
    for name in JOB_FILES:
        text = read_text(os.path.join(entry, name), JOB_FILE_MAX)
        if text is not None:
            files[name] = text
    m = JOB_ID_RE.match(job_id)
    if not m or int(m.group(2)) != task:
        raise ValueError("the job id must be ARRAYJOB_TASK of task %d, not '%s'" % (task, job_id))
    doc = {
        "schema": JOB_RECORD_SCHEMA,
        "kind": JOB_RECORD_KIND,
        "run_id": run_id,
        "task": task,
        "job_id": job_id,
        "student_id": student_id,
        "chapter": chapter,
        "node": node,
        "gpu": {"name": gpu_name, "uuid": gpu_uuid} if gpu_name else None,
        "no_gpu": no_gpu,
        "node_problem": node_problem,
        "sandbox": sandbox,
        "steps": read_steps(entry),
        "files": files,
        "complete": True,
    }
    problem = validate_job_record(doc)
    if problem:
        raise ValueError("internal: the job record does not validate: %s" % problem)
    write_json(out, doc)


def validate_job_record(doc, task=None):
    """None when `doc` is a job record as job-record writes it (for `task`, when given)."""
    if not isinstance(doc, dict):
        return "not a JSON object"
    if set(doc) != set(JOB_RECORD_FIELDS):
        return "its fields are not those of a job record"
    for k, t in JOB_RECORD_FIELDS.items():
        if not isinstance(doc[k], t) or (t is int and isinstance(doc[k], bool)):
            return "its field '%s' has the wrong type" % k
    if doc["schema"] != JOB_RECORD_SCHEMA or doc["kind"] != JOB_RECORD_KIND or doc["complete"] is not True:
        return "not a complete job record of schema %d" % JOB_RECORD_SCHEMA
    if not SAFE_ID_RE.match(doc["student_id"]) or not re.match(r"^ch\d\d$", doc["chapter"]):
        return "bad student id or chapter"
    if not RUN_ID_RE.match(doc["run_id"]) or not JOB_ID_RE.match(doc["job_id"]):
        return "bad run id or job id"
    if task is not None and (doc["task"] != task or int(JOB_ID_RE.match(doc["job_id"]).group(2)) != task):
        return "it is the record of task %d, not %d" % (doc["task"], task)
    if doc["sandbox"] not in SANDBOXES:
        return "bad sandbox"
    gpu = doc["gpu"]
    if gpu is not None and (
        set(gpu) != {"name", "uuid"} or not all(isinstance(v, str) for v in gpu.values()) or not gpu["name"]
    ):
        return "bad gpu"
    if (gpu is None) == (doc["no_gpu"] == "") and not doc["node_problem"]:
        return "gpu and no_gpu disagree"
    for name, step in doc["steps"].items():
        if (
            not isinstance(step, dict)
            or set(step) != {"rc", "seconds"}
            or not isinstance(step["rc"], int)
            or num(step["seconds"]) is None
            or "\t" in name
            or "\n" in name
        ):
            return "bad step '%s'" % str(name)[:20]
    for name, text in doc["files"].items():
        if name not in JOB_FILES or not isinstance(text, str):
            return "bad file '%s'" % str(name)[:40]
    return None


def read_job_record(path, task):
    """(record, problem): a job's record file, or why it cannot be used."""
    try:
        with open(path, "rb") as f:
            data = f.read(JOB_RECORD_MAX + 1)
    except FileNotFoundError:
        return None, "no record (the job wrote none)"
    except OSError as e:
        return None, "the record cannot be read (%s)" % e.strerror
    if len(data) > JOB_RECORD_MAX:
        return None, "the record is larger than %d MiB" % (JOB_RECORD_MAX >> 20)
    if not data.strip():
        return None, "the record is empty"
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "the record is not UTF-8 text"
    except ValueError as e:
        why = str(e).split(":")[0]
        if "Expecting" in why or "Unterminated" in why:
            return None, "the record is truncated or not valid JSON (%s)" % why
        return None, "the record is not valid JSON (%s)" % why
    problem = validate_job_record(doc, task)
    if problem:
        return None, "the record is not a valid job record: %s" % problem
    return doc, None
