# An MkDocs hook (mkdocs.yml, `hooks:`) that lets the book's search work when the book is
# opened from disk (file://build/book/index.html).
#
# The Material theme's own search fetches search/search_index.json from a web worker, and a
# browser refuses both for a page opened from a file. A <script> tag may still load a file
# next to the page, so after each build this hook writes the same index a second time as
# search/search_index.js, a script that sets `window.wbSearchIndex`. The page script
# docs/javascripts/search-from-disk.js loads it and answers the search box itself whenever
# the theme's search could not start. Served over http (`scripts/docs.sh --serve`), the
# theme's search works and the extra file is simply not used.
import json
import os

from mkdocs.exceptions import PluginError

INDEX_JSON = os.path.join("search", "search_index.json")
INDEX_JS = os.path.join("search", "search_index.js")


def on_post_build(config, **kwargs):
    # Hooks run after the plugins, so the search plugin has written its index by now.
    src = os.path.join(config["site_dir"], INDEX_JSON)
    if not os.path.isfile(src):
        raise PluginError(f"book_search_index: {src} was not written; is `search` in mkdocs.yml's plugins?")
    with open(src, encoding="utf-8") as f:
        index = json.load(f)
    # Only what the page script reads: each entry's location, title and text.
    docs = [{"location": d["location"], "title": d["title"], "text": d["text"]} for d in index["docs"]]
    with open(os.path.join(config["site_dir"], INDEX_JS), "w", encoding="utf-8") as f:
        f.write("// Written by scripts/lib/book_search_index.py: the search index as a script,\n")
        f.write("// so that the book's search works when the book is opened from disk.\n")
        f.write("window.wbSearchIndex = ")
        # ensure_ascii keeps the file plain ASCII; "</" is split so no text can end a <script>.
        f.write(json.dumps({"docs": docs}, ensure_ascii=True, separators=(",", ":")).replace("</", "<\\/"))
        f.write(";\n")
