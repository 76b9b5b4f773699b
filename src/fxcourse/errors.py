"""The one exception type of fxcourse.

Every message has three parts: what was passed, what is accepted, and how to fix it,
so that a learner never has to read an internal traceback to know what to do next.
Like every message of the course it is one line in the reader's language (``FXCOURSE_LANG``
or ``fxcourse.language()``): English, 中文, or both as English, `` / ``, 中文.
"""
from __future__ import annotations

import difflib
import functools
import inspect
from typing import Any, Callable, TypeVar

from ._lang import pick

__all__ = ["FxCourseError", "describe", "need_flag", "refuses_bad_calls"]

_F = TypeVar("_F", bound=Callable[..., Any])


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


def refuses_bad_calls(fn: _F, where: str | None = None) -> _F:
    """``fn``, but a call that does not fit its signature (a misspelt or unknown keyword, a
    missing argument, one argument too many) raises :class:`FxCourseError` naming what was
    passed and the accepted parameters, instead of Python's ``TypeError``. ``fxcourse``
    applies it to every public function; the function itself is ``__wrapped__``.

    >>> def draw(obj, *, max_nodes=300, focus=None):
    ...     return obj
    >>> refuses_bad_calls(draw)(1, max_node=10)
    Traceback (most recent call last):
    ...
    fxcourse.errors.FxCourseError: draw: got the keyword max_node=10; expected draw(obj, *, max_nodes=300, focus=None). Fix: write max_nodes= instead of max_node=. / draw：不接受参数 max_node=10；可用的参数：draw(obj, *, max_nodes=300, focus=None)。修复：把 max_node= 改成 max_nodes=。
    """
    if getattr(fn, "_fxcourse_refuses_bad_calls", False):
        return fn
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return fn
    name = where or getattr(fn, "__name__", "fxcourse")
    shown = f"{name}({_parameters(signature)})"

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise _bad_call(name, shown, signature, args, kwargs, exc) from None
        return fn(*args, **kwargs)

    call._fxcourse_refuses_bad_calls = True  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def _parameters(signature: inspect.Signature) -> str:
    plain = signature.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                          for p in signature.parameters.values()],
                              return_annotation=inspect.Signature.empty)
    return str(plain)[1:-1]


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 and " at 0x" not in shown and "\n" not in shown else describe(value, 40)


def _bad_call(name: str, shown: str, signature: inspect.Signature, args: tuple[Any, ...],
              kwargs: dict[str, Any], exc: TypeError) -> "FxCourseError":
    params = signature.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unknown = [k for k in kwargs if k not in params and not takes_any]
    if unknown:
        key = unknown[0]
        near = difflib.get_close_matches(key, [p for p, v in params.items()
                                               if v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)], n=1)
        value = _short(kwargs[key])
        got = f"the keyword {key}={value}"
        fix, fix_zh = ((f"write {near[0]}= instead of {key}=", f"把 {key}= 改成 {near[0]}=。") if near else
                       (f"leave {key}= out or use one of the parameters above", f"去掉 {key}=，或改用上面列出的参数。"))
        return FxCourseError(got=got, accepted=shown, fix=fix, where=name,
                             zh=f"{name}：不接受参数 {key}={value}；可用的参数：{shown}。修复：{fix_zh}")
    positional = [p.name for p in params.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(args) > len(positional) and not any(p.kind is p.VAR_POSITIONAL for p in params.values()):
        if not positional and not params:
            return FxCourseError(got=f"{len(args)} argument(s)", accepted=f"{shown}, with no arguments", where=name,
                                 fix=f"call it as {name}()",
                                 zh=f"{name}：它不接受参数，却收到了 {len(args)} 个；修复：直接调用 {name}()。")
        return FxCourseError(got=f"{len(args)} arguments by position", accepted=shown, where=name,
                             fix=f"pass at most {len(positional)} by position and the others by keyword",
                             zh=f"{name}：按位置传了 {len(args)} 个参数，它最多只接受 {len(positional)} 个；用法：{shown}。"
                                "修复：其余参数按关键字传入。")
    twice = [p for p in positional[:len(args)] if p in kwargs]
    if twice:
        return FxCourseError(got=f"{twice[0]} twice, by position and as {twice[0]}=", accepted=shown, where=name,
                             fix=f"pass {twice[0]} once", zh=f"{name}：参数 {twice[0]} 既按位置又按关键字传了两次；"
                                                            f"用法：{shown}。修复：只传一次 {twice[0]}。")
    missing = [name_ for name_ in positional[len(args):] if params[name_].default is params[name_].empty
               and name_ not in kwargs]
    missing += [p.name for p in params.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty
                and p.name not in kwargs]
    if missing:
        got = f"a call without {missing[0]}"
        return FxCourseError(got=got, accepted=shown, fix=f"pass {missing[0]} as well", where=name,
                             zh=f"{name}：调用时缺少参数 {missing[0]}；用法：{shown}。修复：把 {missing[0]} 也传进来。")
    message = " ".join(str(exc).split())
    return FxCourseError(got=f"a call it cannot take ({message})", accepted=shown,
                         fix="pass the arguments as shown, by position or by keyword", where=name,
                         zh=f"{name}：无法接受这样的调用（{message}）；用法：{shown}。修复：按上面的用法传参。")


def need_flag(value: object, name: str, where: str, fix: str, fix_zh: str, *, none_ok: bool = False) -> None:
    """Refuse an option that is not ``True`` or ``False`` (or ``None`` when ``none_ok``): a truthy
    ``"no"`` or ``1`` would otherwise read as ``True``.

    >>> need_flag(True, "shapes", "draw", "pass shapes=False", "传 shapes=False")
    >>> need_flag("no", "shapes", "draw", "pass shapes=False", "传 shapes=False")
    Traceback (most recent call last):
    ...
    fxcourse.errors.FxCourseError: draw: got shapes=str 'no'; expected shapes=True or shapes=False. Fix: pass shapes=False. / draw：shapes=str 'no' 不可用；只能是 True 或 False。修复：传 shapes=False。
    """
    if isinstance(value, bool) or (none_ok and value is None):
        return
    en, zh = ("None, True or False", "None、True 或 False") if none_ok else (f"{name}=True or {name}=False", "True 或 False")
    raise FxCourseError(got=f"{name}={describe(value)}", accepted=en, fix=fix, where=where,
                        zh=f"{where}：{name}={describe(value)} 不可用；只能是 {zh}。修复：{fix_zh}。")

