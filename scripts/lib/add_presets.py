#!/usr/bin/env python3
"""Adds the presets of a new chapter to CMakePresets.json (used by scripts/new-chapter.sh).

usage: add_presets.py PRESETS_JSON ID "DISPLAY TITLE" [--check]

Adds the configure and build preset chNN, the test presets chNN (the learner's kernels) and
chNN-solution (the reference, the solutions, the self-tests; on the same chNN build, so one
configure serves both), and the workflows chNN and chNN-solution, after the last chapter that
comes before it (so the chapters stay in order, ahead of all/ci/...). The
file is edited as text, one new entry per line in the style of its neighbours, so that the
rest of it is left byte for byte as it was; the result is parsed again and compared with the
intended JSON before it is written. --check only says whether the presets exist already.
Exit status: 0 added (or, with --check, absent), 1 already there, 2 error.
"""
import json
import re
import sys

SECTIONS = ("configurePresets", "buildPresets", "testPresets", "workflowPresets")


def fail(message):
    print(f"add_presets: {message}", file=sys.stderr)
    sys.exit(2)


def entries(chapter_id, title):
    num = int(chapter_id[2:])
    sol = f"{chapter_id}-solution"
    return {
        "configurePresets": [
            {
                "name": chapter_id,
                "inherits": "base",
                "displayName": f"Chapter {num}: your kernels and the worked solutions ({title})",
                "cacheVariables": {"WORKBOOK_CHAPTERS": chapter_id},
            },
        ],
        "buildPresets": [
            {"name": chapter_id, "configurePreset": chapter_id},
        ],
        "testPresets": [
            {
                "name": chapter_id,
                "inherits": "test-base",
                "configurePreset": chapter_id,
                "displayName": f"Chapter {num}: your kernels",
                "filter": {"include": {"label": f"^{chapter_id}-student$"}},
            },
            {
                "name": sol,
                "inherits": "test-base",
                "configurePreset": chapter_id,
                "displayName": f"Chapter {num}: the reference, every solution step, the self-tests",
                "filter": {"include": {"label": f"^{chapter_id}-solution$"}},
            },
        ],
        "workflowPresets": [
            {
                "name": name,
                "steps": [
                    {"type": "configure", "name": chapter_id},
                    {"type": "build", "name": chapter_id},
                    {"type": "test", "name": name},
                ],
            }
            for name in (chapter_id, sol)
        ],
    }


def compact(value):
    """One-line JSON in the file's style: { "a": 1, "b": [ ... ] }."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)}: {compact(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[ " + ", ".join(compact(v) for v in value) + " ]"
    return json.dumps(value)


def entry_text(section, entry, indent):
    """Configure and test presets on two lines like their neighbours; the others on one."""
    if section in ("configurePresets", "testPresets"):
        tail_key = "cacheVariables" if section == "configurePresets" else "filter"
        head = {k: v for k, v in entry.items() if k != tail_key}
        first = compact(head)[:-2] + ","
        return f"{indent}{first}\n{indent}  {json.dumps(tail_key)}: {compact(entry[tail_key])} }}"
    return indent + compact(entry)


def element_spans(text, start):
    """(begin, end) of each element of the array at `start` (end exclusive, before a comma)."""
    spans, depth, i, in_str, begin = [], 0, start, False, None
    while i < len(text):
        c = text[i]
        if in_str:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            if depth == 1 and begin is None:
                begin = i
        elif c in "[{":
            if depth == 1 and begin is None:
                begin = i
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 1 and begin is not None and c == "}":
                spans.append((begin, i + 1))
                begin = None
            if depth == 0:
                return spans
        i += 1
    fail("unbalanced brackets in the presets file")


def insert_index(names, hidden, chapter_id):
    """Where the new chapter's entries go: before the first later chapter or non-chapter preset."""
    num = int(chapter_id[2:])
    for i, (name, is_hidden) in enumerate(zip(names, hidden)):
        if is_hidden:
            continue
        m = re.fullmatch(r"ch(\d\d)(-solution)?", name)
        if m is None or int(m.group(1)) > num:
            return i
    return len(names)


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check_only = "--check" in sys.argv[1:]
    if len(args) != 3:
        fail("usage: add_presets.py PRESETS_JSON chNN 'display title' [--check]")
    path, chapter_id, title = args
    if not re.fullmatch(r"ch\d\d", chapter_id):
        fail(f"'{chapter_id}' is not a chapter id (chNN)")
    try:
        with open(path) as f:
            text = f.read()
        doc = json.loads(text)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); fix it first")
    existing = {p.get("name") for s in SECTIONS for p in doc.get(s, [])}
    if chapter_id in existing or f"{chapter_id}-solution" in existing:
        if check_only:
            print(f"presets {chapter_id} and {chapter_id}-solution exist already")
        sys.exit(1)
    if check_only:
        sys.exit(0)

    new = entries(chapter_id, title)
    expected = json.loads(text)
    inserts = []  # (offset, text)
    for section in SECTIONS:
        items = doc.get(section)
        if items is None:
            fail(f"{path} has no {section}")
        at = expected[section]
        idx = insert_index([p.get("name", "") for p in items], [bool(p.get("hidden")) for p in items], chapter_id)
        at[idx:idx] = new[section]
        m = re.search(r'"%s"\s*:\s*\[' % section, text)
        if m is None:
            fail(f"cannot find the {section} array in {path}")
        spans = element_spans(text, m.end() - 1)
        if len(spans) != len(items):
            fail(f"could not line up the {section} entries of {path}")
        if idx < len(spans):
            begin = spans[idx][0]
            line_start = text.rfind("\n", 0, begin) + 1
            indent = text[line_start:begin]
            if indent.strip():
                fail(f"unexpected layout around entry {idx} of {section}")
            block = "".join(entry_text(section, e, indent) + ",\n" for e in new[section])
            inserts.append((line_start, block))
        else:
            end = spans[-1][1] if spans else m.end()
            line_start = text.rfind("\n", 0, spans[-1][0]) + 1 if spans else m.end()
            indent = text[line_start : spans[-1][0]] if spans else "    "
            block = "".join(",\n" + entry_text(section, e, indent) for e in new[section])
            inserts.append((end, block))
    for offset, block in sorted(inserts, reverse=True):
        text = text[:offset] + block + text[offset:]
    if json.loads(text) != expected:
        fail("the edited file does not hold what was intended; CMakePresets.json left unchanged")
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
