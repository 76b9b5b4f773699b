"""Checkers for labs/lab06_dynamo_bytecode.ipynb (lecture course/06_dynamo_bytecode.ipynb).

The functions the lab asks about (``f1`` … ``f6``, ``scale``) live here, so the lab prints
their source from this module and the checker compiles exactly what the learner read.

Graph and break counts come from torch itself: a counting backend sees every graph, and the
``graph_breaks`` logging artifact (what ``TORCH_LOGS=graph_breaks`` prints) reports every break
Dynamo takes, including one with no tensor operation before it. Whether a call recompiles is
read the same way, from a counting backend and the ``recompiles`` artifact.
"""
from __future__ import annotations

import contextlib
import importlib
import io
import logging
import numbers
import re
import types
from typing import Any, Callable, Iterator
from unittest import mock

import torch

from . import Wrong, task
from . import _dynamo_settings as settings
from ..viewers._dynamo_cache import cache_entries, walk
from .._text import first_line, quiet
from ._probe import describe, need_callable

__all__ = ["PUZZLES", "dynamo_log", "graphs_and_breaks", "puzzle_input", "scale", "scale_args"]


# -- torch's own signals -----------------------------------------------------------------

class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.messages.append(record.getMessage())
        except Exception:  # a record that cannot be formatted is not one we count
            pass


@contextlib.contextmanager
def dynamo_log(artifact: str) -> Iterator[list[str]]:
    """Collect the messages of one of torch's logging artifacts (``"graph_breaks"``,
    ``"recompiles"``) while the block runs, without printing them.

    The learner's own logging settings (``set_logs``, ``TORCH_LOGS``) are left as they were.

    >>> import torch
    >>> def f(x):
    ...     y = x + 1
    ...     torch._dynamo.graph_break()
    ...     return y * 2
    >>> torch._dynamo.reset()
    >>> with dynamo_log("graph_breaks") as messages:
    ...     _ = torch.compile(f, backend="eager")(torch.ones(2))
    >>> sum(m.startswith("Graph break") for m in messages)
    1
    >>> torch._dynamo.reset()
    """
    importlib.import_module("torch._dynamo")  # registers Dynamo's artifact loggers
    from torch._logging import _internal

    state = _internal._get_log_state()
    added = not state.is_artifact_enabled(artifact)
    state.enable_artifact(artifact)
    loggers = [logging.getLogger(name) for name in sorted(_internal.log_registry.get_artifact_log_qnames())
               if name.endswith(f".__{artifact}")]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    # a notebook's logging.disable(logging.WARNING) (the course's own cells use it) would hide every record
    disabled = logging.root.manager.disable
    logging.disable(logging.NOTSET)
    handler = _Collect()
    for lg in loggers:
        lg.setLevel(logging.DEBUG)
        lg.propagate = False
        lg.addHandler(handler)
    try:
        yield handler.messages
    finally:
        for lg, level, propagate in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)
            lg.propagate = propagate
        logging.disable(disabled)
        if added:
            state.artifact_names.discard(artifact)


def _break_records(messages: list[str]) -> list[tuple[str, str]]:
    """(source line, reason) of each graph break in the ``graph_breaks`` messages."""
    out = []
    for message in messages:
        if not message.startswith("Graph break"):
            continue
        lines = [line.rstrip() for line in message.splitlines()]
        reason = ""
        for i, line in enumerate(lines):
            if line.startswith("Graph Break Reason:"):
                reason = line.split(":", 1)[1].strip()
                if reason.startswith("Encountered graph break when attempting"):
                    reason = next((rest.strip() for rest in lines[i + 1:] if rest.strip()), reason)
                break
        source = ""
        frames = [i for i, line in enumerate(lines) if line.lstrip().startswith('File "')]
        if frames and frames[-1] + 1 < len(lines):
            source = lines[frames[-1] + 1].strip()
        out.append((source, reason))
    return out


def graphs_and_breaks(fn: Callable[..., Any], *args: Any) -> tuple[int, int, list[tuple[str, str]]]:
    """Compile ``fn`` afresh, call it once with ``args`` and return (graphs compiled, graph
    breaks taken, (source line, reason) of each break), as torch itself reports them.

    >>> graphs_and_breaks(PUZZLES["f1"], puzzle_input())[:2]
    (1, 0)
    """
    graphs: list[Any] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        with quiet(), contextlib.redirect_stdout(io.StringIO()), dynamo_log("graph_breaks") as messages:
            torch.compile(fn, backend=counting)(*args)
    finally:
        torch._dynamo.reset()
    breaks = _break_records(messages)
    return len(graphs), len(breaks), breaks


# -- Dynamo's process-wide settings ------------------------------------------------------

#: run a checker under Dynamo's defaults; an answer that leaves a setting changed is wrong
_with_default_dynamo = settings.keeping_settings


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

#: What to rethink when a prediction is off: the idea, never the numbers.
_NUDGE = {
    "f1": ("Dynamo runs a Python for loop over range() while it traces; think about what is left to compile "
           "after the loop has run.",
           "Dynamo 在追踪时执行对 range() 的 Python for 循环；想一想循环执行完之后还剩下什么需要编译。"),
    "f2": ("print is a builtin Dynamo cannot put in a graph: count what is compiled on each side of it.",
           "print 是 Dynamo 无法放进计算图的内置函数：数一数它前后各编译了什么。"),
    "f3": ("x.shape[0] is known while tracing, so Dynamo can decide this if by itself and guard on the size.",
           "追踪时 x.shape[0] 是已知的，所以 Dynamo 可以自己决定这个 if，并对尺寸加一个守卫。"),
    "f4": ("x.sum() > 0 depends on tensor values, which Dynamo does not have while tracing.",
           "x.sum() > 0 取决于张量的数值，而 Dynamo 在追踪时并不知道这些数值。"),
    "f5": ("a break is still a break when no tensor operation comes before it: it leaves no graph before it, but "
           "Dynamo takes it (and logs it); the one graph is the tanh and the multiply after the print, traced in "
           "the resume function.",
           "即使前面没有任何张量运算，中断仍然是中断：它之前不留下计算图，但 Dynamo 确实发生了这次中断（并记录了它）；"
           "唯一的计算图是 print 之后的 tanh 和乘法，在恢复函数中追踪得到。"),
    "f6": ("look for every line Dynamo cannot put in a graph; with Dynamo's default settings "
           "(capture_scalar_outputs=False) .item() is one of them.",
           "找出 Dynamo 无法放进计算图的每一行；在 Dynamo 的默认设置下（capture_scalar_outputs=False），"
           ".item() 就是其中之一。"),
}


def puzzle_input() -> torch.Tensor:
    """The input every puzzle is compiled with."""
    generator = torch.Generator().manual_seed(6)
    return torch.randn(4, 3, generator=generator)


_FACTS: dict[str, tuple[int, int]] = {}


@settings.under_defaults
def _facts(name: str) -> tuple[int, int]:
    """(graphs, breaks) torch reports for puzzle ``name``; computed once."""
    if name not in _FACTS:
        graphs, breaks, _ = graphs_and_breaks(PUZZLES[name], puzzle_input())
        _FACTS[name] = (graphs, breaks)
    return _FACTS[name]


