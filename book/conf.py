"""Sphinx configuration of the course book, shared by both languages.

``book/build.py`` stages single-language copies of the notebooks (executed in the book's
language, or with their committed outputs under ``--stored``) and runs Sphinx with this folder
as the configuration directory; ``FXCOURSE_BOOK_LANG`` (``en`` or ``zh``) says which book is
being built. Sphinx itself never executes a notebook, and every asset the pages load is served
from the book itself (no CDN). The 中文 book's pages say ``<html lang="zh-CN">`` (Sphinx's tag
for ``zh_CN``), so browsers draw Simplified Chinese glyph forms, and its stylesheet lists
Simplified Chinese fonts.
"""
import os

BOOK_LANG = os.environ.get("FXCOURSE_BOOK_LANG", "en")
if BOOK_LANG not in ("en", "zh"):
    raise ValueError(f"FXCOURSE_BOOK_LANG={BOOK_LANG!r}: use 'en' or 'zh'")
ZH = BOOK_LANG == "zh"

project = "fxcourse"
author = "fxcourse 课程作者" if ZH else "fxcourse authors"
copyright = author
# zh_CN switches Sphinx's labels and its Chinese search splitter (word segmentation with jieba).
language = "zh_CN" if ZH else "en"
html_title = "PyTorch 如何把 Python 变成计算图" if ZH else "How PyTorch turns Python into graphs"

extensions = ["myst_nb"]
nb_execution_mode = "off"           # book/build.py ran the notebooks (or kept their outputs)
nb_merge_streams = True             # one block per cell instead of one per write to stdout
myst_enable_extensions = ["colon_fence"]
exclude_patterns = ["_build", "backups", "**/.ipynb_checkpoints"]
# Headings in the notebooks start at level 1 per page; a few prose cells jump levels.
suppress_warnings = ["myst.header"]

html_theme = "sphinx_book_theme"
html_theme_options = {
    "show_navbar_depth": 1,
    "show_toc_level": 2,
    "use_download_button": True,    # the single-language .ipynb that was rendered
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "use_issues_button": False,
    "use_edit_page_button": False,
    "search_bar_text": "搜索本书…" if ZH else "Search this book…",
}
if ZH:
    # Sphinx's 中文 search indexes 中文 words only when jieba segments the text; without it the
    # index holds Latin words alone and a search for 守卫 finds nothing. Fail rather than ship that.
    try:
        import jieba
    except ImportError as exc:
        raise RuntimeError("the 中文 book needs jieba for its search: pip install jieba==0.42.1 / "
                           "中文书的搜索需要 jieba：pip install jieba==0.42.1") from exc
    import logging

    jieba.setLogLevel(logging.WARNING)
    # Course terms as whole words (book/build.py writes the list: standard terms, the glossary's,
    # the bold terms of the 中文 prose).
    SEARCH_WORDS = os.environ.get("FXCOURSE_BOOK_SEARCH_WORDS", "")
    html_search_options = {"dict": SEARCH_WORDS}
    # Simplified Chinese fonts after the theme's Latin ones (book/_static/zh.css).
    html_static_path = ["_static"]
    html_css_files = ["zh.css"]

html_show_sphinx = False


def setup(app):
    if ZH:
        from sphinx.search.zh import SearchChinese

        class SearchChineseFixed(SearchChinese):
            # Sphinx 9.0 names the JS stemmer after language_name ("ChineseStemmer"), but the
            # 中文 search ships the English stemmer, so every search page stopped with
            # "ChineseStemmer is not defined" (sphinx-doc/sphinx#14229, fixed upstream by
            # deriving the name from the stemmer file). Naming it English loads the one shipped.
            language_name = "English"

            def __init__(self, options):
                super().__init__(options)
                path = options.get("dict", "")
                words = open(path, encoding="utf-8").read().split() if path else []
                self.course_words = sorted(set(words), key=len, reverse=True)

            def split(self, input):
                # jieba's cut depends on the characters around a word (图中断 beside 嵌套 or 日志
                # can come out as 图 / 中断): every course word in the text is indexed as well.
                found = super().split(input)
                return found + [w for w in self.course_words if w in input and w not in found]

        app.add_search_language(SearchChineseFixed)

html_last_updated_fmt = None
# Offline: no ipywidgets loader from a CDN (the notebooks hold no widget state anyway).
nb_ipywidgets_js = {}
