"""Whole-result comparison shared by the lab checkers and ``compare_capture``: one line that
says where two results differ and how, or ``None``.

Introduced in labs/lab00_warmup.ipynb (every checker compares with it) and
course/00_overview.ipynb (``compare_capture``'s "matches eager" column).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from ._lang import Phrase
from ._text import scrub

__all__ = ["describe", "differs"]

# The words of each message in English and 中文; ``lang="zh"`` picks the 中文 ones (the
# default stays English, which is what the lab checkers show in every mode).
_EN = {
    "shape": "{w}: shape {g}, {e} {x}", "dtype": "{w}: dtype {g}, {e} {x}", "device": "{w}: on {g}, {e} {x}",
    "values": "{w}: values differ", "at": "{w}: at index {i} got {g}, {e} {x}",
    "nan": "{w}: NaN where a number was expected (or the reverse) at index {i}: got {g}, {e} {x}",
    "close": "{w}: at index {i} got {g}, {e} {x} (max abs difference {d})", "pair": "{w}: {g}, {e} {x}",
    "inf": "{w}: at index {i} got {g}, {e} {x} (an infinity where a finite number was expected, or the reverse)",
    "number": "{w}: {g} ({t}), {e} {x}", "keys": "{w}: keys {g}, {e} {x}", "items": "{w}: {g} items, {e} {x}",
}
_ZH = {
    "shape": "{w}：形状 {g}，{e} {x}", "dtype": "{w}：dtype {g}，{e} {x}", "device": "{w}：在 {g} 上，{e} {x}",
    "values": "{w}：数值不同", "at": "{w}：索引 {i} 处得到 {g}，{e} {x}",
    "nan": "{w}：索引 {i} 处该是数字的地方出现了 NaN（或反过来）：得到 {g}，{e} {x}",
    "close": "{w}：索引 {i} 处得到 {g}，{e} {x}（最大绝对误差 {d}）", "pair": "{w}：{g}，{e} {x}",
    "inf": "{w}：索引 {i} 处得到 {g}，{e} {x}（该是有限数的地方出现了无穷大，或反过来）",
    "number": "{w}：{g}（{t}），{e} {x}", "keys": "{w}：键 {g}，{e} {x}", "items": "{w}：{g} 项，{e} {x} 项",
}


def describe(value: Any, lang: str = "en") -> str:
    """A short, address-free description of a value: type, and shape/dtype for tensors
    (``lang="zh"``: in 中文). The English one is a :class:`~fxcourse._lang.Phrase` that
    carries its 中文 twin, so feedback that shows it reads in 中文 for a 中文-only reader.

    >>> import torch
    >>> describe(torch.zeros(2, 3))
    'tensor of shape (2, 3), torch.float32'
    >>> describe([1, 2])
    'list of 2 items'
    >>> describe(torch.zeros(2, 3), lang="zh")
    '形状为 (2, 3) 的张量，torch.float32'
    >>> describe([1, 2]).zh
    '含 2 项的 list'
    """
    if lang != "zh":
        en, zh = _describe(value, "en"), _describe(value, "zh")
        return Phrase(en, zh) if en != zh else en
    return _describe(value, "zh")


def _describe(value: Any, lang: str) -> str:
    zh = lang == "zh"
    if isinstance(value, torch.Tensor):
        if zh:
            return f"形状为 {tuple(value.shape)} 的张量，{value.dtype}"
        return f"tensor of shape {tuple(value.shape)}, {value.dtype}"
    if isinstance(value, (list, tuple)):
        if zh:
            return f"含 {len(value)} 项的 {type(value).__name__}"
        return f"{type(value).__name__} of {len(value)} item{'' if len(value) == 1 else 's'}"
    if isinstance(value, dict):
        return f"键为 {_keys(value)} 的 dict" if zh else f"dict with keys {_keys(value)}"
    if value is None or isinstance(value, (bool, int, float, str)):
        text = repr(value)
        return text if len(text) <= 80 else text[:79] + "…"
    return scrub(type(value).__name__)


def _tensor_diff(got: torch.Tensor, want: torch.Tensor, where: str, rtol: float, atol: float,
                 expected: str, say: dict[str, str]) -> str | None:
    if got.shape != want.shape:
        return say["shape"].format(w=where, g=tuple(got.shape), e=expected, x=tuple(want.shape))
    if got.dtype != want.dtype:
        return say["dtype"].format(w=where, g=got.dtype, e=expected, x=want.dtype)
    if got.device != want.device:
        return say["device"].format(w=where, g=got.device, e=expected, x=want.device)
    if got.layout != want.layout or got.is_quantized or want.is_quantized:
        return None if torch.equal(got, want) else say["values"].format(w=where)
    g, w = got.detach(), want.detach()
    if not (g.is_floating_point() or g.is_complex()):
        if torch.equal(g, w):
            return None
        bad = tuple((g != w).nonzero()[0].tolist())
        return say["at"].format(w=where, i=bad, g=repr(g[bad].item()), e=expected, x=repr(w[bad].item()))
    g_nan, w_nan = torch.isnan(g), torch.isnan(w)
    if not torch.equal(g_nan, w_nan):
        index = tuple((g_nan != w_nan).nonzero()[0].tolist())
        return say["nan"].format(w=where, i=index, g=f"{g[index].item():.4g}", e=expected,
                                 x=f"{w[index].item():.4g}")
    ok = torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if bool(ok.all()):
        return None
    index = tuple((~ok).nonzero()[0].tolist())
    finite = ~(g_nan | torch.isinf(g) | torch.isinf(w))
    if bool(torch.isinf(g[index]) | torch.isinf(w[index])) or not bool((finite & ~ok).any()):
        index = index if bool(torch.isinf(g[index]) | torch.isinf(w[index])) else \
            tuple((~ok & ~finite).nonzero()[0].tolist())
        return say["inf"].format(w=where, i=index, g=f"{g[index].item():.4g}", e=expected,
                                 x=f"{w[index].item():.4g}")
    worst = float((g - w)[finite].abs().max())
    shown_g, shown_w = g[index].item(), w[index].item()
    # as few digits as make the two read differently
    digits = next((d for d in (".4g", ".9g") if format(shown_g, d) != format(shown_w, d)), ".17g")
    return say["close"].format(w=where, i=index, g=format(shown_g, digits), e=expected,
                               x=format(shown_w, digits), d=f"{worst:.3g}")


#: 中文 for the ``where`` words checkers pass to :func:`differs` in English.
_ZH_WHERE = {"result": "结果", "output": "输出", "the output": "输出", "outputs": "输出", "gradient": "梯度",
             "grad": "梯度", "predictions": "预测", "prediction": "预测", "returned value": "返回值",
             "return value": "返回值", "value": "值", "values": "值", "input": "输入", "inputs": "输入",
             "the input": "输入", "inputs after the call": "调用后的输入", "loaded": "加载结果"}


def _zh_where(where: str) -> str:
    """``where`` in 中文: a known English word (with any ``[i]``/``.field`` kept), else as it is
    (a name from the code)."""
    import re

    m = re.match(r"([A-Za-z][A-Za-z ]*?)((?:\[.*|\..*)?)$", where)
    if m and m.group(1).lower() in _ZH_WHERE:
        return _ZH_WHERE[m.group(1).lower()] + m.group(2)
    return where


def differs(got: Any, want: Any, *, rtol: float = 1e-5, atol: float = 1e-6, where: str = "result",
            expected: str = "expected", lang: str = "en") -> str | None:
    """See :func:`_differs`. The English line is a :class:`~fxcourse._lang.Phrase` carrying its 中文
    twin (``where`` and ``expected`` put into 中文 where they are the usual English words), so a
    checker that shows it as it is still speaks 中文 to a 中文-only reader.

    >>> differs([1, 2], [1, 2, 3]).zh
    '结果：2 项，期望 3 项'
    >>> differs([1, 2], [1, 2, 3], lang="zh")
    '结果：2 项，期望 3 项'
    """
    if lang == "zh":  # the usual English words put into 中文 here too
        return _differs(got, want, rtol=rtol, atol=atol, where=_zh_where(where),
                        expected="期望" if expected == "expected" else expected, lang="zh")
    line = _differs(got, want, rtol=rtol, atol=atol, where=where, expected=expected, lang=lang)
    if line is None:
        return line
    try:
        zh = _differs(got, want, rtol=rtol, atol=atol, where=_zh_where(where),
                      expected="期望" if expected == "expected" else expected, lang="zh")
    except Exception:  # the English line stands alone rather than no line at all
        return line
    return Phrase(line, zh) if zh else line


def _differs(got: Any, want: Any, *, rtol: float = 1e-5, atol: float = 1e-6, where: str = "result",
             expected: str = "expected", lang: str = "en") -> str | None:
    """``None`` when ``got`` equals ``want`` as a whole, else one line saying where and how they differ
    (``lang="zh"``: in 中文; pass ``where`` and ``expected`` in 中文 too).

    Compares types (a tuple is not a list, an int is not a float), tensors by shape, dtype,
    device, NaN positions and values, dicts by keys then values, sequences by length then
    items, dataclasses field by field.

    >>> import torch
    >>> differs(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")])) is None
    True
    >>> differs(torch.tensor([1.0, 2.0]), torch.tensor([1.0, float("nan")]))
    'result: NaN where a number was expected (or the reverse) at index (1,): got 2, expected nan'
    >>> differs((torch.ones(1),), [torch.ones(1)])
    'result: a tuple, expected a list'
    >>> differs({"a": 1}, {"a": 1, "b": 2})
    "result: keys ['a'], expected ['a', 'b']"
    >>> differs(torch.ones(2, dtype=torch.float64), torch.ones(2))
    'result: dtype torch.float64, expected torch.float32'
    >>> differs([torch.ones(2)], [torch.zeros(2)], where="结果", expected="期望", lang="zh")
    '结果[0]：索引 (0,) 处得到 1，期望 0（最大绝对误差 1）'
    """
    say = _ZH if lang == "zh" else _EN
    d = (lambda v: describe(v, lang))  # noqa: E731
    again = dict(rtol=rtol, atol=atol, expected=expected, lang=lang)
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return say["pair"].format(w=where, g=d(got), e=expected, x=d(want))
        return _tensor_diff(got, want, where, rtol, atol, expected, say)
    if isinstance(want, bool) or isinstance(got, bool):
        if type(got) is not type(want) or got != want:
            return say["pair"].format(w=where, g=repr(got), e=expected, x=repr(want))
        return None
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if type(got) is not type(want):
            return say["number"].format(w=where, g=_a(got, lang), t=d(got), e=expected, x=_a(want, lang))
        if isinstance(want, float) and (math.isnan(want) or math.isnan(got)):
            return (None if math.isnan(want) and math.isnan(got)
                    else say["pair"].format(w=where, g=repr(got), e=expected, x=repr(want)))
        if got == want or (isinstance(want, float) and math.isclose(got, want, rel_tol=rtol, abs_tol=atol)):
            return None
        return say["pair"].format(w=where, g=repr(got), e=expected, x=repr(want))
    if type(got) is not type(want):
        return say["pair"].format(w=where, g=_a(got, lang), e=expected, x=_a(want, lang))
    if isinstance(want, dict):
        if set(got) != set(want):
            return say["keys"].format(w=where, g=_keys(got), e=expected, x=_keys(want))
        for key in want:
            diff = _differs(got[key], want[key], where=f"{where}[{key!r}]", **again)
            if diff:
                return diff
        return None
    if isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return say["items"].format(w=where, g=len(got), e=expected, x=len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            diff = _differs(g, w, where=f"{where}[{i}]", **again)
            if diff:
                return diff
        return None
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        for f in dataclasses.fields(want):
            diff = _differs(getattr(got, f.name), getattr(want, f.name), where=f"{where}.{f.name}", **again)
            if diff:
                return diff
        return None
    try:
        same = bool(got == want)
    except Exception:  # objects whose == is not a truth value
        same = got is want
    return None if same else say["pair"].format(w=where, g=d(got), e=expected, x=d(want))


def _keys(d: dict) -> str:
    """The keys of ``d``, sorted, each as Python writes it: ``['a', 'b']`` or ``[('x', 1)]``."""
    return "[" + ", ".join(sorted(map(repr, d))) + "]"


def _a(value: Any, lang: str = "en") -> str:
    """``a list``, ``an int``: the type of ``value`` with its article (in 中文: ``list 类型``)."""
    name = type(value).__name__
    if lang == "zh":
        return f"{name} 类型"
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
