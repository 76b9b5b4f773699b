"""Leave the caller's objects and process as they were: every helper that runs learner code
(``capture``, ``compare_capture``, ``inductor_code``, ``aot_graphs``, ``check``) uses this one
mechanism.

A model that writes into its input in place, a BatchNorm layer in training mode (running
statistics move on every call), a backward pass (``.grad`` appears on leaf tensors and
parameters) or a probe that draws random numbers would otherwise change what the learner
has. :func:`fresh` copies inputs; :func:`untouched` puts a module's state, its parameters'
gradients and the given input tensors back; :func:`process_kept` puts back the process-wide
settings (random-number states, grad mode, default dtype, ...).

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
import random
import sys
import types
from typing import Any, Iterator

import torch
import torch.utils._pytree as pytree

__all__ = ["fresh", "process_kept", "untouched"]


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


def _tensors_in(args: Any) -> list[torch.Tensor]:
    return [t for t in pytree.tree_leaves(args) if isinstance(t, torch.Tensor)]


@contextlib.contextmanager
def untouched(obj: Any, args: Any = ()) -> Iterator[None]:
    """Snapshot the buffers, attributes and parameters' gradients of ``obj`` (an ``nn.Module``
    or a bound method of one) and its submodules, and the values and gradients of the tensors
    in ``args``; put them back when the block ends.

    Buffers (BatchNorm's running statistics, counters) and the tensors of ``args`` are
    restored by value; ``.grad`` is put back as it was (None stays None); other attributes
    (the train/eval flag, a value a module computes on its first call and keeps, such as
    torchvision's ``MultiScaleRoIAlign`` scales) by identity: an attribute that was
    reassigned, added or deleted is put back. Parameters are not copied (that would cost as
    much as a capture of a large model): a forward that writes into its own weights in place
    keeps that change.

    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> x = torch.ones(2)
    >>> with untouched(None, (x,)):
    ...     _ = x.mul_(3)
    ...     (w * 2).sum().backward()
    >>> x.tolist(), w.grad is not None
    ([1.0, 1.0], True)
    >>> lin = torch.nn.Linear(2, 1)
    >>> with untouched(lin):
    ...     lin(torch.ones(1, 2)).sum().backward()
    >>> lin.weight.grad is None
    True
    """
    roots = _modules(obj)
    attributes = [(m, dict(vars(m))) for root in roots for m in root.modules()]
    tensors: list[tuple[torch.Tensor, torch.Tensor]] = []
    grads: list[tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]] = []
    seen: set[int] = set()
    for root in roots:
        for t in root.buffers():
            if id(t) not in seen:
                seen.add(id(t))
                tensors.append((t, t.detach().clone()))
        for p in root.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                grads.append((p, p.grad, None if p.grad is None else p.grad.detach().clone()))
    for t in _tensors_in(args):
        if id(t) not in seen:
            seen.add(id(t))
            tensors.append((t, t.detach().clone()))
            if t.is_leaf:
                grads.append((t, t.grad, None if t.grad is None else t.grad.detach().clone()))
    try:
        yield
    finally:
        with torch.no_grad():
            for t, saved in tensors:
                if t.shape == saved.shape and t.dtype == saved.dtype and not torch.equal(t, saved):
                    t.copy_(saved)
            for t, grad, values in grads:
                if t.grad is not grad:
                    t.grad = grad
                if grad is not None and values is not None and not torch.equal(grad, values):
                    grad.copy_(values)
        for m, saved_vars in attributes:
            now = vars(m)
            for key in [k for k in now if k not in saved_vars]:
                del now[key]
            for key, value in saved_vars.items():
                if now.get(key, _MISSING) is not value:
                    now[key] = value


@contextlib.contextmanager
def process_kept() -> Iterator[None]:
    """Leave the learner's process as it was: default dtype, grad mode, deterministic-algorithms
    flags, anomaly mode, thread count and every random-number state (torch, Python's
    ``random``, NumPy's when loaded).

    >>> state = torch.get_rng_state()
    >>> with process_kept():
    ...     _ = torch.randn(3)
    ...     _ = torch.set_grad_enabled(False)
    ...     torch.set_default_dtype(torch.float64)
    >>> torch.equal(state, torch.get_rng_state()), torch.is_grad_enabled(), torch.get_default_dtype()
    (True, True, torch.float32)
    """
    dtype, grad = torch.get_default_dtype(), torch.is_grad_enabled()
    det, det_warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    anomaly, threads = torch.is_anomaly_enabled(), torch.get_num_threads()
    torch_rng, py_rng = torch.get_rng_state(), random.getstate()
    np_random = sys.modules.get("numpy.random")
    np_rng = np_random.get_state() if np_random is not None else None
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.use_deterministic_algorithms(det, warn_only=det_warn)
        torch.set_anomaly_enabled(anomaly)
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        torch.set_rng_state(torch_rng)
        random.setstate(py_rng)
        if np_rng is not None and np_random is not None:
            np_random.set_state(np_rng)


_MISSING = object()
