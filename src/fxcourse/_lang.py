"""The reader's language: English, 中文 or both, chosen once for every tool of the course.

The choice comes from :func:`fxcourse.language` when a notebook called it, otherwise from the
``FXCOURSE_LANG`` environment variable (``en``, ``zh`` or ``both``; unset means ``both``).
Everything the course says to a reader goes through :func:`pick` (one sentence in two
languages) or :func:`text` (a value that may be a pair), so one switch changes them all.

>>> import os
>>> os.environ["FXCOURSE_LANG"] = "zh"
>>> pick("passed", "通过")
'通过'
>>> os.environ["FXCOURSE_LANG"] = "both"
>>> pick("passed", "通过")
'passed / 通过'
>>> text(("the input graph unchanged", "输入图不变"))
'the input graph unchanged / 输入图不变'
>>> text("tensor([1., 2.])")
'tensor([1., 2.])'
>>> del os.environ["FXCOURSE_LANG"]
"""
from __future__ import annotations

import os
from typing import Union

__all__ = ["CHOICES", "ENV", "HIDE_CSS", "Bilingual", "LanguageChoice", "Phrase", "current", "language", "normalise", "only", "pick", "set_language", "text"]

#: The environment variable every tool reads.
ENV = "FXCOURSE_LANG"
#: The accepted choices.
CHOICES = ("en", "zh", "both")
_ALIASES = {
    "en": "en", "english": "en", "en-us": "en", "en_us": "en", "en-gb": "en",
    "zh": "zh", "zh-cn": "zh", "zh_cn": "zh", "zh-hans": "zh", "cn": "zh", "chinese": "zh", "中文": "zh",
    "both": "both", "all": "both", "": "both",
}

#: A value shown to a reader: a plain string (a number, a repr: the same in every language)
#: or an ``(English, 中文)`` pair.
Bilingual = Union[str, "tuple[str, str]"]

_chosen: str | None = None  # set by fxcourse.language(...) for this process


def normalise(value: str | None) -> str | None:
    """``'en'``, ``'zh'`` or ``'both'`` for an accepted spelling, else None.

    >>> normalise("zh_CN"), normalise(" English "), normalise(None), normalise("fr")
    ('zh', 'en', 'both', None)
    """
    if value is None:
        return "both"
    return _ALIASES.get(value.strip().lower())


def current() -> str:
    """The language in force: the notebook's choice, else ``FXCOURSE_LANG``, else ``'both'``.

    An unknown ``FXCOURSE_LANG`` reads as ``'both'`` (nothing is hidden); ``fxcourse doctor``
    names it.
    """
    if _chosen is not None:
        return _chosen
    return normalise(os.environ.get(ENV)) or "both"


def set_language(choice: str | None) -> None:
    """Fix the language for this process (None: follow ``FXCOURSE_LANG`` again)."""
    global _chosen
    _chosen = None if choice is None else normalise(choice)


def pick(en: str, zh: str, sep: str = " / ") -> str:
    """One sentence in the reader's language; in ``both``, English, ``sep``, then 中文."""
    lang = current()
    if lang == "en":
        return en
    if lang == "zh":
        return zh
    return f"{en}{sep}{zh}"


class Phrase(str):
    """A string that reads as itself in English and in ``both``, and as its 中文 twin when the
    reader reads only 中文: for a value's description, which would only repeat itself in
    ``both`` (``tensor of shape (2, 3)`` / ``形状为 (2, 3) 的张量``).

    >>> p = Phrase("tensor of shape (2, 3)", "形状为 (2, 3) 的张量")
    >>> p == "tensor of shape (2, 3)", p.zh
    (True, '形状为 (2, 3) 的张量')
    """

    zh: str

    def __new__(cls, en: str, zh: str) -> "Phrase":
        obj = super().__new__(cls, en)
        obj.zh = zh
        return obj


def text(value: Bilingual, sep: str = " / ") -> str:
    """A value for display: a pair goes through :func:`pick`, a :class:`Phrase` through
    :func:`only`, a string is shown as it is."""
    if isinstance(value, Phrase):
        return only(str(value), value.zh)
    if isinstance(value, tuple) and len(value) == 2:
        return pick(value[0], value[1], sep)
    return str(value)


def only(en: str, zh: str) -> str:
    """English when the reader reads English or both, else 中文: for compact output (table
    headers, notes) that stays in one language even in ``both``.

    >>> os.environ["FXCOURSE_LANG"] = "both"; only("nodes", "节点")
    'nodes'
    >>> os.environ["FXCOURSE_LANG"] = "zh"; only("nodes", "节点")
    '节点'
    >>> del os.environ["FXCOURSE_LANG"]
    """
    return zh if current() == "zh" else en


# -- the reader's toggle in a notebook -------------------------------------------------------

#: CSS that hides the other language's prose cells. JupyterLab gives each cell its tags as
#: classes ``cell-tag-<tag>`` through the jupyterlab-celltagsclasses extension; the same rule
#: is what ``scripts/course.sh --lang`` installs as JupyterLab's custom CSS.
HIDE_CSS = {
    "en": ".jp-Notebook .jp-Cell.cell-tag-lang-zh { display: none !important; }",
    "zh": ".jp-Notebook .jp-Cell.cell-tag-lang-en { display: none !important; }",
    "both": "",
}


class LanguageChoice:
    """What :func:`language` returns: shows the choice, and in JupyterLab a style element that
    hides the other language's prose cells on the page (code cells and outputs stay)."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def to_text(self) -> str:
        names = {"en": ("English only", "只显示英文"), "zh": ("中文 only", "只显示中文"),
                 "both": ("English and 中文", "中英文对照")}[self.lang]
        return pick(f"fxcourse language: {names[0]}", f"fxcourse 语言：{names[1]}")

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
            from .errors import FxCourseError

            raise FxCourseError(got=repr(choice), accepted="'en', 'zh' or 'both'",
                                fix='call fxcourse.language("en"), language("zh") or language("both")',
                                where="language",
                                zh=f"language：不支持 {choice!r}；可选 'en'、'zh' 或 'both'，例如 fxcourse.language(\"zh\")。")
        set_language(lang)
    return LanguageChoice(current())
