"""The chapters of the repository as the leaderboard sees them: their folders, the exercise
files a student may submit (the stubs, `ex*.cu`), whether a chapter can be ranked yet, and
what the leaderboard builds and runs for it.

Most chapters need nothing: their benchmark is chNN_bench. A chapter whose score comes from
another program (chapter 9's decoder) says so in a file `leaderboard.json` in its folder, with
these keys (each one optional; a list of strings each):
  build     the build targets a submission needs; the first must be chNN_tests
  prepare   run once per chapter and GPU from the repository's own build, before anything
            else, to make inputs in {data} (model weights ...)
  bench     the timed run of a submission; writes its results to {json}
  baseline  the same run of the repository's own build, by the leaderboard (the numbers
            every submission's are cross-checked against)
In the commands, {bin} is the folder of the programs built, {json} where the results go,
{data} the folder `prepare` wrote (read-only afterwards) and {ch} the chapter (chNN).
"""

import json
import os
import re

RUNNER_KEYS = ("build", "prepare", "bench", "baseline")
RUNNER_FILE = "leaderboard.json"
TARGET_RE = re.compile(r"^[A-Za-z0-9_]+$")
PLACEHOLDER_RE = re.compile(r"\{([a-z]+)\}")


def chapter_dirs(repo):
    """{'ch01': 'ch01_indexing', ...} for the chapters present in the repository."""
    out = {}
    base = os.path.join(repo, "chapters")
    for name in sorted(os.listdir(base)):
        m = re.match(r"^(ch\d\d)_", name)
        if m and os.path.isdir(os.path.join(base, name)):
            out[m.group(1)] = name
    return out


def stub_names(repo, chapter_dir):
    folder = os.path.join(repo, "chapters", chapter_dir)
    return sorted(n for n in os.listdir(folder) if re.match(r"^ex.*\.cu$", n))


def chapter_ready(repo, ch):
    """Whether a chapter declares its tests and benchmark, so that it can be ranked: spec.cu
    (or, in the older layout, tests.cu and bench.cu)."""
    folder = os.path.join(repo, "chapters", chapter_dirs(repo)[ch])
    return os.path.isfile(os.path.join(folder, "spec.cu")) or (
        os.path.isfile(os.path.join(folder, "tests.cu")) and os.path.isfile(os.path.join(folder, "bench.cu"))
    )


def default_runner(ch):
    return {
        "build": ["%s_tests" % ch, "%s_bench" % ch],
        "prepare": [],
        "bench": ["{bin}/%s_bench" % ch, "--impl=student,reference", "--json={json}"],
        "baseline": ["{bin}/%s_bench" % ch, "--impl=reference", "--json={json}"],
    }


def chapter_runner(repo, ch):
    """The chapter's programs: its folder's leaderboard.json over the defaults. Raises
    ValueError naming the file and what is wrong with it."""
    chapters = chapter_dirs(repo)
    if ch not in chapters:
        raise ValueError("unknown chapter '%s'" % ch)
    runner = default_runner(ch)
    path = os.path.join(repo, "chapters", chapters[ch], RUNNER_FILE)
    if not os.path.exists(path):
        return runner
    where = "chapters/%s/%s" % (chapters[ch], RUNNER_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError("%s: not readable JSON (%s)" % (where, str(e).split(":")[0]))
    if not isinstance(doc, dict):
        raise ValueError("%s: must be a JSON object with the keys %s" % (where, ", ".join(RUNNER_KEYS)))
    for k, v in doc.items():
        if k not in RUNNER_KEYS:
            raise ValueError("%s: unknown key '%s' (known: %s)" % (where, k[:40], ", ".join(RUNNER_KEYS)))
        if not isinstance(v, list) or not all(
            isinstance(x, str) and x and x.isprintable() and "\t" not in x for x in v
        ):
            raise ValueError("%s: '%s' must be a list of non-empty printable strings" % (where, k))
        for x in v:
            for name in PLACEHOLDER_RE.findall(x):
                if name not in ("bin", "json", "data", "ch"):
                    raise ValueError("%s: '%s' uses {%s}; known: {bin} {json} {data} {ch}" % (where, k, name))
        runner[k] = [x.replace("{ch}", ch) for x in v]
    if not runner["build"] or runner["build"][0] != "%s_tests" % ch:
        raise ValueError("%s: 'build' must start with %s_tests (the chapter's tests)" % (where, ch))
    for t in runner["build"]:
        if not TARGET_RE.match(t):
            raise ValueError("%s: '%s' is not a build target name" % (where, t[:40]))
    for k in ("prepare", "bench", "baseline"):
        if runner[k] and not runner[k][0].startswith("{bin}/"):
            raise ValueError("%s: '%s' must run a program of the build ({bin}/NAME)" % (where, k))
    for k in ("bench", "baseline"):
        if not runner[k] or not any("{json}" in x for x in runner[k]):
            raise ValueError("%s: '%s' must be a command that writes its results to {json}" % (where, k))
    return runner


def expand_command(words, bin_dir, json_path, data_dir):
    """A chapter's command (a list of words from chapter_runner) with {bin}, {json} and {data}
    put in."""
    return [w.replace("{bin}", bin_dir).replace("{json}", json_path).replace("{data}", data_dir) for w in words]
