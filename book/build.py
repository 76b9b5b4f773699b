"""Build the course book: one static HTML site per language.

    python book/build.py [--stored] [--out build/book] [--lang en zh] [PATH ...]

For each language, ``fxcourse.tooling.i18n.export`` writes single-language copies of
``course/`` and ``labs/`` (never ``solutions/``; or of the notebooks and folders named by PATH)
to a temporary staging folder and, unless ``--stored``, executes each copy in a fresh kernel in
that language (``FXCOURSE_LANG``), exactly as ``fxcourse i18n export`` does, so that what the
course prints (``fxcourse.pick`` sentences, ``check()`` feedback, viewers' notes) is in the
book's language. ``--stored`` renders the committed outputs instead, which the notebooks hold
in "both" mode (English / 中文): fast, nothing executed. Then the landing page
``book/<lang>/index.md`` and ``course/GLOSSARY.md`` (as an appendix) join them, a line break
between two 中文 characters in the markdown is joined (it would render as a space), and Sphinx
with myst-nb renders the pages to ``OUT/<lang>/``. ``OUT/index.html`` links both books.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import string
import tempfile
import time
import unicodedata
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent
REPO = BOOK.parent
LANGS = ("en", "zh")
DEFAULT_PATHS = (REPO / "course", REPO / "labs")

LAB_NOTE = {
    "en": ("```{note}\nA read-only view of this lab: the exercises are unanswered. To work on it, run "
           "`bash scripts/course.sh` and open `labs/{name}` in JupyterLab.\n```"),
    "zh": ("```{note}\n这是本实验的只读视图：练习尚未作答。要动手完成它，请运行 "
           "`bash scripts/course.sh`，然后在 JupyterLab 中打开 `labs/{name}`。\n```"),
}
# What the landing page says about the outputs it shows (book/<lang>/index.md: <!-- outputs -->).
OUTPUTS_NOTE = {
    ("en", True): "To make this book, every notebook was run again, in English, on the machine "
                  "that built it; the outputs are what that run printed.",
    ("en", False): "The outputs are the ones stored in the course's notebooks (made "
                   "on torch 2.14.1 on a CPU-only machine, in the course's bilingual mode, so some "
                   "lines print English and 中文); nothing was re-executed to make this book.",
    ("zh", True): "生成本书时，每个笔记本都在生成本书的机器上以中文模式重新运行过一遍，页面上的输出就是这次运行打印的内容。",
    ("zh", False): "页面上的输出是课程笔记本中保存的输出（在仅有 CPU 的机器上、torch 2.14.1 下以中英文对照模式生成，"
                   "所以有些行同时打印英文和中文）；生成本书时没有重新执行任何代码。",
}
# Words the 中文 search must find whole: Sphinx segments 中文 text with jieba, whose own
# dictionary cuts course terms apart (图中断 -> 图 / 中断, 划分器 -> 划分 / 器). The glossary's
# terms and the bold terms of the 中文 prose join these (see search_words).
SEARCH_TERMS = ("计算图", "符号追踪", "中间表示", "图中断", "守卫", "字节码", "后端", "动态形状",
                "划分器", "最小割", "分发键", "反序列化", "序列化")
APPENDIX = {"en": "Appendix", "zh": "附录"}
ROOT_INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>fxcourse</title></head>
<body>
<h1>fxcourse</h1>
<ul>
<li><a href="en/index.html" hreflang="en">How PyTorch turns Python into graphs (English)</a></li>
<li><a href="zh/index.html" hreflang="zh-CN" lang="zh-CN">PyTorch 如何把 Python 变成计算图（中文）</a></li>
</ul>
</body></html>
"""

# -- 中文 text ----------------------------------------------------------------------------------

_IDEOGRAPH = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# Full-width punctuation and forms: 、。「」『』【】《》（）：；，！？ …
_CJK_PUNCT = "\u3000-\u303f\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65\u2014\u2026\u201c\u201d\u2018\u2019"
_WIDE = re.compile(f"[{_IDEOGRAPH}{_CJK_PUNCT}]")
_PUNCT = re.compile(f"[{_CJK_PUNCT}]")
_CJK_RUN = re.compile(f"[{_IDEOGRAPH}]+")
# A line that starts a markdown block (or ends a paragraph) is never joined to the one above.
_BLOCK_START = re.compile(r"^\s*$|^ {0,3}(?:[-+*]\s|\d{1,9}[.)](?:\s|$)|#{1,6}(?:\s|$)|>|\||```|~~~|\$\$|<|:::)|^( {4}|\t)")
_FENCE = re.compile(r"^ {0,3}(```|~~~|:::)")
_MARKS = "*_`~"  # emphasis and code marks that may sit between the break and the text


