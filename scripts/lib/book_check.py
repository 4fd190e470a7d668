#!/usr/bin/env python3
# Checks the BUILT book (build/book, from scripts/docs.sh) the way a learner meets it; run
# through scripts/check-book.sh, which finds the browser and the Python that has Selenium.
#
#  links    every page's <a href>, <img src>, <link href> and <script src> leads to a file of
#           the book, and every #fragment to an element with that id on its page (read from
#           the HTML, standard library only). Links to other sites (http, https) and
#           mailto: are not followed: the check runs without a network; they are counted.
#           Paths from the root ('/x') are broken from disk, except in 404.html, which only a
#           web server shows (from the book's root).
#  images   each page opened in headless Chromium from disk: every <img> has loaded and has a
#           size (a file that exists but does not decode is caught here).
#  search   index.html opened from disk (file://), the query typed into the search box: at
#           least one result must appear, the first must lead to a page of the book, and
#           following it must land there. Then the same over http (the book served from a
#           local port, as `scripts/docs.sh --serve` does), where the theme's own search runs.
#
# usage: book_check.py [--links-only] [--query WORD] [--chromium PATH] [--chromedriver PATH] BOOK
# exit:  0 all good, 1 a check failed (each failure named), 2 bad usage
import argparse
import functools
import html.parser
import http.server
import os
import sys
import threading
import time
import urllib.parse

PAGE_LINKS = {"a": "href", "img": "src", "link": "href", "script": "src"}


