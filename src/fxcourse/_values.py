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

from ._text import scrub

__all__ = ["describe", "differs"]


def describe(value: Any) -> str:
    """A short, address-free description of a value: type, and shape/dtype for tensors.

    >>> import torch
    >>> describe(torch.zeros(2, 3))
    'tensor of shape (2, 3), torch.float32'
    >>> describe([1, 2])
    'list of 2 items'
    """
    if isinstance(value, torch.Tensor):
        return f"tensor of shape {tuple(value.shape)}, {value.dtype}"
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)} items"
    if isinstance(value, dict):
        return f"dict with keys {_keys(value)}"
    if value is None or isinstance(value, (bool, int, float, str)):
        text = repr(value)
        return text if len(text) <= 80 else text[:79] + "…"
    return scrub(type(value).__name__)


def _tensor_diff(got: torch.Tensor, want: torch.Tensor, where: str, rtol: float, atol: float,
                 expected: str) -> str | None:
    if got.shape != want.shape:
        return f"{where}: shape {tuple(got.shape)}, {expected} {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"{where}: dtype {got.dtype}, {expected} {want.dtype}"
    if got.device != want.device:
        return f"{where}: on {got.device}, {expected} {want.device}"
    if got.layout != want.layout or got.is_quantized or want.is_quantized:
        return None if torch.equal(got, want) else f"{where}: values differ"
    g, w = got.detach(), want.detach()
    if not (g.is_floating_point() or g.is_complex()):
        if torch.equal(g, w):
            return None
        bad = (g != w).nonzero()[0].tolist()
        return f"{where}: at index {tuple(bad)} got {g[tuple(bad)].item()!r}, {expected} {w[tuple(bad)].item()!r}"
    g_nan, w_nan = torch.isnan(g), torch.isnan(w)
    if not torch.equal(g_nan, w_nan):
        index = (g_nan != w_nan).nonzero()[0].tolist()
        return (f"{where}: NaN where a number was expected (or the reverse) at index {tuple(index)}: "
                f"got {g[tuple(index)].item():.4g}, {expected} {w[tuple(index)].item():.4g}")
    ok = torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if bool(ok.all()):
        return None
    index = (~ok).nonzero()[0].tolist()
    finite = ~(g_nan | torch.isinf(g) | torch.isinf(w))
    worst = float((g - w)[finite].abs().max()) if bool(finite.any()) else math.inf
    return (f"{where}: at index {tuple(index)} got {g[tuple(index)].item():.4g}, {expected} "
            f"{w[tuple(index)].item():.4g} (max abs difference {worst:.3g})")


def differs(got: Any, want: Any, *, rtol: float = 1e-5, atol: float = 1e-6, where: str = "result",
            expected: str = "expected") -> str | None:
    """``None`` when ``got`` equals ``want`` as a whole, else one line saying where and how they differ.

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
    """
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"{where}: {describe(got)}, {expected} {describe(want)}"
        return _tensor_diff(got, want, where, rtol, atol, expected)
    if isinstance(want, bool) or isinstance(got, bool):
        if type(got) is not type(want) or got != want:
            return f"{where}: {got!r}, {expected} {want!r}"
        return None
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if type(got) is not type(want):
            return f"{where}: {_a(got)} ({describe(got)}), {expected} {_a(want)}"
        if isinstance(want, float) and (math.isnan(want) or math.isnan(got)):
            return None if math.isnan(want) and math.isnan(got) else f"{where}: {got!r}, {expected} {want!r}"
        if got == want or (isinstance(want, float) and math.isclose(got, want, rel_tol=rtol, abs_tol=atol)):
            return None
        return f"{where}: {got!r}, {expected} {want!r}"
    if type(got) is not type(want):
        return f"{where}: {_a(got)}, {expected} {_a(want)}"
    if isinstance(want, dict):
        if set(got) != set(want):
            return f"{where}: keys {_keys(got)}, {expected} {_keys(want)}"
        for key in want:
            diff = differs(got[key], want[key], rtol=rtol, atol=atol, expected=expected, where=f"{where}[{key!r}]")
            if diff:
                return diff
        return None
    if isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return f"{where}: {len(got)} items, {expected} {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            diff = differs(g, w, rtol=rtol, atol=atol, expected=expected, where=f"{where}[{i}]")
            if diff:
                return diff
        return None
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        for f in dataclasses.fields(want):
            diff = differs(getattr(got, f.name), getattr(want, f.name), rtol=rtol, atol=atol, expected=expected,
                           where=f"{where}.{f.name}")
            if diff:
                return diff
        return None
    try:
        same = bool(got == want)
    except Exception:  # objects whose == is not a truth value
        same = got is want
    return None if same else f"{where}: {describe(got)}, {expected} {describe(want)}"


def _keys(d: dict) -> str:
    """The keys of ``d``, sorted, each as Python writes it: ``['a', 'b']`` or ``[('x', 1)]``."""
    return "[" + ", ".join(sorted(map(repr, d))) + "]"


def _a(value: Any) -> str:
    """``a list``, ``an int``: the type of ``value`` with its article."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
