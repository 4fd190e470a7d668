"""A run on this machine: the GPUs, a work folder with the repository's sources and the students'
files, each chapter's repository build, the submissions' builds (several at once), the
baseline (the repository's own programs on each GPU), then each submission's tests, benchmark
and ncu run (one submission per GPU at a time), each recorded into the history as it ends; the
reports last. docs/leaderboard.md, "What happens to each submission".
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from . import expect, history, report, submissions
from .atomic import publish_folder
from .build import add_step, copy_tree, remove_tree, repository_build, student_build
from .chapters import chapter_dirs, chapter_runner, expand_command
from .gpus import list_gpus, pick_gpus
from .ncu import NCU_METRIC_ARGS, ncu_selection
from .repository import Refused, commit_of, new_run_id, source_items
from .sandbox import LOG_LIMIT, Sandbox, run_step, stop_all

# What an entry's steps write (the builds, the tests, the benchmark, the ncu re-measurement),
# and what of an entry's folder a run keeps: those, its metadata and its steps' exit codes.
STEP_FILES = ("build.log", "tests.log", "tests.json", "bench.log", "bench.json", "ncu.csv", "ncu-target.json")
KEPT_FILES = ("meta.json", "steps.tsv") + STEP_FILES


_say_lock = threading.Lock()


def say(text=""):
    with _say_lock:
        print(text, flush=True)


def test_and_time(box, entry, ch, runner, box_dir, limit, env, ro, data, ncu_bin="", with_gpu=True, note=say):
    """The tests of a built entry, then (when they all passed and there is a GPU) its benchmark
    and the ncu re-measurement, each a sandboxed step whose results leave through the pipe."""
    binaries = os.path.join(entry, "bin")

    def step(name, command, started, results=True):
        """One sandboxed step: its output to entry/NAME.log, with `results` what it writes to
        the pipe to entry/NAME.json; its line in steps.tsv (seconds since `started`)."""
        log, json_path = os.path.join(entry, name + ".log"), os.path.join(entry, name + ".json")
        rc = run_step(box, command, log, limit, box_dir, [binaries] + list(ro), env, json_path if results else None)
        add_step(entry, name, rc, started)
        return rc

    started = time.monotonic()
    rc = step(
        "tests",
        [
            os.path.join(binaries, ch + "_tests"),
            "--gtest_color=no",
            "--gtest_fail_fast",
            "--gtest_output=json:/dev/fd/3",
        ],
        started,
    )
    if rc != 0 or not with_gpu:
        return
    note("tests finished (exit 0, %.1f s); benchmark ..." % (time.monotonic() - started))
    started = time.monotonic()
    rc = step("bench", expand_command(runner["bench"], binaries, "/dev/fd/3", data), started)
    bench = os.path.join(binaries, ch + "_bench")
    selection = ncu_selection(entry) if rc == 0 and ncu_bin and os.access(bench, os.X_OK) else None
    if not selection:
        return
    note("benchmark finished; ncu on %s ..." % " ".join(selection))
    started = time.monotonic()
    csv_path = os.path.join(box_dir, "ncu.csv")
    if os.path.exists(csv_path):
        os.remove(csv_path)
    command = [ncu_bin] + NCU_METRIC_ARGS + ["--log-file", csv_path, bench] + selection
    rc = step("ncu", command + ["--samples=10", "--json=/dev/null"], started, results=False)
    if os.path.isfile(csv_path):
        with open(csv_path, "rb") as f, open(os.path.join(entry, "ncu.csv"), "wb") as g:
            g.write(f.read(LOG_LIMIT))


def local_run(o, repo, subs, wanted, key_path_of):
    """scripts/leaderboard.sh on this machine. Returns the exit code."""
    for tool in ("cmake", "ninja", "timeout", "env", "cp"):
        if not shutil.which(tool):
            raise Refused("'%s' is needed and was not found on PATH" % tool)
    box = Sandbox(o.bwrap)
    if box.kind == "none":
        if not o.unsafe_no_sandbox:
            raise Refused(
                "refusing to rank without a sandbox: %s.\n  Install bubblewrap (sudo apt-get install "
                "bubblewrap), or unpack it with scripts/fetch-bwrap.sh and pass\n  --bwrap PATH; or pass "
                "--unsafe-no-sandbox to run the submissions with your rights (docs/leaderboard.md)." % box.problem
            )
        say("WARNING: %s; running UNSANDBOXED (--unsafe-no-sandbox): every report of this run says so" % box.problem)
    gpus = list_gpus()
    if not gpus:
        raise Refused(
            "no NVIDIA GPU is visible (nvidia-smi lists none): the leaderboard tests and times kernels on a "
            "GPU, so\n  it needs one. Without a GPU, the class folder can be checked with --check-only, "
            "and the ranking and\n  report code with: ctest -L host -R leaderboard"
        )
    wanted_gpus = o.gpus or os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if not o.gpus and wanted_gpus:
        say("note: using the GPUs in CUDA_VISIBLE_DEVICES (%s)" % wanted_gpus)
    lr = LocalRun(o, repo, subs, wanted, box, pick_gpus(gpus, wanted_gpus), key_path_of)
    return lr.run()


class LocalRun:
    def __init__(self, o, repo, subs, wanted, box, gpus, key_path_of):
        self.o, self.repo, self.wanted, self.box, self.gpus = o, repo, wanted, box, gpus
        self.arch_args, self.arch = [], o.arch
        if o.arch:
            self.arch_args = ["-DCMAKE_CUDA_ARCHITECTURES=" + o.arch]
        elif not os.environ.get("CUDAARCHS"):
            self.arch = ";".join(sorted({g[2] for g in gpus}))
            self.arch_args = ["-DCMAKE_CUDA_ARCHITECTURES=" + self.arch]
        else:
            self.arch = "%s (CUDAARCHS)" % os.environ["CUDAARCHS"]
        self.made_out = not os.path.isdir(o.out)
        os.makedirs(o.out, exist_ok=True)
        self.out, self.subs = os.path.realpath(o.out), os.path.realpath(subs)
        self.history = os.path.join(self.out, "history.jsonl")
        self.run_id, self.commit = new_run_id(), commit_of(repo)
        self.work = os.path.realpath(tempfile.mkdtemp(prefix="kernel-workbook-leaderboard."))
        # The students' files wait in a folder whose name nobody can guess (no build sees it anyway).
        self.ents = os.path.join(self.work, os.urandom(8).hex(), "entries")
        self.keep_work, self.stopping = o.keep_work, False
        try:
            self.key_file = key_path_of([self.subs, self.out, repo, self.work])
            self.key = history.load_key(self.key_file, create=True)
        except BaseException:
            self.cleanup()
            raise
        self.ncpu = os.cpu_count() or 4

    def cleanup(self):
        if not self.keep_work:
            remove_tree(self.work)
        if self.made_out and not os.listdir(self.out):
            os.rmdir(self.out)  # a run that recorded nothing leaves no output folder behind

    def run(self):
        handlers = {s: signal.signal(s, self.interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            status = self.run_all()
            if self.stopping:
                say("")
                say("leaderboard: interrupted; the submissions in flight were stopped")
                if os.path.isfile(self.history):
                    report.write_reports(self.history, self.key, self.out, self.run_id, quiet=True)
                    say("leaderboard: the results recorded so far are kept in %s" % self.history)
                status = 130
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            self.cleanup()
        return status

    def interrupted(self, signum, frame):
        self.stopping = True
        stop_all()

    def run_all(self):
        o, work = self.o, self.work
        started = time.time()
        for d in ("src", "cache", "slots", "bases", "boxes", "data", "trusted"):
            os.makedirs(os.path.join(work, d))
        for item in source_items(self.repo, [self.subs, self.out, o.shared]):
            copy_tree(os.path.join(self.repo, item), os.path.join(work, "src"))
        src = os.path.join(work, "src")
        self.runner = {ch: chapter_runner(src, ch) for ch in self.wanted}
        self.dirs = chapter_dirs(src)
        entries, top_ignored = submissions.plan(src, self.subs, os.path.dirname(self.ents), self.wanted)
        for name in top_ignored:
            say("note: ignored %s in the submissions folder (not a folder)" % name)
        self.entries = entries
        n_before = line_count(self.history)
        to_build = [e for e in entries if e["state"] == "build"]
        build_jobs = max(1, min(o.build_jobs or self.ncpu // 8, len(to_build)))
        jobs_each = max(1, self.ncpu // build_jobs)
        self.ncu = shutil.which("ncu") if not o.no_ncu else None
        self.header(len(entries), build_jobs, jobs_each, n_before)
        self.box.hide([self.repo, self.subs, self.out, work, os.path.dirname(self.key_file)])

        for ch in self.wanted:
            for k in range(build_jobs):
                if not self.stopping:
                    self.build_base(k, ch)
        say("")
        say("building %d submission(s) ..." % len(to_build))
        self.in_parallel(
            [lambda k=k: self.build_slot(k, to_build[k::build_jobs], jobs_each) for k in range(build_jobs)]
        )
        if self.stopping:
            return 130
        self.baseline()
        say("")
        say("testing and timing on %d GPU(s) ..." % len(self.gpus))
        for e in entries:
            if e["state"] != "build":
                self.record(e, 0)
        queue, lock = list(to_build), threading.Lock()

        def worker(g):
            while not self.stopping:
                with lock:
                    if not queue:
                        return
                    e = queue.pop(0)
                self.run_entry(e, g)

        self.in_parallel([lambda g=g: worker(g) for g in range(len(self.gpus))])
        if self.stopping:
            return 130

        say("")
        report.write_reports(self.history, self.key, self.out, self.run_id)
        n_after = line_count(self.history)
        say(
            "this run: %d result(s) added to the %d earlier ones (history: %d lines, never rewritten)"
            % (len(entries), n_before, n_after)
        )
        say("logs of this run: %s/runs/%s/" % (self.out, self.run_id))
        if self.box.kind == "none":
            say("WARNING: the submissions ran UNSANDBOXED (--unsafe-no-sandbox): the reports say so")
        say("wall time: %d s" % (time.time() - started))
        status = 0
        if o.expect:
            say("")
            say("checking this run against %s:" % o.expect)
            if not expect.check(self.history, self.key, self.run_id, o.expect, self.wanted if o.chapter else ()):
                status = 1
            if n_after - n_before < len(entries):
                say(
                    "MISS the history grew by %d lines, fewer than the %d results of this run"
                    % (n_after - n_before, len(entries))
                )
                status = 1
        return status

    def header(self, n_entries, build_jobs, jobs_each, n_before):
        say("kernel-workbook leaderboard, run %s (commit %s)" % (self.run_id, self.commit))
        say(
            "  submissions: %s (%d entries: %d students x chapters %s)"
            % (self.subs, n_entries, len({e["id"] for e in self.entries}), " ".join(self.wanted))
        )
        for g in self.gpus:
            say("  GPU%s: %s (%s)" % (g[0], g[3], g[1]))
        say("  CUDA architectures: %s; %d build(s) at a time, -j%d each" % (self.arch, build_jobs, jobs_each))
        say("  time limits: %s s per step, %s s per kernel" % (self.o.timeout, self.o.kernel_timeout))
        if self.box.kind == "bubblewrap":
            say(
                "  sandbox: bubblewrap, %s (no network; read-only system; the repository, the submissions, the"
                % self.box.bwrap
            )
            say(
                "           output, the history key and the other work folders are not visible; results leave "
                "through a pipe)"
            )
        else:
            say(
                "  sandbox: NONE (--unsafe-no-sandbox) -- submissions run UNSANDBOXED, with your user's rights and "
                "network"
            )
            say("           access; they can read each other's files and the history key. The reports say so.")
        say("  history key: %s" % self.key_file)
        if self.ncu:
            say("  cross-check: ncu (%s) re-measures each submission's fastest-claimed row" % self.ncu)
        else:
            say("  cross-check: no ncu re-measurement (%s)" % ("--no-ncu" if self.o.no_ncu else "ncu not found"))
        say("  results: %s (history: %d earlier results)" % (self.out, n_before))
        say("")

    def in_parallel(self, jobs):
        threads = [threading.Thread(target=job) for job in jobs]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)

    def build_base(self, k, ch):
        """The repository's own tree of a chapter for build slot k, kept aside as its snapshot."""
        live, snap = os.path.join(self.work, "slots", "%d-%s" % (k, ch)), os.path.join(
            self.work, "bases", "%d-%s" % (k, ch)
        )
        log = os.path.join(self.work, "base-%d-%s.log" % (k, ch))
        started = time.monotonic()
        say("building the repository's %s (build slot %d) ..." % (ch, k))
        os.makedirs(live)
        copy_tree(os.path.join(self.work, "src"), os.path.join(live, "src"))
        if not repository_build(
            os.path.join(live, "src"),
            os.path.join(live, "build"),
            ch,
            self.runner[ch]["build"],
            self.arch_args,
            self.commit,
            self.ncpu,
            log,
            self.work,
        ):
            if self.stopping:
                return
            with open(log, "rb") as f:
                sys.stderr.write(b"".join(f.readlines()[-20:]).decode("utf-8", "replace"))
            self.keep_work = True
            raise Refused("the repository's own %s does not build (log: %s); nothing was ranked" % (ch, log))
        copy_tree(live, snap)
        say("  done (%.1f s)" % (time.monotonic() - started))

    def build_slot(self, k, entries, jobs_each):
        for e in entries:
            if self.stopping:
                return
            ch = e["chapter"]
            live, snap = (os.path.join(self.work, d, "%d-%s" % (k, ch)) for d in ("slots", "bases"))
            remove_tree(live)
            copy_tree(snap, live)
            started = time.monotonic()
            rc = student_build(
                self.box,
                live,
                self.entry_dir(e),
                self.dirs[ch],
                self.runner[ch]["build"],
                jobs_each,
                self.o.timeout,
                [os.path.join(self.work, "cache")],
                ["WORKBOOK_GIT_COMMIT=" + self.commit],
            )
            say(
                "[build %d] %s %s: %s (%.1f s)"
                % (k, ch, e["student"], "built" if rc == 0 else "did not build", time.monotonic() - started)
            )

    def baseline(self):
        """The measured ceilings per GPU, each chapter's inputs, and the repository's own benchmark
        on each GPU: the numbers every submission's are checked against."""
        cache, data = os.path.join(self.work, "cache"), os.path.join(self.work, "data")
        for i, g in enumerate(self.gpus):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=g[1], WORKBOOK_CACHE_DIR=cache)
            program = os.path.join(self.work, "bases", "0-" + self.wanted[0], "build", "bin", "devicequery")
            if self.trusted_step(["timeout", "600", program, "--measure"], "ceilings-%d.log" % i, env, self.work):
                say("note: measuring the ceilings of GPU%s failed (see the benchmark logs)" % g[0])
        for ch in self.wanted:
            os.makedirs(os.path.join(data, ch))
            if self.runner[ch]["prepare"]:
                command = expand_command(self.runner[ch]["prepare"], self.bin_of(ch), "", os.path.join(data, ch))
                if self.trusted_step(
                    ["timeout", self.o.timeout] + command, "prepare-%s.log" % ch, os.environ, os.path.join(data, ch)
                ):
                    say("note: preparing the inputs of %s failed (log: %s/prepare-%s.log)" % (ch, self.work, ch))
        trusted = os.path.join(self.work, "trusted")
        for i, g in enumerate(self.gpus):
            env = dict(os.environ, CUDA_VISIBLE_DEVICES=g[1], WORKBOOK_CACHE_DIR=cache)
            for ch in self.wanted:
                command = expand_command(
                    self.runner[ch]["baseline"],
                    self.bin_of(ch),
                    os.path.join(trusted, "%d-%s.json" % (i, ch)),
                    os.path.join(data, ch),
                )
                log = "trusted/%d-%s.log" % (i, ch)
                if self.trusted_step(["timeout", self.o.timeout] + command, log, env, trusted):
                    say(
                        "note: the baseline run of %s on GPU%s failed: rows are checked against their own run's "
                        "ceilings" % (ch, g[0])
                    )
        subprocess.run(["chmod", "-R", "a-w", cache, data])

    def trusted_step(self, argv, log, env, cwd):
        """One of the repository's own programs, not sandboxed; its exit code."""
        with open(os.path.join(self.work, log), "wb") as f:
            return subprocess.run(
                argv, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd
            ).returncode

    def bin_of(self, ch):
        return os.path.join(self.work, "bases", "0-" + ch, "build", "bin")

    def entry_dir(self, e):
        return os.path.join(self.ents, e["id"], e["chapter"])

    def run_entry(self, e, g):
        entry, ch = self.entry_dir(e), e["chapter"]
        label = "[GPU%s] %s %s: " % (self.gpus[g][0], ch, e["student"])
        if os.access(os.path.join(entry, "bin", ch + "_tests"), os.X_OK):
            box_dir = os.path.join(self.work, "boxes", "%s-%s" % (e["id"], ch))
            os.makedirs(box_dir)
            # The seed is drawn by the harness itself after main starts (WORKBOOK_SEED_MODE=secret)
            # and printed at the end; nothing the process can read before main holds it.
            env = [
                "CUDA_VISIBLE_DEVICES=" + self.gpus[g][1],
                "CUDA_DEVICE_ORDER=PCI_BUS_ID",
                "WORKBOOK_CACHE_DIR=" + os.path.join(self.work, "cache"),
                "WORKBOOK_KERNEL_TIMEOUT=" + self.o.kernel_timeout,
                "WORKBOOK_SEED_MODE=secret",
                "WORKBOOK_GIT_COMMIT=" + self.commit,
            ]
            say(label + "tests ...")
            test_and_time(
                self.box,
                entry,
                ch,
                self.runner[ch],
                box_dir,
                self.o.timeout,
                env,
                [os.path.join(self.work, "cache"), os.path.join(self.work, "data", ch)],
                os.path.join(self.work, "data", ch),
                self.ncu or "",
                note=lambda t: say(label + t),
            )
            remove_tree(box_dir)
        if not self.stopping:
            self.record(e, g)

    def record(self, e, g):
        entry, ch = self.entry_dir(e), e["chapter"]
        logs = "runs/%s/%s/%s" % (self.run_id, e["id"], ch)

        def keep(tmp):
            for name in KEPT_FILES:
                if os.path.isfile(os.path.join(entry, name)):
                    shutil.copyfile(os.path.join(entry, name), os.path.join(tmp, name))

        try:
            publish_folder(os.path.join(self.out, logs), keep)
            trusted = history.read_trusted(os.path.join(self.work, "trusted", "%d-%s.json" % (g, ch)))
            verdict = history.record_entry(
                self.history,
                self.key,
                entry,
                self.run_id,
                self.gpus[g][3],
                self.gpus[g][1],
                self.box.kind,
                self.commit,
                logs,
                trusted,
            )
        except (OSError, ValueError) as err:
            verdict = "could not record: %s" % err
        say("[GPU%s] %s %s: %s" % (self.gpus[g][0], ch, e["student"], verdict))


def line_count(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0
