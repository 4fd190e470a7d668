#!/usr/bin/env bash
# Checks, on the host and with nothing but python3's standard library, that the pages and
# the exercise files point at things that exist:
#
#  1. every exercise stub chapters/*/ex*.cu has a line
#       // Guide: docs/<page>.md, section "<heading>"
#     and <page> has a heading with exactly that text;
#  2. every relative link in docs/*.md and README.md leads to a file that exists, and its
#     #anchor (if any) to a heading of that page, with the ids the book's generator gives
#     headings (lower case, punctuation dropped, spaces as '-', '_1' on a repeated heading).
#     Pages in docs/ may not link outside docs/: the book would have nothing to link to.
#  3. every page in docs/ is in the book's table of contents (the nav of mkdocs.yml).
#
# usage: scripts/check-doc-links.sh        exit 0 when all resolve, 1 naming each that does not
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" != "-h" ] && [ "${1:-}" != "--help" ] || { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }

exec python3 - <<'PY'
import glob, os, re, sys, unicodedata

problems = []
heading_cache = {}

def slugify(text):
    # The same rule as the generator's table-of-contents extension.
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)

def plain(md):
    # Heading markdown as the reader sees it: no code ticks, emphasis or link targets.
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    md = md.replace("`", "")
    md = re.sub(r"(\*\*|__|\*)", "", md)
    return md.strip()

def strip_code(lines):
    # Yields (line number, text) outside fenced code blocks, with inline code blanked out.
    fence = None
    for no, line in enumerate(lines, 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        if fence is None:
            yield no, re.sub(r"`[^`]*`", "``", line)

def headings(path):
    # {"texts": set of heading texts, "ids": set of anchors}
    if path in heading_cache:
        return heading_cache[path]
    texts, ids, seen = set(), set(), {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    fence = None
    for line in lines:
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            fence = None if fence else m.group(1)[0]
            continue
        if fence:
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = m.group(2)
        explicit = re.search(r"\s*\{[^}]*#([\w-]+)[^}]*\}\s*$", text)
        if explicit:
            text = text[: explicit.start()]
        texts.add(text.strip())
        texts.add(plain(text))
        if explicit:
            ids.add(explicit.group(1))
            continue
        slug = slugify(plain(text))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else f"{slug}_{n}")
    # Explicit anchors written as HTML: <a id="x"></a>, <span id="x">.
    for line in lines:
        for a in re.findall(r"""\bid=["']([\w-]+)["']""", line):
            ids.add(a)
    heading_cache[path] = {"texts": texts, "ids": ids}
    return heading_cache[path]

# 1. The exercise stubs' Guide lines.
guide = re.compile(r'^\s*//\s*Guide:\s*(docs/[\w./-]+\.md),\s*section\s*"([^"]+)"')
stubs = sorted(glob.glob("chapters/*/ex*.cu"))
if not stubs:
    problems.append("no chapters/*/ex*.cu found: run from the repository")
for stub in stubs:
    found = False
    with open(stub, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = guide.match(line)
            if not m:
                continue
            found = True
            page, section = m.group(1), m.group(2)
            if not os.path.isfile(page):
                problems.append(f"{stub}:{no}: Guide names {page}, which does not exist")
            elif section not in headings(page)["texts"]:
                problems.append(f'{stub}:{no}: {page} has no heading "{section}"')
    if not found:
        problems.append(f'{stub}: no line "// Guide: docs/<page>.md, section \\"<heading>\\""')

# 2. Links between the pages.
link = re.compile(r"(?<!\!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|!\[[^\]]*\]\(\s*([^)\s]+)\s*\)")
pages = sorted(glob.glob("docs/**/*.md", recursive=True)) + ["README.md"]
docs_root = os.path.realpath("docs")
links = 0
for page in pages:
    with open(page, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for no, line in strip_code(lines):
        for m in link.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # http:, https:, mailto:
            links += 1
            path, _, anchor = target.partition("#")
            dest = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
            where = f"{page}:{no}: link '{target}'"
            if not os.path.exists(dest):
                problems.append(f"{where}: {dest} does not exist")
                continue
            if page.startswith("docs/") and not os.path.realpath(dest).startswith(docs_root + os.sep):
                problems.append(f"{where}: leaves docs/ ({dest}); the book cannot follow it, link the page on GitHub or name the file as code")
                continue
            if anchor:
                if not dest.endswith(".md"):
                    problems.append(f"{where}: an anchor into a file that is not a page")
                elif anchor not in headings(dest)["ids"]:
                    problems.append(f"{where}: {dest} has no heading with the anchor #{anchor}")

# 3. Every page is in the book's table of contents (mkdocs.yml's nav), and nav names only
#    pages that exist.
if os.path.isfile("mkdocs.yml"):
    with open("mkdocs.yml", encoding="utf-8") as f:
        nav = set(re.findall(r"^\s*-\s*(?:[^:\n]*:\s*)?([\w./-]+\.md)\s*$", f.read(), re.M))
    in_docs = {os.path.relpath(p, "docs") for p in glob.glob("docs/**/*.md", recursive=True)}
    for page in sorted(in_docs - nav):
        problems.append(f"docs/{page} is not in mkdocs.yml's nav: add a line for it")
    for page in sorted(nav - in_docs):
        problems.append(f"mkdocs.yml's nav names {page}, which is not in docs/")

for p in problems:
    print("check-doc-links: " + p, file=sys.stderr)
if problems:
    print(f"check-doc-links: {len(problems)} broken (of {len(stubs)} exercise files and {links} links)", file=sys.stderr)
    sys.exit(1)
print(f"check-doc-links: {len(stubs)} exercise files and {links} links in {len(pages)} pages all resolve")
PY
