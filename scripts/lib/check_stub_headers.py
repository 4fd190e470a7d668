#!/usr/bin/env python3
"""An exercise file's header tells the learner what the tests check; this keeps its word on
the large cases: a header says "no large stage" only where the exercise has no large case,
and names its large case(s) where it has some.

usage: check_stub_headers.py CHAPTER_DIR TEST_PROGRAM
  CHAPTER_DIR   chapters/chNN_name (the exercise files exNN_*.cu)
  TEST_PROGRAM  that chapter's chNN_tests (lists its large cases without a GPU)
Exit status: 0 every header agrees; 1 the headers that do not, one line each; 2 bad input.
"""
import re
import subprocess
import sys
from pathlib import Path


def large_cases(program):
    """{exercise name: [large case names]} from the program's --large-cases listing."""
    out = subprocess.run([program, "--large-cases", "--gtest_list_tests"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"check_stub_headers: {program} --large-cases --gtest_list_tests failed:\n{out.stderr}")
    cases, exercise = {}, None
    for line in out.stdout.splitlines():
        if not line.startswith(" ") and line.endswith("."):
            exercise = line[:-1].rsplit("/", 1)[-1]  # suite op/dtype/exN_name
        elif line.startswith("  ") and exercise:
            cases.setdefault(exercise, []).append(line.strip())
    return cases


def header(path):
    """The leading comment block of a file, as one lower-case string."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    return re.sub(r"\s+", " ", " ".join(lines)).lower()


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    chapter, program = Path(argv[1]), argv[2]
    files = sorted(chapter.glob("ex*.cu"))
    if not files:
        print(f"check_stub_headers: no exercise files (ex*.cu) in {chapter}", file=sys.stderr)
        return 2
    cases = large_cases(program)
    bad = []
    for f in files:
        text, name = header(f), f.stem
        has = cases.get(name, [])
        says_none = "no large stage" in text or "no large case" in text
        if has and says_none:
            bad.append(f"{f}: says it has no large stage, but the tests run {len(has)} large case(s): {', '.join(has)}")
        elif has and "large" not in text:
            bad.append(f"{f}: does not mention its {len(has)} large case(s): {', '.join(has)}")
        elif not has and "large" in text and not says_none:
            bad.append(f"{f}: speaks of a large case, but the tests run none (say 'no large stage')")
    for line in bad:
        print(line)
    if bad:
        print('fix the header\'s "What the tests check" so the learner reads what will run')
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