def _pair(value: Any) -> tuple[int, int] | None:
    """A prediction as (graphs, breaks), or None when it is not a pair of two ints."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):  # numpy ints too
        return None
    return int(value[0]), int(value[1])


def _direction(said: int, truth: int, what_en: str, what_zh: str) -> tuple[str, str] | None:
    if said == truth:
        return None
    if said > truth:
        return f"{what_en} too high", f"{what_zh}偏多"
    return f"{what_en} too low", f"{what_zh}偏少"


@task("lab06.1", "predict graphs and graph breaks", "预测计算图与图中断的数量", hints=[
    ("Go through each function line by line and ask two questions: can Dynamo put this line in a graph, "
     "and does Dynamo know this value while it traces?",
     "逐行阅读每个函数，并问自己两个问题：Dynamo 能把这一行放进计算图吗？Dynamo 在追踪时知道这个值吗？"),
    ("Lecture 06, section 6 'Graph breaks and resume functions': at a break the current graph ends, Python "
     "runs the line Dynamo cannot trace, and a resume function traces the rest. Shapes and Python constants "
     "are known while tracing; tensor values are not.",
     "第 06 讲第 6 节“图中断与恢复函数”：遇到中断时当前计算图结束，由 Python 执行 Dynamo 无法追踪的那一行，"
     "再由恢复函数追踪剩下的部分。追踪时形状和 Python 常量是已知的，张量的数值则不是。"),
    ("Count graphs and breaks separately: a break before any tensor operation leaves no graph behind, yet "
     "Dynamo still takes it. The cell after the exercise compares your predictions with what torch reports.",
     "把计算图和中断分开数：出现在任何张量运算之前的中断不会留下计算图，但 Dynamo 仍然发生了这次中断。"
     "练习后面的单元会把你的预测与 torch 报告的结果进行比较。"),
])
@_with_default_dynamo(("predict() only returns your predictions; leave Dynamo's settings alone.",
                      "predict() 只需返回你的预测；请不要改动 Dynamo 的设置。"))
def _predict(answer: Any) -> None:
    need_callable(answer, "predict")
    predictions = answer()
    if not isinstance(predictions, dict):
        raise Wrong("predict() should return a dict from each function's name to a pair (graphs, breaks).",
                    "predict() 应返回一个 dict：键是函数名，值是 (graphs, breaks) 二元组。",
                    got=describe(predictions))
    if any(callable(k) and getattr(k, "__name__", None) in PUZZLES for k in predictions):
        raise Wrong("the keys are the functions themselves; key each prediction by the function's name, a str "
                    "such as 'f1'.",
                    "这些键是函数对象本身；请用函数名（一个 str，例如 'f1'）作为每个预测的键。",
                    expected=", ".join(repr(name) for name in PUZZLES),
                    got=", ".join(f"<function {k.__name__}>" if callable(k) and hasattr(k, "__name__") else repr(k)
                                  for k in predictions))
    missing = [name for name in PUZZLES if name not in predictions]
    extra = sorted(str(k) for k in predictions if k not in PUZZLES)
    if missing or extra:
        raise Wrong(f"give exactly one prediction per function, keyed by its name ({', '.join(PUZZLES)}); "
                    f"missing: {', '.join(missing) or 'none'}; not a puzzle: {', '.join(extra) or 'none'}.",
                    f"请为每个函数恰好给出一个预测，键为函数名（{', '.join(PUZZLES)}）；"
                    f"缺少：{', '.join(missing) or '无'}；不是题目中的函数：{', '.join(extra) or '无'}。",
                    expected=", ".join(PUZZLES), got=", ".join(map(str, predictions)))
    pairs = {}
    for name in PUZZLES:
        pair = _pair(predictions[name])
        if pair is None:
            raise Wrong(f"each prediction is a pair (graphs, breaks) of two ints; {name}'s is not.",
                        f"每个预测都应是由两个整数组成的 (graphs, breaks)；{name} 的预测不是。",
                        tried=name, got=repr(predictions[name]))
        pairs[name] = pair
    off = [name for name in PUZZLES if pairs[name] != _facts(name)]
    if len(off) > 1 and all(pairs[name][::-1] == _facts(name) for name in off):
        raise Wrong("the numbers are right but in the wrong order: each pair is (graphs, breaks), graphs first; "
                    f"yours {'are' if len(off) > 1 else 'is'} (breaks, graphs) for {', '.join(off)}.",
                    f"数字是对的，但顺序反了：每个二元组是 (graphs, breaks)，计算图数量在前；你给 {', '.join(off)} "
                    "的是 (breaks, graphs)。",
                    tried=("torch.compile(f) called once on x, for each function",
                           "对每个函数，用 x 调用一次 torch.compile(f)"),
                    expected=("(graphs, breaks) for each function", "每个函数的 (graphs, breaks)"),
                    got="; ".join(f"{name}: {pairs[name]}" for name in off))
    off_en, off_zh, got = [], [], []
    for name in PUZZLES:
        pair = pairs[name]
        truth = _facts(name)
        parts = [d for d in (_direction(pair[0], truth[0], "graphs", "计算图数量"),
                             _direction(pair[1], truth[1], "breaks", "中断数量")) if d]
        if parts:
            en, zh = _NUDGE[name]
            off_en.append(f"{name} ({', '.join(p[0] for p in parts)}): {en}")
            off_zh.append(f"{name}（{'，'.join(p[1] for p in parts)}）：{zh}")
            got.append(f"{name}: {pair}")
    if off_en:
        raise Wrong(f"{len(off_en)} of {len(PUZZLES)} predictions {'is' if len(off_en) == 1 else 'are'} off. "
                    + " | ".join(off_en),
                    f"{len(PUZZLES)} 个预测中有 {len(off_en)} 个不对。" + " | ".join(off_zh),
                    tried=("torch.compile(f) called once on x, for each function",
                           "对每个函数，用 x 调用一次 torch.compile(f)"),
                    expected=("the graphs Dynamo compiles and the graph breaks it takes",
                              "Dynamo 编译出的计算图，以及它遇到的图中断"),
                    got="; ".join(got))


# -- exercise 2: read the guards ---------------------------------------------------------

def scale(x, factor, mode):
    if mode == "double":
        return x * factor * 2
    return x + factor


def scale_args() -> tuple[torch.Tensor, int, str]:
    """The arguments ``scale`` is first compiled with."""
    return torch.ones(2, 3), 3, "double"


_ARGS = ("x", "factor", "mode")
_KEYS = {"fails_on_x": "x", "fails_on_factor": "factor", "fails_on_mode": "mode"}


def _guard_failures(message: str) -> list[str]:
    """The failed guards a ``recompiles`` message names, one per cache entry."""
    out = []
    for line in message.splitlines():
        line = line.strip()
        match = re.match(r"- \d+/\d+: (.*)", line)
        if match:
            out.append(match.group(1).split("  #")[0].strip())
    return out



def _recompiles(key: str, args: tuple[Any, ...]) -> tuple[bool, list[str]]:
    """Compile ``scale`` afresh with :func:`scale_args`, then call it with ``args``:
    (whether it compiled again, the failed guards torch reports)."""
    graphs: list[Any] = []

    def counting(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        compiled = torch.compile(scale, backend=counting)
        with quiet():
            compiled(*scale_args())
            before = len(graphs)
            with dynamo_log("recompiles") as messages:
                try:
                    compiled(*args)
                except Exception as exc:
                    raise Wrong(f"scale raised an error on your {key} arguments. A guard that fails is not an "
                                "error: choose arguments scale can still run with.",
                                f"scale 在你的 {key} 参数上报错了。守卫失败并不是报错：请选择 scale 仍然能运行的参数。",
                                tried=f"{key}: scale{_show(args)}", got=first_line(str(exc))) from None
    finally:
        torch._dynamo.reset()
    # A recompile that traces no tensor operation (x a list or an int) adds no graph: the log still says it.
    recompiled = len(graphs) > before or any(m.startswith("Recompiling") for m in messages)
    return recompiled, [r for m in messages for r in _guard_failures(m)]


def _show(args: tuple[Any, ...]) -> str:
    def one(a: Any) -> str:
        if isinstance(a, torch.Tensor):
            grad = ", requires_grad=True" if a.requires_grad else ""
            if a.layout != torch.strided:  # sparse layouts have no strides
                return f"<tensor {tuple(a.shape)} {str(a.dtype).replace('torch.', '')} {a.layout}{grad}>"
            offset = f" storage offset {a.storage_offset()}" if a.storage_offset() else ""
            made = ", made under inference_mode" if a.is_inference() else ""
            return (f"<tensor {tuple(a.shape)} {str(a.dtype).replace('torch.', '')} stride {a.stride()}{offset}"
                    f"{grad}{made}>")
        return repr(a)
    return "(" + ", ".join(one(a) for a in args) + ")"


def _alone(args: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """scale_args() with only argument ``name`` taken from ``args``."""
    base = list(scale_args())
    base[_ARGS.index(name)] = args[_ARGS.index(name)]
    return tuple(base)


#: Why the named argument, changed on its own, still passed its guard: the idea to revisit.
_STILL_PASSES = {
    "x": ("The TENSOR_MATCH guard on x checks dtype, device, requires_grad, size and stride, not the values, "
          "nor where x starts in its storage (its storage offset).",
          "x 的 TENSOR_MATCH 守卫检查 dtype、device、requires_grad、尺寸和步长，不检查数值，也不检查 x 从其存储的哪个位置开始"
          "（存储偏移）。"),
    "factor": ("The guard on factor compares it with the value it was compiled with (EQUALS_MATCH).",
               "factor 的守卫把它与编译时的值进行比较（EQUALS_MATCH）。"),
    "mode": ("The guard on mode compares it with the string it was compiled with (EQUALS_MATCH).",
             "mode 的守卫把它与编译时的字符串进行比较（EQUALS_MATCH）。"),
}


def _unguarded_changes(x: Any) -> tuple[str, str]:
    """What ``x`` changed, compared with the first call's x, that TENSOR_MATCH does not look at."""
    if not isinstance(x, torch.Tensor):
        return "", ""
    first = scale_args()[0]
    en, zh = [], []
    try:
        same_values = x.shape == first.shape and bool(torch.equal(x.detach().to(first.dtype), first))
    except Exception:
        same_values = False
    if not same_values:
        en.append("its values")
        zh.append("数值")
    if x.storage_offset() != 0:
        en.append(f"its storage offset ({x.storage_offset()})")
        zh.append(f"存储偏移（{x.storage_offset()}）")
    if not en:
        return (" Your x matches the first call's x in everything the guard checks, and in its values too.",
                "你的 x 在守卫检查的每一项上都与第一次调用的 x 相同，连数值也相同。")
    return (f" Your x differs from the first call's x only in {' and '.join(en)}.",
            f"你的 x 与第一次调用的 x 只在{'和'.join(zh)}上不同。")

