"""compare_capture's two helpers for outputs and inputs: compare whole structures, and
make a second input that really differs.

:func:`difference` walks both outputs together: a tuple where eager gives a list is a
difference, dicts are compared by keys then values, dataclasses field by field, tensors
by shape, dtype and values. :func:`flip` sign-flips every floating-point tensor, also
inside tuples, lists and dicts, and says how many it changed.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.utils._pytree as pytree

__all__ = ["difference", "flip"]


def difference(got: Any, want: Any, where: str = "output") -> str:
    """"" when ``got`` matches ``want`` (eager's output); else where and how it differs.

    >>> difference((torch.ones(2),), [torch.ones(2)])
    'output is a tuple, eager gives a list'
    >>> difference({"a": torch.ones(1)}, {"a": torch.zeros(1)})
    "output['a'] has other values"
    >>> difference([1, torch.ones(2)], [1, torch.ones(2)])
    ''
    """
    if isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
        return _tensor_difference(got, want, where)
    if type(got) is not type(want):
        return f"{where} is {_a(got)}, eager gives {_a(want)}"
    if isinstance(want, dict):
        if list(got) != list(want):
            return f"{where} has keys {list(got)}, eager gives {list(want)}"
        for key in want:
            found = difference(got[key], want[key], f"{where}[{key!r}]")
            if found:
                return found
        return ""
    if isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return f"{where} has {len(got)} items, eager gives {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            found = difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return ""
    if dataclasses.is_dataclass(want) and not isinstance(want, type):
        for f in dataclasses.fields(want):
            found = difference(getattr(got, f.name), getattr(want, f.name), f"{where}.{f.name}")
            if found:
                return found
        return ""
    try:
        same = bool(got == want)
    except Exception:
        same = got is want
    return "" if same else f"{where} is {_short(got)}, eager gives {_short(want)}"


def _tensor_difference(got: Any, want: Any, where: str) -> str:
    if not (isinstance(got, torch.Tensor) and isinstance(want, torch.Tensor)):
        return f"{where} is {_a(got)}, eager gives {_a(want)}"
    if got.shape != want.shape:
        return f"{where} has shape {tuple(got.shape)}, eager gives {tuple(want.shape)}"
    if got.dtype != want.dtype:
        return f"{where} has dtype {got.dtype}, eager gives {want.dtype}"
    if not torch.allclose(got.detach(), want.detach(), rtol=1e-4, atol=1e-5, equal_nan=True):
        return f"{where} has other values"
    return ""


def _a(value: Any) -> str:
    """``a list``, ``an int``: the type of ``value`` with its article."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def flip(args: Any) -> tuple[Any, int]:
    """``(args with every floating-point tensor negated, how many were negated)``.

    >>> second, n = flip((torch.ones(1), [torch.ones(1), 3], {"m": torch.ones(1)}))
    >>> n, second[1][0].item(), second[2]["m"].item(), second[1][1]
    (3, -1.0, -1.0, 3)
    """
    count = 0

    def negate(value: Any) -> Any:
        nonlocal count
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            count += 1
            return (-value.detach()).requires_grad_(value.requires_grad)
        return value

    flipped = pytree.tree_map(negate, args)
    return flipped, count
