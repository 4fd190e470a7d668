"""The command line (scripts/leaderboard.sh runs `python3 -m wb_leaderboard`): the options, their
checks, and the mode they ask for. Every bad input is refused before anything is made or any
GPU is looked for, with what is wrong and how to fix it: exit code 2 for the command line
itself, 1 for what it names (a folder, a run, the sandbox, the GPUs).
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

from . import chapters, classes, history, run, slurm, submissions
from .repository import REPO, Refused, inside, sources_guard

ME = "leaderboard"

HELP = """\
usage: scripts/leaderboard.sh [options] SUBMISSIONS_DIR
       scripts/leaderboard.sh --fixture [options]   the repository's fixture class, chapters 1-9 (needs a GPU)
       scripts/leaderboard.sh --hostile [options]   the repository's hostile class (needs a GPU)
       scripts/leaderboard.sh --check-only [options] SUBMISSIONS_DIR   the folder's layout only (no GPU)

The class leaderboard: builds each student's kernels in a fresh copy of the repository, runs the
chapter's full tests with a secret seed, then the chapter's benchmark, each step sandboxed and
under its own time limit, cross-checks the numbers, and ranks the correct submissions per
chapter and per GPU. See docs/leaderboard.md for the submission layout, the ranking, the sandbox
and the fairness rules.

  --chapter chNN       a chapter to run (repeat it, or give a comma-separated list);
                       default: every chapter some student has a chNN folder for
  --check-only         check the class folder's layout and say what each student submitted,
                       then stop: no build, no GPU, nothing written
  --timeout S          time limit of each step of one submission (build, tests, benchmark),
                       in seconds (default 900; fixture 300)
  --kernel-timeout S   one kernel running longer than this counts as hung (default 60; fixture 5)
  --out DIR            history and reports (default results/leaderboard;
                       fixture results/leaderboard-fixture)
  --arch LIST          CUDA architectures to build for, e.g. "90" or "80;90"
                       (default: CUDAARCHS if set, else those of the GPUs used)
  --gpus LIST          GPUs to use, nvidia-smi indices or UUIDs, comma-separated (default: all,
                       or those in CUDA_VISIBLE_DEVICES); one submission runs per GPU at a time
  --build-jobs N       submissions built at the same time (default: one per 8 CPU cores)
  --bwrap PATH         the bubblewrap program to use (default: bwrap on PATH); see
                       scripts/fetch-bwrap.sh for machines where it is not installed
  --unsafe-no-sandbox  rank even without a working sandbox: submissions then run with your
                       rights and can read each other's files; every report says so
  --key FILE           the key that signs the history (default
                       ~/.config/kernel-workbook/leaderboard.key, made on first use);
                       keep it outside the submissions, output and repository folders
  --expect FILE        after the run, compare it with an expected outcome (JSON, as
                       tests/leaderboard/*-expected.json); exit code 1 on a difference
  --no-ncu             skip the Nsight Compute re-measurement even where ncu is installed
  --keep-work          keep the work folder (build trees, binaries) after the run
  --verify             check every line of the history in --out with the key, then stop
                       (exit code 1 if a line fails)
  -h, --help           this text

On a Slurm cluster (docs/leaderboard.md, "Running on a cluster"):
  scripts/leaderboard.sh --slurm [options] SUBMISSIONS_DIR   one job per student and chapter
  scripts/leaderboard.sh --collect RUN_ID [--wait]           merge the finished jobs, report
  scripts/leaderboard.sh --rerun JOB [--wait]                run one job again (JOB as 57_3)
  scripts/leaderboard.sh --status RUN_ID                     each task's job, state and record

  --shared DIR         the run folders, on a file system every node sees at the same path
                       (default: OUT/cluster)
  --partition P        passed to sbatch, as are --account A, --time T (Slurm's formats, e.g.
  --account A          30 or 1:00:00; a job that runs longer is listed as "job time limit")
  --time T             and --cpus-per-task N (default 4: the build's parallelism)
  --gres G             the GPU each job asks for (default gpu:1; "none": ask for none)
  --cpus-per-task N
  --wait               after submitting, wait for the jobs, then collect
"""

VALUE_OPTIONS = (
    "chapter",
    "timeout",
    "kernel-timeout",
    "out",
    "arch",
    "gpus",
    "build-jobs",
    "bwrap",
    "key",
    "expect",
    "collect",
    "rerun",
    "status",
    "shared",
    "partition",
    "account",
    "time",
    "gres",
    "cpus-per-task",
)
FLAGS = ("unsafe-no-sandbox", "no-ncu", "keep-work", "slurm", "wait", "fixture", "hostile", "check-only", "verify")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.,-]*$")
TIME_RE = re.compile(r"^([0-9]+-)?[0-9]+(:[0-9]+){0,2}$")
GRES_RE = re.compile(r"^(none|[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*(,[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*)*)$")
ARCH_RE = re.compile(r"^[0-9a-z;, -]+$")
NUMBER_RE = re.compile(r"^([0-9]+([.][0-9]*)?|[.][0-9]+)$")


class UsageError(Exception):
    """A bad command line: exit code 2, with a pointer to --help."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        m = re.match(r"unrecognized arguments: (\S+)", message)
        if m:
            raise UsageError("unknown option '%s'" % m.group(1))
        m = re.match(r"argument (--[a-z-]+)(/[^:]*)?: expected one argument", message)
        if m:
            raise UsageError("%s needs a value" % m.group(1))
        raise UsageError(message)


def joined(argv):
    """`--option value` as `--option=value`: an option's value is the next argument, whatever
    it looks like (a value that starts with a dash is then refused for its form, not taken
    for an option)."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return out + argv[i:]
        if a[2:] in VALUE_OPTIONS and a.startswith("--") and i + 1 < len(argv):
            out.append(a + "=" + argv[i + 1])
            i += 2
        else:
            out.append(a)
            i += 1
    return out


def parse(argv):
    """The options as a namespace (dashes as underscores), SUBMISSIONS_DIR as `subs`."""
    if any(a == "--no-sandbox" for a in argv):
        raise UsageError("--no-sandbox is now --unsafe-no-sandbox (docs/leaderboard.md, section Sandbox)")
    p = _Parser(prog="scripts/leaderboard.sh", add_help=False, allow_abbrev=False)
    for name in VALUE_OPTIONS:
        p.add_argument("--" + name, action="append" if name in ("chapter", "rerun") else "store")
    for name in FLAGS:
        p.add_argument("--" + name, action="store_true")
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("subs", nargs="*")
    o = p.parse_args(joined(argv))
    for name in VALUE_OPTIONS:
        values = getattr(o, name.replace("-", "_"))
        for v in values if isinstance(values, list) else [values]:
            if v is not None and not v:
                raise UsageError("--%s needs a value" % name)
    if len(o.subs) > 1:
        raise UsageError("one SUBMISSIONS_DIR only (got '%s' and '%s')" % tuple(o.subs[:2]))
    o.subs = o.subs[0] if o.subs else None
    o.chapter = [c for text in o.chapter or [] for c in text.split(",")]
    o.rerun = o.rerun or []
    return o


def positive(text, option):
    if not NUMBER_RE.match(text) or not float(text) > 0:
        raise UsageError("%s must be a positive number of seconds, not '%s'" % (option, text))
    return text


def count(text, option):
    if not re.match(r"^[0-9]+$", text) or int(text) <= 0:
        raise UsageError("%s must be a whole number above 0, not '%s'" % (option, text))
    return int(text)


def check_options(o):
    """The options' forms and combinations, in the order the leaderboard always checked them."""
    if o.fixture and o.hostile:
        raise UsageError("--fixture and --hostile: one class at a time")
    cluster_modes = sum(bool(x) for x in (o.slurm, o.collect, o.rerun, o.status))
    if cluster_modes > 1:
        raise UsageError("--slurm, --collect, --rerun and --status: one at a time")
    if not cluster_modes:
        for name in ("shared", "partition", "account", "time", "gres"):
            if getattr(o, name):
                raise UsageError("--%s is an option of --slurm, --collect and --rerun" % name)
        if o.wait:
            raise UsageError("--wait is an option of --slurm, --collect and --rerun")
    if o.partition and not NAME_RE.match(o.partition):
        raise UsageError("--partition: '%s' is not a partition name" % o.partition)
    if o.account and not NAME_RE.match(o.account):
        raise UsageError("--account: '%s' is not an account name" % o.account)
    if o.time and not TIME_RE.match(o.time):
        raise UsageError("--time: '%s' is not a Slurm time (minutes, MM:SS, HH:MM:SS or D-HH:MM:SS)" % o.time)
    if o.gres and not GRES_RE.match(o.gres):
        raise UsageError("--gres: '%s' is not a generic resource such as gpu:1 or gpu:h100:1 (or none)" % o.gres)
    o.cpus_per_task = count(o.cpus_per_task or "4", "--cpus-per-task")
    for run_id in (o.collect, o.status):
        if run_id and not history.RUN_ID_RE.match(run_id):
            raise UsageError("--%s: '%s' is not a run id" % ("collect" if run_id == o.collect else "status", run_id))
    for job in o.rerun:
        if not re.match(r"^[0-9]+_[0-9]+$", job):
            raise UsageError("--rerun: '%s' is not a job of an array, such as 57_3 (see --collect's list)" % job)
    if o.check_only and (o.collect or o.rerun or o.status or o.verify):
        raise UsageError("--check-only checks a class folder: not with --collect, --rerun, --status or --verify")
    if o.verify and cluster_modes:
        raise UsageError("--verify checks the history in --out: not with --slurm, --collect, --rerun or --status")
    klass = "fixture" if o.fixture else "hostile" if o.hostile else None
    if klass:
        if o.subs:
            raise UsageError("--%s runs the repository's %s class: give no SUBMISSIONS_DIR" % (klass, klass))
        o.timeout = o.timeout or "300"
        o.kernel_timeout = o.kernel_timeout or "5"
        o.out = o.out or os.path.join(REPO, "results", "leaderboard-" + klass)
        o.expect = o.expect or os.path.join(REPO, "tests", "leaderboard", klass + "-expected.json")
    o.klass = klass
    o.timeout = positive(o.timeout or "900", "--timeout")
    o.out = o.out or os.path.join(REPO, "results", "leaderboard")
    if o.kernel_timeout is None:
        o.kernel_timeout = "%g" % min(60.0, max(1.0, float(o.timeout) / 3))
    positive(o.kernel_timeout, "--kernel-timeout")
    o.build_jobs = count(o.build_jobs, "--build-jobs") if o.build_jobs else None
    if o.arch and not ARCH_RE.match(o.arch):
        raise UsageError("--arch: '%s' is not a list of CUDA architectures" % o.arch)
    o.arch = (o.arch or "").replace(",", ";")
    if o.expect and not os.path.isfile(o.expect):
        raise UsageError("--expect: '%s' is not a file" % o.expect)
    if (o.collect or o.rerun or o.status or o.verify) and o.subs:
        raise UsageError("--collect, --rerun, --status and --verify work on what a run left: give no SUBMISSIONS_DIR")


def wanted_chapters(o, subs):
    """The chapters to run: those asked for (each must exist and be ready), or those some
    student has a folder for (a chapter that cannot be ranked yet is skipped with a note)."""
    dirs = chapters.chapter_dirs(REPO)
    wanted = []
    for ch in o.chapter:
        if not re.match(r"^ch[0-9][0-9]$", ch) or ch not in dirs:
            raise UsageError("unknown chapter '%s' (chapters present: %s)" % (ch, " ".join(sorted(dirs))))
        if not chapters.chapter_ready(REPO, ch):
            raise UsageError("chapter %s has no spec.cu (nor tests.cu and bench.cu) yet, so it cannot be ranked" % ch)
        wanted.append(ch)
    if not wanted:
        for ch in submissions.submitted_chapters(REPO, subs):
            if chapters.chapter_ready(REPO, ch):
                wanted.append(ch)
            else:
                print("note: %s is skipped: the chapter has no spec.cu yet" % ch)
    for ch in wanted:
        try:
            chapters.chapter_runner(REPO, ch)
        except ValueError as e:
            raise Refused("%s cannot be ranked: %s" % (ch, e))
    return wanted


def key_path(o, outside, create=True):
    """The history key's path; its folder is made (0700) unless `create` is false, and must lie
    outside `outside`."""
    path = o.key or history.default_key_path()
    folder = os.path.dirname(os.path.abspath(path))
    try:
        if create:
            os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError as e:
        raise Refused("cannot create the folder of the history key '%s' (%s)" % (path, e.strerror))
    folder = os.path.realpath(folder)
    for p in outside:
        if p and inside(folder, p):
            raise Refused("--key: the history key must live outside '%s'" % os.path.realpath(p))
    return os.path.join(folder, os.path.basename(path))


def class_folder(o, tmp):
    """The submissions folder: the one given, or the repository's class made in `tmp`."""
    if o.klass:
        return classes.make_class(o.klass, os.path.join(tmp, o.klass + "-class"))
    if not o.subs:
        raise UsageError("give the SUBMISSIONS_DIR: a folder with one folder per student (see docs/leaderboard.md)")
    if not os.path.isdir(o.subs):
        raise UsageError(
            "SUBMISSIONS_DIR '%s' is not a folder: give the class's folder, which holds one folder "
            "per student" % o.subs
        )
    return o.subs


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        o = parse(argv)
        if o.help:
            print(HELP, end="")
            return 0
        check_options(o)
        return dispatch(o)
    except UsageError as e:
        print("%s: %s\nrun 'scripts/leaderboard.sh --help' for the options" % (ME, e), file=sys.stderr)
        return 2
    except (Refused, history.KeyProblem, classes.TableProblem) as e:
        print("%s: %s" % (ME, e), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("%s: interrupted" % ME, file=sys.stderr)
        return 130


def dispatch(o):
    if o.verify:
        path = os.path.join(o.out, "history.jsonl")
        if not os.path.isfile(path):
            raise Refused("no history in '%s': give the --out folder of a run" % o.out)
        return 0 if history.verify(path, history.load_key(key_path(o, [REPO], create=False))) else 1
    if o.collect or o.rerun or o.status:
        return slurm.cluster_mode(o, REPO, lambda outside: key_path(o, outside))
    tmp = tempfile.mkdtemp(prefix="kernel-workbook-class.") if o.klass else None
    try:
        subs = class_folder(o, tmp)
        wanted = wanted_chapters(o, subs)
        sources_guard(REPO, [subs, o.out, o.shared])
        layout = submissions.layout(REPO, subs, wanted)
        submissions.print_layout(layout, subs, wanted, full=o.check_only)
        if not layout["entries"]:
            raise Refused(layout["empty"])
        if o.check_only:
            return 0
        if o.slurm:
            return slurm.submit_mode(o, REPO, subs, wanted, lambda outside: key_path(o, outside))
        return run.local_run(o, REPO, subs, wanted, lambda outside: key_path(o, outside))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
