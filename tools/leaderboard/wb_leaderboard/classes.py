"""The repository's own classes of submissions (--fixture, --hostile), made when they are needed
from a few base kernels and a declared table of what each student does differently, never kept
as copies.

  tests/leaderboard/classes/base/<set>/<chNN>/ex*.cu   the base kernels: `plain` (correct and
                                                      simple), `fast` and `slow`
  tests/leaderboard/classes/changes.py                the table: per class, student and chapter,
                                                      how its files differ from the base ones

A student's chapter folder is made in this order from its entry in the table (every key is
optional):
  as      "CLASS/STUDENT": the same folder as that student's in another class
  from    base sets, each one's files over the previous ones'
  take    {file: set}: that file from another base set
  rename  [old, new]: written under another student's name: "old" becomes "new" and the
          namespace old_ex... becomes new_ex... (dashes as underscores); the opening comment is
          re-wrapped to the new name's length
  edit    {file: [[old text, new text], ...]}: each old text must be found exactly once
  summary {file: sentence}: the first sentence of the opening comment (what the file does),
          the comment then re-wrapped at 100 columns
  header  {file: text}: the whole opening comment, line by line as given
  write   {file: text}: a file of the student's own, as given

  python3 -m wb_leaderboard.classes CLASS DEST    makes the class CLASS (fixture, hostile) in DEST
"""

import os
import sys
import textwrap

from .atomic import new_folder_main, publish_files, read_files, read_literal
from .repository import REPO

CLASSES_DIR = os.path.join(REPO, "tests", "leaderboard", "classes")
WIDTH = 100  # the house's column limit, to which opening comments are wrapped
RECIPE_KEYS = ("as", "from", "take", "rename", "edit", "summary", "header", "write")


class TableProblem(ValueError):
    """The table asks for something the base kernels cannot give."""


def load_table(path=None):
    """The table of changes: a Python literal (a dict), read as data, never run."""
    return read_literal(path or os.path.join(CLASSES_DIR, "changes.py"))


def read_base(base_dir, base_set, ch):
    """{file name: text} of a base set's chapter folder (empty when it has none)."""
    folder = os.path.join(base_dir, base_set, ch)
    if not os.path.isdir(folder):
        raise TableProblem("no base set %s/%s in %s" % (base_set, ch, base_dir))
    return read_files(folder)


def split_header(text):
    """(the opening comment's lines, the rest of the file)."""
    lines = text.split("\n")
    n = 0
    while n < len(lines) and lines[n].startswith("//"):
        n += 1
    return lines[:n], "\n".join(lines[n:])


def wrap_header(paragraph):
    """One paragraph as `// ` comment lines of at most WIDTH columns."""
    return textwrap.wrap(
        paragraph,
        width=WIDTH,
        initial_indent="// ",
        subsequent_indent="// ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def unwrap_header(lines):
    """The paragraph of comment lines (a line that ends in a hyphen joins the next one)."""
    text = ""
    for line in lines:
        words = line[3:] if line.startswith("// ") else line[2:]
        text += words if (not text or text.endswith("-")) else " " + words
    return text


def with_header(text, lines):
    _, rest = split_header(text)
    return "\n".join(lines) + "\n" + rest


def with_summary(text, sentence):
    """The file with the first sentence of its opening comment replaced, the comment re-wrapped."""
    paragraph = unwrap_header(split_header(text)[0])
    end = paragraph.find(". ")
    return with_header(text, wrap_header(sentence + (paragraph[end + 1 :] if end >= 0 else "")))


def rename(text, old, new):
    """A file written under the name `old`, as if `new` had written it."""
    text = text.replace('"%s"' % old, '"%s"' % new)
    text = text.replace("%s_ex" % old.replace("-", "_"), "%s_ex" % new.replace("-", "_"))
    lines, _ = split_header(text)
    return with_header(text, wrap_header(unwrap_header(lines))) if lines else text


def edit(text, changes, where):
    for i, (old, new) in enumerate(changes, 1):
        n = text.count(old)
        if n != 1:
            raise TableProblem(
                "%s: change %d: the text to replace is found %d times, not once: %r" % (where, i, n, old[:60])
            )
        text = text.replace(old, new)
    return text


def chapter_files(table, klass, student, ch, base_dir=None):
    """{file name: text} of one student's chapter folder, as the table makes it."""
    base_dir = base_dir or os.path.join(CLASSES_DIR, "base")
    where = "%s/%s/%s" % (klass, student, ch)
    recipe = table[klass][student][ch]
    unknown = sorted(set(recipe) - set(RECIPE_KEYS))
    if unknown:
        raise TableProblem("%s: unknown key(s) %s (known: %s)" % (where, ", ".join(unknown), ", ".join(RECIPE_KEYS)))
    if "as" in recipe:
        other_class, other = recipe["as"].split("/", 1)
        return chapter_files(table, other_class, other, ch, base_dir)
    files = {}
    for base_set in recipe.get("from", []):
        files.update(read_base(base_dir, base_set, ch))
    for name, base_set in recipe.get("take", {}).items():
        files[name] = read_base(base_dir, base_set, ch)[name]
    changed = set(recipe.get("edit", {})) | set(recipe.get("summary", {})) | set(recipe.get("header", {}))
    missing = sorted(changed - set(files))
    if missing:
        raise TableProblem("%s: changes to files it does not have: %s" % (where, ", ".join(missing)))
    renamed = recipe.get("rename")
    for name in files:
        if renamed:
            files[name] = rename(files[name], *renamed)
        files[name] = edit(files[name], recipe.get("edit", {}).get(name, []), "%s/%s" % (where, name))
    for name, sentence in recipe.get("summary", {}).items():
        files[name] = with_summary(files[name], sentence)
    for name, header in recipe.get("header", {}).items():
        files[name] = with_header(files[name], ["// " + line if line else "//" for line in header.split("\n")])
    files.update(recipe.get("write", {}))
    return files


def class_files(klass, table=None, base_dir=None):
    """{(student, chapter, file): text} of a whole class."""
    table = table or load_table()
    if klass not in table:
        raise TableProblem("no class '%s' (the classes: %s)" % (klass, ", ".join(sorted(table))))
    out = {}
    for student, chapters in table[klass].items():
        for ch in chapters:
            for name, text in chapter_files(table, klass, student, ch, base_dir).items():
                out[(student, ch, name)] = text
    return out


def make_class(klass, dest, table=None, base_dir=None):
    """Makes the class in the folder `dest` (which must not exist), whole or not at all."""
    return publish_files(dest, class_files(klass, table, base_dir))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    usage = "CLASS DEST   (CLASS: fixture or hostile)"
    return new_folder_main("classes", usage, 2, argv, make_class, (TableProblem, OSError))


if __name__ == "__main__":
    sys.exit(main())