def join_cjk_breaks(markdown: str) -> str:
    """``markdown`` with each soft line break that sits between two 中文 characters (or next to
    full-width punctuation) removed: a browser renders such a break as a space ("两个程序。 AOT").
    A break between 中文 and a Latin word stays (a space there is usual), and so does every
    break that ends a block: a blank line, a list item, a heading, a table row, a fence, a
    hard break (two trailing spaces or a backslash). Fenced code is left alone.

    >>> join_cjk_breaks("第一行的中文，\\n接着第二行。\\n**AOTAutograd** 在这里\\n\\n- 列表")
    '第一行的中文，接着第二行。**AOTAutograd** 在这里\\n\\n- 列表'
    >>> join_cjk_breaks("中文\\nEnglish\\n```\\n代码\\n行\\n```")
    '中文\\nEnglish\\n```\\n代码\\n行\\n```'
    """
    lines = markdown.split("\n")
    out: list[str] = []
    fenced = False
    joinable = False  # may the next line be joined to out[-1]?
    for line in lines:
        if _FENCE.match(line):
            fenced = not fenced
            out.append(line)
            joinable = False
            continue
        if fenced:
            out.append(line)
            continue
        if joinable and out and not _BLOCK_START.match(line):
            before = out[-1].rstrip(_MARKS)
            after = line.lstrip().lstrip(_MARKS)
            a, b = before[-1:], after[:1]
            wide = a and b and ((_WIDE.match(a) and _WIDE.match(b)) or _PUNCT.match(a) or _PUNCT.match(b))
            if wide and not _breaks_emphasis(out[-1], line.lstrip()):
                out[-1] = out[-1] + line.lstrip()
                joinable = not (line.endswith("  ") or line.endswith("\\"))
                continue
        out.append(line)
        # a paragraph line can take the next one; a heading, a table row or a hard break cannot
        joinable = bool(line.strip()) and not re.match(r"^ {0,3}(#|\||```|~~~|\$\$|<)", line) \
            and not (line.endswith("  ") or line.endswith("\\"))
    return "\n".join(out)


def _punctuation(ch: str) -> bool:
    return bool(ch) and (ch in string.punctuation or unicodedata.category(ch).startswith("P"))


def _breaks_emphasis(left: str, right: str) -> bool:
    """Would joining ``left`` and ``right`` stop an emphasis mark at the seam from closing or
    opening? (CommonMark: ``**`` after punctuation closes only before a space or punctuation,
    ``**`` before punctuation opens only after one: ``**术语。**`` + ``下一句`` must keep its break.)"""
    inner = left.rstrip(_MARKS)
    if len(inner) < len(left) and _punctuation(inner[-1:]) and not _punctuation(right[:1]):
        return True
    inner = right.lstrip(_MARKS)
    return len(inner) < len(right) and _punctuation(inner[:1]) and not _punctuation(left[-1:])


def bold_terms(markdown: str) -> list[str]:
    """The 中文 terms set in bold (``**...**``) in ``markdown``: each run of 2 to 8 Chinese
    characters in a bold span, after dropping code spans and a gloss in parentheses
    (``**伪张量（FakeTensor）**`` gives 伪张量). A bold span holding punctuation is a stressed
    sentence, not a term, and gives none.

    >>> bold_terms("用 **最小割（min-cut）** 的 **划分器** 与 **ATen 算子**；**这样做，不行**")
    ['最小割', '划分器', '算子']
    """
    text = re.sub(r"^ {0,3}(```|~~~).*?^ {0,3}\1", "", markdown, flags=re.S | re.M)
    text = re.sub(r"(`+).+?\1", "\x00", text, flags=re.S)  # code spans (they may hold **)
    found = []
    for span in re.findall(r"\*\*(.+?)\*\*", text, flags=re.S):
        span = re.sub(r"（[^）]*）|\([^)]*\)", "", span).replace("\x00", " ")
        if _PUNCT.search(span):
            continue
        found += [run for run in _CJK_RUN.findall(span) if 2 <= len(run) <= 8]
    return found


def glossary_terms(glossary: Path) -> list[str]:
    """The 中文 translations in the glossary's table (its second column), each run of Chinese
    characters of a translation that mixes in English (``eval 模式`` gives 模式)."""
    words = []
    if glossary.is_file():
        for line in glossary.read_text(encoding="utf-8").splitlines():
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|") and len(cols) >= 2:
                for word in cols[1].replace("`", "").split(";"):
                    words += [run for run in _CJK_RUN.findall(word) if len(run) >= 2]
    return words


