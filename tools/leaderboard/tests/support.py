"""What the leaderboard's unit tests share: where the repository is, the recorded results (made
once per test process from tests/leaderboard/results/), a private history key, output captured,
an entry recorded into a history.

Each test_<module>.py tests one module of wb_leaderboard, without a GPU; ctest runs each one
(tools/leaderboard/CMakeLists.txt, label host), or by hand:
  python3 tools/leaderboard/tests/test_history.py
"""

import atexit
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile

TESTS = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.dirname(TESTS)
REPO = os.path.dirname(os.path.dirname(TOOL))
sys.path.insert(0, TOOL)

from wb_leaderboard import classes, history, recorded  # noqa: E402

LB_TESTS = os.path.join(REPO, "tests", "leaderboard")
RECORDED = recorded.RESULTS_DIR  # the base entries, the table of changes, the expected reasons, the baselines
RESULTS_EXPECT = os.path.join(RECORDED, "expected.json")  # the reason each recorded entry gets
TRUSTED = os.path.join(RECORDED, "trusted-ch01.json")  # a baseline of schema 2 (older, still read)
TRUSTED_V3 = os.path.join(RECORDED, "trusted-ch01-v3.json")  # the same baseline as the benchmark writes it now
DECODER = os.path.join(LB_TESTS, "decoder")
FIXTURE_EXPECT = os.path.join(LB_TESTS, "fixture-expected.json")
HOSTILE_EXPECT = os.path.join(LB_TESTS, "hostile-expected.json")
SCRIPT = os.path.join(REPO, "scripts", "leaderboard.sh")


def temp_folder(test):
    """A new temporary folder, removed when the test `test` ends."""
    path = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, path)
    return path


_made = {}


def made_folder():
    """A temporary folder for what is made once per test process, removed at its end."""
    if None not in _made:
        _made[None] = tempfile.mkdtemp(prefix="wb-made-")
        atexit.register(shutil.rmtree, _made[None], True)
    return _made[None]


def made_class(klass):
    """The folder of the repository's class `klass` (fixture or hostile), made once per test
    process from tests/leaderboard/classes/ and removed at its end."""
    if klass not in _made:
        _made[klass] = classes.make_class(klass, os.path.join(made_folder(), klass))
    return _made[klass]


def made_results():
    """The folder of the recorded entries (one per case of tests/leaderboard/results/changes.py),
    made once per test process and removed at its end."""
    if "results" not in _made:
        _made["results"] = recorded.make_results(os.path.join(made_folder(), "results"))
    return _made["results"]


def result(name):
    """The recorded entry `name`'s folder."""
    return os.path.join(made_results(), name)


def fingerprint(folder):
    """SHA-256 over (path, bytes) of every file in the folder, in path order."""
    h = hashlib.sha256()
    for dirpath, dirs, names in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(dirpath, name)
            h.update(os.path.relpath(path, folder).encode() + b"\0")
            with open(path, "rb") as f:
                h.update(f.read() + b"\0")
    return h.hexdigest()


def trusted(path=TRUSTED):
    with open(path) as f:
        return json.load(f)


def decoder_text(name):
    with open(os.path.join(DECODER, name)) as f:
        return f.read()


def result_entries():
    """The names of the recorded entries."""
    return sorted(os.listdir(made_results()))


def make_key(folder, name="leaderboard.key", text="ab" * 32):
    """A private key file in folder/keys/; its path."""
    path = os.path.join(folder, "keys", name)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text + "\n")
    return path


def captured(fn, *args, **kwargs):
    """(what fn returned, its stdout, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        value = fn(*args, **kwargs)
    return value, out.getvalue(), err.getvalue()


def record(history_path, key_path, entry, run_id, gpu="NVIDIA H100 80GB HBM3", sandbox="bubblewrap"):
    """Records one entry folder as a local run does (against the recorded baseline); the verdict line."""
    key = history.load_key(key_path, create=True)
    return history.record_entry(history_path, key, entry, run_id, gpu, "GPU-x", sandbox, "test", "", trusted=trusted())


# A toolchain that plays the GPU machine: nvidia-smi lists one GPU, and cmake "builds" programs
# that behave as markers in a student's files say ("FAKE: <behaviour>"): compile-error, crash,
# hang, wrong, slow, cached, forge (a second results document). Enough to run the leaderboard
# end to end without a GPU or a compiler. (sleep: its tests take two minutes.)
FAKE_CMAKE = r"""import json, os, re, sys
args = sys.argv[1:]
if args[0] != "--build":
    build = args[args.index("-B") + 1]
    os.makedirs(os.path.join(build, "bin"), exist_ok=True)
    ch = [a.split("=", 1)[1] for a in args if a.startswith("-DWORKBOOK_CHAPTERS=")][0]
    with open(os.path.join(build, "fake.json"), "w") as f:
        json.dump({"src": args[args.index("-S") + 1], "chapter": ch}, f)
    print("-- configured %s" % ch)
    sys.exit(0)
