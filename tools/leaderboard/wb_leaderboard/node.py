"""One job of a cluster run, on its node: one student's files for one chapter. Started by
tools/leaderboard/slurm-job.sh (the script sbatch runs), which unpacks the run's sources into a
fresh folder of the node's TMPDIR and runs, from them:

  python3 -m wb_leaderboard.node RUN_FOLDER WORK_FOLDER      (task and job from Slurm's variables)

It builds the chapter from the repository alone (outside the sandbox, the compiler cache
shared), copies the student's files over the stubs and rebuilds the chapter's programs in the
sandbox; then, with a GPU, the baseline (the repository's own programs), the tests and the
benchmark in the sandbox; without one, the tests only (the host-side stage) and "no GPU on
node". Last, its record in RUN_FOLDER/records/, written whole or not at all; the work folder is
removed. Nothing here holds a seed: the harness draws it inside the test and benchmark
programs, after main starts (WORKBOOK_SEED_MODE=secret).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from . import job_record
from .classify import read_steps
from .build import copy_tree, remove_tree, repository_build, student_build
from .chapters import chapter_runner, expand_command
from .repository import REPO
from .gpus import list_gpus
from .run import test_and_time
from .sandbox import Sandbox, stop_all


class Stop(Exception):
    """The job ends here (its record, if any, is written)."""


class Job:
    def __init__(self, run, work):
        self.run, self.work = run, work
        self.task, self.array = int(os.environ["SLURM_ARRAY_TASK_ID"]), os.environ["SLURM_ARRAY_JOB_ID"]
        self.job = "%s_%d" % (self.array, self.task)
        self.node = socket.gethostname().split(".")[0]
        with open(os.path.join(run, "settings.tsv")) as f:
            self.settings = dict(line.rstrip("\n").split("\t", 1) for line in f if "\t" in line)
        with open(os.path.join(run, "tasks.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        row = [r for r in rows if r[0] == str(self.task)]
        if not row:
            raise Stop("task %d is not in %s/tasks.tsv" % (self.task, run))
        _, self.sid, self.ch, entry_rel = row[0]
        self.entry = os.path.join(work, os.urandom(8).hex(), "entry")  # a folder no build can guess
        os.makedirs(os.path.dirname(self.entry))
        copy_tree(os.path.join(run, entry_rel), self.entry)
        self.gpu_name = self.gpu_uuid = self.gpu_cap = self.no_gpu = self.node_problem = ""
        self.sandbox = "none"
        self.unsafe = self.settings.get("unsafe") == "1"
        self.commit = self.settings.get("commit", "")

    def say(self, text):
        print("[%s %s] %s" % (time.strftime("%H:%M:%S", time.gmtime()), self.job, text), flush=True)

    def write_record(self):
        path = os.path.join(self.run, "records", "%d-%s.json" % (self.task, self.array))
        job_record.write_job_record(
            self.entry,
            path,
            os.path.basename(self.run),
            self.task,
            self.job,
            self.sid,
            self.ch,
            self.node,
            self.gpu_name,
            self.gpu_uuid,
            self.no_gpu,
            self.node_problem,
            self.sandbox,
        )
        self.say("record written: %s" % path)

    def problem(self, text):
        """The node cannot run the job: recorded as such. No code of the student's has run then,
        so the record says the run's own rule (sandboxed unless --unsafe-no-sandbox)."""
        self.node_problem = "%s (node %s)" % (text, self.node)
        self.say(self.node_problem)
        self.sandbox = "none" if self.unsafe else "bubblewrap"
        self.write_record()
        raise Stop()

    def find_gpu(self):
        want = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0]
        for index, uuid, cap, name in list_gpus():
            if not self.gpu_uuid and (not want or want in (index, uuid)):
                self.gpu_name, self.gpu_uuid, self.gpu_cap = name, uuid, cap
        if not self.gpu_uuid:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
            self.no_gpu = "node %s: nvidia-smi lists none%s; built and tested on the host only" % (
                self.node,
                " for CUDA_VISIBLE_DEVICES=" + visible if visible else "",
            )
            self.say("no GPU: the build and the host-side tests run, nothing is timed")
        else:
            self.say("GPU: %s (%s)" % (self.gpu_name, self.gpu_uuid))

    def run_job(self):
        w, jobs = self.work, os.environ.get("SLURM_CPUS_PER_TASK", "2")
        limit = self.settings.get("timeout", "900")
        self.say("%s, student %s, on node %s" % (self.ch, self.sid, self.node))
        box = Sandbox(self.settings.get("bwrap", ""))
        if box.kind == "none" and not self.unsafe:
            self.problem("refusing to run without a sandbox: %s" % box.problem)
        self.sandbox = box.kind
        # No step sees the shared folder (every run, every student's files, the records), the
        # folder holding the jobs' work folders (other jobs on this node, other students) or this
        # job's own, but for the step's own folder.
        parent = os.path.dirname(w)
        box.hide([os.path.dirname(self.run), parent if parent != "/" else "", w])
        self.find_gpu()
        arch = self.settings.get("arch", "")
        arch_args = (
            ["-DCMAKE_CUDA_ARCHITECTURES=" + arch]
            if arch
            else (
                ["-DCMAKE_CUDA_ARCHITECTURES=" + self.gpu_cap]
                if self.gpu_uuid and not os.environ.get("CUDAARCHS")
                else []
            )
        )
        try:
            runner = chapter_runner(REPO, self.ch)
        except ValueError as e:
            self.problem("%s cannot be ranked: %s" % (self.ch, e))
        targets = runner["build"]
        tree = os.path.join(w, "tree")
        os.makedirs(tree)
        copy_tree(REPO, os.path.join(tree, "src"))
        started = time.monotonic()
        self.say("building the repository's %s ..." % self.ch)
        if not repository_build(
            os.path.join(tree, "src"),
            os.path.join(tree, "build"),
            self.ch,
            targets,
            arch_args,
            self.commit,
            jobs,
            os.path.join(w, "base.log"),
            w,
        ):
            with open(os.path.join(w, "base.log"), errors="replace") as f:
                first = next((line.strip() for line in f if "error" in line.lower()), "")
            self.problem("the repository's own %s does not build here: %s" % (self.ch, first[:200]))
        trusted_bin = os.path.join(w, "trusted-bin")
        os.makedirs(trusted_bin)
        for t in targets + ["devicequery"]:
            if not os.path.isfile(os.path.join(tree, "build", "bin", t)):
                self.problem("the repository's own %s build has no %s" % (self.ch, " ".join(targets)))
            shutil.copy2(os.path.join(tree, "build", "bin", t), trusted_bin)
        self.say("  done (%.1f s)" % (time.monotonic() - started))

        with open(os.path.join(self.entry, "meta.json")) as f:
            chapter_dir = json.load(f)["chapter_dir"]
        started = time.monotonic()
        rc = student_build(
            box, tree, self.entry, chapter_dir, targets, jobs, limit, (), ["WORKBOOK_GIT_COMMIT=" + self.commit]
        )
        self.say("student build: exit %s (%.1f s)" % (rc, time.monotonic() - started))
        remove_tree(tree)
        if rc != 0:
            return
        cache, data, box_dir = (os.path.join(w, d) for d in ("cache", "data", "box"))
        for d in (cache, data, box_dir):
            os.makedirs(d, exist_ok=True)
        if self.gpu_uuid:
            self.baseline(runner, trusted_bin, cache, data, box_dir, limit)
        env = [
            "CUDA_DEVICE_ORDER=PCI_BUS_ID",
            "WORKBOOK_CACHE_DIR=" + cache,
            "WORKBOOK_KERNEL_TIMEOUT=" + self.settings.get("kernel_timeout", "60"),
            "WORKBOOK_SEED_MODE=secret",
            "WORKBOOK_GIT_COMMIT=" + self.commit,
        ]
        if self.gpu_uuid:
            env.append("CUDA_VISIBLE_DEVICES=" + self.gpu_uuid)
        ncu = shutil.which("ncu") if self.settings.get("ncu") == "1" else None
        test_and_time(
            box,
            self.entry,
            self.ch,
            runner,
            box_dir,
            limit,
            env,
            [cache, data],
            data,
            ncu or "",
            with_gpu=bool(self.gpu_uuid),
            note=self.say,
        )
        for name, step in read_steps(self.entry).items():
            if name != "build":
                self.say("%s: exit %s (%.1f s)" % (name, step["rc"], step["seconds"]))

    def baseline(self, runner, trusted_bin, cache, data, box_dir, limit):
        """The repository's own programs on this GPU: the measured ceilings and the benchmark."""
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=self.gpu_uuid, WORKBOOK_CACHE_DIR=cache)
        w = self.work

        def trusted(argv, log, cwd):
            with open(os.path.join(w, log), "wb") as f:
                return subprocess.run(
                    argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd
                ).returncode

        if runner["prepare"] and trusted(
            ["timeout", limit] + expand_command(runner["prepare"], trusted_bin, "", data), "prepare.log", data
        ):
            self.say("note: preparing the inputs failed")
        if trusted(["timeout", "600", os.path.join(trusted_bin, "devicequery"), "--measure"], "ceilings.log", w):
            self.say("note: measuring the ceilings failed")
        result = os.path.join(w, "trusted.json")
        if trusted(
            ["timeout", limit] + expand_command(runner["baseline"], trusted_bin, result, data), "baseline.log", box_dir
        ):
            self.say("note: the baseline run failed: rows are checked against their own run's ceilings")
        if os.path.isfile(result) and os.path.getsize(result):
            shutil.copyfile(result, os.path.join(self.entry, "trusted.json"))
        subprocess.run(["chmod", "-R", "a-w", cache, data])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(
            "usage: python3 -m wb_leaderboard.node RUN_FOLDER WORK_FOLDER (run by tools/leaderboard/slurm-job.sh)",
            file=sys.stderr,
        )
        return 2
    run, work = (os.path.realpath(p) for p in argv)

    def stopped(signum, frame):
        stop_all()
        raise Stop("stopped by a signal")

    signal.signal(signal.SIGTERM, stopped)
    signal.signal(signal.SIGINT, stopped)
    job = None
    try:
        job = Job(run, work)
        job.run_job()
        job.write_record()
        return 0
    except Stop as e:
        if str(e):
            print("[%s] %s" % (os.environ.get("SLURM_ARRAY_JOB_ID", "?"), e), flush=True)
        return 143 if str(e) == "stopped by a signal" else (0 if job else 1)
    except (OSError, ValueError) as e:
        print("[%s] the job failed: %s" % (job.job if job else "?", e), flush=True)
        return 1
    finally:
        remove_tree(work)


if __name__ == "__main__":
    sys.exit(main())
