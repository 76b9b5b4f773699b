"""The one exception type of fxcourse.

Every message has three parts: what was passed, what is accepted, and how to fix it,
so that a learner never has to read an internal traceback to know what to do next.
Like every message of the course it is one line in the reader's language (``FXCOURSE_LANG``
or ``fxcourse.language()``): English, 中文, or both as English, `` / ``, 中文.
"""
from __future__ import annotations

from ._lang import pick

__all__ = ["FxCourseError", "describe"]


def describe(value: object, limit: int = 80) -> str:
    """A short, address-free description of ``value`` for error messages.

    >>> describe(None)
    'None'
    >>> describe([1, 2])
    'list [1, 2]'
    >>> class Layer:
    ...     def __repr__(self):
    ...         return "Layer(\\n  in=4\\n)"
    >>> describe(Layer())
    'Layer Layer( in=4 )'
    >>> describe(len)
    'builtin_function_or_method len'
    """
    if value is None:
        return "None"
    kind = type(value).__name__
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str) and not isinstance(value, (str, bytes)):
        text = f"{kind} {name}"
    else:
        shown = repr(value)
        if " at 0x" in shown:  # default object repr: drop the address
            shown = f"<{kind} object>"
        text = f"{kind} {' '.join(shown.split())}"  # one line, even for an nn.Module
    return text if len(text) <= limit else text[: limit - 1] + "…"


class FxCourseError(Exception):
    """Raised for anything a learner can pass wrongly.

    The message is one line in the reader's language: the English sentence, the 中文 one
    (``zh``), or by default both, joined by `` / ``. Without ``zh`` the 中文 sentence points to
    the parts of the English one (got, expected, Fix); every error the library raises passes
    ``zh``. ``en`` and ``zh`` stay available on the exception.

    >>> err = FxCourseError(got="None", accepted="an fx.GraphModule", fix="pass the traced module",
    ...                     zh="收到 None；需要 fx.GraphModule。修复：传入符号追踪得到的模块。")
    >>> print(err)
    got None; expected an fx.GraphModule. Fix: pass the traced module. / 收到 None；需要 fx.GraphModule。修复：传入符号追踪得到的模块。
    >>> print(FxCourseError(got="int 3", accepted="a str", fix="pass a name", where="zoo"))
    zoo: got int 3; expected a str. Fix: pass a name. / zoo：输入不被接受：收到了什么见 got，可接受什么见 expected，怎样修复见 Fix。
    """

    def __init__(self, got: str, accepted: str, fix: str, *, where: str | None = None,
                 zh: str | None = None) -> None:
        self.got = got
        self.accepted = accepted
        self.fix = fix
        self.where = where
        prefix = f"{where}: " if where else ""
        fix_text = fix if fix.endswith(".") else fix + "."
        self.en = f"{prefix}got {got}; expected {accepted}. Fix: {fix_text}"
        self.zh = zh if zh else (f"{where}：" if where else "") + (
            "输入不被接受：收到了什么见 got，可接受什么见 expected，怎样修复见 Fix。")
        super().__init__(pick(self.en, self.zh))