build = args[1]
targets = args[args.index("--target") + 1:]
with open(os.path.join(build, "fake.json")) as f:
    cfg = json.load(f)
chapters = os.path.join(cfg["src"], "chapters")
folder = os.path.join(chapters, [d for d in os.listdir(chapters) if d.startswith(cfg["chapter"] + "_")][0])
marks = set()
for name in sorted(os.listdir(folder)):
    if name.startswith("ex") and name.endswith(".cu"):
        for n, line in enumerate(open(os.path.join(folder, name)), 1):
            m = re.search(r"FAKE: ([a-z-]+)", line)
            if m and m.group(1) == "compile-error":
                print("%s(%d): error: identifier \"offset\" is undefined" % (os.path.join(folder, name), n))
                sys.exit(1)
            if m:
                marks.add(m.group(1))
for t in targets:
    kind = "tests" if t.endswith("_tests") else "bench" if t.endswith("_bench") else "other"
    path = os.path.join(build, "bin", t)
    with open(path, "w") as f:
        f.write("#!%s\nKIND, MARKS = %r, %r\n" % (sys.executable, kind, sorted(marks)))
        f.write(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake-program")).read())
    os.chmod(path, 0o755)
print("[%d/%d] built %s" % (len(targets), len(targets), " ".join(targets)))
"""

FAKE_PROGRAM = r"""import json, os, sys, time
args = sys.argv[1:]
if KIND == "other":
    sys.exit(0)
if KIND == "tests":
    out = [a.split("json:", 1)[1] for a in args if a.startswith("--gtest_output=json:")][0]
    cases, failed = [], False
    for suite, test in (("Sizes/Ch01VectorAdd", "MatchesFloat64/student_n1"),
                        ("Matrices/Ch01MatrixAdd", "MatchesFloat64/student_r2_c3")):
        name = suite + "." + test
        print("[ RUN      ] " + name, flush=True)
        if "crash" in MARKS:
            os.kill(os.getpid(), 11)
        if "hang" in MARKS:
            sys.exit(124)
        if "sleep" in MARKS:
            time.sleep(120)
        code = "wrong" if "wrong" in MARKS and suite.startswith("Matrices") else "pass"
        failed = failed or code != "pass"
        print("[       OK ] %s (1 ms)" % name)
        cases.append({"name": test, "classname": suite, "outcome": code, "result": "COMPLETED"})
    with open(out, "w") as f:
        json.dump({"testsuites": [{"name": "all", "testsuite": cases}]}, f)
    print("kernel-workbook: seed 4242")
    sys.exit(1 if failed else 0)
impl = [a.split("=", 1)[1] for a in args if a.startswith("--impl=")][0].split(",")
out = [a.split("=", 1)[1] for a in args if a.startswith("--json=")][0]
rows, runs = [], []
for n, ref_us in ((1 << 20, 100.0), (1 << 24, 1000.0)):
    for role in [r for r in ("reference", "student") if r in impl]:
        us = ref_us * (5.0 if "slow" in MARKS else 0.9) if role == "student" else ref_us
        name = "vector_add/n%d/%s" % (n, "cublas_geam" if role == "reference" else role)
        rows.append({"op": "vector_add", "shape": "n=%d" % n, "impl": "cublas_geam" if role == "reference" else role,
                     "role": role, "benchmark": name, "bytes": 12.0 * n, "flops": float(n), "peak": "fp32",
                     "outcome": "cached" if role == "student" and "cached" in MARKS else "pass", "median_us": us,
                     "repetitions": 5, "samples": 50, "gbps": 12.0 * n / (us * 1e3), "tflops": n / (us * 1e6)})
        runs.append({"name": name + "/manual_time_median", "run_name": name + "/manual_time",
                     "run_type": "aggregate", "aggregate_name": "median", "repetitions": 5, "threads": 1,
                     "iterations": 5, "real_time": us, "cpu_time": us, "time_unit": "us"})
# The benchmark's results file (schema 3): Google Benchmark's context and runs, the rows beside them.
doc = {"schema_version": 3, "program": "ch01_bench", "kind": "benchmark", "date": "2026-11-28T10:00:00",
       "commit": "abc1234", "chapter": "ch01", "title": "thread indexing", "seed": 4343,
       "device": {"name": "Fake GPU 80GB"}, "spec_ceilings": {"dram_gbps": 3352.0, "fp32_tflops": 66.9},
       "measured_ceilings": {"copy_gbps": 3000.0}, "timing": {"repetitions": 5, "statistic": "median"},
       "context": {"host_name": "fake", "num_cpus": 2}, "benchmarks": runs, "results": rows}
with open(out, "w") as f:
    f.write(json.dumps(doc) + ("\n" + json.dumps(doc) if "forge" in MARKS else ""))
print("kernel-workbook: seed 4343")
"""


def fake_toolchain(folder):
    """A bin folder with nvidia-smi and cmake that play a GPU machine (see FAKE_CMAKE); its path.
    The programs run with this very Python."""
    bin_dir = os.path.join(folder, "fake-bin")
    os.makedirs(bin_dir)
    files = {
        "cmake": "#!%s\n" % sys.executable + FAKE_CMAKE,
        "fake-program": FAKE_PROGRAM,
        "nvidia-smi": "#!/bin/sh\necho '0, GPU-00000000-fake, 9.0, Fake GPU 80GB'\n",
        "ninja": "#!/bin/sh\nexit 0\n",
    }
    for name, text in files.items():
        with open(os.path.join(bin_dir, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(bin_dir, name), 0o755)
    return bin_dir


def fake_class(folder, students):
    """A class of chapter 1 submissions: {student: marker or None}; each student has the plain
    kernels, the marker (FAKE: ...) in its exercise 1, or no chapter folder when marker is ''."""
    plain = os.path.join(classes.CLASSES_DIR, "base", "plain", "ch01")
    for student, marker in students.items():
        d = os.path.join(folder, student, "ch01")
        os.makedirs(d if marker != "" else os.path.join(folder, student))
        if marker == "":
            continue
        for name in os.listdir(plain):
            shutil.copy(os.path.join(plain, name), d)
        if marker:
            with open(os.path.join(d, "ex1_vector_add.cu"), "a") as f:
                f.write("// FAKE: %s\n" % marker)
    return folder


FAKE_SLURM = {
    # sbatch: keeps its arguments, answers the next job id (from 77 on).
    "sbatch": '#!/bin/sh\nd=$(dirname "$0")\nn=$(cat "$d/next" 2>/dev/null || echo 77)\n'
    'printf "%s\\n" "$@" > "$d/sbatch.$n.args"\necho $((n + 1)) > "$d/next"\n'
    '[ -f "$d/sbatch.refuses" ] && { echo "sbatch: error: Invalid partition" >&2; exit 1; }\n'
    'echo "$n;cluster"\n',
    # sacct: the states the test wrote into sacct.out; scontrol: knows nothing.
    "sacct": '#!/bin/sh\ncat "$(dirname "$0")/sacct.out" 2>/dev/null\nexit 0\n',
    "scontrol": "#!/bin/sh\nexit 1\n",
    "squeue": "#!/bin/sh\nexit 0\n",
}


def fake_slurm(bin_dir):
    """sbatch, sacct, scontrol and squeue in bin_dir (see FAKE_SLURM)."""
    for name, text in FAKE_SLURM.items():
        with open(os.path.join(bin_dir, name), "w") as f:
            f.write(text)
        os.chmod(os.path.join(bin_dir, name), 0o755)


def run_job(run_dir, task, array, env=None):
    """What Slurm does on a node: tools/leaderboard/slurm-job.sh RUN for one task of an array.
    (exit code, output)."""
    import subprocess

    p = subprocess.run(
        [os.path.join(TOOL, "slurm-job.sh"), run_dir],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(
            env or os.environ, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_JOB_ID=str(array), SLURM_CPUS_PER_TASK="2"
        ),
    )
    return p.returncode, p.stdout + p.stderr


def fake_machine(test):
    """Sets a unittest.TestCase up to run the leaderboard on a machine that plays a GPU machine
    and a Slurm login node: test.tmp (removed after), test.bin (the fake programs, outside /tmp,
    which the sandbox replaces), PATH with them first, TMPDIR in test.tmp (test.work_parent),
    and a private key (test.key)."""
    test.tmp = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, test.tmp)
    # The sandbox gives every step a /tmp of its own: a toolchain it must see lives elsewhere.
    tools = tempfile.mkdtemp(dir="/var/tmp") if os.access("/var/tmp", os.W_OK) else test.tmp
    test.addCleanup(shutil.rmtree, tools, True)
    test.bin = fake_toolchain(tools)
    fake_slurm(test.bin)
    test.key = make_key(test.tmp)
    test.work_parent = os.path.join(test.tmp, "tmp")
    os.makedirs(test.work_parent)
    names = ("PATH", "TMPDIR", "CUDA_VISIBLE_DEVICES", "CUDAARCHS", "LEADERBOARD_POLL_S")
    saved = {k: os.environ.get(k) for k in names}

    def restore():
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        tempfile.tempdir = None

    test.addCleanup(restore)
    os.environ["PATH"] = test.bin + os.pathsep + os.environ["PATH"]
    os.environ["TMPDIR"] = test.work_parent
    os.environ["LEADERBOARD_POLL_S"] = "0.1"
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    tempfile.tempdir = None  # TMPDIR is read again