#: Why another argument failed its guard too (or made "passes" recompile).
_ALSO_FAILS = {
    "x": ("TENSOR_MATCH fixes x's dtype, device, requires_grad, size [2, 3] and stride.",
          "TENSOR_MATCH 固定了 x 的 dtype、device、requires_grad、尺寸 [2, 3] 和步长。"),
    "factor": ("Python ints are specialized: a factor other than the one compiled for fails its guard.",
               "Python 整数会被特化：与编译时不同的 factor 会让它的守卫失败。"),
    "mode": ("A string argument is compared by value: any other mode fails its guard.",
             "字符串参数按值比较：任何其他 mode 都会让它的守卫失败。"),
}


def _also_fails(other: str, value: Any) -> tuple[str, str]:
    """Why ``value``, given for argument ``other``, fails that argument's guard: its type first, then the
    property the guard compares."""
    first = scale_args()[_ARGS.index(other)]
    kind = type(value).__name__
    if type(value) is not type(first):
        was = {"x": ("a tensor", "张量"), "factor": ("the int 3", "整数 3"), "mode": ("the str 'double'", "字符串 'double'")}
        en, zh = was[other]
        same = other != "x" and _equal(value, first)
        return ((f"{other} was compiled as {en}, and yours is of type {kind}"
                 + (f" (equal to {first!r}, but of another type)" if same else "")
                 + f": the guard on {other} checks the type as well, so it fails.",
                 f"{other} 编译时是{zh}，而你给的是 {kind} 类型的值"
                 + (f"（与 {first!r} 相等，但类型不同）" if same else "")
                 + f"：{other} 的守卫也检查类型，所以失败了。"))
    if isinstance(value, torch.Tensor) and (value.layout != torch.strided or value.is_inference()):
        what = (("made under torch.inference_mode()", "在 torch.inference_mode() 下创建")
                if value.layout == torch.strided else (f"of layout {value.layout}", f"布局为 {value.layout}"))
        return (f"TENSOR_MATCH also checks a tensor's dispatch keys (the kinds of tensor it is), and your x is "
                f"{what[0]}: its keys differ from the first call's x, so the guard fails although dtype, size and "
                "the rest match.",
                f"TENSOR_MATCH 还检查张量的分发键（它是哪一类张量），而你的 x 是{what[1]}的：它的分发键与第一次调用的 x "
                "不同，所以即使 dtype、尺寸等都相同，守卫也会失败。")
    return _ALSO_FAILS[other]


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _shared_in_place(inputs: dict[str, Any], key: str) -> bool:
    """``key``'s x is a tensor that another tuple also holds and that requires grad: the
    sign of an in-place ``requires_grad_()`` on a shared tensor."""
    x = inputs[key][0]
    return (isinstance(x, torch.Tensor) and x.requires_grad
            and any(k != key and isinstance(v, tuple) and v and v[0] is x for k, v in inputs.items()))


_NO_RECOMPILE = ("no recompile", "不重新编译")
_A_RECOMPILE = ("a recompile", "重新编译了一次")


@task("lab06.2", "inputs that fail, and pass, the guards", "让守卫失败与通过的输入", hints=[
    ("Read the three guards printed above the exercise: each one looks at a single argument. Which property "
     "of that argument does it compare?",
     "读一读练习上方打印出的三个守卫：每个守卫只看一个参数。它比较的是该参数的哪一项属性？"),
    ("Lecture 07, sections 1 'The guards of one compile' and 2 'Failing guards on purpose': TENSOR_MATCH "
     "compares a tensor's metadata, EQUALS_MATCH compares a Python value; a call recompiles when any guard "
     "fails, and every argument you change can fail its own guard.",
     "第 07 讲第 1 节“一次编译产生的守卫”和第 2 节“故意让守卫失败”：TENSOR_MATCH 比较张量的元数据，"
     "EQUALS_MATCH 比较 Python 值；只要有一个守卫失败就会重新编译，而你改变的每个参数都可能让它自己的守卫失败。"),
    ("Start each tuple from the arguments of the first call and change one thing only; build a new tensor "
     "rather than changing one in place, since a tensor shared between tuples changes in all of them.",
     "每组参数都从第一次调用的参数出发，只改变一处；请构造新的张量而不是原地修改，因为几组参数共用的张量会在所有组里一起改变。"),
])
@_with_default_dynamo(("guard_inputs() only builds arguments; leave Dynamo's settings alone.",
                      "guard_inputs() 只需构造参数；请不要改动 Dynamo 的设置。"))
def _guards(answer: Any) -> None:
    need_callable(answer, "guard_inputs")
    default_dtype = torch.get_default_dtype()
    try:
        inputs = answer()
    finally:
        changed_dtype = torch.get_default_dtype()
        torch.set_default_dtype(default_dtype)
    if changed_dtype != default_dtype:
        raise Wrong("guard_inputs() changed torch's default dtype for the whole process (the checker has put it "
                    "back): every later tensor in your notebook, the first call's x included, would get it. Give "
                    "a tensor its dtype where you make it (dtype=...) instead.",
                    "guard_inputs() 修改了整个进程中 torch 的默认 dtype（检查器已经把它改回原样）：之后你的笔记本里的每个张量，"
                    "包括第一次调用的 x，都会沿用它。请在创建张量时指定它的 dtype（dtype=...）。",
                    expected=(f"the default dtype {default_dtype}", f"默认 dtype 为 {default_dtype}"),
                    got=(f"the default dtype {changed_dtype}", f"默认 dtype 为 {changed_dtype}"))
    want = ", ".join([*_KEYS, "passes"])
    if not isinstance(inputs, dict) or set(inputs) != {*_KEYS, "passes"}:
        raise Wrong(f"return a dict with exactly the keys {want}.", f"请返回恰好包含这些键的 dict：{want}。",
                    expected=want, got=", ".join(map(str, inputs)) if isinstance(inputs, dict)
                    else describe(inputs))
    for key, args in inputs.items():
        if not isinstance(args, tuple) or len(args) != 3:
            raise Wrong(f"{key} should be a tuple of scale's three arguments (x, factor, mode).",
                        f"{key} 应是 scale 的三个参数组成的 tuple：(x, factor, mode)。",
                        tried=key, got=describe(args))
    for key, args in inputs.items():
        if not isinstance(args[0], torch.Tensor) and any(isinstance(a, torch.Tensor) for a in args[1:]):
            raise Wrong(f"{key} has its tensor in another place than the first: each tuple holds scale's arguments "
                        "in the order (x, factor, mode).",
                        f"{key} 的张量不在第一个位置：每组参数都应按 (x, factor, mode) 的顺序给出 scale 的参数。",
                        tried=key, expected=("(x, factor, mode), x a tensor", "(x, factor, mode)，其中 x 是张量"),
                        got=_show(args))
    for key, name in _KEYS.items():
        args = inputs[key]
        for other in _ARGS:  # change one argument at a time: only `name` may fail its guard
            recompiled, reasons = _recompiles(key, _alone(args, other))
            tried = (f"{key}: scale{_show(_alone(args, other))} (only {other} taken from your tuple)",
                     f"{key}：scale{_show(_alone(args, other))}（只取了你的 tuple 中的 {other}）")
            if other == name and not recompiled:
                en, zh = _STILL_PASSES[name]
                if name == "x":
                    more_en, more_zh = _unguarded_changes(args[0])
                    en, zh = en + more_en, zh + more_zh
                raise Wrong(f"{key} did not make the call recompile: its {name} still passes the guard. {en}",
                            f"{key} 没有触发重新编译：它的 {name} 仍然通过了守卫。{zh}",
                            tried=tried, expected=(f"a failed guard on {name}", f"{name} 的守卫失败"),
                            got=("the cache entry was reused", "复用了缓存条目"))
            if other != name and recompiled:
                if other == "x" and _shared_in_place(inputs, key):
                    en, zh = ("Its x is a tensor changed in place with requires_grad_() and shared with another "
                              "tuple, so it fails x's guard here too.",
                              "它的 x 是一个被 requires_grad_() 原地修改、并与另一组参数共用的张量，所以在这里也让 x 的守卫失败了。")
                else:
                    en, zh = _also_fails(other, args[_ARGS.index(other)])
                raise Wrong(f"{key} fails the guard on {other} as well, not only the one on {name}. {en} "
                            f"Keep {other} exactly as in the first call.",
                            f"{key} 不只让 {name} 的守卫失败，也让 {other} 的守卫失败了。{zh}"
                            f"请让 {other} 与第一次调用时完全相同。",
                            tried=tried, expected=(f"no failed guard on {other}", f"{other} 的守卫没有失败"),
                            got="; ".join(reasons) or _A_RECOMPILE)
    passes = inputs["passes"]
    for other in _ARGS:
        recompiled, reasons = _recompiles("passes", _alone(passes, other))
        if recompiled:
            en, zh = (_also_fails(other, passes[_ARGS.index(other)])
                      if not (other == "x" and _shared_in_place(inputs, "passes"))
                      else ("Its x was changed in place with requires_grad_() through another tuple.",
                            "它的 x 通过另一组参数被 requires_grad_() 原地修改了。"))
            raise Wrong(f"passes made the call recompile: it fails the guard on {other}. {en}",
                        f"passes 触发了重新编译：它让 {other} 的守卫失败了。{zh}",
                        tried=(f"passes: scale{_show(_alone(passes, other))} (only {other} taken from your tuple)",
                               f"passes：scale{_show(_alone(passes, other))}（只取了你的 tuple 中的 {other}）"),
                        expected=_NO_RECOMPILE, got="; ".join(reasons) or _A_RECOMPILE)
    recompiled, reasons = _recompiles("passes", passes)
    if recompiled:
        raise Wrong("passes made the call recompile.", "passes 触发了重新编译。", tried=f"passes: scale{_show(passes)}",
                    expected=_NO_RECOMPILE, got="; ".join(reasons) or _A_RECOMPILE)
    x = passes[0]
    if isinstance(x, torch.Tensor) and torch.equal(x.detach(), scale_args()[0]):
        raise Wrong("passes reuses the cache entry, but x holds the same values as in the first call; give x "
                    "new values to show that guards do not look at them.",
                    "passes 复用了缓存条目，但 x 的数值与第一次调用时相同；请给 x 换上新的数值，说明守卫不检查数值。",
                    tried=f"passes: scale{_show(passes)}", expected=("x with other values", "数值不同的 x"),
                    got=("x equal to the first call's x", "x 与第一次调用时的 x 相同"))


