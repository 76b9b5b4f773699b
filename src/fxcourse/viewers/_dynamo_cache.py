"""Dynamo's cache, read through one door: cache entries, resume functions and guards.

Everything here leans on internals that move between PyTorch releases
(``_debug_get_cache_entry_list``, the C++ guard manager tree, the ``__resume_at_*``
globals Dynamo plants next to a function). Each is wrapped in one function with a
fallback, so a change in PyTorch degrades a section of output instead of raising.
"""
from __future__ import annotations

import re
import types
from dataclasses import dataclass, field
from typing import Any, Callable

from .._text import one_line_error, scrub
from .._lang import only
from ..errors import FxCourseError, describe

__all__ = ["Frame", "cache_entries", "failed_guards", "guard_lines", "target_function", "walk"]


def target_function(obj: Any, where: str) -> types.FunctionType:
    """The Python function whose frames Dynamo compiles for ``obj``.

    Unwraps what ``torch.compile`` returns (``_torchdynamo_orig_callable``,
    ``OptimizedModule._orig_mod``, ``__wrapped__``), bound methods, and ``nn.Module``
    (its ``forward``).
    """
    import torch

    seen = 0
    while seen < 20:  # wrappers of wrappers; stop on cycles
        seen += 1
        if isinstance(obj, torch.nn.Module):
            inner_mod = getattr(obj, "_orig_mod", None)
            obj = inner_mod if inner_mod is not None else obj.forward
            continue
        inner = getattr(obj, "_torchdynamo_orig_callable", None) or getattr(obj, "__wrapped__", None)
        if inner is not None and inner is not obj:
            obj = inner
            continue
        if isinstance(obj, types.MethodType):
            obj = obj.__func__
            continue
        break
    if isinstance(obj, types.FunctionType):
        return obj
    raise FxCourseError(
        got=describe(obj),
        accepted="a Python function, a method, an nn.Module, or what torch.compile returned for one",
        fix="pass the function itself (not its result or a builtin), e.g. bytecode(f) or bytecode(model)",
        where=where,
        zh=f"{where}：收到 {describe(obj)}；需要 Python 函数、方法、nn.Module，或 torch.compile 对它们返回的对象。"
           "修复：传入函数本身（不是它的返回值，也不是内置函数），例如 bytecode(f) 或 bytecode(model)。",
    )


def cache_entries(code: types.CodeType) -> list[Any]:
    """Dynamo's cache entries for ``code`` (empty when Dynamo has not compiled it)."""
    try:
        from torch._dynamo.eval_frame import _debug_get_cache_entry_list
    except ImportError:  # moved in a later release: show the function as uncompiled
        return []
    try:
        return list(_debug_get_cache_entry_list(code))
    except Exception:
        return []


def guard_lines(guard_manager: Any) -> list[str]:
    """One readable line per guard: ``KIND: check``, ids and paths removed."""
    try:
        return _walk_guards(guard_manager)
    except Exception as exc:  # the C++ tree API changed: fall back to its printable form
        try:
            text = re.sub(r", tag_safe=\([^)]*\)", "", str(guard_manager))
            return [scrub(line, ids=True) for line in text.splitlines() if line.strip()]
        except Exception:
            return [only(f"(guards unavailable: {one_line_error(exc)})",
                         f"（无法读取守卫：{one_line_error(exc)}）")]


def _walk_guards(guard_manager: Any) -> list[str]:
    lines: list[str] = []
    seen: list[Any] = []  # relational guards are shared between managers: print once

    def leaf(guard: Any) -> None:
        if any(g is guard for g in seen):
            return
        seen.append(guard)
        kind = type(guard).__name__
        for part in guard.verbose_code_parts():
            code = part.split("  # ")[0].split(" # ")[0].rstrip()
            lines.append(f"{kind}: {scrub(code, ids=True)}")

    def visit(mgr: Any) -> None:
        for guard in mgr.get_leaf_guards():
            leaf(guard)
        pairs = getattr(mgr, "get_key_value_managers", None)
        if pairs is not None:
            for _, (key_mgr, value_mgr) in sorted(pairs().items()):
                for sub in (key_mgr, value_mgr):
                    if sub is not None:
                        visit(sub)
        for child in mgr.get_child_managers():
            visit(child)

    root = guard_manager.root
    visit(root)
    for guard in getattr(root, "get_epilogue_lambda_guards", lambda: [])():
        leaf(guard)
    return lines


def failed_guards(guard_manager: Any, f_locals: dict[str, Any]) -> list[str]:
    """Every guard of a cache entry that ``f_locals`` fails, one line each (``n == 2``).

    Dynamo's own recompile reason stops at an entry's first failing guard; this checks
    each leaf guard of the tree against the value its manager's source names. Guards
    that cannot be checked this way are left out; on any surprise the list is empty.
    """
    try:
        scope = {"L": f_locals, "G": guard_manager.global_scope["G"]}
        found: list[str] = []

        def visit(mgr: Any, value: Any) -> None:
            for leaf in mgr.get_leaf_guards():
                try:
                    ok = leaf(value)
                except Exception:
                    continue
                if ok is False:
                    found.append(_failed_line(type(leaf).__name__, mgr, leaf))
            for child in mgr.get_child_managers():
                try:
                    child_value = eval(child.get_source(), {"__builtins__": __builtins__}, dict(scope))
                except Exception:
                    continue
                visit(child, child_value)

        visit(guard_manager.root, f_locals)
        return list(dict.fromkeys(found))
    except Exception:
        return []


def _failed_line(kind: str, mgr: Any, leaf: Any) -> str:
    source = re.sub(r"L\['(\w+)'\]", r"\1", mgr.get_source() if hasattr(mgr, "get_source") else "")
    if kind == "TENSOR_MATCH":
        return only(f"tensor '{source}' does not match its TENSOR_MATCH guard (shape, stride, dtype or device)",
                    f"tensor '{source}' 不符合它的 TENSOR_MATCH 守卫（形状、步长、dtype 或设备）")
    part = leaf.verbose_code_parts()[0].split(" #")[0].strip()
    return scrub(re.sub(r"L\['(\w+)'\]", r"\1", part), ids=True)


@dataclass
class Frame:
    """A code object Dynamo may have compiled: the user's function or a resume function."""

    name: str  # the function's name (for a resume function, the generated name)
    code: types.CodeType
    global_name: str = ""  # how the transformed code refers to it (``__resume_at_40_3``)
    entries: list[Any] = field(default_factory=list)


def walk(fn: types.FunctionType) -> list[Frame]:
    """``fn``'s frame, then every resume function reachable from its cache entries."""
    frames: list[Frame] = []
    pending: list[tuple[str, types.CodeType, str]] = [(fn.__qualname__, fn.__code__, "")]
    seen: set[int] = set()
    namespace: dict[str, Any] = fn.__globals__
    while pending:
        name, code, global_name = pending.pop(0)
        if id(code) in seen:
            continue
        seen.add(id(code))
        frame = Frame(name, code, global_name, cache_entries(code))
        frames.append(frame)
        for entry in frame.entries:
            for resume_name, resume in _resume_functions(entry.code, namespace):
                pending.append((resume.__code__.co_name, resume.__code__, resume_name))
    return frames


def _resume_functions(code: types.CodeType, namespace: dict[str, Any]) -> list[tuple[str, Callable[..., Any]]]:
    """The ``__resume_at_*`` functions a transformed code object calls."""
    found = []
    for name in code.co_names:
        value = namespace.get(name)
        if name.startswith("__resume") and isinstance(value, types.FunctionType):
            found.append((name, value))
    return found
