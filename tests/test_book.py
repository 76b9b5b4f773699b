"""The published book: `bash scripts/book.sh` renders every lecture and lab, once in English and
once in 中文, from the committed notebooks (no execution), offline, with working search.

Both books are built once for this module into a temporary folder. The file checks read the
HTML; the browser checks (marker ``browser``) serve the books on loopback, open each landing
page in Chromium, follow the navigation to a lecture, search, and save screenshots under
test-output/book/.
"""
from __future__ import annotations

import functools
import html
import http.server
import json
import re
import subprocess
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from fxcourse.tooling.i18n import headings

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
SHOTS = REPO / "test-output" / "book"
LECTURES = sorted((REPO / "course").glob("[0-9][0-9]_*.ipynb"))
LABS = sorted((REPO / "labs").glob("lab[0-9][0-9]_*.ipynb"))
NOTEBOOKS = LECTURES + LABS
TAG = {"en": "lang-en", "zh": "lang-zh"}
OTHER = {"en": "zh", "zh": "en"}
# A term each book's search must find in a lecture's prose (not only in a title).
SEARCH = {"en": ("recompile", "07_dynamo_guards_breaks"), "zh": ("守卫", "07_dynamo_guards_breaks")}


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    start = time.perf_counter()
    done = subprocess.run(["bash", "scripts/book.sh", "--out", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    took = time.perf_counter() - start
    assert done.returncode == 0, f"scripts/book.sh failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    # Sphinx warnings (a broken reference, a notebook it could not read) fail the build's test too.
    warnings = [line for line in done.stderr.splitlines() if "WARNING" in line or "ERROR" in line]
    assert not warnings, "\n".join(warnings[:20])
    print(f"both books built in {took:.1f} s")
    return out


def _key(text: str) -> str:
    """Heading text without markup, punctuation or spacing, for comparing source and page."""
    return re.sub(r"[\W_]+", "", text).lower()


def _source_headings(path: Path, lang: str) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [_key(text) for cell in nb.cells if cell.cell_type == "markdown" and TAG[lang] in
            cell.metadata.get("tags", []) for _, text in headings(cell.source)]


def _distinct_headings(path: Path) -> dict[str, list[str]]:
    """Per language, the headings of the notebook that the other language does not share."""
    en, zh = _source_headings(path, "en"), _source_headings(path, "zh")
    return {"en": [h for h in en if h and h not in zh], "zh": [h for h in zh if h and h not in en]}


class _Page(HTMLParser):
    """Heading texts, <img> sources and loaded assets of an HTML page."""

    def __init__(self):
        super().__init__()
        self.headings: list[str] = []
        self.images: list[str] = []
        self.assets: list[str] = []
        self._in: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if re.fullmatch(r"h[1-6]", tag):
            self._in, self._text = tag, []
        if tag == "img":
            self.images.append(a.get("src", ""))
        if tag in ("script", "img", "iframe", "source", "video", "audio") and a.get("src"):
            self.assets.append(a["src"])
        if tag == "link" and a.get("href") and a.get("rel") not in ("search", "index", "next", "prev"):
            self.assets.append(a["href"])

    def handle_endtag(self, tag):
        if tag == self._in:
            self.headings.append(_key("".join(self._text)))
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._text.append(data)


def _page(path: Path) -> _Page:
    parser = _Page()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _docname(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_lecture_and_lab_has_a_page_and_no_solution_does(book, lang):
    for nb in NOTEBOOKS:
        assert (book / lang / f"{_docname(nb)}.html").is_file(), f"{lang}: no page for {_docname(nb)}"
    assert not (book / lang / "solutions").exists()
    pages = list((book / lang).rglob("*.html"))
    leaked = [p for p in pages if "BEGIN SOLUTION" in p.read_text(encoding="utf-8")]
    assert not leaked, f"solution markers in {leaked}"
    if (REPO / "course" / "GLOSSARY.md").is_file():
        assert "glossary.html" in (book / lang / "index.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_landing_page_lists_every_lecture_and_links_the_other_book(book, lang):
    index = (book / lang / "index.html").read_text(encoding="utf-8")
    assert f'href="../{OTHER[lang]}/index.html"' in index
    for nb in NOTEBOOKS:
        assert f'href="{_docname(nb)}.html"' in index, f"{lang} landing page does not list {_docname(nb)}"
    assert (book / OTHER[lang] / "index.html").is_file()  # the link leads somewhere


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_page_holds_only_its_languages_prose(book, lang):
    checked = 0
    for nb in NOTEBOOKS:
        page = set(_page(book / lang / f"{_docname(nb)}.html").headings)
        distinct = _distinct_headings(nb)
        missing = [h for h in distinct[lang] if h not in page]
        foreign = [h for h in distinct[OTHER[lang]] if h in page]
        assert not missing, f"{lang}/{_docname(nb)}: headings of its own language missing: {missing}"
        assert not foreign, f"{lang}/{_docname(nb)}: headings of the other language shown: {foreign}"
        checked += len(distinct[lang])
    assert checked > 5 * len(NOTEBOOKS)


def _stored_outputs(nb_path: Path) -> tuple[int, int]:
    """(image outputs, HTML table outputs) stored in a notebook."""
    images = tables = 0
    for cell in nbformat.read(nb_path, as_version=4).cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            images += any(m in data for m in ("image/png", "image/svg+xml"))
            tables += "<table" in str(data.get("text/html", ""))
    return images, tables


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_stored_outputs_are_rendered(book, lang):
    """Every stored image is in the page and on disk; viewers' HTML tables are kept as tables."""
    seen_images = seen_tables = 0
    for nb in NOTEBOOKS:
        page_path = book / lang / f"{_docname(nb)}.html"
        page, text = _page(page_path), page_path.read_text(encoding="utf-8")
        images, tables = _stored_outputs(nb)
        rendered = [src for src in page.images if "_images/" in src]
        assert len(rendered) >= images, f"{lang}/{_docname(nb)}: {images} stored images, {len(rendered)} shown"
        for src in rendered:
            assert (page_path.parent / src).resolve().is_file(), f"{lang}/{_docname(nb)}: missing {src}"
        assert text.count("<table") >= tables, f"{lang}/{_docname(nb)}: HTML tables lost"
        seen_images, seen_tables = seen_images + images, seen_tables + tables
    assert seen_images > 5 and seen_tables > 5


def test_books_load_nothing_from_the_network(book):
    remote = re.compile(r"^(https?:)?//", re.I)
    for page in book.rglob("*.html"):
        loaded = [a for a in _page(page).assets if remote.match(a)]
        assert not loaded, f"{page.relative_to(book)} loads {loaded}"
    for css in book.rglob("*.css"):
        text = css.read_text(encoding="utf-8", errors="replace")
        fetched = re.findall(r"(?:@import\s+(?:url\()?|url\()\s*['\"]?(?:https?:)?//[^)'\"]*", text)
        assert not fetched, f"{css.relative_to(book)} fetches {fetched[:3]}"


def _index_terms(book: Path, lang: str) -> dict:
    text = (book / lang / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1:text.rindex(")")])


def test_search_indexes_words_of_each_language(book):
    zh_terms = _index_terms(book, "zh")["terms"]
    for word in ("守卫", "图中断", "字节码", "计算图"):
        assert word in zh_terms, f"the 中文 search index has no {word}"
    en_terms = _index_terms(book, "en")["terms"]
    assert "guard" in en_terms


# --- in a real browser ------------------------------------------------------------------------


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(book):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(book)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    from test_browser import _browser

    with sync_playwright() as p:
        b = _browser(p)
        yield b
        b.close()


def _open(browser, base: str):
    """A page that records every request leaving the loopback server."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.outside = []
    page.on("request", lambda r: None if r.url.startswith((base, "data:", "blob:", "about:"))
            else page.outside.append(r.url))
    return page


LECTURE = LECTURES[3] if len(LECTURES) > 3 else LECTURES[0]  # 03: FX tracing, with viewer tables


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_navigate_from_landing_page_to_a_lecture(book, served, browser, lang):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = _open(browser, served)
    try:
        page.goto(f"{served}/{lang}/index.html")
        page.screenshot(path=str(SHOTS / f"{lang}_landing.png"))
        # follow the sidebar navigation, as a reader would
        link = page.locator(f'nav.bd-docs-nav a[href$="{_docname(LECTURE)}.html"]').first
        title = link.inner_text().strip()
        link.click()
        page.wait_for_url(f"**/{lang}/{_docname(LECTURE)}.html")
        h1 = page.locator("article h1").first.inner_text()
        assert _key(h1) == _key(title)
        shown = {_key(t) for t in page.locator("article h1, article h2, article h3").all_inner_texts()}
        distinct = _distinct_headings(LECTURE)
        assert distinct[lang] and set(distinct[lang]) <= shown
        assert not shown & set(distinct[OTHER[lang]])
        # the viewers' HTML tables and the stored images are visible on the page
        assert page.locator("article .cell_output table").count() >= 1
        assert page.locator("article .cell_output img").count() >= 1
        page.screenshot(path=str(SHOTS / f"{lang}_lecture.png"))
        page.locator("article .cell_output table").first.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{lang}_lecture_table.png"))
        # and on to the other language's book from the landing page
        page.goto(f"{served}/{lang}/index.html")
        page.locator(f'a[href="../{OTHER[lang]}/index.html"]').first.click()
        page.wait_for_url(f"**/{OTHER[lang]}/index.html")
        assert page.evaluate("document.documentElement.lang").startswith(OTHER[lang])
        assert not page.outside, f"requests left the book: {page.outside}"
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_search_finds_a_term_in_the_prose(book, served, browser, lang):
    term, expected = SEARCH[lang]
    page = _open(browser, served)
    try:
        page.goto(f"{served}/{lang}/{_docname(LECTURES[0])}.html")
        page.locator("button.search-button-field").first.click()
        box = page.locator("#pst-search-dialog input[name=q]")
        box.fill(term)
        box.press("Enter")
        page.wait_for_url(f"**/{lang}/search.html?q=*")
        results = page.locator("#search-results ul.search li")
        results.first.wait_for(timeout=30_000)
        hrefs = [a.get_attribute("href") or "" for a in page.locator("#search-results ul.search li a").all()]
        assert any(expected in h for h in hrefs), f"{lang}: searching {term!r} did not find {expected}: {hrefs}"
        page.screenshot(path=str(SHOTS / f"{lang}_search.png"))
        assert not page.outside, f"requests left the book: {page.outside}"
    finally:
        page.close()