def search_words(src: Path, target: Path) -> Path:
    """The word list of the 中文 search (one word a line): the course's standard terms, the
    glossary's, and the bold terms of every staged page. It is jieba's user dictionary (so the
    splitter keeps each word whole) and the list conf.py's splitter also indexes wherever a
    word occurs in the text, however jieba cut it."""
    words = dict.fromkeys(SEARCH_TERMS)
    words.update(dict.fromkeys(glossary_terms(src / "glossary.md")))
    for path in sorted(src.rglob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                words.update(dict.fromkeys(bold_terms(cell.source)))
    target.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    return target


# -- staging and building ---------------------------------------------------------------------

def stage(lang: str, src: Path, paths: list[Path], execute: bool) -> None:
    """Write the single-language sources of one book into ``src`` (executed in ``lang`` when
    ``execute``)."""
    from fxcourse.tooling import i18n

    for done in i18n.export_iter(paths, lang, src, execute=execute):
        if done.seconds:
            print(f"book {lang}: ran {done.path.parent.name}/{done.path.name} in {done.seconds:.1f} s",
                  flush=True)
    # export starts each copy with a cell that sets the kernel's language: the downloadable
    # .ipynb keeps it, the page does not show it (myst-nb's remove-cell tag).
    for path in sorted(src.glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            if i18n.LANGUAGE_TAG in tags and "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
            if cell.cell_type == "markdown":
                cell.source = join_cjk_breaks(cell.source)
        if path.parent.name == "labs":
            note = nbformat.v4.new_markdown_cell(LAB_NOTE[lang].replace("{name}", path.name))
            title = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
            nb.cells.insert(title + 1, note)  # right under the lab's title
        nbformat.write(nb, path)
    index = (BOOK / lang / "index.md").read_text(encoding="utf-8")
    index = index.replace("<!-- outputs -->", OUTPUTS_NOTE[lang, execute])
    # The glossary is an appendix, not a lecture: export puts the course's in course/.
    staged = src / "course" / "GLOSSARY.md"
    appendix = ""
    if staged.is_file():
        glossary = src / "glossary.md"
        staged.rename(glossary)
        glossary.write_text(join_cjk_breaks(glossary.read_text(encoding="utf-8")), encoding="utf-8")
        appendix = f"```{{toctree}}\n:caption: {APPENDIX[lang]}\n:maxdepth: 1\n\nglossary\n```\n"
    for folder, caption in (("course", {"en": "Lectures", "zh": "讲义"}), ("labs", {"en": "Labs", "zh": "实验"})):
        toc = ""
        if any((src / folder).glob("*.ipynb")):
            toc = f"```{{toctree}}\n:caption: {caption[lang]}\n:maxdepth: 1\n:glob:\n\n{folder}/*\n```\n"
        index = index.replace(f"<!-- {folder} -->", toc)
    index = index.replace("<!-- appendix -->", appendix)
    (src / "index.md").write_text(join_cjk_breaks(index), encoding="utf-8")


def sphinx(lang: str, src: Path, out: Path, work: Path) -> subprocess.Popen:
    doctrees = work / lang / "doctrees"
    words = search_words(src, work / lang / "search-words.txt")
    target = out / lang
    if target.exists():
        shutil.rmtree(target)
    env = dict(os.environ, FXCOURSE_BOOK_LANG=lang, FXCOURSE_BOOK_SEARCH_WORDS=str(words))
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "--keep-going", "-E",
           "-c", str(BOOK), "-d", str(doctrees), str(src), str(target)]
    return subprocess.Popen(cmd, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path,
                        help="notebooks or folders to put in the book (default: course labs)")
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book",
                        help="output folder; each book goes to OUT/<lang> (default: build/book)")
    parser.add_argument("--lang", nargs="+", choices=LANGS, default=list(LANGS))
    parser.add_argument("--stored", action="store_true",
                        help="render the committed outputs (both languages' words) instead of running "
                             "every notebook in the book's language (about 20 minutes a language on "
                             "2 cores) / 直接使用提交的输出（中英文对照），不按本书语言重新运行笔记本")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or list(DEFAULT_PATHS)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory(prefix="fxcourse-book-") as work:
        running = {}
        for lang in args.lang:
            src = Path(work) / lang / "src"
            began = time.perf_counter()
            if not args.stored:
                print(f"book {lang}: running every notebook in {lang} (the whole course: about 20 minutes "
                      f"on 2 cores; --stored renders the committed outputs instead)", flush=True)
            try:
                stage(lang, src, paths, execute=not args.stored)
            except Exception as exc:  # a notebook that does not run: say which, build the rest
                print(f"book {lang}: {exc}", file=sys.stderr)
                failed.append(lang)
                continue
            if not args.stored:
                print(f"book {lang}: notebooks run in {time.perf_counter() - began:.1f} s", flush=True)
            # Sphinx renders this language while the next one's notebooks run.
            running[lang] = sphinx(lang, src, out, Path(work))
        for lang, proc in running.items():
            if proc.wait() != 0:
                failed.append(lang)
    (out / "index.html").write_text(ROOT_INDEX, encoding="utf-8")
    took = time.perf_counter() - start
    for lang in args.lang:
        state = "FAILED" if lang in failed else str(out / lang / "index.html")
        print(f"book {lang}: {state}")
    print(f"built in {took:.1f} s ({'stored outputs' if args.stored else 'notebooks executed'})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
