"""The reader's language: English, 中文 or both, chosen once for every tool of the course.

The choice comes from :func:`fxcourse.language` (:mod:`fxcourse._toggle`) when a notebook called it, otherwise from the
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

__all__ = ["CHOICES", "ENV", "Bilingual", "Phrase", "current", "normalise", "only", "pick", "set_language", "text"]

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
