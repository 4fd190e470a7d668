"""Building: the repository's own build of a chapter (trusted, outside the sandbox, the compiler
cache shared), and a submission's build, in the sandbox, in a fresh copy of that tree with the
student's files copied over the stubs and nothing else, rebuilding only the chapter's programs.
docs/leaderboard.md, "What happens to each submission", step 2.
"""

import os
import shutil
import subprocess
import time

from .sandbox import run_step


def copy_tree(src, dest):
    """A copy that keeps times and links (`cp -a`: the build tree's files keep their dates, so
    that the incremental build rebuilds only what the student's files change)."""
    subprocess.run(["cp", "-a", "--", src, dest], check=True)


def remove_tree(path):
    """Removes a folder, write-protected parts included."""
    if os.path.lexists(path):
        subprocess.run(["chmod", "-R", "u+w", "--", path], capture_output=True)
        shutil.rmtree(path, ignore_errors=True)


def add_step(entry, name, rc, started):
    """One line of the entry's steps.tsv: the step, its exit code, its seconds."""
    with open(os.path.join(entry, "steps.tsv"), "a") as f:
        f.write("%s\t%s\t%.1f\n" % (name, rc, time.monotonic() - started))


def repository_build(src, build, ch, targets, arch_args, commit, jobs, log_path, cache_base):
    """Configures and builds the chapter's programs (and devicequery) from the repository's own
    sources. True when it built; the log says why not."""
    env = dict(
        os.environ,
        WORKBOOK_GIT_COMMIT=commit,
        # The compiler cache sees paths relative to the work folder, whose name changes
        # every run: what an earlier run compiled is reused.
        CCACHE_BASEDIR=cache_base,
        CCACHE_NOHASHDIR="1",
    )
    with open(log_path, "wb") as log:
        for argv in (
            [
                "cmake",
                "-S",
                src,
                "-B",
                build,
                "-G",
                "Ninja",
                "-DCMAKE_BUILD_TYPE=Release",
                "-DWORKBOOK_CHAPTERS=" + ch,
                "-DWORKBOOK_BUILD_ON_TEST=OFF",
            ]
            + list(arch_args),
            ["cmake", "--build", build, "-j", str(jobs), "--target"] + list(targets) + ["devicequery"],
        ):
            if subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env).returncode:
                return False
    return True


def student_build(box, tree, entry, chapter_dir, targets, jobs, limit, ro=(), env=()):
    """The student's files of `entry` copied over the stubs of the tree (tree/src, tree/build),
    then the chapter's programs rebuilt in the sandbox, which may write only the tree. The
    programs go to entry/bin; the log to entry/build.log; the step to entry/steps.tsv. Returns
    the exit code (0: every program built)."""
    stubs = os.path.join(tree, "src", "chapters", chapter_dir)
    submitted = os.path.join(entry, "submission")
    for name in sorted(os.listdir(submitted)):
        if os.path.isfile(os.path.join(submitted, name)):
            shutil.copyfile(os.path.join(submitted, name), os.path.join(stubs, name))
    for t in targets:
        if os.path.lexists(os.path.join(tree, "build", "bin", t)):
            os.remove(os.path.join(tree, "build", "bin", t))
    started = time.monotonic()
    rc = run_step(
        box,
        ["cmake", "--build", os.path.join(tree, "build"), "-j", str(jobs), "--target"] + list(targets),
        os.path.join(entry, "build.log"),
        limit,
        tree,
        ro,
        env,
    )
    if rc == 0:
        os.makedirs(os.path.join(entry, "bin"), exist_ok=True)
        for t in targets:
            program = os.path.join(tree, "build", "bin", t)
            if os.path.isfile(program) and os.access(program, os.X_OK):
                shutil.copy2(program, os.path.join(entry, "bin", t))
            else:
                rc = 1
    add_step(entry, "build", rc, started)
    return rc
