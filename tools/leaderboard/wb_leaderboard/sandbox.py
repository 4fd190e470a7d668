"""Running one step of a submission (its build, tests, benchmark or ncu run): under a time limit
(`timeout -k 10`, exit code 124 when it is reached), with a clean environment, in bubblewrap
where it sees the whole file system read-only but for its own folder, with the leaderboard's
folders and the usual secret places of the home hidden, and its output capped. The test and
benchmark programs write their results to their file descriptor 3: the write end of a pipe
whose contents land in a file the step cannot see. docs/leaderboard.md, "Sandbox" and "How
results reach the leaderboard".
"""

import os
import selectors
import shutil
import signal
import subprocess
import threading
import time

LOG_LIMIT = 32 << 20  # bytes kept of a step's output, and of its results
HOLD_S = 60  # how long after its time limit a step's pipes are still read
KILL_AFTER_S = 10  # how long after the time limit's TERM a step is killed
SECRET_FOLDERS = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/kernel-workbook",
    ".kube",
    ".docker",
    ".password-store",
)
SECRET_FILES = (".netrc", ".git-credentials", ".pgpass")


class Sandbox:
    """bubblewrap, when it works here; else none (only with --unsafe-no-sandbox)."""

    def __init__(self, bwrap_arg=""):
        self.kind, self.bwrap, self.problem = "none", "", ""
        if bwrap_arg:
            if os.path.isfile(bwrap_arg) and os.access(bwrap_arg, os.X_OK):
                self.bwrap = os.path.realpath(bwrap_arg)
            else:
                self.problem = "--bwrap: '%s' is not an executable file" % bwrap_arg
        elif shutil.which("bwrap"):
            self.bwrap = shutil.which("bwrap")
        else:
            self.problem = "bubblewrap (bwrap) is not installed"
        if self.bwrap:
            try:
                p = subprocess.run(
                    [
                        self.bwrap,
                        "--unshare-all",
                        "--die-with-parent",
                        "--ro-bind",
                        "/",
                        "/",
                        "--dev",
                        "/dev",
                        "--proc",
                        "/proc",
                        "--tmpfs",
                        "/tmp",
                        "true",
                    ],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                ok, err = p.returncode == 0, (p.stderr or p.stdout).strip()
            except (OSError, subprocess.SubprocessError) as e:
                ok, err = False, str(e)
            if ok:
                self.kind = "bubblewrap"
            else:
                self.problem = "%s cannot start a sandbox here: %s" % (self.bwrap, err or "no message")
        self.hidden, self.devices = [], []

    def hide(self, folders):
        """Folders no step may see (an empty folder in their place), with the secret places of
        the home; and the GPU device nodes a step may use."""
        self.hidden = []
        for p in folders:
            if p and os.path.isdir(p):
                self.hidden += ["--tmpfs", p]
        home = os.environ.get("HOME", "")
        if home and home != "/":
            for s in SECRET_FOLDERS:
                if os.path.isdir(os.path.join(home, s)):
                    self.hidden += ["--tmpfs", os.path.join(home, s)]
            for s in SECRET_FILES:
                if os.path.isfile(os.path.join(home, s)):
                    self.hidden += ["--ro-bind", "/dev/null", os.path.join(home, s)]
        self.devices = []
        for name in sorted(os.listdir("/dev")):
            if name.startswith("nvidia"):
                self.devices += ["--dev-bind", "/dev/" + name, "/dev/" + name]

    def argv(self, command, limit, rw, ro=(), env=()):
        """The command line of a step: it runs in `rw`, may write only there (sandboxed), sees
        the folders `ro` read-only and has a clean environment plus `env` (NAME=VALUE)."""
        envs = [
            "PATH=" + os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME=" + os.path.join(rw, "home"),
            "TMPDIR=" + os.path.join(rw, "tmp"),
            "LANG=C.UTF-8",
            "LC_ALL=C.UTF-8",
        ] + list(env)
        for name in ("LD_LIBRARY_PATH", "CUDAARCHS"):
            if os.environ.get(name):
                envs.append("%s=%s" % (name, os.environ[name]))
        limited = ["timeout", "-k", str(KILL_AFTER_S), str(limit), "env", "-i"]
        if self.kind != "bubblewrap":
            return limited + ["--chdir=" + rw] + envs + list(command)
        binds = []
        for d in ro:
            binds += ["--ro-bind", d, d]
        return (
            limited
            + envs
            + [
                self.bwrap,
                "--unshare-all",
                "--die-with-parent",
                "--new-session",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--tmpfs",
                "/dev/shm",
            ]
            + self.devices
            + ["--proc", "/proc", "--tmpfs", "/tmp"]
            + self.hidden
            + ["--bind", rw, rw]
            + binds
            + ["--chdir", rw, "--"]
            + list(command)
        )


_running = set()  # the process ids of the steps running now (their `timeout`)
_running_lock = threading.Lock()
_stopped = []  # set once the run is ending: no step starts any more


def stop_all():
    """Ends every step running now, and starts none after (the run is interrupted): `timeout`
    passes the signal on to the step."""
    with _running_lock:
        _stopped.append(True)
        for pid in list(_running):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass


def exit_code(status):
    """A wait status as the shell shows it: the exit code, or 128 + the signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def run_step(box, command, log_path, limit, rw, ro=(), env=(), results_path=None):
    """Runs one step (Sandbox.argv); its output (at most LOG_LIMIT bytes) goes to log_path and,
    with results_path, what it writes to its file descriptor 3 goes there. Returns its exit
    code (124 or 137: it ran past `limit` seconds; 130: the run is being interrupted)."""
    if _stopped:
        return 130
    os.makedirs(os.path.join(rw, "home"), exist_ok=True)
    os.makedirs(os.path.join(rw, "tmp"), exist_ok=True)
    argv = box.argv(command, limit, rw, ro, env)
    pipes = [os.pipe()] + ([os.pipe()] if results_path else [])
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, pipes[0][1], 1),
        (os.POSIX_SPAWN_DUP2, pipes[0][1], 2),
    ]
    if results_path:
        actions.append((os.POSIX_SPAWN_DUP2, pipes[1][1], 3))
    try:
        pid = os.posix_spawnp(argv[0], argv, dict(os.environ), file_actions=actions)
    except OSError:
        for r, w in pipes:
            os.close(r)
            os.close(w)
        raise
    for _, w in pipes:
        os.close(w)
    with _running_lock:
        _running.add(pid)
        if _stopped:
            os.kill(pid, signal.SIGTERM)
    files = [open(log_path, "wb")] + ([open(results_path, "wb")] if results_path else [])
    try:
        status = _drain(
            pid, {r: f for (r, _), f in zip(pipes, files)}, time.monotonic() + float(limit) + KILL_AFTER_S + HOLD_S
        )
    finally:
        with _running_lock:
            _running.discard(pid)
        for f in files:
            f.close()
    return exit_code(status)


def _drain(pid, pipes, hold_until):
    """Copies each pipe {fd: file} into its file, up to LOG_LIMIT bytes (then the pipe is closed,
    as `head -c` does), until every pipe is at its end or hold_until has passed; closes them all.
    Returns the step's wait status."""
    sel = selectors.DefaultSelector()
    kept = dict.fromkeys(pipes, 0)
    for fd in pipes:
        sel.register(fd, selectors.EVENT_READ)
    status = None
    try:
        while sel.get_map() and time.monotonic() < hold_until:
            for key, _ in sel.select(timeout=0.5):
                data = os.read(key.fd, 1 << 16)
                data = data[: LOG_LIMIT - kept[key.fd]]
                pipes[key.fd].write(data)
                kept[key.fd] += len(data)
                if not data or kept[key.fd] >= LOG_LIMIT:
                    sel.unregister(key.fd)
                    os.close(key.fd)
            if status is None:
                done, st = os.waitpid(pid, os.WNOHANG)
                status = st if done else None
    finally:
        for fd in list(sel.get_map()):
            sel.unregister(fd)
            os.close(fd)
        sel.close()
    if status is None:
        _, status = os.waitpid(pid, 0)
    return status
