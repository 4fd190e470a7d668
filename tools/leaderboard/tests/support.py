"""What the leaderboard's unit tests share: where the repository and the recorded results are,
a private history key, output captured, an entry recorded into a history.

Each test_<module>.py tests one module of wb_leaderboard, without a GPU; ctest runs each one
(tools/leaderboard/CMakeLists.txt, label host), or by hand:
  python3 tools/leaderboard/tests/test_history.py
"""

import atexit
import contextlib
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

from wb_leaderboard import classes, history  # noqa: E402

LB_TESTS = os.path.join(REPO, "tests", "leaderboard")
RESULTS = os.path.join(LB_TESTS, "results")
TRUSTED = os.path.join(RESULTS, "trusted-ch01.json")
DECODER = os.path.join(LB_TESTS, "decoder")
FIXTURE_EXPECT = os.path.join(LB_TESTS, "fixture-expected.json")
HOSTILE_EXPECT = os.path.join(LB_TESTS, "hostile-expected.json")
SCRIPT = os.path.join(REPO, "scripts", "leaderboard.sh")


_made = {}


def made_class(klass):
    """The folder of the repository's class `klass` (fixture or hostile), made once per test
    process from tests/leaderboard/classes/ and removed at its end."""
    if klass not in _made:
        if not _made:
            _made[None] = tempfile.mkdtemp(prefix="wb-classes-")
            atexit.register(shutil.rmtree, _made[None], True)
        _made[klass] = classes.make_class(klass, os.path.join(_made[None], klass))
    return _made[klass]


def trusted():
    with open(TRUSTED) as f:
        return json.load(f)


def decoder_text(name):
    with open(os.path.join(DECODER, name)) as f:
        return f.read()


def result_entries():
    """The names of the recorded entries in tests/leaderboard/results/."""
    return sorted(n for n in os.listdir(RESULTS) if os.path.isdir(os.path.join(RESULTS, n)))


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
    return history.record_entry(history_path, key, entry, run_id, gpu, "GPU-x", sandbox, "test", "",
                                trusted=trusted())
