"""Build the course book: one static HTML site per language, from the committed notebooks.

    python book/build.py [--out build/book] [--lang en zh]

For each language, ``fxcourse.tooling.i18n.export`` writes single-language copies of ``course/`` and
``labs/`` (never ``solutions/``) to a temporary staging folder, with no execution; the landing
page ``book/<lang>/index.md`` and ``course/GLOSSARY.md`` (as an appendix) join them, and Sphinx
with myst-nb renders the stored outputs to ``OUT/<lang>/``. ``OUT/index.html`` links both books.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

BOOK = Path(__file__).resolve().parent
REPO = BOOK.parent
LANGS = ("en", "zh")

LAB_NOTE = {
    "en": ("```{note}\nA read-only view of this lab: the exercises are unanswered and the outputs are "
           "the ones stored in the course. To work on it, run `bash scripts/course.sh` and open "
           "`labs/{name}` in JupyterLab.\n```"),
    "zh": ("```{note}\n这是本实验的只读视图：练习尚未作答，输出是课程中保存的输出。要动手完成它，请运行 "
           "`bash scripts/course.sh`，然后在 JupyterLab 中打开 `labs/{name}`。\n```"),
}
# Words the 中文 search must find whole: Sphinx segments 中文 text with jieba, whose own
# dictionary cuts course terms apart (图中断 -> 图 / 中断, 字节码 -> 字节 / 码).
SEARCH_TERMS = ("计算图", "符号追踪", "中间表示", "图中断", "守卫", "字节码", "后端", "动态形状")
_CJK = re.compile(r"[\u4e00-\u9fff]")
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


def stage(lang: str, src: Path) -> None:
    """Write the single-language sources of one book into ``src``."""
    from fxcourse.tooling import i18n

    i18n.export([REPO / "course", REPO / "labs"], lang, src)
    # export starts each copy with a cell that sets the kernel's language: the downloadable
    # .ipynb keeps it, the page does not show it (myst-nb's remove-cell tag).
    language_tag = getattr(i18n, "LANGUAGE_TAG", None)
    for path in sorted(src.glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            tags = cell.metadata.get("tags", [])
            if language_tag and language_tag in tags and "remove-cell" not in tags:
                cell.metadata["tags"] = [*tags, "remove-cell"]
        if path.parent.name == "labs":
            note = nbformat.v4.new_markdown_cell(LAB_NOTE[lang].replace("{name}", path.name))
            title = next(i for i, c in enumerate(nb.cells) if c.cell_type == "markdown")
            nb.cells.insert(title + 1, note)  # right under the lab's title
        nbformat.write(nb, path)
    index = (BOOK / lang / "index.md").read_text(encoding="utf-8")
    # The glossary is an appendix, not a lecture: export may already have put it in course/.
    staged, glossary = src / "course" / "GLOSSARY.md", REPO / "course" / "GLOSSARY.md"
    appendix = ""
    if staged.is_file():
        staged.rename(src / "glossary.md")
    elif glossary.is_file():
        shutil.copyfile(glossary, src / "glossary.md")
    if (src / "glossary.md").is_file():
        appendix = f"```{{toctree}}\n:caption: {APPENDIX[lang]}\n:maxdepth: 1\n\nglossary\n```\n"
    (src / "index.md").write_text(index.replace("<!-- appendix -->", appendix), encoding="utf-8")


def search_dictionary(glossary: Path, target: Path) -> Path:
    """A jieba user dictionary (one word a line): the course's standard terms and every 中文
    translation in the glossary's table (its second column)."""
    words = dict.fromkeys(SEARCH_TERMS)
    if glossary.is_file():
        for line in glossary.read_text(encoding="utf-8").splitlines():
            cols = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.lstrip().startswith("|") and len(cols) >= 2:
                for word in cols[1].replace("`", "").split(";"):
                    word = word.strip()
                    if _CJK.search(word) and re.fullmatch(r"[\w ]+", word):
                        words[word] = None
    target.write_text("".join(f"{w}\n" for w in words), encoding="utf-8")
    return target


def build(lang: str, out: Path, work: Path) -> subprocess.Popen:
    src, doctrees = work / lang / "src", work / lang / "doctrees"
    stage(lang, src)
    terms = search_dictionary(src / "glossary.md", work / lang / "search-words.txt")
    target = out / lang
    if target.exists():
        shutil.rmtree(target)
    env = dict(os.environ, FXCOURSE_BOOK_LANG=lang, FXCOURSE_BOOK_SEARCH_WORDS=str(terms))
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "--keep-going", "-E",
           "-c", str(BOOK), "-d", str(doctrees), str(src), str(target)]
    return subprocess.Popen(cmd, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "build" / "book",
                        help="output folder; each book goes to OUT/<lang> (default: build/book)")
    parser.add_argument("--lang", nargs="+", choices=LANGS, default=list(LANGS))
    args = parser.parse_args(argv)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    failed = []
    with tempfile.TemporaryDirectory(prefix="fxcourse-book-") as work:
        # The two books are independent: build them side by side (one Sphinx process each).
        running = {lang: build(lang, out, Path(work)) for lang in args.lang}
        for lang, proc in running.items():
            if proc.wait() != 0:
                failed.append(lang)
    (out / "index.html").write_text(ROOT_INDEX, encoding="utf-8")
    took = time.perf_counter() - start
    for lang in args.lang:
        state = "FAILED" if lang in failed else str(out / lang / "index.html")
        print(f"book {lang}: {state}")
    print(f"built in {took:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
