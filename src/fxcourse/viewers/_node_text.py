"""How the parts of an fx node become short, deterministic text.

Shared by :func:`fxcourse.graph_table` and :func:`fxcourse.graph_diff`. Nothing here runs a
model: shapes and dtypes come from what a tracer already stored in ``node.meta``.
"""
from __future__ import annotations

import os
import re
from typing import Callable

import torch
from torch import fx

__all__ = [
    "arg_text", "dtype_text", "meta_value", "qualified_name", "shape_text", "source_text", "target_text",
]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)[^\n]*(?:\n(?![ \t]*File ")([^\n]*))?')
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_SCALARS = (int, float, bool, str, type(None))


def _get_qualified_name() -> Callable[[object], str] | None:
    """torch's own naming function (a private API that may move), or None."""
    try:
        from torch.fx.node import _get_qualified_name as qualified
    except ImportError:  # pragma: no cover - depends on the torch release
        return None
    return qualified


def qualified_name(fn: object) -> str:
    """The dotted name ``print(graph)`` uses for a callable, without addresses.

    >>> import operator
    >>> qualified_name(operator.add), qualified_name(torch.relu)
    ('operator.add', 'torch.relu')
    """
    qualified = _get_qualified_name()
    if qualified is not None:
        try:
            name = qualified(fn)
        except Exception:  # lambdas, local functions, objects torch cannot name
            name = ""
        if name:
            return name.replace("_operator.", "operator.", 1).removeprefix("builtins.")
    return _fallback_name(fn)


def _fallback_name(fn: object) -> str:
    """A dotted name built from ``__module__`` and ``__qualname__`` (no torch internals)."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return f"<{type(fn).__name__}>"
    module = getattr(fn, "__module__", None)
    if module in (None, "builtins"):
        return name
    module = "operator" if module == "_operator" else module
    if module == "torch" and name.startswith("_VariableFunctionsClass."):
        name = name.split(".", 1)[1]
    return f"{module}.{name}"


def target_text(target: object, cache: dict[int, str]) -> str:
    """A node target as text: strings as they are, ops and functions by dotted name.

    ``cache`` maps ``id(target)`` to its text for the length of one rendering (the
    targets stay alive meanwhile), so naming costs once per distinct target.
    """
    if type(target) is str:
        return target
    key = id(target)
    text = cache.get(key)
    if text is None:
        if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            text = f"torch.ops.{target}"
        else:
            text = qualified_name(target)
        text = cache[key] = _ADDRESS.sub("", text)
    return text


def arg_text(value: object, names: dict[str, str] | None = None) -> str:
    """Args and kwargs as ``print_tabular`` shows them: nodes by name, the rest by repr.

    ``names`` renames nodes (graph_diff uses it to compare graphs whose nodes were renamed).
    """
    kind = type(value)
    if kind is fx.Node:
        name = value.name  # type: ignore[attr-defined]
        return names.get(name, name) if names else name
    if kind is tuple:
        if len(value) == 1:  # type: ignore[arg-type]
            return f"({arg_text(value[0], names)},)"  # type: ignore[index]
        return "(" + ", ".join([arg_text(v, names) for v in value]) + ")"  # type: ignore[attr-defined]
    if kind in _SCALARS:
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join([arg_text(v, names) for v in value]) + "]"
    if isinstance(value, dict):
        items = [f"{k!r}: {arg_text(v, names)}" for k, v in value.items()]
        return "{" + ", ".join(items) + "}"
    if isinstance(value, tuple):  # named tuples and other tuple subclasses
        return "(" + ", ".join([arg_text(v, names) for v in value]) + ")"
    if isinstance(value, torch.Tensor):
        return f"tensor({dtype_text(value)} {shape_text(value)})"
    if callable(value) and not isinstance(value, type):
        return target_text(value, {})
    return _ADDRESS.sub("", repr(value)).replace("\n", " ")


def _dims(size: object) -> str:
    return "[" + ", ".join([str(d) for d in size]) + "]"  # type: ignore[attr-defined]


def shape_text(val: object) -> str:
    """``[2, s0]`` for a tensor (or TensorMetadata); tuples of them in parentheses.

    >>> shape_text(torch.zeros(2, 3)), shape_text((torch.zeros(1), torch.zeros(())))
    ('[2, 3]', '([1], [])')
    """
    if isinstance(val, torch.Tensor):
        return _dims(val.shape)
    if isinstance(val, (list, tuple)):
        shape = getattr(val, "shape", None)  # TensorMetadata is a named tuple
        if isinstance(shape, torch.Size):
            return _dims(shape)
        return "(" + ", ".join([shape_text(v) for v in val]) + ")"
    return ""


def dtype_text(val: object) -> str:
    """``float32`` for a tensor, ``SymInt(s0)`` for a symbolic size, tuples in parentheses.

    >>> dtype_text(torch.zeros(2, dtype=torch.int64)), dtype_text(3)
    ('int64', 'int')
    """
    if isinstance(val, torch.Tensor):
        return str(val.dtype).removeprefix("torch.")
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return f"{type(val).__name__}({val})"
    if isinstance(val, (list, tuple)):
        dtype = getattr(val, "dtype", None)  # TensorMetadata
        if isinstance(dtype, torch.dtype):
            return str(dtype).removeprefix("torch.")
        return "(" + ", ".join([dtype_text(v) for v in val]) + ")"
    if isinstance(val, (bool, int, float)):
        return type(val).__name__
    return ""


def meta_value(meta: dict) -> object:
    """What a tracer recorded about a node's result: ``val`` (make_fx, export, AOTAutograd),
    else ``example_value`` (the graphs Dynamo hands a backend), else ``tensor_meta`` (ShapeProp)."""
    for key in ("val", "example_value", "tensor_meta"):
        if meta.get(key) is not None:
            return meta[key]
    return None


def source_text(stack_trace: object) -> str:
    """``file.py:LINE code`` for the innermost frame of a recorded stack trace.

    Frames inside torch itself are skipped when a user frame exists, so an ``nn.Linear``
    points at the line that called it. Only the file's basename is kept.

    >>> source_text('File "/home/me/model.py", line 7, in forward\\n    return x + 1')
    'model.py:7 return x + 1'
    """
    if not isinstance(stack_trace, str):
        return ""
    frames = _FRAME.findall(stack_trace)
    if not frames:
        return ""
    user = [f for f in frames if not f[0].startswith(_TORCH_DIR)]
    path, line, code = (user or frames)[-1]
    code = code.strip()
    text = f"{os.path.basename(path)}:{line}"
    return f"{text} {code}" if code else text
