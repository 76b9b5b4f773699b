"""Checkers for labs/lab11_custom_ops.ipynb (lecture course/11_custom_ops.ipynb).

Custom operators live in one global registry, by name. So every checker registers the ops it
needs under fresh names of its own (``lab11_check::<stem>_<n>``), never under the names the
learner's notebook uses: a learner may re-run a cell, or check twice, without clashes.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import torch

from . import Wrong, task
from .._text import one_line_error, quiet
from ._probe import describe, differs, need_callable

_NAMES = itertools.count()


def _fresh(stem: str) -> str:
    """A name no other check has registered in this process."""
    return f"lab11_check::{stem}_{next(_NAMES)}"


def _tensors(seed: int, *shapes: tuple[int, ...], dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """Values of both signs, with a zero in each (where there is room)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for shape in shapes:
        t = (torch.randn(shape, generator=gen, dtype=torch.float64) * 2).to(dtype)
        if t.numel():
            t.view(-1)[0] = 0.0
        out.append(t)
    return out


def _failed_tests(op: Any, args: tuple[Any, ...]) -> dict[str, str]:
    """opcheck's failing tests, as {test name: one-line reason}."""
    with quiet():
        results = torch.library.opcheck(op, args, raise_exception=False)
    return {name: one_line_error(res) for name, res in results.items() if res != "SUCCESS"}


def _compiled_matches(fn: Callable[..., Any], args: tuple[Any, ...], want: torch.Tensor) -> str | None:
    """Compile ``fn`` with fullgraph=True and aot_eager; return why it failed, or None."""
    import torch._dynamo

    torch._dynamo.reset()
    try:
        with quiet():
            got = torch.compile(fn, fullgraph=True, backend="aot_eager")(*args)
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        return one_line_error(exc)
    return differs(got, want)


#: What opcheck reports when the op is right.
_ALL_SUCCESS = ("every test SUCCESS", "每项测试都是 SUCCESS")


# -- exercise 1: a graph-breaking function as a custom op ----------------------------------

def py_softsign(x: torch.Tensor) -> torch.Tensor:
    """The lab's opaque function: x / (1 + |x|), one Python float at a time."""
    values = [v / (1.0 + abs(v)) for v in x.flatten().tolist()]
    return torch.tensor(values, dtype=x.dtype).reshape(x.shape)


_FAKE_HELP = ("the fake kernel must return an empty tensor with the shape, dtype and device the real function "
              "returns, for every input (lecture 11, section 2)",
              "fake 内核必须对每个输入都返回一个空张量，其形状、dtype 和设备与真实函数的返回值一致（第 11 讲第 2 节）")


