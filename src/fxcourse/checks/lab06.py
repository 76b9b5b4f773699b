"""Checkers for labs/lab06_dynamo_bytecode.ipynb (lecture course/06_dynamo_bytecode.ipynb).

The functions the lab asks about (``f1`` … ``f6``, ``scale``) live here, so the lab prints
their source from this module and the checker captures exactly what the learner read.
"""
from __future__ import annotations

import contextlib
import io
from typing import Any, Callable

import torch

from . import Wrong, task
from .._capture import capture
from .._dynamo_cache import cache_entries, walk
from ..errors import FxCourseError

__all__ = ["PUZZLES", "scale_args", "puzzle_input", "scale"]


# -- exercise 1: predict graphs and breaks ----------------------------------------------

def f1(x):
    for k in range(3):
        x = torch.relu(x) + k
    return x


def f2(x):
    y = torch.sin(x)
    print("y is ready")
    return torch.cos(y)


def f3(x):
    if x.shape[0] > 2:
        return x * 2
    return x - 1


def f4(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


def f5(x):
    print("start")
    return torch.tanh(x) * 2


def f6(x):
    scale = x.abs().max().item()
    y = x / scale
    print("scaled")
    return y + 1


PUZZLES: dict[str, Callable[..., Any]] = {f.__name__: f for f in (f1, f2, f3, f4, f5, f6)}

_WHY = {
    "f1": ("a Python for loop over range() is unrolled: Dynamo runs the loop while tracing and "
           "records all three iterations in one graph.",
           "对 range() 的 Python for 循环会被展开：Dynamo 在追踪时执行这个循环，把三次迭代都记录在一张图里。"),
    "f2": ("print is a builtin Dynamo cannot put in a graph: the graph ends before it, Python runs "
           "print, and a resume function starts a second graph.",
           "print 是 Dynamo 无法放进计算图的内置函数：计算图在它之前结束，由 Python 执行 print，"
           "再由恢复函数开始第二张图。"),
    "f3": ("x.shape[0] is known while tracing: Dynamo takes the branch, guards on the size and keeps "
           "one graph.",
           "追踪时 x.shape[0] 是已知的：Dynamo 直接选定分支，对尺寸加一个守卫，只得到一张图。"),
    "f4": ("x.sum() > 0 depends on tensor values: the graph ends at the if, Python decides, and the "
           "branch taken becomes a second graph.",
           "x.sum() > 0 取决于张量的数值：计算图在 if 处结束，由 Python 做判断，走到的分支成为第二张图。"),
    "f5": ("the print comes before any tensor op, so nothing is compiled before that break: capture "
           "(like explain) counts graphs − 1, which is 0 breaks.",
           "print 出现在任何张量运算之前，这次中断之前没有可编译的内容：capture（与 explain 一样）"
           "把图中断数记为图的数量减一，即 0。"),
    "f6": ("two breaks: .item() (capture_scalar_outputs is False by default) and print, so three graphs.",
           "两次中断：.item()（默认 capture_scalar_outputs 为 False）和 print，因此有三张图。"),
}


def puzzle_input() -> torch.Tensor:
    """The input every puzzle is captured with."""
    generator = torch.Generator().manual_seed(6)
    return torch.randn(4, 3, generator=generator)


_FACTS: dict[str, tuple[int, int, list[str]]] = {}


def _facts(name: str) -> tuple[int, int, list[str]]:
    """(graphs, breaks, break reasons) that capture sees for puzzle ``name``; computed once."""
    if name not in _FACTS:
        with contextlib.redirect_stdout(io.StringIO()):
            cap = capture(PUZZLES[name], puzzle_input())
        _FACTS[name] = (cap.graph_count, cap.break_count,
                        [f"line '{b.line}': {b.reason}" for b in cap.breaks])
    return _FACTS[name]


def _pair(value: Any) -> tuple[int, int] | None:
    try:
        graphs, breaks = value
        if isinstance(graphs, bool) or isinstance(breaks, bool):
            return None
        return int(graphs), int(breaks)
    except (TypeError, ValueError):
        return None


@task("lab06.1", "predict graphs and graph breaks", "预测计算图与图中断的数量")
def _predict(answer: Any) -> None:
    predictions = answer() if callable(answer) else answer
    if not isinstance(predictions, dict):
        raise Wrong("predict() should return a dict such as {'f1': (1, 0), 'f2': (2, 1), …}.",
                    "predict() 应返回一个 dict，例如 {'f1': (1, 0), 'f2': (2, 1), …}。",
                    got=type(predictions).__name__)
    missing = [name for name in PUZZLES if name not in predictions]
    if missing:
        raise Wrong(f"give a prediction for every function; missing: {', '.join(missing)}.",
                    f"请为每个函数给出预测；缺少：{', '.join(missing)}。",
                    expected=", ".join(PUZZLES), got=", ".join(map(str, predictions)))
    wrong_en, wrong_zh, expected, got = [], [], [], []
    for name in PUZZLES:
        pair = _pair(predictions[name])
        if pair is None:
            raise Wrong(f"each prediction is a pair (graphs, breaks) of two ints; {name} is not.",
                        f"每个预测都应是由两个整数组成的 (graphs, breaks)；{name} 不是。",
                        tried=name, got=repr(predictions[name]))
        graphs, breaks, reasons = _facts(name)
        if pair != (graphs, breaks):
            en, zh = _WHY[name]
            seen = f"; capture saw {'; '.join(reasons)}" if reasons else ""
            wrong_en.append(f"{name}: {en}{seen}")
            wrong_zh.append(f"{name}：{zh}")
            expected.append(f"{name}: ({graphs}, {breaks})")
            got.append(f"{name}: {pair}")
    if wrong_en:
        raise Wrong(f"{len(wrong_en)} of {len(PUZZLES)} predictions are off. " + " | ".join(wrong_en),
                    f"{len(PUZZLES)} 个预测中有 {len(wrong_en)} 个不对。" + " | ".join(wrong_zh),
                    tried="capture(f, x) on each function", expected="; ".join(expected),
                    got="; ".join(got))


# -- exercise 2: read the guards ---------------------------------------------------------

def scale(x, factor, mode):
    if mode == "double":
        return x * factor * 2
    return x + factor


def scale_args() -> tuple[torch.Tensor, int, str]:
    """The arguments ``scale`` is first compiled with."""
    return torch.ones(2, 3), 3, "double"


_KEYS = {"fails_on_x": "x", "fails_on_factor": "factor", "fails_on_mode": "mode"}


def _guard_names(reason: str) -> list[str]:
    """Which of scale's arguments a recompile reason is about."""
    found = []
    if "'x'" in reason or "L['x']" in reason:
        found.append("x")
    if "factor" in reason:
        found.append("factor")
    if "mode" in reason:
        found.append("mode")
    return found


def _call_again(key: str, args: Any) -> list[str]:
    """Recompile reasons after calling scale once as compiled, then with ``args``."""
    if not isinstance(args, tuple) or len(args) != 3:
        raise Wrong(f"{key} should be a tuple of scale's three arguments (x, factor, mode).",
                    f"{key} 应是 scale 的三个参数组成的 tuple：(x, factor, mode)。",
                    tried=key, got=repr(args) if not isinstance(args, tuple) else f"a tuple of {len(args)}")
    cap = capture(scale, *scale_args())
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cap.call_again(*args)
    except FxCourseError as exc:
        raise Wrong(f"scale raised an error on your {key} input. A guard that fails is not an error: "
                    "choose arguments scale can still run with.",
                    f"scale 在你的 {key} 输入上报错了。守卫失败并不是报错：请选择 scale 仍然能运行的参数。",
                    tried=key, got=str(exc.__cause__ or exc).splitlines()[0]) from None
    return [r.reason for r in cap.recompiles]


@task("lab06.2", "inputs that fail, and pass, the guards", "让守卫失败与通过的输入")
def _guards(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab06.2', guard_inputs).",
                    "请传入函数本身，例如 check('lab06.2', guard_inputs)。", got=type(answer).__name__)
    inputs = answer()
    if not isinstance(inputs, dict) or set(inputs) != {*_KEYS, "passes"}:
        want = ", ".join([*_KEYS, "passes"])
        raise Wrong(f"return a dict with exactly the keys {want}.", f"请返回恰好包含这些键的 dict：{want}。",
                    expected=want, got=", ".join(map(str, inputs)) if isinstance(inputs, dict)
                    else type(inputs).__name__)
    for key, name in _KEYS.items():
        reasons = _call_again(key, inputs[key])
        if not reasons:
            hint = {
                "x": ("x passed TENSOR_MATCH: it checks dtype, device, requires_grad, size and stride, "
                      "not the values. Change one of those.",
                      "x 通过了 TENSOR_MATCH：它检查 dtype、device、requires_grad、size 和 stride，"
                      "不检查数值。请改变其中一项。"),
                "factor": ("EQUALS_MATCH L['factor'] == 3 compares the value: pass a different int.",
                           "EQUALS_MATCH L['factor'] == 3 比较的是值：请传入另一个整数。"),
                "mode": ("EQUALS_MATCH L['mode'] == 'double' compares the string: pass another one.",
                         "EQUALS_MATCH L['mode'] == 'double' 比较的是字符串：请换一个字符串。"),
            }[name]
            raise Wrong(f"{key} did not trigger a recompile: " + hint[0],
                        f"{key} 没有触发重新编译：" + hint[1], tried=key, expected="one recompile",
                        got="the cache entry was reused")
        about = _guard_names(reasons[0])
        if name not in about:
            raise Wrong(f"{key} failed a guard on {', '.join(about) or 'something else'} first; "
                        f"keep the other arguments as they were and change only {name}.",
                        f"{key} 先让关于 {', '.join(about) or '其他对象'} 的守卫失败了；"
                        f"其他参数保持不变，只改变 {name}。",
                        tried=key, expected=f"a failed guard on {name}", got=reasons[0])
    reasons = _call_again("passes", inputs["passes"])
    if reasons:
        about = _guard_names(reasons[0])
        extra = {"factor": (" Python ints are specialized: any other factor fails L['factor'] == 3.",
                            "Python 整数会被特化：任何其他 factor 都会让 L['factor'] == 3 失败。"),
                 "x": (" TENSOR_MATCH fixes x's size [2, 3], dtype float32 and stride.",
                       "TENSOR_MATCH 固定了 x 的尺寸 [2, 3]、dtype float32 和步长。")}.get(
                     about[0] if about else "", ("", ""))
        raise Wrong("passes triggered a recompile, so it failed a guard." + extra[0],
                    "passes 触发了重新编译，说明它让某个守卫失败了。" + extra[1],
                    tried="passes", expected="no recompile", got=reasons[0])
    x = inputs["passes"][0]
    if isinstance(x, torch.Tensor) and x.shape == (2, 3) and torch.equal(x, torch.ones(2, 3)):
        raise Wrong("passes reuses the cache entry, but x holds the same values as before; give x "
                    "new values to show that guards do not look at them.",
                    "passes 复用了缓存条目，但 x 的数值和原来一样；请给 x 换上新的数值，说明守卫不检查数值。",
                    tried="passes", expected="x with other values", got="torch.ones(2, 3)")


# -- exercise 3: count cache entries -----------------------------------------------------

def _poly(x):
    return x * x + 1


def _halves(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return y - 1


def _cache_cases() -> list[tuple[str, Callable[..., Any], list[tuple[Any, ...]]]]:
    f32, f64 = torch.float32, torch.float64
    return [
        ("_poly", _poly, [(torch.ones(3),), (torch.ones(3),), (torch.ones(4),), (torch.ones(5),),
                          (torch.ones(5, dtype=f64),)]),
        ("_halves", _halves, [(torch.ones(2, dtype=f32),), (torch.ones(2),), (torch.ones(2, 2),)]),
    ]


_SIZES: dict[str, tuple[list[int], list[int]]] = {}


def _reference_sizes(label: str, fn: Callable[..., Any],
                     calls: list[tuple[Any, ...]]) -> tuple[list[int], list[int]]:
    """(cache entries on fn.__code__, graphs compiled so far) after each call; computed once."""
    if label not in _SIZES:
        torch._dynamo.reset()
        graphs: list[Any] = []

        def counting(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
            graphs.append(gm)
            return gm.forward

        compiled = torch.compile(fn, backend=counting)
        sizes, counts = [], []
        for args in calls:
            compiled(*args)
            sizes.append(len(cache_entries(fn.__code__)))
            counts.append(len(graphs))
        torch._dynamo.reset()
        _SIZES[label] = (sizes, counts)
    return _SIZES[label]


def _describe_calls(calls: list[tuple[Any, ...]]) -> str:
    def one(a: Any) -> str:
        if isinstance(a, torch.Tensor):
            dtype = "" if a.dtype == torch.float32 else f", {str(a.dtype).replace('torch.', '')}"
            return f"ones({', '.join(map(str, a.shape))}{dtype})"
        return repr(a)
    return ", ".join("(" + ", ".join(one(a) for a in args) + ")" for args in calls)


@task("lab06.3", "count cache entries on the code object", "统计代码对象上的缓存条目")
def _cache_sizes(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab06.3', cache_sizes).",
                    "请传入函数本身，例如 check('lab06.3', cache_sizes)。", got=type(answer).__name__)
    for label, fn, calls in _cache_cases():
        want, graph_counts = _reference_sizes(label, fn, calls)
        # Leave a stale entry behind, as an earlier experiment in a notebook would.
        torch.compile(fn, backend="eager")(torch.ones(3, dtype=torch.float16))
        with contextlib.redirect_stdout(io.StringIO()):
            got = answer(fn, [tuple(c) for c in calls])
        torch._dynamo.reset()
        tried = f"cache_sizes({label}, [{_describe_calls(calls)}])"
        if isinstance(got, tuple):
            got = list(got)
        if not isinstance(got, list) or len(got) != len(calls):
            raise Wrong("return one count per call, as a list of ints.", "请为每次调用返回一个计数，组成整数 list。",
                        tried=tried, expected=repr(want), got=repr(got))
        if got == want:
            continue
        if got == graph_counts:
            hint = ("those are graph counts: count the cache entries of fn's own code object. The resume "
                    "function after a break has a cache of its own, and a graph is not a cache entry.",
                    "这些是计算图的数量：应统计 fn 自己的代码对象上的缓存条目。中断之后的恢复函数有自己的缓存，"
                    "而且一张计算图并不等于一个缓存条目。")
        elif all(g == 0 for g in got):
            hint = ("every count is 0: read the cache of fn.__code__ (the function you compiled), not "
                    "of the wrapper torch.compile returns.",
                    "所有计数都是 0：应读取 fn.__code__（被编译的函数）的缓存，而不是 torch.compile 返回的包装函数的。")
        elif got[0] > want[0]:
            hint = ("the first count is already too high: entries left by an earlier compile are still "
                    "there. Call torch._dynamo.reset() first.",
                    "第一个计数就偏大：之前编译留下的缓存条目还在。请先调用 torch._dynamo.reset()。")
        elif label == "_halves":
            hint = ("count the entries of fn's own code object only: the resume function after the "
                    "break has a cache of its own, and a graph is not a cache entry.",
                    "只统计 fn 自己的代码对象上的条目：中断之后的恢复函数有自己的缓存，而且一张计算图并不等于一个缓存条目。")
        else:
            hint = ("call the compiled function once per argument tuple, in order, and count "
                    "the entries after each call.",
                    "按顺序对每组参数调用一次编译后的函数，每次调用之后统计条目数。")
        raise Wrong(*hint, tried=tried, expected=repr(want), got=repr(got))


# -- exercise 4: find the resume functions -----------------------------------------------

def _no_break(x):
    return torch.sin(x) + 1


def _one_break(x):
    y = x.cos()
    torch._dynamo.graph_break()
    return y * 3


def _two_breaks(x):
    a = x + 1
    torch._dynamo.graph_break()
    b = a * 2
    torch._dynamo.graph_break()
    return b - 1


def _branchy(x):
    if x.mean() > 0:
        return x + 1
    return x - 1


def _resume_cases() -> list[tuple[str, Callable[..., Any]]]:
    return [("_no_break", _no_break), ("_one_break", _one_break), ("_two_breaks", _two_breaks),
            ("_branchy", _branchy)]


_NAMES: dict[str, list[str]] = {}


def _reference_names(label: str, fn: Callable[..., Any], x: torch.Tensor) -> list[str]:
    if label not in _NAMES:
        torch._dynamo.reset()
        torch.compile(fn, backend="eager")(x)
        _NAMES[label] = sorted(frame.name for frame in walk(fn)[1:])
        torch._dynamo.reset()
    return _NAMES[label]


@task("lab06.4", "find the resume functions", "找出恢复函数")
def _resume(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab06.4', resume_names).",
                    "请传入函数本身，例如 check('lab06.4', resume_names)。", got=type(answer).__name__)
    x = torch.ones(2, 3)
    for label, fn in _resume_cases():
        want = _reference_names(label, fn, x)
        torch._dynamo.reset()
        with contextlib.redirect_stdout(io.StringIO()):
            got = answer(fn, x)
        torch._dynamo.reset()
        tried = f"resume_names({label}, torch.ones(2, 3))"
        if isinstance(got, tuple):
            got = list(got)
        if not isinstance(got, list) or not all(isinstance(n, str) for n in got):
            raise Wrong("return a list of names (str).", "请返回由名字（str）组成的 list。",
                        tried=tried, expected=repr(want), got=repr(got))
        if sorted(got) == want:
            continue
        if any(n.startswith("__resume_at") for n in got):
            hint = ("those are the global names the transformed code uses; return each resume "
                    "function's own name, fn.__code__.co_name (torch_dynamo_resume_in_…).",
                    "这些是改写后的字节码使用的全局变量名；请返回每个恢复函数自己的名字，"
                    "即 __code__.co_name（torch_dynamo_resume_in_…）。")
        elif len(got) < len(want) and label == "_two_breaks":
            hint = ("the second break's resume function is called from the first resume function's "
                    "transformed code: look in the cache entries of every resume function you find, too.",
                    "第二次中断的恢复函数是由第一个恢复函数改写后的字节码调用的：对找到的每个恢复函数，也要查看它的缓存条目。")
        elif len(got) < len(want) and label == "_branchy":
            hint = ("Dynamo writes a resume function for each branch of the if, and the transformed "
                    "code names both, even though only one has run.",
                    "Dynamo 为 if 的每个分支各写一个恢复函数，改写后的字节码两个都会引用，尽管只运行过其中一个。")
        else:
            hint = ("collect the __resume_at_* names in each cache entry's code.co_names, look them up "
                    "in fn.__globals__, and repeat for the resume functions you find.",
                    "收集每个缓存条目的 code.co_names 中以 __resume_at_ 开头的名字，在 fn.__globals__ 中查到对应函数，"
                    "再对找到的恢复函数重复这一过程。")
        raise Wrong(*hint, tried=tried, expected=repr(want), got=repr(sorted(got)))