class PageParser(html.parser.HTMLParser):
    """Collects a page's element ids and the references it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids = set()
        self.refs = []  # (line, tag, url)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name" if tag == "a" else None):
            if key and attrs.get(key):
                self.ids.add(attrs[key])
        attr = PAGE_LINKS.get(tag)
        if attr and attrs.get(attr) is not None:
            self.refs.append((self.getpos()[0], tag, attrs[attr]))


@functools.lru_cache(maxsize=None)
def parse(path):
    parser = PageParser()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def check_links(book):
    """Returns (problems, counts) for every reference in every HTML file of the book."""
    problems, counts = [], {"pages": 0, "refs": 0, "fragments": 0, "external": 0}
    root = os.path.realpath(book)
    pages = sorted(os.path.join(d, f) for d, _, fs in os.walk(book) for f in fs if f.endswith(".html"))
    for page in pages:
        counts["pages"] += 1
        rel_page = os.path.relpath(page, book)
        for line, tag, url in parse(page).refs:
            where = f"{rel_page}:{line}: <{tag}> '{url}'"
            parts = urllib.parse.urlsplit(url)
            if parts.scheme in ("http", "https") or url.startswith("//"):
                counts["external"] += 1
                continue
            if parts.scheme in ("mailto", "javascript", "data"):
                continue
            if parts.scheme:
                problems.append(f"{where}: a '{parts.scheme}:' link, which a reader's browser cannot follow")
                continue
            counts["refs"] += 1
            path = urllib.parse.unquote(parts.path)
            if path.startswith("/"):
                # From disk, '/x' means the file system's /x. Only 404.html may use such paths:
                # a web server shows it for any missing address, from the book's root.
                if rel_page != "404.html":
                    problems.append(f"{where}: a path from the root, which opened from disk leads outside the book")
                    continue
                target = os.path.normpath(os.path.join(book, path.lstrip("/")))
            else:
                target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.realpath(target).startswith(root + os.sep):
                problems.append(f"{where}: leads outside the book ({os.path.relpath(target, book)})")
                continue
            if os.path.isdir(target):
                problems.append(
                    f"{where}: leads to a folder; opened from disk the browser shows a file listing, not a page"
                )
                continue
            if not os.path.isfile(target):
                problems.append(f"{where}: {os.path.relpath(target, book)} does not exist")
                continue
            if parts.fragment and target.endswith(".html"):
                counts["fragments"] += 1
                anchor = urllib.parse.unquote(parts.fragment)
                if anchor not in parse(target).ids:
                    problems.append(f"{where}: {os.path.relpath(target, book)} has no element with id '{anchor}'")
    return problems, counts


# ---- the browser checks ----------------------------------------------------------------


def start_browser(chromium, chromedriver):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--window-size=1280,900",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        # Chromium's sandbox refuses to run as root and in many containers; the
        # browser opens only the book's own pages here.
        "--no-sandbox",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        # No network: other sites (the theme's web fonts) fail at once instead of
        # waiting for a DNS answer, and the check never depends on them.
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def wait_for(condition, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return condition()


def page_loaded(driver):
    return wait_for(lambda: driver.execute_script("return document.readyState") == "complete")


def check_images(driver, book):
    """Opens every page from disk; returns problems for images that did not load."""
    problems = []
    pages = sorted(os.path.join(d, f) for d, _, fs in os.walk(book) for f in fs if f.endswith(".html"))
    for page in pages:
        driver.get("file://" + os.path.realpath(page))
        page_loaded(driver)
        broken = driver.execute_script(
            "return Array.from(document.images)"
            ".filter(function (i) { return !i.complete || i.naturalWidth === 0; })"
            ".map(function (i) { return i.getAttribute('src'); });"
        )
        for src in broken:
            problems.append(f"{os.path.relpath(page, book)}: the image '{src}' did not load in the browser")
    return problems, len(pages)


def check_search(driver, start_url, query, how):
    """Types the query into the search box of start_url; returns (problems, first result)."""
    from selenium.webdriver.common.by import By

    driver.get(start_url)
    page_loaded(driver)
    boxes = driver.find_elements(By.CSS_SELECTOR, "input[data-md-component=search-query]")
    if not boxes:
        return [f"search ({how}): the page has no search box"], None
    box = boxes[0]
    if not box.is_displayed():
        return [f"search ({how}): the search box is hidden (the search did not start)"], None
    box.click()
    box.send_keys(query)
    results = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, ".md-search-result__list a[href]"))
    if not results:
        meta = driver.find_elements(By.CSS_SELECTOR, ".md-search-result__meta")
        said = meta[0].text.strip() if meta else "nothing"
        return [f"search ({how}): typing '{query}' showed no result within 10 s (the panel says: {said!r})"], None
    first = results[0].get_attribute("href")
    count = len(results)
    results[0].click()
    landed = wait_for(lambda: driver.current_url != start_url and driver.current_url)
    page_loaded(driver)
    target = urllib.parse.urlsplit(first)
    problems = []
    if urllib.parse.urlsplit(landed).path != target.path:
        problems.append(f"search ({how}): following the first result '{first}' did not open it (at {landed})")
    elif target.fragment and not driver.find_elements(By.ID, urllib.parse.unquote(target.fragment)):
        problems.append(
            f"search ({how}): the first result '{first}' opened, but it has no element '#{target.fragment}'"
        )
    return problems, f"{count} results listed, the first {first} opens"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(book):
    """Serves the book on a free local port in a thread; returns (server, base URL)."""
    handler = functools.partial(QuietHandler, directory=book)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def main():
    ap = argparse.ArgumentParser(description="Checks the built book: links, images and search.")
    ap.add_argument("book", help="the built book, e.g. build/book")
    ap.add_argument("--links-only", action="store_true", help="only the links (no browser)")
    ap.add_argument("--query", default="warp", help="the word typed into the search box (default: warp)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = ap.parse_args()
    book = args.book.rstrip("/")
    if not os.path.isfile(os.path.join(book, "index.html")):
        print(f"check-book: no {book}/index.html; build the book first (scripts/docs.sh)", file=sys.stderr)
        return 2

    problems, counts = check_links(book)
    print(
        f"check-book: links: {counts['refs']} links and files ({counts['fragments']} with an #anchor) "
        f"in {counts['pages']} pages checked; {counts['external']} links to other sites not followed (no network)"
    )
    if args.links_only:
        return report(problems, "links")

    driver = start_browser(args.chromium, args.chromedriver)
    server = None
    try:
        image_problems, n = check_images(driver, book)
        problems += image_problems
        print(f"check-book: images: {n} pages opened from disk in Chromium")
        index = os.path.realpath(os.path.join(book, "index.html"))
        for how, url in [("from disk", "file://" + index), ("served over http", None)]:
            if url is None:
                server, base = serve(book)
                url = base + "index.html"
            found, said = check_search(driver, url, args.query, how)
            problems += found
            if said:
                print(f"check-book: search ({how}): '{args.query}': {said}")
    finally:
        driver.quit()
        if server:
            server.shutdown()
    return report(problems, "links, images and search")


def report(problems, what):
    for p in problems:
        print("check-book: BROKEN " + p, file=sys.stderr)
    if problems:
        print(
            f"check-book: {len(problems)} problem{'' if len(problems) == 1 else 's'} in the built book", file=sys.stderr
        )
        return 1
    print(f"check-book: the built book's {what}: all good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