# -- exercise 3: count cache entries -----------------------------------------------------

def _poly(x):
    return x * x + 1


def _halves(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return y - 1


def _times(x, k):
    return x * k


def _affine(x):
    return 2 * x - 1


def _shift(x):
    return x + 1


def _cache_cases() -> list[tuple[str, Callable[..., Any], list[tuple[Any, ...]]]]:
    f32, f64 = torch.float32, torch.float64
    return [
        # First: with Dynamo's memory of an earlier compile's sizes kept, only dim 0 is dynamic at once, which
        # tells such an answer apart from dynamic=True.
        ("_affine", _affine, [(torch.ones(2, 3),), (torch.ones(2, 3),), (torch.ones(4, 3),), (torch.ones(4, 5),),
                              (torch.ones(4, 5, dtype=f64),)]),
        ("_poly", _poly, [(torch.ones(3),), (torch.ones(3),), (torch.ones(4),), (torch.ones(5),),
                          (torch.ones(5, dtype=f64),)]),
        ("_halves", _halves, [(torch.ones(2, dtype=f32),), (torch.ones(2),), (torch.ones(2, 2),)]),
        ("_times", _times, [(torch.ones(2), 2), (torch.ones(2), 2), (torch.ones(2), 3), (torch.ones(2, 2), 3)]),
        # the second call differs from the first: a reset between calls shows
        ("_shift", _shift, [(torch.ones(2, 3),), (torch.ones(4, 3),), (torch.ones(4, 3),)]),
    ]


_SIZES: dict[str, tuple[list[int], list[int], list[int]]] = {}


@settings.under_defaults
def _reference_sizes(label: str, fn: Callable[..., Any],
                     calls: list[tuple[Any, ...]]) -> tuple[list[int], list[int], list[int]]:
    """(cache entries on fn.__code__, graphs compiled so far, entries on fn's code and every resume
    function's code together) after each call; computed once."""
    if label not in _SIZES:
        torch._dynamo.reset()
        graphs: list[Any] = []

        def counting(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
            graphs.append(gm)
            return gm.forward

        compiled = torch.compile(fn, backend=counting)
        sizes, counts, with_resume = [], [], []
        with quiet():
            for args in calls:
                compiled(*args)
                sizes.append(len(cache_entries(fn.__code__)))
                counts.append(len(graphs))
                with_resume.append(sum(len(frame.entries) for frame in walk(fn)))
        torch._dynamo.reset()
        _SIZES[label] = (sizes, counts, with_resume)
    return _SIZES[label]


def _describe_calls(calls: list[tuple[Any, ...]]) -> str:
    def one(a: Any) -> str:
        if isinstance(a, torch.Tensor):
            dtype = "" if a.dtype == torch.float32 else f", {str(a.dtype).replace('torch.', '')}"
            return f"ones({', '.join(map(str, a.shape))}{dtype})"
        return repr(a)
    return ", ".join("(" + ", ".join(one(a) for a in args) + ("," if len(args) == 1 else "") + ")" for args in calls)


#: Known wrong results of lab06.3: predicate(got, want, graph counts, counts with the resume
#: functions' entries), English, 中文.
_CACHE_MISTAKES: list[tuple[Callable[[list[int], list[int], list[int], list[int]], bool], str, str]] = [
    (lambda got, want, graphs, with_resume: got == graphs,
     "those counts take in what Dynamo compiled for the resume function as well (they match the graphs compiled "
     "for fn and its resume function together): after a break, the code after it is compiled into the resume "
     "function, a code object with a cache of its own. Count only the cache entries of fn's own code object.",
     "这些计数把 Dynamo 为恢复函数编译的内容也算进去了（它们与 fn 和恢复函数一共编译出的计算图数量相同）：中断之后的代码"
     "被编译进恢复函数，它是一个独立的代码对象，有自己的缓存。请只统计 fn 自己的代码对象上的缓存条目。"),
    (lambda got, want, graphs, with_resume: all(g == 0 for g in got),
     "every count is 0: read the cache of the code object Dynamo compiled (fn's own, not the wrapper "
     "torch.compile returns), after calling the compiled function.",
     "所有计数都是 0：应在调用编译后的函数之后，读取 Dynamo 编译的那个代码对象（fn 自己的，而不是 "
     "torch.compile 返回的包装函数的）的缓存。"),
    (lambda got, want, graphs, with_resume: got == [0] + want[:-1],
     "each count is one call late: record the count after each call, not before it.",
     "每个计数都晚了一次调用：请在每次调用之后记录计数，而不是之前。"),
    (lambda got, want, graphs, with_resume: got == [want[-1]] * len(want) and len(set(want)) > 1,
     "every count is the number of entries after the last call: record the count right after each call, while "
     "the calls go on, not once at the end.",
     "每个计数都是最后一次调用之后的条目数：请在每次调用之后立即记录计数（边调用边记录），而不是最后统一记录一次。"),
    (lambda got, want, graphs, with_resume: all(g == 1 for g in got) and max(want) > 1,
     "every count is 1: the entries never add up. Either the cache was emptied before each call, or a "
     "recompile limit of 1 stopped Dynamo from compiling again (past the limit it runs the function "
     "without compiling). Empty the cache once, before the first call, keep the default limit, then make every "
     "call on the same cache (lecture 06, section 5).",
     "每个计数都是 1：条目从未累积。要么每次调用之前缓存都被清空了，要么重新编译上限 1 让 Dynamo 不再重新编译"
     "（超过上限后它不经编译直接运行函数）。请只在第一次调用之前清空一次缓存，保留默认上限，然后所有调用都在同一个缓存上进行"
     "（第 06 讲第 5 节）。"),
    # Before the stale-entry mistake: an answer that forgot the reset already failed on _poly, which has
    # no break; on a function with a break, counts that are too high come from the resume functions.
    (lambda got, want, graphs, with_resume: with_resume != want and (got == with_resume or all(
        g >= w for g, w in zip(got, want))),
     "the counts include cache entries of the resume function too: after a graph break it is a code object "
     "of its own, with its own cache. Count only the entries on fn's own code object.",
     "这些计数把恢复函数的缓存条目也算进去了：图中断之后，恢复函数是一个独立的代码对象，有自己的缓存。"
     "请只统计 fn 自己的代码对象上的条目。"),
    (lambda got, want, graphs, with_resume: got[0] > want[0] and all(g >= w for g, w in zip(got, want)),
     "the counts are too high from the first call on: entries left by an earlier compile of fn are still in "
     "its cache. Start from an empty cache (lecture 06, section 5).",
     "从第一次调用起计数就偏大：之前编译 fn 留下的条目还在它的缓存里。请从空缓存开始（第 06 讲第 5 节）。"),
]


@settings.under_defaults
def _sizes_with(label: str, fn: Callable[..., Any], calls: list[tuple[Any, ...]], dynamic: bool,
                stale: bool = False) -> list[int]:
    """Cache entries on fn.__code__ after each call when compiled with ``dynamic`` (after the checker's
    stale entry, left in place, when ``stale``); computed once."""
    key = f"{label} dynamic={dynamic} stale={stale}"
    if key not in _SIZES:
        torch._dynamo.reset()
        if stale:
            with quiet():
                _leave_stale_entry(fn, calls)
        compiled = torch.compile(fn, backend="eager", dynamic=dynamic)
        sizes = []
        with quiet():
            for args in calls:
                compiled(*args)
                sizes.append(len(cache_entries(fn.__code__)))
        torch._dynamo.reset()
        _SIZES[key] = (sizes, [], [])
    return _SIZES[key][0]


def _stale_args(calls: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The first call whose arguments differ from the first call's. Compiled beforehand, its entry serves
    that later call (so an answer that keeps it and subtracts it counts too few), and Dynamo remembers its
    sizes, which differ from the first call's (so an answer that empties only fn's cache, not Dynamo's
    memory, makes the first call's sizes dynamic at once)."""
    first = _describe_calls(calls[:1])
    return next(args for args in calls if _describe_calls([args]) != first)


def _leave_stale_entry(fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> None:
    """Compile ``fn`` once with other inputs, as an earlier experiment in a notebook would."""
    torch.compile(fn, backend="eager")(*_stale_args(calls))


@contextlib.contextmanager
def _counting_resets(fn: Callable[..., Any], stale: list[Any]) -> Iterator[list[tuple[bool, int]]]:
    """Within the block, each reset of Dynamo (torch._dynamo.reset, torch.compiler.reset, or either under another
    name: counted where reset empties the code caches) adds to the yielded list whether fn's code held an entry
    of the answer's own then (not one of ``stale``), i.e. whether it came after a compiled call, and how many
    entries it held."""
    import torch._dynamo

    real, counted = torch._dynamo.reset_code_caches, []

    def reset_code_caches(*args: Any, **kwargs: Any) -> Any:
        entries = cache_entries(fn.__code__)
        counted.append((any(all(entry.code is not old for old in stale) for entry in entries), len(entries)))
        return real(*args, **kwargs)

    with mock.patch.object(torch._dynamo, "reset_code_caches", reset_code_caches):
        yield counted


@settings.under_defaults
def _sizes_reset_after(label: str, fn: Callable[..., Any], calls: list[tuple[Any, ...]], k: int) -> list[int]:
    """Counts of an answer that resets Dynamo again right after call ``k`` (from 0); computed once."""
    key = f"{label} reset after {k}"
    if key not in _SIZES:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="eager")
        sizes = []
        with quiet():
            for i, args in enumerate(calls):
                compiled(*args)
                sizes.append(len(cache_entries(fn.__code__)))
                if i == k:
                    torch._dynamo.reset()
        torch._dynamo.reset()
        _SIZES[key] = (sizes, [], [])
    return _SIZES[key][0]


@settings.under_defaults
def _sizes_after_reset_code(label: str, fn: Callable[..., Any], calls: list[tuple[Any, ...]]) -> list[int]:
    """Counts of an answer that, after the checker's stale entry, empties fn's code object only
    (``torch._dynamo.reset_code``) instead of resetting Dynamo; computed once."""
    key = f"{label} reset_code"
    if key not in _SIZES:
        torch._dynamo.reset()
        with quiet():
            _leave_stale_entry(fn, calls)
            torch._dynamo.reset_code(fn.__code__)
            compiled = torch.compile(fn, backend="eager")
            sizes = []
            for args in calls:
                compiled(*args)
                sizes.append(len(cache_entries(fn.__code__)))
        torch._dynamo.reset()
        _SIZES[key] = (sizes, [], [])
    return _SIZES[key][0]


def _signatures(calls: list[tuple[Any, ...]], dtypes: bool = True, others: bool = True) -> list[int]:
    """Distinct argument signatures so far: each tensor's shape (and dtype with ``dtypes``), and the
    other arguments as they are (left out without ``others``)."""
    seen: set[Any] = set()
    out = []
    for args in calls:
        seen.add(tuple(((tuple(a.shape), a.dtype) if dtypes else tuple(a.shape)) if isinstance(a, torch.Tensor)
                       else repr(a) for a in args if others or isinstance(a, torch.Tensor)))
        out.append(len(seen))
    return out


#: What a count of distinct signatures counted, by (dtypes, others): the words depend on dtypes only.
_SIGNATURE_WORDS = {
    (True, True): ("argument shapes and dtypes", "参数形状与 dtype 组合"),
    (True, False): ("argument shapes and dtypes", "参数形状与 dtype 组合"),
    (False, True): ("argument shapes", "参数形状"),
    (False, False): ("argument shapes", "参数形状"),
}


def _name_other_settings(label: str, fn: Callable[..., Any], calls: list[tuple[Any, ...]], got: list[int],
                         want: list[int], left: int, tried: str) -> None:
    """Name counts read from a cache compiled with other settings, and counts that never read the cache."""
    read_cache = bool(got) and got[-1] == left
    stale_en, stale_zh = "", ""
    if got and want and got[0] > want[0] and got != _sizes_with(label, fn, calls, dynamic=False) \
            and got != _sizes_with(label, fn, calls, dynamic=True):
        if got == _sizes_with(label, fn, calls, dynamic=False, stale=True):
            dynamic = False
        elif got == _sizes_with(label, fn, calls, dynamic=True, stale=True):
            dynamic = True
        else:
            dynamic = None
        if dynamic is not None:  # two mistakes at once: name both
            stale_en = (" The counts also include an entry left by an earlier compile of fn: start from an empty "
                        "cache (lecture 06, section 5).")
            stale_zh = "此外，这些计数还包括之前编译 fn 留下的条目：请从空缓存开始（第 06 讲第 5 节）。"
            got_settings = _sizes_with(label, fn, calls, dynamic=dynamic)
        else:
            got_settings = got
    else:
        got_settings = got
    if (read_cache or stale_en) and got_settings == _sizes_with(label, fn, calls, dynamic=False):
        raise Wrong("every new size got a cache entry of its own, as with dynamic=False (or automatic dynamic turned "
                    "off): no entry ever serves a second size. Compile with torch.compile's default settings, as "
                    "the task says: once a size has changed, Dynamo compiles an entry with that size dynamic, and "
                    "later sizes reuse it." + stale_en,
                    "每个新尺寸都得到了一个自己的缓存条目，就像 dynamic=False（或关闭了自动动态）时那样：没有哪个条目能服务第二个尺寸。"
                    "请按任务要求使用 torch.compile 的默认设置：某个尺寸变化过一次之后，Dynamo 会编译一个让该尺寸成为动态的条目，"
                    "之后的尺寸都复用它。" + stale_zh,
                    tried=tried, expected=repr(want), got=repr(got))
    if (read_cache or stale_en) and got_settings == _sizes_with(label, fn, calls, dynamic=True):
        raise Wrong("the first cache entry already served every size, as with dynamic=True, which makes sizes "
                    "symbolic from the first call. Compile with torch.compile's default settings, as the task says: "
                    "the first call is compiled for its exact sizes." + stale_en,
                    "第一个缓存条目就服务了所有尺寸，就像 dynamic=True 时那样：它从第一次调用起就把尺寸变成符号。"
                    "请按任务要求使用 torch.compile 的默认设置：第一次调用按其确切的尺寸编译。" + stale_zh,
                    tried=tried, expected=repr(want), got=repr(got))
    for (dtypes, others), (what_en, what_zh) in _SIGNATURE_WORDS.items():
        if got == _signatures(calls, dtypes=dtypes, others=others):
            raise Wrong(f"those are counts of distinct {what_en} among the calls so far, not of cache entries: Dynamo "
                        "does not add an entry for every new signature (after a size has changed once, one dynamic "
                        "entry serves the later sizes; a new dtype does add one). Read the entries on fn's code "
                        "object after each call.",
                        f"这些是到目前为止的调用中不同{what_zh}的个数，而不是缓存条目数：Dynamo 并不会为每种新的参数签名都新增"
                        "一个条目（某个尺寸变化过一次之后，一个动态的条目就能服务之后的尺寸；新的 dtype 则确实会新增一个）。"
                        "请在每次调用之后读取 fn 的代码对象上的条目。",
                        tried=tried, expected=repr(want), got=repr(got))


@task("lab06.3", "count cache entries on the code object", "统计代码对象上的缓存条目", hints=[
    ("Which object holds Dynamo's cache: the wrapper torch.compile returns, or the code object of the "
     "function it compiles?",
     "Dynamo 的缓存挂在哪个对象上：torch.compile 返回的包装函数，还是被编译函数的代码对象？"),
    ("Lecture 06, section 5 'The cache lives on the code object': each set of guards is one cache entry; a "
     "new shape, dtype or int value can add one, and a graph break gives the resume function a cache of its own.",
     "第 06 讲第 5 节“缓存挂在代码对象上”：每组守卫对应一个缓存条目；新的形状、dtype 或整数值都可能新增一个，"
     "而图中断会让恢复函数拥有自己的缓存。"),
    ("Earlier experiments leave entries behind: start from an empty cache, then count after each call, in order.",
     "之前的实验会留下缓存条目：请从空缓存开始，然后按顺序在每次调用之后计数。"),
])
@_with_default_dynamo(("Compile with Dynamo's default settings, as the task says; to try another setting, use "
                      "torch._dynamo.config.patch(...) in a with block, which puts it back.",
                      "请按任务要求使用 Dynamo 的默认设置；想试试别的设置时，请在 with 块中使用 "
                      "torch._dynamo.config.patch(...)，它会自动恢复原来的设置。"))
def _cache_sizes(answer: Any) -> None:
    need_callable(answer, "cache_sizes")
    for label, fn, calls in _cache_cases():
        want, graph_counts, with_resume = _reference_sizes(label, fn, calls)
        # Leave a stale entry behind, as an earlier experiment in a notebook would.
        with quiet():
            _leave_stale_entry(fn, calls)
        stale = [entry.code for entry in cache_entries(fn.__code__)]
        with quiet(), _counting_resets(fn, stale) as counted:
            # copies: an answer may mark them (mark_dynamic), and the checker's own tensors must stay unmarked
            got = answer(fn, [tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in c) for c in calls])
        after = cache_entries(fn.__code__)  # what the cache holds after the answer's calls
        left = len(after)
        # resets after a compiled call, a last one that emptied the cache at the end (a clean-up) aside; after
        # a clean-up, what the cache held just before it is what the answer's calls left
        clean_up = bool(counted) and counted[-1][0] and not left
        if clean_up:
            left = counted[-1][1]
        resets_between = sum(after_call for after_call, _ in (counted[:-1] if clean_up else counted))
        compiled_any = clean_up or any(all(entry.code is not code for code in stale) for entry in after)
        kept_stale = any(entry.code is code for entry in after for code in stale)
        del stale, after
        torch._dynamo.reset()
        tried = f"cache_sizes({label}, [{_describe_calls(calls)}])"
        if isinstance(got, list) and all(isinstance(g, numbers.Integral) and not isinstance(g, bool) for g in got):
            got = [int(g) for g in got]  # a NumPy integer (from np.array(...).tolist() or not) counts too
        if not isinstance(got, list) or not all(isinstance(g, int) and not isinstance(g, bool) for g in got) \
                or len(got) != len(calls):
            raise Wrong("return a list with one count (an int) per call.", "请返回一个 list，每次调用对应一个计数（整数）。",
                        tried=tried, expected=(f"a list of {len(calls)} ints", f"由 {len(calls)} 个整数组成的 list"),
                        got=describe(got))
        if got == want:
            continue
        at = None if not resets_between else next(
            (k for k in range(len(calls) - 1) if got == _sizes_reset_after(label, fn, calls, k)), None)
        if at is not None:
            raise Wrong(f"your counts are what a reset of Dynamo between the calls gives (here after call {at + 1}): "
                        "a reset empties the cache, so the entries the earlier calls left are gone and the count "
                        "starts again. Reset once, before the first call, and then only call and count.",
                        f"你的计数等于在两次调用之间重置 Dynamo 时的结果（这里是在第 {at + 1} 次调用之后）："
                        "重置会清空缓存，之前的调用留下的条目没了，计数又从头开始。请只在第一次调用之前重置一次，之后只调用和计数。",
                        tried=tried, expected=repr(want), got=repr(got))
        _name_other_settings(label, fn, calls, got, want, left, tried)
        if not compiled_any and len(set(got)) == 1 and got != [want[-1]] * len(want):
            raise Wrong("Dynamo compiled nothing for fn during your calls: no new cache entry is on its code object "
                        "afterwards. Make the calls through the function torch.compile returns (calling fn itself "
                        "runs it without Dynamo), and read the count after each of them.",
                        "在你的调用过程中 Dynamo 没有为 fn 编译任何东西：之后 fn 的代码对象上没有新的缓存条目。"
                        "请通过 torch.compile 返回的函数进行调用（直接调用 fn 会绕过 Dynamo 运行），并在每次调用之后读取计数。",
                        tried=tried, expected=repr(want), got=repr(got))
        if kept_stale and got[0] <= want[0]:
            raise Wrong("the entry an earlier compile of fn left in its cache is still there after your calls: Dynamo "
                        "was not reset. That old entry serves a later call that would otherwise add an entry of its "
                        "own, so the counts stay off however the old entries are left out of them (subtracting the "
                        "entries that were there at the start, say). Reset Dynamo before you compile fn, as the task "
                        "says.",
                        "之前编译 fn 留下的缓存条目在你的调用之后仍然在它的缓存里：Dynamo 没有被重置。这个旧条目会服务后面的某次调用，"
                        "而那次调用本该新增一个自己的条目，所以无论怎样把旧条目从计数里去掉（例如减去一开始就有的条目数），计数都不对。"
                        "请按任务要求，在编译 fn 之前重置 Dynamo。",
                        tried=tried, expected=repr(want), got=repr(got))
        if not kept_stale and got == _sizes_after_reset_code(label, fn, calls):
            raise Wrong("your counts are what a cache emptied only for fn gives (or a size marked dynamic before a "
                        "call): Dynamo compiled the first call with its sizes dynamic at once. After emptying fn's "
                        "cache alone, Dynamo still remembers the sizes it saw in the earlier compile of fn (automatic "
                        "dynamic shapes). Reset Dynamo itself (torch._dynamo.reset() or torch.compiler.reset()), "
                        "which empties every cache and forgets those sizes, as in a fresh process, and leave the "
                        "sizes static as the task does.",
                        "你的计数等于只清空 fn 的缓存（或在调用之前把某个尺寸标记为动态）时的结果：Dynamo 第一次调用就直接按动态尺寸编译了。"
                        "只清空 fn 的缓存之后，Dynamo 仍然记得之前编译 fn 时见过的尺寸（自动动态形状）。请重置 Dynamo 本身"
                        "（torch._dynamo.reset() 或 torch.compiler.reset()），它会清空所有缓存并忘掉这些尺寸，就像一个新进程那样；"
                        "并且像任务那样保持尺寸为静态。",
                        tried=tried, expected=repr(want), got=repr(got))
        for matches, en, zh in _CACHE_MISTAKES:
            if matches(got, want, graph_counts, with_resume):
                raise Wrong(en, zh, tried=tried, expected=repr(want), got=repr(got))
        raise Wrong("the counts differ from the cache entries on fn's code object after each call.",
                    "这些计数与每次调用之后 fn 的代码对象上的缓存条目数不一致。",
                    tried=tried, expected=repr(want), got=repr(got))


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


def _four_breaks(x):
    a = x + 1
    torch._dynamo.graph_break()
    b = a * 2
    torch._dynamo.graph_break()
    c = b - 3
    torch._dynamo.graph_break()
    d = c.sin()
    torch._dynamo.graph_break()
    return d * 4


def _seven_breaks(x):
    a = x + 1
    torch._dynamo.graph_break()
    a = a * 2
    torch._dynamo.graph_break()
    a = a - 3
    torch._dynamo.graph_break()
    a = a.sin()
    torch._dynamo.graph_break()
    a = a + 5
    torch._dynamo.graph_break()
    a = a.cos()
    torch._dynamo.graph_break()
    a = a * 7
    torch._dynamo.graph_break()
    return a - 1


def _calls_itself(x, n=2):
    """Called with x alone, it calls itself again after its first break, with n = 1 and then n = 0, so
    the resume function of that break is compiled three times: three cache entries on one code object,
    and only the middle one (n == 1) names a further resume function."""
    torch._dynamo.graph_break()
    if n == 1:
        y = x * 2
        torch._dynamo.graph_break()
        return _calls_itself(y, 0)
    if n == 0:
        return x - 1
    return _calls_itself(x + 1, n - 1)


def _recurses(x, n=1):
    """Calls itself once, with n = 0: fn's code gets two cache entries, and each names the resume function of
    the first break under a global name of its own: two resume functions (two globals) that share one code
    object, whose single cache entry names the resume function of the second break once."""
    y = x + n
    torch._dynamo.graph_break()
    y = y * 2
    torch._dynamo.graph_break()
    if n == 0:
        return y
    return _recurses(y, n - 1)


def _two_args(x, k=1):
    """A second break only when k == 2: called with k = 2, not with x alone."""
    y = x * k
    torch._dynamo.graph_break()
    if k == 2:
        y = y + 1
        torch._dynamo.graph_break()
    return y - 1


def _branchy(x):
    if x.mean() > 0:
        return x + 1
    return x - 1


def _breaks_in_both_branches(x):
    """Each branch breaks, at another line: the two resume functions after the branch share one code name
    (..._at_N), and only one of them was compiled; each leads to a resume function of its own."""
    y = x * 2
    torch._dynamo.graph_break()
    if y.mean() > 0:
        z = y + 1
        torch._dynamo.graph_break()
        return z * 2
    z = y - 1
    torch._dynamo.graph_break()
    return z * 3


def _breaking_helper(y):
    torch._dynamo.graph_break()
    return y + 1


def _calls_a_helper(x):
    """Calls a helper of the same module that breaks: Dynamo inlines the helper, and the helper's break gives
    fn a resume function; a helper's own resume globals (from compiling it) are not fn's."""
    y = x * 2
    y = _breaking_helper(y)
    return y - 1


def _far_breaks_function() -> Callable[..., Any]:
    """Two breaks whose resume functions start at lines 9 and 11 of their own source: in discovery order
    (line 9 first) the names are not sorted ("..._at_11" sorts before "..._at_9")."""
    source = ("def _far_breaks(x):\n" + "\n" * 6 + "    a = x + 1\n    torch._dynamo.graph_break()\n"
              "    b = a * 2\n    torch._dynamo.graph_break()\n    return b - 1\n")
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(source, "<lab06 checker: _far_breaks>", "exec"), namespace)  # noqa: S102 - our own source
    return namespace["_far_breaks"]


_FAR_BREAKS = _far_breaks_function()


def _resume_cases() -> list[tuple[str, Callable[..., Any], tuple[Any, ...], tuple[Any, ...]]]:
    """(fn's name, fn, the args resume_names gets, the args of the earlier compile that leaves stale entries)."""
    x, other = torch.ones(2, 3), torch.ones(3, dtype=torch.float64)
    cases = [("_no_break", _no_break, (x,)), ("_one_break", _one_break, (x,)), ("_two_breaks", _two_breaks, (x,)),
             ("_branchy", _branchy, (x,)), ("_far_breaks", _FAR_BREAKS, (x,)), ("_four_breaks", _four_breaks, (x,)),
             ("_seven_breaks", _seven_breaks, (x,)), ("_calls_itself", _calls_itself, (x,)),
             ("_recurses", _recurses, (x,)), ("_two_args", _two_args, (x, 2)),
             ("_breaks_in_both_branches", _breaks_in_both_branches, (-x,)),
             # x > 0: the compiled branch's resume function is reached after the other one of its code name
             ("_breaks_in_both_branches", _breaks_in_both_branches, (x,)),
             ("_calls_a_helper", _calls_a_helper, (x,))]
    # last: the earlier compile took the k == 2 branch, so its stale entries reach a resume function that a call
    # with x alone never reaches (a search that skips the reset lists it)
    return [(label, fn, args, (other,)) for label, fn, args in cases] + [("_two_args", _two_args, (x,), (other, 2))]


def _names_by(fn: Callable[..., Any], once: str) -> list[str]:
    """Sorted code names of the resume functions reachable from fn's cache entries, each listed once per
    ``__resume_at_*`` global name (``once="name"``), once per code object (``"code"``; the task accepts
    both), or every time it is reached (``"never"``, capped)."""
    names: list[str] = []
    todo, seen = [fn.__code__], {"code": {id(fn.__code__)}, "name": set(), "never": set()}[once]
    while todo and len(names) < 200:
        code = todo.pop(0)
        for entry in cache_entries(code):
            for name in entry.code.co_names:
                resume = fn.__globals__.get(name)
                if not name.startswith("__resume_at") or not isinstance(resume, types.FunctionType):
                    continue
                key = {"code": id(resume.__code__), "name": name, "never": None}[once]
                if key is not None and key in seen:
                    continue
                seen.add(key)
                names.append(resume.__code__.co_name)
                todo.append(resume.__code__)
    return sorted(names)


_NAMES: dict[str, dict[str, list[str]]] = {}


#: cache entries on fn's own code after the reference's one call, by the key of _NAMES
_ENTRIES: dict[str, int] = {}


def _names_key(label: str, args: tuple[Any, ...]) -> str:
    """The key of _NAMES and _ENTRIES for a call of ``label`` with ``args`` (how many, and x's sign)."""
    return f"{label}{len(args)}{'+' if bool((args[0] > 0).all()) else '-'}"


@settings.under_defaults
def _reference_names(label: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, list[str]]:
    """The resume functions' names after one call with ``args``: "want" (one per ``__resume_at_*`` global
    reached, as the reference solution lists them), "by code" (also right) and "no dedupe" (see :func:`_names_by`), and "first arg" (want, after a call with
    ``args[0]`` alone); computed once."""
    key = _names_key(label, args)
    if key not in _NAMES:
        out = {}
        for what, call in (("first arg", args[:1]), ("want", args)):
            torch._dynamo.reset()
            with quiet():
                torch.compile(fn, backend="eager")(*call)
            out[what] = _names_by(fn, "name")
        # every code object the course's viewer walks to is named, and nothing else
        assert set(out["want"]) == {frame.name for frame in walk(fn)[1:]}
        out["by code"], out["no dedupe"] = _names_by(fn, "code"), _names_by(fn, "never")
        _ENTRIES[key] = len(cache_entries(fn.__code__))
        torch._dynamo.reset()
        _NAMES[key] = out
    return _NAMES[key]


#: Known wrong results of lab06.4: predicate(got, want, label), English, 中文.
_RESUME_MISTAKES: list[tuple[Callable[[list[str], list[str], str], bool], str, str]] = [
    (lambda got, want, label: len(got) > len(want) and set(got) == set(want),
     "some names come twice as often as they should: fn had been compiled before with other inputs (the checker "
     "does that, as an earlier experiment in a notebook would), and its old cache entries name resume functions "
     "of their own. Reset Dynamo before you compile fn.",
     "有些名字出现的次数是应有次数的两倍：fn 之前已经用别的输入编译过（检查器会这样做，就像笔记本里之前的实验那样），"
     "它旧的缓存条目也引用了各自的恢复函数。请在编译 fn 之前先重置 Dynamo。"),
    (lambda got, want, label: label in got,
     "fn's own code name is in the list: fn is where the search starts, not a resume function. Return only the "
     "resume functions.",
     "列表里有 fn 自己的代码名：fn 是搜索的起点，而不是恢复函数。请只返回恢复函数。"),
    (lambda got, want, label: any(n.startswith("torch_dynamo_resume_in") and f"resume_in_{label}_at" not in n
                                  for n in got),
     "some names are resume functions of other functions: fn.__globals__ is the namespace of fn's whole module, "
     "shared by every function defined there. Start from fn's own cache entries and follow only the names "
     "their code refers to.",
     "有些名字是其他函数的恢复函数：fn.__globals__ 是 fn 所在整个模块的命名空间，模块中定义的每个函数都共用它。"
     "请从 fn 自己的缓存条目出发，只跟随它们的代码所引用的名字。"),
    (lambda got, want, label: any(n.startswith("__resume_at") for n in got),
     "those are the global names the transformed code refers to; return each resume function's own code name "
     "(the name of its code object, which starts with torch_dynamo_resume_in_).",
     "这些是改写后的字节码引用的全局变量名；请返回每个恢复函数自己的代码名（它的代码对象的名字，以 "
     "torch_dynamo_resume_in_ 开头）。"),
    (lambda got, want, label: label == "_breaks_in_both_branches" and len(got) < len(want) and set(got) <= set(want),
     "two resume functions share one code name here (one per branch, made at the same line), and only one of them "
     "was compiled, so only that one leads on to further resume functions. Searching each code name once skips "
     "the second of them, whichever is reached second: remember the __resume_at_* global names (or the code "
     "objects) you have followed, not the code names.",
     "这里有两个恢复函数共用一个代码名（if 的两个分支各一个，在同一行生成），其中只有一个被编译过，所以只有它会引出后面的恢复函数。"
     "每个代码名只搜索一次，就会跳过后到达的那一个，不论是哪个：请记住已经跟随过的 __resume_at_* 全局变量名（或代码对象），而不是代码名。"),
    (lambda got, want, label: label == "_branchy" and len(got) < len(want),
     "Dynamo writes a resume function for each branch of the if, and the transformed code names both, even "
     "though only one of them has run; the two share one code name: keep both.",
     "Dynamo 为 if 的每个分支各写一个恢复函数，改写后的字节码两个都会引用，尽管只运行过其中一个；"
     "这两个恢复函数同名：两个都要保留。"),
    (lambda got, want, label: sorted(got) == want,
     "the names are right but not in the order asked for: return them sorted as strings, in the order sorted() "
     "gives (a numeric order of the line numbers in the names is another order).",
     "名字都对，但顺序不是题目要求的：请按字符串排序，即 sorted() 给出的顺序（按名字里的行号数值排序是另一种顺序）。"),
    (lambda got, want, label: label in ("_two_breaks", "_four_breaks", "_seven_breaks") and set(got) < set(want),
     "a function with several breaks has a resume function for each: the second is called from the first "
     "resume function's transformed code, the third from the second's, and so on. Look in the cache entries of "
     "every resume function you find, however deep the chain goes.",
     "有多次中断的函数对每次中断都有一个恢复函数：第二个由第一个恢复函数改写后的字节码调用，第三个由第二个调用，依此类推。"
     "对找到的每个恢复函数，也要查看它的缓存条目，无论这条链有多深。"),
    (lambda got, want, label: label == "_calls_itself" and set(got) < set(want),
     "a code object can hold several cache entries, and each entry's transformed code names resume functions of "
     "its own. Here fn calls itself again after its first break, with other values of its argument n, so the "
     "resume function of that break was compiled three times (three cache entries on one code object), and only "
     "one of those entries goes on to a further resume function. Look in every cache entry of each code object, "
     "not only one of them.",
     "一个代码对象可以有多个缓存条目，每个条目改写后的字节码都引用它自己的恢复函数。这里 fn 在第一次中断之后又调用了自己，"
     "参数 n 的值各不相同，所以这次中断的恢复函数被编译了三次（同一个代码对象上有三个缓存条目），而其中只有一个条目"
     "还会调用下一个恢复函数。对每个代码对象，都要查看它的所有缓存条目，而不只是其中一个。"),
]


@task("lab06.4", "find the resume functions", "找出恢复函数", hints=[
    ("Where does the transformed code of a frame mention the function it calls after a break?",
     "帧改写后的代码是在哪里提到它在中断之后调用的函数的？"),
    ("Lecture 06, section 6 'Graph breaks and resume functions': the transformed code calls each resume "
     "function through a global __resume_at_* name, and a resume function is compiled like any other frame, "
     "with cache entries of its own.",
     "第 06 讲第 6 节“图中断与恢复函数”：改写后的代码通过全局变量名 __resume_at_* 调用每个恢复函数，"
     "而恢复函数像其他帧一样被编译，也有自己的缓存条目。"),
    ("Treat it as a search: keep a list of code objects still to visit, starting from fn's own, look in every "
     "cache entry of each one (a code object compiled again has several), and add each resume function you find "
     "to the list.",
     "把它当作一次搜索：维护一个待访问的代码对象列表，从 fn 自己的代码对象开始；对每个代码对象查看它的所有缓存条目"
     "（被再次编译过的代码对象有多个条目），并把找到的每个恢复函数都加进这个列表。"),
])
@_with_default_dynamo(("resume_names only compiles fn and reads its caches; leave Dynamo's settings alone.",
                      "resume_names 只需编译 fn 并读取它的缓存；请不要改动 Dynamo 的设置。"))
def _resume(answer: Any) -> None:
    need_callable(answer, "resume_names")
    for label, fn, args, earlier in _resume_cases():
        variants = _reference_names(label, fn, args)
        want = variants["want"]
        torch._dynamo.reset()
        # Leave stale entries behind, as an earlier experiment in a notebook would: a missing reset shows.
        with quiet():
            torch.compile(fn, backend="eager")(*earlier)
        # every old entry, on fn's code and on each resume function's (the course's walk finds them)
        stale = [(frame.code, entry.code) for frame in walk(fn) for entry in frame.entries]
        try:
            with quiet():
                got = answer(fn, *args)
            kept = [code for code, old in stale if any(entry.code is old for entry in cache_entries(code))]
            own = len(cache_entries(fn.__code__))  # fn's entries the answer left: more than one call's, or none
            reset = not kept
            only_fn = bool(kept) and all(code is not fn.__code__ for code in kept)
        finally:
            del stale  # no reference to an old transformed code outlives the reset
            torch._dynamo.reset()
        first = "torch.ones(2, 3)" if bool((args[0] > 0).all()) else "-torch.ones(2, 3)"
        tried = f"resume_names({label}, {first}{''.join(f', {a!r}' for a in args[1:])})"
        if not isinstance(got, list) or not all(isinstance(n, str) for n in got):
            raise Wrong("return a list of names (str).", "请返回由名字（str）组成的 list。",
                        tried=tried, expected=(f"a list of {len(want)} str", f"由 {len(want)} 个 str 组成的 list"),
                        got=describe(got))
        if got == want or got == variants["by code"]:  # the task accepts either reading of a shared code object
            continue
        if not reset:
            where = (("fn's own cache was emptied, but its resume functions keep theirs: a reset of one code object "
                      "(reset_code) leaves the others' entries. ", "fn 自己的缓存清空了，但它的恢复函数仍保留着各自的缓存："
                      "只重置一个代码对象（reset_code）不会清掉其他代码对象的条目。") if only_fn else ("", ""))
            raise Wrong(f"{where[0]}cache entries from an earlier compile of fn (the checker compiles it first, with "
                        "other inputs, as an earlier experiment in a notebook would) are still there after your answer, "
                        "and their transformed code names resume functions of its own. Reset Dynamo before you compile "
                        "fn (torch._dynamo.reset() empties every cache).",
                        f"{where[1]}之前编译 fn 留下的缓存条目（检查器会先用别的输入编译它一次，就像笔记本里之前的实验那样）"
                        "在你的答案运行之后仍然存在，它们改写后的代码也引用了各自的恢复函数。请在编译 fn 之前先重置 Dynamo"
                        "（torch._dynamo.reset() 会清空所有缓存）。",
                        tried=tried, expected=repr(want), got=repr(got))
        if reset and got == variants["no dedupe"]:
            raise Wrong("a resume function reached more than once is listed each time it is reached (and searched again, "
                        "if the search does not remember it): a code object that two global names share comes twice, "
                        "and so do the names its cache entries refer to. Remember the __resume_at_* names (or the code "
                        "objects) you have already followed, list each one when you first reach it, and search it once.",
                        "被多次到达的恢复函数，每到达一次就被列出一次（如果搜索不记住它，还会被再搜索一次）：两个全局变量名共用的代码对象会出现两次，"
                        "它的缓存条目所引用的名字也会出现两次。请记住已经跟随过的 __resume_at_* 名字（或代码对象），只在第一次到达时列出，并且只搜索一次。",
                        tried=tried, expected=repr(want), got=repr(got))
        if len(args) > 1 and got == variants["first arg"]:
            raise Wrong("those are the resume functions of a call with the first argument alone: call the compiled fn "
                        "with every argument in args, as the task says; another value of a later argument can take "
                        "other branches and other breaks.",
                        "这些是只用第一个参数调用时的恢复函数：请按任务要求，用 args 中的全部参数调用编译后的 fn；"
                        "后面的参数取别的值时，可能走别的分支、发生别的中断。",
                        tried=tried, expected=repr(want), got=repr(got))
        if reset and len(got) > len(want) and set(got) <= set(want) and own > _ENTRIES[_names_key(label, args)]:
            raise Wrong(f"some names come more often than they should: after your answer fn's code holds {own} cache "
                        f"entries, where one call with args leaves {_ENTRIES[_names_key(label, args)]}. fn was called "
                        "again (with other arguments, or some of them), and each new entry names resume functions of "
                        "its own. Call the compiled fn once, with every argument in args.",
                        f"有些名字出现的次数比应有的多：你的答案运行之后，fn 的代码上有 {own} 个缓存条目，而用 args 调用一次只会留下 "
                        f"{_ENTRIES[_names_key(label, args)]} 个。fn 又被调用过（用了别的参数，或只用了部分参数），每个新条目都引用了"
                        "各自的恢复函数。请只调用一次编译后的 fn，并传入 args 中的全部参数。",
                        tried=tried, expected=repr(want), got=repr(got))
        if reset and len(got) > len(want) and set(got) <= set(want):
            raise Wrong("some names come more often than they should, though no old cache entry is left: either the reset "
                        "came after you read the cache entries (reset first, then compile and call fn, then read), or "
                        "you collected __resume_at_* globals from fn.__globals__, where the globals of earlier compiles "
                        "stay after a reset. Start from fn's own cache entries after your call and follow only the "
                        "names their transformed code refers to.",
                        "有些名字出现的次数比应有的多，尽管已经没有旧的缓存条目：要么重置发生在你读取缓存条目之后（应先重置，再编译并调用 fn，"
                        "然后读取），要么你是从 fn.__globals__ 里收集 __resume_at_* 全局变量的，而之前编译留下的全局变量在重置之后仍然留在那里。"
                        "请在调用之后从 fn 自己的缓存条目出发，只跟随它们改写后的字节码所引用的名字。",
                        tried=tried, expected=repr(want), got=repr(got))
        if want and not got and own == 0:
            raise Wrong("no resume function found, and fn's cache was empty when your answer returned: a reset after "
                        "the call (or a compiled function never called) leaves no entries to read. Reset first, then "
                        "compile and call fn, then read its cache entries.",
                        "没有找到任何恢复函数，而且你的答案返回时 fn 的缓存是空的：在调用之后重置（或者从未调用编译后的函数）"
                        "就没有条目可读了。请先重置，再编译并调用 fn，然后读取它的缓存条目。",
                        tried=tried, expected=repr(want), got=repr(got))
        if want and not got:
            raise Wrong("no resume function found, though fn has a graph break: the names are in the transformed code "
                        "of fn's cache entries (each entry's code), which exist once the compiled function has been "
                        "called; fn's own code object is never changed.",
                        "fn 有图中断，却没有找到任何恢复函数：这些名字在 fn 的缓存条目改写后的代码中（每个条目的 code），"
                        "调用过编译后的函数之后这些条目才存在；fn 自己的代码对象从不改变。",
                        tried=tried, expected=repr(want), got=repr(got))
        for matches, en, zh in _RESUME_MISTAKES:
            if matches(got, want, label):
                raise Wrong(en, zh, tried=tried, expected=repr(want), got=repr(got))
        raise Wrong("the names differ from the resume functions reachable from fn's cache entries.",
                    "这些名字与从 fn 的缓存条目出发能找到的恢复函数不一致。",
                    tried=tried, expected=repr(want), got=repr(got))
