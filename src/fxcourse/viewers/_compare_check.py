"""compare_capture's two helpers for outputs and inputs: compare whole structures, and
make a second input that really differs.

:func:`difference` walks both outputs together: a tuple where eager gives a list is a
difference, dicts are compared by keys then values, dataclasses field by field, tensors
by shape, dtype, NaN positions and values (the lab checkers' own comparison,
:func:`fxcourse._values.differs`). :func:`flip` sign-flips every floating-point tensor,
also inside tuples, lists and dicts, and says how many it changed.
"""
from __future__ import annotations

from typing import Any

import torch
import torch.utils._pytree as pytree

from .._lang import current
from .._values import differs

__all__ = ["difference", "flip"]


def difference(got: Any, want: Any, where: str = "output") -> str:
    """"" when ``got`` matches ``want`` (eager's output); else where and how it differs
    (the comparison the lab checkers use, worded against eager; in 中文 when the reader
    reads 中文 only).

    >>> difference((torch.ones(2),), [torch.ones(2)])
    'output: a tuple, eager gives a list'
    >>> difference({"a": torch.ones(1)}, {"a": torch.zeros(1)})
    "output['a']: at index (0,) got 1, eager gives 0 (max abs difference 1)"
    >>> difference([1, torch.ones(2)], [1, torch.ones(2)])
    ''
    """
    if current() == "zh":
        where = "输出" + where[len("output"):] if where.startswith("output") else where
        return differs(got, want, rtol=1e-4, atol=1e-5, where=where, expected="eager 给出", lang="zh") or ""
    return differs(got, want, rtol=1e-4, atol=1e-5, where=where, expected="eager gives") or ""


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
