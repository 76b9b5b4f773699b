"""The reader's toggle in a notebook: :func:`fxcourse.language` and what it shows.

It stands above :mod:`fxcourse.errors` (a bad choice is an :class:`FxCourseError`), which
stands above :mod:`fxcourse._lang` (every message, errors' included, is worded in the
reader's language): one direction, no circle.
"""
from __future__ import annotations

from ._lang import current, normalise, set_language
from ._lang import pick as _pick
from .errors import FxCourseError

__all__ = ["HIDE_CSS", "ZH_CSS", "ZH_FONTS", "LanguageChoice", "language"]


#: CSS that hides the other language's prose cells. JupyterLab gives each cell its tags as
#: classes ``cell-tag-<tag>`` through the jupyterlab-celltagsclasses extension; the same rule
#: is what ``scripts/course.sh --lang`` installs as JupyterLab's custom CSS.
HIDE_CSS = {
    "en": ".jp-Notebook .jp-Cell.cell-tag-lang-zh { display: none !important; }",
    "zh": ".jp-Notebook .jp-Cell.cell-tag-lang-en { display: none !important; }",
    "both": "",
}

#: Simplified Chinese fonts, first choice first (Linux, Adobe's name for the same, macOS, Windows).
ZH_FONTS = '"Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei"'
#: CSS that draws the 中文 prose cells with Simplified Chinese glyph forms. Under JupyterLab's
#: English interface the page says ``<html lang="en">`` and a cell cannot say ``lang="zh-CN"``
#: (the markup is JupyterLab's), so the browser's fallback picks whichever CJK font it likes
#: best, often one with Traditional or Japanese forms (a full-width colon drawn centred). The
#: rendered prose of a ``lang-zh`` cell therefore starts its font list with Simplified Chinese
#: fonts; its markdown editor, and outputs (which may print 中文), keep the code font for Latin
#: text and fall back to them for 中文. ``scripts/course.sh`` installs it with ``--lang both``
#: and ``en`` (under ``--lang zh`` the interface is zh_CN and the page says ``lang="zh-CN"``).
ZH_CSS = "\n".join([
    f".jp-Notebook .jp-Cell.cell-tag-lang-zh .jp-RenderedMarkdown {{ font-family: {ZH_FONTS}, sans-serif; }}",
    f".jp-Notebook .jp-Cell.cell-tag-lang-zh .jp-RenderedMarkdown :is(code, pre) "
    f"{{ font-family: var(--jp-code-font-family), {ZH_FONTS}, monospace; }}",
    f".jp-Notebook .jp-Cell.cell-tag-lang-zh .cm-content, .jp-Notebook .jp-OutputArea-output pre "
    f"{{ font-family: var(--jp-code-font-family), {ZH_FONTS}, monospace; }}",
])


class LanguageChoice:
    """What :func:`language` returns: shows the choice, and in JupyterLab a style element that
    hides the other language's prose cells on the page (code cells and outputs stay)."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def to_text(self) -> str:
        names = {"en": ("English only", "只显示英文"), "zh": ("中文 only", "只显示中文"),
                 "both": ("English and 中文", "中英文对照")}[self.lang]
        return _pick(f"fxcourse language: {names[0]}", f"fxcourse 语言：{names[1]}")

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:
        return f"LanguageChoice({self.lang!r})"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(self.to_text())  # type: ignore[attr-defined]

    def _repr_html_(self) -> str:
        import html

        # The rules apply to the notebook holding this output only (:has), and say for both
        # languages whether they show, so they also undo course.sh's custom CSS. Every call's
        # rules have the same specificity: where a notebook holds several calls' outputs, the
        # lowest one on the page wins. Cells JupyterLab hides itself (under a collapsed
        # heading: lm-mod-hidden) stay hidden.
        scope = f'.jp-Notebook:has(.fxcourse-language[data-lang="{self.lang}"])'
        rules = []
        for tag in ("en", "zh"):
            shown = self.lang in (tag, "both")
            rules.append(f"{scope} .jp-Cell.cell-tag-lang-{tag}:not(.lm-mod-hidden) "
                         f"{{ display: {'revert' if shown else 'none'} !important; }}")
        if self.lang in ("zh", "both"):  # 中文 shown: Simplified Chinese glyphs (ZH_CSS)
            rules.append(ZH_CSS.replace(".jp-Notebook ", f"{scope} "))
        style = '<style class="fxcourse-language-style">' + "\n".join(rules) + "</style>"
        return f'{style}<div class="fxcourse-language" data-lang="{self.lang}">{html.escape(self.to_text())}</div>'


def language(choice: str | None = None) -> LanguageChoice:
    """Read the course in one language: ``'en'``, ``'zh'`` or ``'both'``.

    In a notebook, ``fxcourse.language("zh")`` hides the English prose cells of the page you
    are reading (JupyterLab, with the course's set-up) and makes every tool of this kernel
    (``check()``, ``hint()``, errors, viewers' notes) speak 中文. With no argument it tells the
    language in force. Code cells and outputs are never hidden; nothing in the notebook file
    changes, so switching back and forth never touches your work.

    >>> language("en").lang, current()
    ('en', 'en')
    >>> print(language("zh"))
    fxcourse 语言：只显示中文
    >>> set_language(None)
    >>> language("fr")
    Traceback (most recent call last):
    ...
    fxcourse.errors.FxCourseError: language: got 'fr'; expected 'en', 'zh' or 'both'. Fix: call fxcourse.language("en"), language("zh") or language("both"). / language：不支持 'fr'；可选 'en'、'zh' 或 'both'，例如 fxcourse.language("zh")。
    >>> set_language(None)
    """
    if choice is not None:
        # "" is no choice (FXCOURSE_LANG="" reads as both; an empty argument is a mistake)
        lang = normalise(choice) if isinstance(choice, str) and choice.strip() else None
        if lang is None:
            raise FxCourseError(got=repr(choice), accepted="'en', 'zh' or 'both'",
                                fix='call fxcourse.language("en"), language("zh") or language("both")',
                                where="language",
                                zh=f"language：不支持 {choice!r}；可选 'en'、'zh' 或 'both'，例如 fxcourse.language(\"zh\")。")
        set_language(lang)
    return LanguageChoice(current())


def pick(en: str, zh: str, sep: str = " / ") -> str:
    """One sentence in the reader's language, for a lecture's own ``print``, plot title or label.

    English under ``fxcourse.language("en")``, 中文 under ``"zh"``, and in ``"both"`` English,
    ``sep``, then 中文: the same switch every tool of the course follows.

    >>> import fxcourse
    >>> _ = fxcourse.language("zh"); fxcourse.pick("3 graphs", "3 个图")
    '3 个图'
    >>> _ = fxcourse.language("both"); fxcourse.pick("3 graphs", "3 个图", sep=" | ")
    '3 graphs | 3 个图'
    >>> from fxcourse._lang import set_language; set_language(None)  # back to FXCOURSE_LANG
    """
    for name, value in (("en", en), ("zh", zh), ("sep", sep)):
        if not isinstance(value, str):
            raise FxCourseError(
                got=f"{name}={value!r}", accepted="three strings: the English sentence, its 中文 twin, "
                "and optionally sep",
                fix='call fxcourse.pick("3 graphs", "3 个图"); format numbers into both strings first',
                where="pick",
                zh=f"pick：{name}={value!r} 不是字符串；请传入英文句子和对应的中文句子（sep 可选），"
                   "例如 fxcourse.pick(\"3 graphs\", \"3 个图\")；数字请先格式化进两个字符串。")
    return _pick(en, zh, sep)
