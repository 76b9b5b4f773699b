"""Leave the caller's objects as they were: fresh copies of inputs, module state restored.

``capture`` and ``compare_capture`` run a model several times. A model that writes into
its input in place, or a BatchNorm layer in training mode (running statistics move on
every call), would otherwise change what the learner passed in.

>>> import torch
>>> bn = torch.nn.BatchNorm1d(2).train()
>>> x = torch.ones(3, 2)
>>> with untouched(bn):
...     _ = bn(fresh((x,))[0].add_(1))
...     _ = bn.eval()
>>> bn.training, bn.num_batches_tracked.item(), bn.running_mean.tolist(), x[0].tolist()
(True, 0, [0.0, 0.0], [1.0, 1.0])
"""
from __future__ import annotations

import contextlib
import copy as _copy_mod
import types
from typing import Any, Iterator

import torch
import torch.utils._pytree as pytree

__all__ = ["fresh", "untouched"]


def fresh(args: Any) -> Any:
    """``args`` with every tensor (inside tuples, lists and dicts too) replaced by a copy
    that has the same shape, strides, dtype and ``requires_grad``."""
    return pytree.tree_map(_copy, args)


def _copy(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    try:
        copy = value.detach().clone()
        if isinstance(value, torch.nn.Parameter):
            copy = torch.nn.Parameter(copy, requires_grad=value.requires_grad)
        elif value.is_floating_point() or value.is_complex():
            copy.requires_grad_(value.requires_grad)
    except Exception:  # a tensor that cannot be copied (e.g. some subclasses): pass it as it is
        return value
    # Dynamo keeps mark_dynamic / mark_unbacked / mark_static on the tensor object itself.
    for name, mark in vars(value).items():
        if name.startswith("_dynamo"):
            setattr(copy, name, _copy_mod.copy(mark))
    return copy


def _modules(obj: Any) -> list[torch.nn.Module]:
    if isinstance(obj, torch.nn.Module):
        return [obj]
    owner = getattr(obj, "__self__", None) if isinstance(obj, types.MethodType) else None
    return [owner] if isinstance(owner, torch.nn.Module) else []


@contextlib.contextmanager
def untouched(obj: Any) -> Iterator[None]:
    """Snapshot the buffers and attributes of ``obj`` (an ``nn.Module`` or a
    bound method of one) and of its submodules, and put them back when the block ends.

    Buffers (BatchNorm's running statistics, counters) are restored by value; other
    attributes (the train/eval flag, a value a module computes on its first call and
    keeps, such as torchvision's ``MultiScaleRoIAlign`` scales) by identity: an attribute
    that was reassigned, added or deleted is put back. Parameters are not copied (that
    would cost as much as a capture of a large model): a forward that writes into its
    own weights in place keeps that change.
    """
    roots = _modules(obj)
    attributes = [(m, dict(vars(m))) for root in roots for m in root.modules()]
    tensors: list[tuple[torch.Tensor, torch.Tensor]] = []
    seen: set[int] = set()
    for root in roots:
        for t in root.buffers():
            if id(t) not in seen:
                seen.add(id(t))
                tensors.append((t, t.detach().clone()))
    try:
        yield
    finally:
        with torch.no_grad():
            for t, saved in tensors:
                if t.shape == saved.shape and t.dtype == saved.dtype and not torch.equal(t, saved):
                    t.copy_(saved)
        for m, saved_vars in attributes:
            now = vars(m)
            for key in [k for k in now if k not in saved_vars]:
                del now[key]
            for key, value in saved_vars.items():
                if now.get(key, _MISSING) is not value:
                    now[key] = value


_MISSING = object()