@task("lab11.1", "a graph-breaking function as a custom op", "把导致图中断的函数变成自定义算子", hints=[
    ("Compile a function that calls py_softsign with fullgraph=True: what stops Dynamo? What would let "
     "Dynamo and FakeTensors treat the whole function as one opaque step?",
     "用 fullgraph=True 编译一个调用 py_softsign 的函数：是什么让 Dynamo 停了下来？怎样才能让 Dynamo 和伪张量（FakeTensor）"
     "把整个函数当作一个不透明的步骤？"),
    ("Lecture 11, section 2 'torch.library.custom_op, register_fake, register_autograd': register the function "
     "as an operator under the name you are given (its annotations become the schema), and give it a fake "
     "kernel that describes the output without computing it.",
     "第 11 讲第 2 节“torch.library.custom_op、register_fake、register_autograd”：用给定的名字把函数注册为算子"
     "（类型注解会成为签名），再给它一个只描述输出、不做计算的 fake 内核。"),
    ("The checker runs torch.library.opcheck on float32 and float64 inputs of several shapes: what must the "
     "fake kernel's output share with its input?",
     "检查器会在多种形状的 float32 和 float64 输入上运行 torch.library.opcheck：fake 内核的输出必须在哪些方面与输入一致？"),
], time_limit=180)
def _softsign_op(answer: Any) -> None:
    need_callable(answer, "make_softsign_op")
    name = _fresh("softsign")
    op = answer(name)
    if not isinstance(op, torch._library.custom_ops.CustomOpDef):
        if callable(op):
            tried = ("torch.compile(lambda x: op(x * 2) + 1, fullgraph=True) on a (3, 4) input",
                     "torch.compile(lambda x: op(x * 2) + 1, fullgraph=True)，输入形状 (3, 4)")
            why = _compiled_matches(lambda x: op(x * 2) + 1, (torch.ones(3, 4),), torch.ones(3, 4))
            raise Wrong("make_softsign_op must return the custom operator it registered (what the decorator "
                        "returns); what came back is a plain function, which Dynamo traces into and breaks on.",
                        "make_softsign_op 必须返回它注册的自定义算子（装饰器返回的对象）；你返回的是一个普通函数，"
                        "Dynamo 会追踪进它的内部并在那里产生图中断。",
                        tried=tried, expected=("a custom operator", "一个自定义算子"), got=why or describe(op))
        raise Wrong("make_softsign_op must return the custom operator it registered.",
                    "make_softsign_op 必须返回它注册的自定义算子。", got=describe(op))
    if op._qualname != name:
        raise Wrong(f"register the op under the name make_softsign_op is given (here {name!r}); the checker "
                    "calls it with names of its own so that your notebook's op is left alone.",
                    f"请用传给 make_softsign_op 的名字注册算子（这里是 {name!r}）；检查器用自己的名字调用它，"
                    "以免影响你笔记本中的算子。", expected=name, got=op._qualname)
    probes = [(("a float32 tensor of shape (5,)", "形状 (5,) 的 float32 张量"), _tensors(110, (5,))[0]),
              (("a float32 tensor of shape (3, 4)", "形状 (3, 4) 的 float32 张量"), _tensors(111, (3, 4))[0]),
              (("a float64 tensor of shape (2, 3, 2)", "形状 (2, 3, 2) 的 float64 张量"),
               _tensors(112, (2, 3, 2), dtype=torch.float64)[0]),
              (("an empty float32 tensor of shape (0, 3)", "形状 (0, 3) 的空 float32 张量"), torch.empty(0, 3))]
    for label, x in probes:
        want = x / (1 + x.abs())
        got = op(x.clone())
        diff = differs(got, want)
        if diff is not None:
            raise Wrong("calling the op gives a different result from py_softsign: the op's real kernel should "
                        "compute exactly what py_softsign computes.",
                        "调用该算子的结果与 py_softsign 不同：算子的真实内核应当与 py_softsign 计算的完全一样。",
                        tried=label, expected=describe(want), got=diff)
        failed = _failed_tests(op, (x,))
        if failed:
            test, why = next(iter(failed.items()))
            if "fake" in why.lower() and ("no fake" in why.lower() or "abstract" in why.lower()
                                          or "register_fake" in why):
                en, zh = ("the op has no fake kernel, so FakeTensors (torch.compile, torch.export) cannot run it.",
                          "这个算子没有 fake 内核，所以伪张量（FakeTensor，torch.compile 和 torch.export 都要用它）无法运行它。")
            elif "dtype" in why.lower():
                en, zh = ("the fake kernel returns the wrong dtype for this input: " + _FAKE_HELP[0] + ".",
                          "对这个输入，fake 内核返回的 dtype 不对：" + _FAKE_HELP[1] + "。")
            elif "shape" in why.lower():
                en, zh = ("the fake kernel returns the wrong shape for this input: " + _FAKE_HELP[0] + ".",
                          "对这个输入，fake 内核返回的形状不对：" + _FAKE_HELP[1] + "。")
            else:
                en, zh = (f"torch.library.opcheck fails its test {test}.",
                          f"torch.library.opcheck 的测试 {test} 没有通过。")
            raise Wrong(en, zh, tried=(f"torch.library.opcheck(op, (x,)) with x {label[0]}",
                                       f"torch.library.opcheck(op, (x,))，x 为{label[1]}"),
                        expected=_ALL_SUCCESS, got=f"{test}: {why}")
    for label, x in probes[:3]:
        why = _compiled_matches(lambda t: op(t * 2) + 1, (x,), x * 2 / (1 + (x * 2).abs()) + 1)
        if why is not None:
            raise Wrong("the op does not compile with fullgraph=True into a function that matches eager.",
                        "该算子在 fullgraph=True 下无法编译成与 eager 结果一致的函数。",
                        tried=(f"torch.compile(lambda x: op(x * 2) + 1, fullgraph=True) with x {label[0]}",
                               f"torch.compile(lambda x: op(x * 2) + 1, fullgraph=True)，x 为{label[1]}"),
                        expected=("one graph, eager's values", "一张计算图，数值与 eager 相同"), got=why)


# -- exercise 2: a fake kernel whose output shape depends on the inputs --------------------

