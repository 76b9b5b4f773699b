"""Sphinx configuration of the course book, shared by both languages.

``book/build.py`` stages single-language copies of the committed notebooks and runs Sphinx
with this folder as the configuration directory; ``FXCOURSE_BOOK_LANG`` (``en`` or ``zh``)
says which book is being built. Notebooks are rendered from their stored outputs, never
executed, and every asset the pages load is served from the book itself (no CDN).
"""
import os

BOOK_LANG = os.environ.get("FXCOURSE_BOOK_LANG", "en")
if BOOK_LANG not in ("en", "zh"):
    raise ValueError(f"FXCOURSE_BOOK_LANG={BOOK_LANG!r}: use 'en' or 'zh'")
ZH = BOOK_LANG == "zh"

project = "fxcourse"
author = "fxcourse authors"
copyright = "fxcourse authors"
# zh_CN switches Sphinx's labels and its Chinese search splitter (word segmentation with jieba).
language = "zh_CN" if ZH else "en"
html_title = "PyTorch 如何把 Python 变成计算图" if ZH else "How PyTorch turns Python into graphs"

extensions = ["myst_nb"]
nb_execution_mode = "off"           # the committed outputs are the book's outputs
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
    # Course terms as whole words (book/build.py writes the list from the glossary).
    html_search_options = {"dict": os.environ.get("FXCOURSE_BOOK_SEARCH_WORDS", "")}

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

        app.add_search_language(SearchChineseFixed)

html_last_updated_fmt = None
# Offline: no ipywidgets loader from a CDN (the notebooks hold no widget state anyway).
nb_ipywidgets_js = {}