def windows_real(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """The lab's real kernel: windows of ``size`` along the last dim, every ``step`` elements."""
    return x.unfold(-1, size, step).contiguous()


_WINDOW_PROBES = [  # ((English, 中文) label, shape, size, step, dtype)
    (("x of shape (10,), size 3, step 2", "形状 (10,) 的 x，size 3，step 2"), (10,), 3, 2, torch.float32),
    (("x of shape (2, 9), size 4, step 1", "形状 (2, 9) 的 x，size 4，step 1"), (2, 9), 4, 1, torch.float32),
    (("x of shape (3, 2, 11), size 2, step 4 (step larger than size)",
      "形状 (3, 2, 11) 的 x，size 2，step 4（step 大于 size）"), (3, 2, 11), 2, 4, torch.float32),
    (("x of shape (4, 7), size 7, step 3 (one window)", "形状 (4, 7) 的 x，size 7，step 3（只有一个窗口）"),
     (4, 7), 7, 3, torch.float64),
]


def _window_mistakes(got_shapes: list[tuple[int, ...] | None]) -> tuple[str, str] | None:
    """The named mistake whose shape formula explains the answer's shape on every probe."""
    candidates: dict[str, tuple[str, str]] | None = None
    for got, (_, shape, size, step, _) in zip(got_shapes, _WINDOW_PROBES):
        if got is None:
            return None
        fits = {en: (en, zh) for en, zh in _window_formulas(got, shape, size, step)}
        candidates = fits if candidates is None else {k: v for k, v in candidates.items() if k in fits}
    return next(iter(candidates.values()), None) if candidates else None


def _window_formulas(got: tuple[int, ...], shape: tuple[int, ...], size: int, step: int) -> list[tuple[str, str]]:
    """The named mistakes (en, zh) that would produce ``got`` on this probe (the right formula included
    when it is right here)."""
    n, lead = shape[-1], tuple(shape[:-1])
    right = (n - size) // step + 1
    found = []
    named = [
        ((n - size) // step, "the number of windows is one short: the first window, at position 0, counts too.",
         "窗口数少了一个：从位置 0 开始的第一个窗口也要算上。"),
        (math.ceil((n - size) / step) + 1, "the number of windows rounds up: a last, partial window is not a "
                                           "window (unfold drops it).",
         "窗口数向上取整了：最后那个不完整的窗口不算窗口（unfold 会丢掉它）。"),
        (n // step, "the number of windows ignores the window size: the last window must fit inside the row.",
         "窗口数没有考虑窗口大小：最后一个窗口必须完整地落在这一行之内。"),
    ]
    if got == (right, size) or (not lead and got == lead + (right, size)):
        found.append(("the leading dimensions are lost: windows are taken along the last dimension only, and "
                      "every other dimension stays in front.",
                      "前面的维度丢了：窗口只沿最后一维取，其他维度都保留在前面。"))
    for count, en, zh in named:
        if got == lead + (count, size):
            found.append((en, zh))
    return found


@task("lab11.2", "a fake kernel whose output shape depends on the inputs", "输出形状取决于输入的 fake 内核", hints=[
    ("Work out on paper: a row of n elements, windows of size `size`, starting every `step` elements. How many "
     "windows fit, and where do the other dimensions go?",
     "先在纸上算一算：一行 n 个元素，窗口大小为 size，每隔 step 个元素开始一个窗口。能放下几个窗口？其他维度放在哪里？"),
    ("Lecture 11, section 2: a fake kernel gets FakeTensors (shape, dtype, device, no data) and the other "
     "arguments as they are, and returns an empty tensor of the output's shape and dtype.",
     "第 11 讲第 2 节：fake 内核接收伪张量（FakeTensor：有形状、dtype 和设备，没有数据）以及原样传入的其他参数，"
     "并返回一个具有输出形状和 dtype 的空张量。"),
], time_limit=180)
def _windows_fake(answer: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    need_callable(answer, "windows_fake")
    xs = [_tensors(120 + i, p[1], dtype=p[4])[0] for i, p in enumerate(_WINDOW_PROBES)]

    def fake_shape(x: torch.Tensor, size: int, step: int) -> tuple[int, ...] | None:
        try:
            with FakeTensorMode() as mode:
                out = answer(mode.from_tensor(x), size, step)
            return tuple(out.shape) if isinstance(out, torch.Tensor) else None
        except Exception:  # noqa: BLE001 - the loop below reports it
            return None

    for (label, shape, size, step, dtype), x in zip(_WINDOW_PROBES, xs):
        want = windows_real(x, size, step)
        try:
            with FakeTensorMode() as mode:
                got = answer(mode.from_tensor(x), size, step)
        except torch._subclasses.fake_tensor.DataDependentOutputException as exc:
            raise Wrong("the fake kernel reads the tensor's values, which a FakeTensor does not have: use only "
                        "its shape, dtype and device.",
                        "fake 内核读取了张量的数值，而伪张量没有数值：只能使用它的形状、dtype 和设备。",
                        tried=label, got=one_line_error(exc)) from None
        if not isinstance(got, torch.Tensor):
            raise Wrong("the fake kernel must return a tensor.", "fake 内核必须返回一个张量。",
                        tried=label, got=describe(got))
        got_shape = tuple(got.shape)
        if got_shape != tuple(want.shape):
            named = _window_mistakes([fake_shape(x_, p[2], p[3]) for x_, p in zip(xs, _WINDOW_PROBES)])
            en, zh = named or ("the fake kernel's output shape differs from the real kernel's.",
                               "fake 内核输出的形状与真实内核的不同。")
            raise Wrong(en, zh, tried=label, expected=(f"shape {tuple(want.shape)}", f"形状 {tuple(want.shape)}"),
                        got=(f"shape {got_shape}", f"形状 {got_shape}"))
        if got.dtype != want.dtype:
            raise Wrong("the fake kernel's output has the wrong dtype: it must follow the input's dtype.",
                        "fake 内核输出的 dtype 不对：它必须与输入的 dtype 一致。",
                        tried=label, expected=str(want.dtype), got=str(got.dtype))
    # The same fake behind a real op: opcheck (dynamic shapes too) and a fullgraph compile.
    name = _fresh("windows")
    op = torch.library.custom_op(name, mutates_args=())(_windows_kernel)
    op.register_fake(answer)
    for label, shape, size, step, dtype in _WINDOW_PROBES[:3]:
        x = _tensors(129, shape, dtype=dtype)[0]
        failed = _failed_tests(op, (x, size, step))
        if failed:
            test, why = next(iter(failed.items()))
            raise Wrong(f"behind a real operator, torch.library.opcheck fails its test {test}: the fake kernel must "
                        "also work when the sizes are symbols (it may compute with them, not branch on them).",
                        f"放到真实算子后面时，torch.library.opcheck 的测试 {test} 没有通过：当尺寸是符号时 fake 内核也必须能工作"
                        "（可以用它们计算，但不能根据它们分支）。",
                        tried=(f"opcheck with {label[0]}", f"opcheck，输入：{label[1]}"), expected=_ALL_SUCCESS,
                        got=f"{test}: {why}")
    x = _tensors(130, (3, 12))[0]
    why = _compiled_matches(lambda t: op(t.relu(), 5, 2).sum(-1), (x,), windows_real(x.relu(), 5, 2).sum(-1))
    if why is not None:
        raise Wrong("with your fake kernel the op does not compile with fullgraph=True into a function that "
                    "matches eager.", "使用你的 fake 内核时，该算子在 fullgraph=True 下无法编译成与 eager 一致的函数。",
                    tried=("torch.compile(lambda x: op(x.relu(), 5, 2).sum(-1), fullgraph=True) on a (3, 12) input",
                           "torch.compile(lambda x: op(x.relu(), 5, 2).sum(-1), fullgraph=True)，输入形状 (3, 12)"),
                    expected=("eager's values", "与 eager 相同的数值"), got=why)


def _windows_kernel(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    return windows_real(x, size, step)


# -- exercise 3: an autograd formula ------------------------------------------------------

def py_cube_scale(x: torch.Tensor, s: float) -> torch.Tensor:
    """The lab's opaque function: s * x**3, one Python float at a time."""
    values = [s * v ** 3 for v in x.flatten().tolist()]
    return torch.tensor(values, dtype=x.dtype).reshape(x.shape)


def _cube_op() -> Any:
    op = torch.library.custom_op(_fresh("cube_scale"), mutates_args=())(_cube_kernel)
    op.register_fake(lambda x, s: torch.empty_like(x))
    return op


def _cube_kernel(x: torch.Tensor, s: float) -> torch.Tensor:
    return py_cube_scale(x, s)


class _NoBackward(Exception):
    """The op's output does not require grad: no autograd formula is registered on it."""


def _grad_of(op: Any, x: torch.Tensor, s: float, grad_out: torch.Tensor) -> Any:
    xr = x.detach().clone().requires_grad_()
    with quiet():
        out = op(xr, s)
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            raise _NoBackward(f"the output of op(x, {s}) does not require grad although x does")
        (g,) = torch.autograd.grad(out, xr, grad_out)
    return g


@task("lab11.3", "an autograd formula for a custom op", "为自定义算子注册自动微分公式", hints=[
    ("What is d/dx of s * x**3? The backward receives the gradient of the output: how does it combine with "
     "that derivative, and what does the backward return for s?",
     "s * x**3 对 x 的导数是什么？反向传播收到的是输出的梯度：它与这个导数如何组合？对 s，反向传播返回什么？"),
    ("Lecture 11, section 2: register_autograd takes a backward and a setup_context; setup_context saves what the "
     "backward needs (inputs[0] is x, inputs[1] is s), and the backward returns one gradient per input.",
     "第 11 讲第 2 节：register_autograd 接收 backward 和 setup_context；setup_context 保存反向传播需要的值"
     "（inputs[0] 是 x，inputs[1] 是 s），backward 为每个输入返回一个梯度。"),
], time_limit=180)
def _cube_autograd(answer: Any) -> None:
    need_callable(answer, "add_autograd")
    op = _cube_op()
    answer(op)
    probes = [(("x of shape (5,) with s = 2.0", "形状 (5,) 的 x，s = 2.0"),
               _tensors(131, (5,), dtype=torch.float64)[0], 2.0),
              (("x of shape (3, 4) with s = -0.5", "形状 (3, 4) 的 x，s = -0.5"),
               _tensors(132, (3, 4), dtype=torch.float64)[0], -0.5),
              (("x of shape (2, 2, 3) with s = 3.0", "形状 (2, 2, 3) 的 x，s = 3.0"),
               _tensors(133, (2, 2, 3), dtype=torch.float64)[0], 3.0)]
    for label, x, s in probes:
        grad_out = _tensors(134, tuple(x.shape), dtype=torch.float64)[0] + 0.5
        want = grad_out * 3 * s * x * x
        try:
            got = _grad_of(op, x, s, grad_out)
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            text = one_line_error(exc)
            if isinstance(exc, _NoBackward) or "no autograd formula was registered" in text:
                raise Wrong("no backward formula is registered on the op you were given: add_autograd must register "
                            "it on that op.", "传给你的算子上没有注册反向传播公式：add_autograd 必须在这个算子上注册它。",
                            tried=label, got=text) from None
            raise Wrong("the backward raised an error: it must return one gradient per input of the op (x and s).",
                        "反向传播抛出了异常：它必须为算子的每个输入（x 和 s）各返回一个梯度。",
                        tried=label, got=text) from None
        diff = differs(got, want)
        if diff is None:
            continue
        mistakes = [
            (grad_out * 3 * x * x, "the gradient leaves out the scale s: the derivative of s * x**3 keeps s.",
             "梯度漏掉了缩放因子 s：s * x**3 的导数仍然带着 s。"),
            (3 * s * x * x, "the gradient ignores the incoming gradient: the backward must multiply the local "
                            "derivative by the gradient it receives (chain rule).",
             "梯度忽略了传入的梯度：反向传播必须把局部导数乘以收到的梯度（链式法则）。"),
            (grad_out * s * x * x, "the gradient is missing the factor 3 from the power rule.",
             "梯度少了幂函数求导得到的因子 3。"),
            (grad_out * 3 * s * py_cube_scale(x, s) ** 2, "the backward uses the op's output where it needs the "
                                                          "input x: save the input in setup_context.",
             "反向传播在需要输入 x 的地方用了算子的输出：请在 setup_context 中保存输入。"),
        ]
        for candidate, en, zh in mistakes:
            if differs(got, candidate) is None:
                raise Wrong(en, zh, tried=label, expected=describe(want), got=diff)
        raise Wrong("the gradient differs from d/dx (s * x**3) times the incoming gradient.",
                    "梯度与 d/dx (s * x**3) 乘以传入梯度的结果不同。", tried=label, expected=describe(want), got=diff)
    x, s = probes[0][1].detach().clone().requires_grad_(), probes[0][2]
    with quiet():
        ok = torch.autograd.gradcheck(lambda t: op(t, s), (x,), raise_exception=False)
    if not ok:
        raise Wrong("torch.autograd.gradcheck disagrees with your backward.",
                    "torch.autograd.gradcheck 与你的反向传播不一致。", tried=probes[0][0])
    failed = _failed_tests(op, (torch.randn(3, 2, requires_grad=True), 1.5))
    if failed:
        test, why = next(iter(failed.items()))
        raise Wrong(f"torch.library.opcheck fails its test {test}: the backward must be traceable (tensor "
                    "operations only, no .item() or Python floats of tensors).",
                    f"torch.library.opcheck 的测试 {test} 没有通过：反向传播必须可以被追踪（只用张量运算，"
                    "不要 .item()，也不要把张量转成 Python 浮点数）。",
                    tried=("opcheck with x of shape (3, 2), s = 1.5", "opcheck，x 的形状为 (3, 2)，s = 1.5"),
                    expected=_ALL_SUCCESS, got=f"{test}: {why}")
