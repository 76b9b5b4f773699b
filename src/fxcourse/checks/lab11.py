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


# -- shared: what a fake kernel promises ------------------------------------------------------

def _strides_differ(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` (same shape) lay out their elements differently: a stride differs along a
    dimension of size > 1 (the only strides that matter, as opcheck compares them)."""
    if a.numel() == 0:
        return False
    return any(n > 1 and sa != sb for n, sa, sb in zip(a.shape, a.stride(), b.stride()))


def _layout(t: torch.Tensor) -> str:
    return f"shape {tuple(t.shape)}, strides {tuple(t.stride())}, {t.dtype}, device {t.device.type}"


def _layout_zh(t: torch.Tensor) -> str:
    return f"形状 {tuple(t.shape)}，步长 {tuple(t.stride())}，{t.dtype}，设备 {t.device.type}"


def _layouts(t: torch.Tensor) -> tuple[str, str]:
    return _layout(t), _layout_zh(t)


def _meta_twin(x: torch.Tensor) -> torch.Tensor:
    """A tensor on the 'meta' device (no data) with ``x``'s shape, strides and dtype: an op runs
    its fake kernel on it, so it shows whether the fake follows the input's device."""
    return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="meta")


_STRIDES = ("the fake kernel promises a memory layout (strides) that differs from that of the tensor the real "
            "kernel returns for this input: a fake kernel must describe the real output exactly, layout "
            "included, and the real kernel here returns a new tensor laid out row by row (contiguous) whatever "
            "the input's layout (torch.empty_like follows the input's layout instead). Inductor lays out its "
            "buffers from the fake kernel's promise, so compiled code fails at run time on such inputs "
            "(lecture 11, section 2).",
            "对这个输入，fake 内核承诺的内存布局（步长）与真实内核返回的张量的布局不同：fake 内核必须如实描述真实输出，包括布局；"
            "而这里的真实内核无论输入是什么布局，都返回一个按行连续存放的新张量（torch.empty_like 则会沿用输入的布局）。"
            "Inductor 按 fake 内核的承诺安排缓冲区，所以在这样的输入上编译后的代码会在运行时出错（第 11 讲第 2 节）。")
_DEVICE = ("the fake kernel's output is not on the input's device: a fake kernel must create its output on the "
           "device of its input (tried with a tensor on the 'meta' device, which, like a FakeTensor, has no data; "
           "under torch.compile on a GPU the input would be a CUDA FakeTensor).",
           "fake 内核的输出不在输入所在的设备上：fake 内核必须在输入所在的设备上创建输出（这里用 'meta' 设备上的张量来试，"
           "它和伪张量一样没有数据；在 GPU 上用 torch.compile 时，输入会是 CUDA 上的伪张量）。")
_ALIAS = ("the fake kernel returns its input, or a view of it, but the real kernel returns a new tensor: a fake "
          "kernel must return a new tensor too, or tracers believe the output shares memory with the input.",
          "fake 内核返回的是它的输入（或输入的视图），而真实内核返回的是一个新张量：fake 内核也必须返回新张量，"
          "否则追踪器会以为输出与输入共用内存。")
_REQUIRES_GRAD = ("the fake kernel's output requires grad although the real kernel's does not: a fake kernel "
                  "returns a plain empty tensor; whether the output takes part in autograd is decided by the "
                  "op's autograd registration, not by the fake kernel.",
                  "fake 内核的输出要求梯度，而真实内核的输出不要求：fake 内核只返回一个普通的空张量；输出是否参与自动微分，"
                  "由算子的自动微分注册决定，而不是由 fake 内核决定。")
_VALUES = ("the fake kernel reads the tensor's values, which a FakeTensor does not have: use only its shape, "
           "dtype and device.",
           "fake 内核读取了张量的数值，而伪张量没有数值：只能使用它的形状、dtype 和设备。")


def _fake_output(op: Any, x: torch.Tensor, *args: Any) -> Any:
    """``op`` traced on a FakeTensor copy of ``x`` (same shape, strides, dtype, device)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with quiet(), FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        out = op(fx, *args)
        alias = isinstance(out, torch.Tensor) and torch._C._is_alias_of(out, fx)
    return out, alias


def _opcheck_reason(why: str) -> tuple[str, str] | None:
    """The named explanation of an opcheck failure about the fake kernel's output, if any."""
    low = why.lower()
    if "outputs_alias_inputs" in low:
        return _ALIAS
    if "stride mismatch" in low:
        return _STRIDES
    if "device" in low and "mismatch" in low:
        return _DEVICE
    if "requires_grad" in low:
        return _REQUIRES_GRAD
    return None


# -- exercise 1: a graph-breaking function as a custom op ----------------------------------

def py_softsign(x: torch.Tensor) -> torch.Tensor:
    """The lab's opaque function: x / (1 + |x|), one Python float at a time."""
    values = [v / (1.0 + abs(v)) for v in x.flatten().tolist()]
    return torch.tensor(values, dtype=x.dtype).reshape(x.shape)


_FAKE_HELP = ("the fake kernel must return a new, empty tensor with the shape, dtype, device and memory layout "
              "(strides) the real function returns, for every input (lecture 11, section 2)",
              "fake 内核必须对每个输入都返回一个新的空张量，其形状、dtype、设备和内存布局（步长）都与真实函数的返回值一致"
              "（第 11 讲第 2 节）")


def _qualname(op: Any) -> str | None:
    """The registered name of an operator object: what custom_op returns, torch.ops.ns.name or
    torch.ops.ns.name.default; None for anything else."""
    if isinstance(op, torch._library.custom_ops.CustomOpDef):
        return op._qualname
    if isinstance(op, torch._ops.OpOverloadPacket):
        return op._qualified_op_name
    if isinstance(op, torch._ops.OpOverload):
        return op._schema.name
    return None


def _schema_of(op: Any) -> Any:
    """The schema of an operator object that :func:`_qualname` names (None if it has no default overload)."""
    try:
        if isinstance(op, torch._library.custom_ops.CustomOpDef):
            return op._opoverload._schema
        if isinstance(op, torch._ops.OpOverloadPacket):
            return op.default._schema
        return op._schema
    except (AttributeError, RuntimeError):
        return None


def _still_registered(op: Any, qualname: str) -> bool:
    """Whether the operator ``op`` names is still in the dispatcher's registry. An op defined through a
    torch.library.Library object is removed again when that object is freed; calling the Python
    operator object afterwards reads freed memory and may crash the process, so check first."""
    import gc

    gc.collect()  # a Library kept only by a reference cycle goes now, not in the middle of the check
    overload = op._schema.overload_name if isinstance(op, torch._ops.OpOverload) else ""
    try:
        torch._C._dispatch_find_schema_or_throw(qualname, overload)
    except RuntimeError:
        return False
    return True


_FREED = ("the operator your function returned is no longer registered once make_softsign_op has returned: an "
          "op defined through a torch.library.Library object is removed again when that object is freed, as a "
          "Library kept only in a local variable is when the function returns. Keep the Library alive (for "
          "example in a module-level variable), or register the op with torch.library.custom_op, so the op "
          "stays registered.",
          "make_softsign_op 返回之后，它返回的算子已经不再处于注册状态：通过 torch.library.Library 对象定义的算子，"
          "会在这个对象被释放时一并撤销；只保存在局部变量中的 Library 对象在函数返回时就会被释放。请让这个 Library "
          "对象一直存活（例如保存在模块级变量中），或者用 torch.library.custom_op 注册算子，这样算子才会一直处于注册状态。")


def _not_an_operator(op: Any) -> None:
    """Raise the Wrong that says what came back instead of the operator."""
    where = ("(If you registered it with torch.library.define and torch.library.impl, the operator is "
             "torch.ops.<namespace>.<name>: used as a decorator, torch.library.impl(\"ns::name\", ...) returns "
             "None, and torch.library.impl(lib, \"name\", ...) with a Library object returns your Python "
             "function unchanged.)",
             "（如果你是用 torch.library.define 和 torch.library.impl 注册的，算子是 torch.ops.<namespace>.<name>："
             "作为装饰器使用时，torch.library.impl(\"ns::name\", ...) 返回 None，而传入 Library 对象的 "
             "torch.library.impl(lib, \"name\", ...) 原样返回你的 Python 函数。）")
    if op is None:
        raise Wrong("make_softsign_op returned None; it must return the operator it registered. " + where[0],
                    "make_softsign_op 返回了 None；它必须返回它注册的算子。" + where[1], got="None")
    if not callable(op):
        raise Wrong("make_softsign_op must return the operator it registered. " + where[0],
                    "make_softsign_op 必须返回它注册的算子。" + where[1], got=describe(op))
    tried = ("torch.compile(lambda x: op(x * 2) + 1, fullgraph=True) on a (3, 4) input",
             "torch.compile(lambda x: op(x * 2) + 1, fullgraph=True)，输入形状 (3, 4)")
    x = _tensors(119, (3, 4))[0]
    why = _compiled_matches(lambda t: op(t * 2) + 1, (x,), x * 2 / (1 + (x * 2).abs()) + 1)
    if why is not None:
        raise Wrong("make_softsign_op must return the operator it registered (what the decorator returns); what "
                    "came back is a plain Python function, which Dynamo traces into instead of calling the op: "
                    "compiled with fullgraph=True it breaks the graph (as py_softsign does) or computes something "
                    "else (the fake kernel, for example, returns empty memory). If you named the fake kernel like "
                    "the op (def softsign twice), the second def rebinds the name: give the fake its own name.",
                    "make_softsign_op 必须返回它注册的算子（装饰器返回的对象）；你返回的是一个普通的 Python 函数，"
                    "Dynamo 会追踪进它的内部而不是调用算子：用 fullgraph=True 编译时，它要么产生图中断（像 py_softsign 那样），"
                    "要么算出别的东西（例如 fake 内核返回的是未初始化的内存）。如果你给 fake 内核起了和算子相同的名字"
                    "（两次 def softsign），第二个 def 会把这个名字重新绑定：请给 fake 内核另起一个名字。",
                    tried=tried, expected=("a custom operator", "一个自定义算子"), got=why)
    raise Wrong("make_softsign_op must return the operator itself, not a Python function around it: opcheck, "
                "torch.export and this checker need the operator object (what the decorator returns). " + where[0],
                "make_softsign_op 必须返回算子本身，而不是包着它的 Python 函数：opcheck、torch.export 和检查器需要的是算子对象"
                "（装饰器返回的对象）。" + where[1],
                expected=("a custom operator", "一个自定义算子"), got=describe(op))


def _compare_fake(label: tuple[str, str], real: torch.Tensor, fake: Any, alias: bool, help_: tuple[str, str],
                  *, device: str | None = None) -> None:
    """Raise the named Wrong when the fake kernel's output breaks the contract with ``real`` (the
    real kernel's output on the same input; on ``device`` when the probe was on another device)."""
    if not isinstance(fake, torch.Tensor):
        raise Wrong("the fake kernel must return a tensor.", "fake 内核必须返回一个张量。",
                    tried=label, got=describe(fake))
    want_device = device or real.device.type
    expected = _layouts(real) if device is None else (_layout(real).replace("device cpu", f"device {device}"),
                                                      _layout_zh(real).replace("设备 cpu", f"设备 {device}"))
    got = _layouts(fake)
    if tuple(fake.shape) != tuple(real.shape):
        en, zh = ("the fake kernel returns the wrong shape for this input: " + help_[0] + ".",
                  "对这个输入，fake 内核返回的形状不对：" + help_[1] + "。")
    elif fake.dtype != real.dtype:
        en, zh = ("the fake kernel returns the wrong dtype for this input: " + help_[0] + ".",
                  "对这个输入，fake 内核返回的 dtype 不对：" + help_[1] + "。")
    elif fake.device.type != want_device:
        en, zh = _DEVICE
    elif alias:
        en, zh = _ALIAS
    elif _strides_differ(fake, real):
        en, zh = _STRIDES
    elif fake.requires_grad and not real.requires_grad:
        en, zh = _REQUIRES_GRAD
        expected, got = ("a tensor that does not require grad", "不要求梯度的张量"), ("requires_grad=True", "requires_grad=True")
    else:
        return
    raise Wrong(en, zh, tried=label, expected=expected, got=got)


def _call_fake(call: Callable[[], Any], label: tuple[str, str],
               inputs: tuple[str, str] = ("0-d and non-contiguous tensors", "0 维张量和非连续张量")) -> Any:
    """``call()``, with the learner's fake-kernel errors turned into named feedback (``inputs``:
    the kinds of input the message reminds of)."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, UnsupportedOperatorException

    try:
        return call()
    except NotImplementedError:
        raise
    except DataDependentOutputException as exc:
        raise Wrong(*_VALUES, tried=label, got=one_line_error(exc)) from None
    except UnsupportedOperatorException as exc:
        raise Wrong("the op has no fake kernel, so FakeTensors (torch.compile, torch.export) cannot run it. If you "
                    "registered one through a torch.library.Library object (lib=...), keep that object alive (for "
                    "example in a module-level variable): everything registered through a Library is removed "
                    "again when it is freed, as a Library kept only in a local variable is when the function "
                    "returns.",
                    "这个算子没有 fake 内核，所以伪张量（FakeTensor，torch.compile 和 torch.export 都要用它）无法运行它。"
                    "如果你是通过 torch.library.Library 对象（lib=...）注册的，请让这个对象一直存活（例如保存在模块级变量中）："
                    "Library 对象被释放时，通过它注册的一切都会被撤销；只保存在局部变量中的 Library 对象在函数返回时就会被释放。",
                    tried=label, got=one_line_error(exc)) from None
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        text = one_line_error(exc)
        if "no fake impl" in text.lower() or "register_fake" in text:
            raise Wrong("the op has no fake kernel, so FakeTensors (torch.compile, torch.export) cannot run it.",
                        "这个算子没有 fake 内核，所以伪张量（FakeTensor，torch.compile 和 torch.export 都要用它）无法运行它。",
                        tried=label, got=text) from None
        if "meta" in text.lower() and ("item" in text.lower() or "data" in text.lower()):
            raise Wrong(*_VALUES, tried=label, got=text) from None
        raise Wrong("the fake kernel raised an error for this input: it must work for every input the real kernel "
                    f"accepts ({inputs[0]} too).",
                    f"对这个输入，fake 内核抛出了异常：凡是真实内核接受的输入（包括 {inputs[1]}），fake 内核都必须能处理。",
                    tried=label, got=text) from None


#: gradients (float64) are compared this tightly, relative only: the tiny-x probe's exact gradients are ~1e-240
_GRAD_TOL = dict(rtol=1e-12, atol=0.0)
#: float64 results are compared this tightly: float32 arithmetic on the way shows (about 1e-8 off).
_FLOAT64_TOL = dict(rtol=1e-12, atol=1e-15)
#: the op's values, relative only, so a formula that cancels (1 - 1/(1+|x|)) shows on small inputs
_VALUES64_TOL = dict(rtol=1e-12, atol=0.0)
_VALUES32_TOL = dict(rtol=1e-5, atol=0.0)
_FLOAT64_WANT = ("float64 precision: a relative difference below 1e-12", "float64 精度：相对误差小于 1e-12")


def _precision_got(got: torch.Tensor, want: torch.Tensor) -> tuple[str, str]:
    """How far float32 arithmetic took ``got`` from ``want``, in both languages."""
    err = ((got.detach() - want) / want.abs().clamp_min(1e-300)).abs().max().item()
    return (f"a relative difference of up to {err:.2g}", f"相对误差最大为 {err:.2g}")


def _real_matches(label: tuple[str, str], x: torch.Tensor, got: Any, want: torch.Tensor) -> None:
    """Raise the named Wrong when the op's real output ``got`` is not what py_softsign returns (``want``):
    values (float64 ones to float64 precision), dtype, and a contiguous layout."""
    tol = _VALUES64_TOL if x.dtype == torch.float64 else _VALUES32_TOL
    diff = differs(got, want, **tol)
    if diff is not None:
        if isinstance(got, torch.Tensor) and got.shape == want.shape and got.dtype != want.dtype:
            raise Wrong(f"calling the op returns a {got.dtype} tensor for a {x.dtype} input: the op returns a "
                        "tensor with its input's dtype, as py_softsign does (a tensor built from Python floats "
                        "is float32 unless told otherwise).",
                        f"对 {x.dtype} 的输入，调用算子返回的是 {got.dtype} 张量：算子返回的张量 dtype 必须与输入相同，"
                        "py_softsign 就是这样（用 Python 浮点数构造的张量默认是 float32）。",
                        tried=label, expected=str(want.dtype), got=str(got.dtype))
        if x.dtype == torch.float64 and differs(got, want) is None:
            raise Wrong("calling the op on a float64 input gives values with only float32 precision: the real "
                        "kernel computes in float32 somewhere (a conversion to float32 and back, or a float32 "
                        "tensor); it must compute what py_softsign computes, in the input's dtype.",
                        "对 float64 的输入，调用算子得到的数值只有 float32 的精度：真实内核在某处用 float32 计算"
                        "（先转成 float32 再转回来，或者用了 float32 张量）；它必须在输入的 dtype 下算出与 py_softsign 相同的结果。",
                        tried=label, expected=_FLOAT64_WANT, got=_precision_got(got, want))
        if differs(got, want, rtol=1e-3, atol=1e-5) is None:
            raise Wrong("calling the op on small inputs loses their precision: the real kernel's formula "
                        "subtracts nearly equal numbers (such as 1 - 1/(1+|x|)), which cancels the small value; "
                        "compute what py_softsign computes, x / (1 + |x|).",
                        "对很小的输入，调用算子的结果丢失了精度：真实内核的公式让两个几乎相等的数相减（例如 1 - 1/(1+|x|)），"
                        "小数值被抵消掉了；请算出 py_softsign 所算的 x / (1 + |x|)。",
                        tried=label, expected=("the same values to the precision of the input's dtype",
                                               "在输入 dtype 的精度内相同的数值"), got=diff)
        raise Wrong("calling the op gives a different result from py_softsign: the op's real kernel should "
                    "compute what py_softsign computes (to the precision of the input's dtype).",
                    "调用该算子的结果与 py_softsign 不同：算子的真实内核应当算出与 py_softsign 相同的结果（达到输入 dtype 的精度）。",
                    tried=label, expected=describe(want), got=diff)
    if _strides_differ(got, want):
        raise Wrong("calling the op returns a tensor that is not laid out row by row (contiguous) for this input: "
                    "the op must return a new contiguous tensor whatever the input's strides, as py_softsign "
                    "does (a tensor made with torch.empty_like follows the input's layout).",
                    "对这个输入，调用算子返回的张量不是按行连续存放（contiguous）的：不论输入的步长如何，算子都必须返回一个"
                    "新的连续张量，py_softsign 就是这样（用 torch.empty_like 创建的张量会沿用输入的布局）。",
                    tried=label, expected=_layouts(want), got=_layouts(got))


def _softsign_probes() -> list[tuple[tuple[str, str], torch.Tensor]]:
    wide = _tensors(115, (3, 8), dtype=torch.float64)[0]
    return [(("a float32 tensor of shape (5,)", "形状 (5,) 的 float32 张量"), _tensors(110, (5,))[0]),
            (("a float32 tensor of shape (3, 4)", "形状 (3, 4) 的 float32 张量"), _tensors(111, (3, 4))[0]),
            (("a float64 tensor of shape (2, 3, 2)", "形状 (2, 3, 2) 的 float64 张量"),
             _tensors(112, (2, 3, 2), dtype=torch.float64)[0]),
            (("an empty float32 tensor of shape (0, 3)", "形状 (0, 3) 的空 float32 张量"), torch.empty(0, 3)),
            (("a transposed float32 tensor: torch.randn(3, 4).t(), shape (4, 3), strides (1, 4)",
              "转置的 float32 张量：torch.randn(3, 4).t()，形状 (4, 3)，步长 (1, 4)"), _tensors(113, (3, 4))[0].t()),
            (("a 0-d float32 tensor (shape ())", "0 维的 float32 张量（形状 ()）"), torch.tensor(-1.75)),
            (("a 0-d float64 tensor: torch.tensor(0.1, dtype=torch.float64)",
              "0 维的 float64 张量：torch.tensor(0.1, dtype=torch.float64)"), torch.tensor(0.1, dtype=torch.float64)),
            (("every other column of a float64 (3, 8) tensor: x[:, ::2], shape (3, 4), strides (8, 2)",
              "float64 的 (3, 8) 张量每隔一列取一列：x[:, ::2]，形状 (3, 4)，步长 (8, 2)"), wide[:, ::2]),
            (("small values in float32: [1e-3, 1e-8, -1e-30, 0.3]", "float32 的小数值：[1e-3, 1e-8, -1e-30, 0.3]"),
             torch.tensor([1e-3, 1e-8, -1e-30, 0.3])),
            (("small values in float64: [1e-3, 1e-8, -1e-30, 0.3]", "float64 的小数值：[1e-3, 1e-8, -1e-30, 0.3]"),
             torch.tensor([1e-3, 1e-8, -1e-30, 0.3], dtype=torch.float64))]


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
    ("The checker compares your fake kernel's output with the real kernel's on float32 and float64 inputs, "
     "transposed and 0-d ones too, and on a 'meta' device tensor: shape, dtype, device and strides must all "
     "agree. What layout does py_softsign's output have when its input is transposed?",
     "检查器会在 float32 和 float64 输入（包括转置的和 0 维的）以及 'meta' 设备上的张量上，比较 fake 内核与真实内核的输出："
     "形状、dtype、设备和步长都必须一致。输入是转置的张量时，py_softsign 的输出是什么布局？"),
], time_limit=180)
def _softsign_op(answer: Any) -> None:
    need_callable(answer, "make_softsign_op")
    name = _fresh("softsign")
    op = answer(name)
    registered = _qualname(op)
    if registered is None:
        _not_an_operator(op)
    if registered != name:
        raise Wrong(f"register the op under the name make_softsign_op is given (here {name!r}); the checker "
                    "calls it with names of its own so that your notebook's op is left alone.",
                    f"请用传给 make_softsign_op 的名字注册算子（这里是 {name!r}）；检查器用自己的名字调用它，"
                    "以免影响你笔记本中的算子。", expected=name, got=registered)
    if not _still_registered(op, name):
        raise Wrong(*_FREED, expected=(f"the operator {name} registered", f"算子 {name} 处于注册状态"),
                    got=(f"no operator named {name} in the registry", f"注册表中没有名为 {name} 的算子"))
    if not torch._C._dispatch_has_computed_kernel_for_dispatch_key(name, "CPU"):
        raise Wrong("the op has no real kernel for CPU tensors once make_softsign_op has returned: register the "
                    "kernel for the CPU (or for every device), and if you registered it through a "
                    "torch.library.Library object, keep that object alive (for example in a module-level "
                    "variable): everything registered through a Library is removed again when it is freed, as a "
                    "Library kept only in a local variable is when the function returns.",
                    "make_softsign_op 返回之后，这个算子没有处理 CPU 张量的真实内核：请为 CPU（或所有设备）注册内核；"
                    "如果你是通过 torch.library.Library 对象注册的，请让这个对象一直存活（例如保存在模块级变量中）："
                    "Library 对象被释放时，通过它注册的一切都会被撤销；只保存在局部变量中的 Library 对象在函数返回时就会被释放。",
                    expected=("a kernel for CPU tensors", "处理 CPU 张量的内核"), got=("none", "没有"))
    schema = _schema_of(op)
    if schema is not None and schema.is_mutable:
        raise Wrong("the op is registered as writing into its input (mutates_args names it, or is \"unknown\"), but "
                    "py_softsign changes nothing: the schema must say that the op mutates none of its arguments, "
                    "or every tracer has to treat x as overwritten by each call (lecture 11, section 2).",
                    "算子注册时声明会改写它的输入（mutates_args 列出了它，或者是 \"unknown\"），而 py_softsign 什么也不修改："
                    "签名必须说明这个算子不修改任何参数，否则每一种追踪器都得把每次调用当作改写了 x（第 11 讲第 2 节）。",
                    expected=("a schema without (a!) on x, such as ns::name(Tensor x) -> Tensor",
                              "x 上没有 (a!) 的签名，例如 ns::name(Tensor x) -> Tensor"), got=str(schema))
    probes = _softsign_probes()
    for label, x in probes:
        want = py_softsign(x)  # a new contiguous tensor of x's dtype, computed in double precision
        arg = x.clone()
        try:
            with quiet():
                got = op(arg)
        except NotImplementedError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            raise Wrong("calling the op raised an error for this input: its real kernel must accept every tensor "
                        "py_softsign accepts (0-d and non-contiguous ones too).",
                        "对这个输入，调用算子时抛出了异常：凡是 py_softsign 接受的张量（包括 0 维和非连续的张量），"
                        "算子的真实内核都必须接受。", tried=label, got=one_line_error(exc)) from None
        _real_matches(label, x, got, want)
        if not torch.equal(arg, x):
            raise Wrong("the op writes into its input, although it is registered as changing none of its "
                        "arguments (mutates_args=()): the real kernel must leave its input as it was.",
                        "算子改写了它的输入，而它注册时声明不修改任何参数（mutates_args=()）：真实内核必须保持输入不变。",
                        tried=label, expected=describe(x), got=describe(arg))
        fake, alias = _call_fake(lambda: _fake_output(op, x), label)
        _compare_fake(label, got, fake, alias, _FAKE_HELP)
    label, x = probes[1]
    meta_label = (f"{label[0]}, on the 'meta' device", f"'meta' 设备上的{label[1]}")
    with quiet():
        real, on_meta = op(x.clone()), _call_fake(lambda: op(_meta_twin(x)), meta_label)
    _compare_fake(meta_label, real, on_meta, False, _FAKE_HELP, device="meta")
    _fake_requires_grad_matches(op, probes[1])
    for label, x in probes:
        failed = _failed_tests(op, (x,))
        if failed:
            test, why = next(iter(failed.items()))
            en, zh = _opcheck_reason(why) or (f"torch.library.opcheck fails its test {test}.",
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


def _fake_requires_grad_matches(op: Any, probe: tuple[tuple[str, str], torch.Tensor]) -> None:
    """On an input that requires grad (under no_grad), the op's output on a FakeTensor must require grad
    exactly when the real output does (opcheck's test_faketensor compares them; a fake kernel that makes
    its output require grad, e.g. requires_grad=x.requires_grad, breaks this)."""
    label, x = probe
    label = (f"{label[0]} that requires grad, under torch.no_grad()", f"torch.no_grad() 下要求梯度的{label[1]}")
    # under no_grad no autograd formula touches the output: what the kernels return shows through
    with quiet(), torch.no_grad():
        real = op(x.clone().requires_grad_())
        fake, _ = _call_fake(lambda: _fake_output(op, x.clone().requires_grad_()), label)
    if isinstance(fake, torch.Tensor) and isinstance(real, torch.Tensor) and fake.requires_grad != real.requires_grad:
        raise Wrong(*_REQUIRES_GRAD, tried=label,
                    expected=(f"requires_grad={real.requires_grad}, as the real output",
                              f"与真实输出一样，requires_grad={real.requires_grad}"),
                    got=(f"requires_grad={fake.requires_grad}", f"requires_grad={fake.requires_grad}"))


# -- exercise 2: a fake kernel whose output shape depends on the inputs --------------------

def windows_real(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """The lab's real kernel: windows of ``size`` along the last dim, every ``step`` elements, as a new
    contiguous tensor (``.contiguous()`` would hand back a view of ``x`` whenever the windows already
    lie row by row in ``x``'s memory, e.g. one window per row, or ``size == step`` on a contiguous
    1-d ``x``; a custom op's output must not alias its input)."""
    return x.unfold(-1, size, step).clone(memory_format=torch.contiguous_format)


_WINDOW_PROBES = [  # ((English, 中文) label, shape, size, step, dtype, transposed)
    (("x of shape (10,), size 3, step 2", "形状 (10,) 的 x，size 3，step 2"), (10,), 3, 2, torch.float32, False),
    (("x of shape (2, 9), size 4, step 1", "形状 (2, 9) 的 x，size 4，step 1"), (2, 9), 4, 1, torch.float32, False),
    (("x of shape (3, 2, 11), size 2, step 4 (step larger than size)",
      "形状 (3, 2, 11) 的 x，size 2，step 4（step 大于 size）"), (3, 2, 11), 2, 4, torch.float32, False),
    (("x of shape (4, 7), size 7, step 3 (one window)", "形状 (4, 7) 的 x，size 7，step 3（只有一个窗口）"),
     (4, 7), 7, 3, torch.float64, False),
    (("x of shape (2, 5), size 2, step 2 (the last element is left over)",
      "形状 (2, 5) 的 x，size 2，step 2（最后一个元素用不上）"), (2, 5), 2, 2, torch.float32, False),
    (("a transposed x: torch.randn(9, 2).t(), shape (2, 9), strides (1, 2); size 3, step 3",
      "转置的 x：torch.randn(9, 2).t()，形状 (2, 9)，步长 (1, 2)；size 3，step 3"), (2, 9), 3, 3, torch.float32, True),
]


_WINDOW_INPUTS = ("non-contiguous tensors and tensors on other devices", "非连续张量和其他设备上的张量")


def _window_input(seed: int, shape: tuple[int, ...], dtype: torch.dtype, transposed: bool) -> torch.Tensor:
    if transposed:
        return _tensors(seed, shape[::-1], dtype=dtype)[0].t()
    return _tensors(seed, shape, dtype=dtype)[0]


def _window_mistakes(got_shapes: list[tuple[int, ...] | None]) -> tuple[str, str] | None:
    """The named mistake whose shape formula explains the answer's shape on every probe."""
    candidates: dict[str, tuple[str, str]] | None = None
    for got, (_, shape, size, step, _, _) in zip(got_shapes, _WINDOW_PROBES):
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
        (-(-n // step) - (size - 1) // step,
         "the number of windows counts the window starts inside the row, then takes off too few of the windows "
         "that run past its end: a window starting at position i * step is kept only if i * step + size <= n.",
         "窗口数先数了这一行里所有的窗口起点，再减去超出末尾的窗口，但减去的个数不够：从位置 i * step 开始的窗口，"
         "只有在 i * step + size <= n 时才保留。"),
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
     "arguments as they are, and returns a new, empty tensor with the output's shape, dtype, device and "
     "memory layout (strides).",
     "第 11 讲第 2 节：fake 内核接收伪张量（FakeTensor：有形状、dtype 和设备，没有数据）以及原样传入的其他参数，"
     "并返回一个新的空张量，其形状、dtype、设备和内存布局（步长）都与输出相同。"),
], time_limit=180)
def _windows_fake(answer: Any) -> None:
    from torch._subclasses.fake_tensor import FakeTensorMode

    need_callable(answer, "windows_fake")
    xs = [_window_input(120 + i, p[1], p[4], p[5]) for i, p in enumerate(_WINDOW_PROBES)]

    def fake_shape(x: torch.Tensor, size: int, step: int) -> tuple[int, ...] | None:
        try:
            with quiet(), FakeTensorMode() as mode:
                out = answer(mode.from_tensor(x), size, step)
            return tuple(out.shape) if isinstance(out, torch.Tensor) else None
        except Exception:  # noqa: BLE001 - the loop below reports it
            return None

    help_ = ("the fake kernel must return a new, empty tensor with the output's shape, the input's dtype and "
             "device, and the real kernel's memory layout (lecture 11, section 2)",
             "fake 内核必须返回一个新的空张量：形状是输出的形状，dtype 和设备与输入相同，内存布局与真实内核的输出相同（第 11 讲第 2 节）")
    for (label, shape, size, step, dtype, _), x in zip(_WINDOW_PROBES, xs):
        want = windows_real(x, size, step)
        got, alias = _call_fake(lambda: _fake_output(answer, x, size, step), label, _WINDOW_INPUTS)
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
        _compare_fake(label, want, got, alias, help_)
    label, _, size, step, _, _ = _WINDOW_PROBES[1]
    rg_label = (f"{label[0]}, x requiring grad", f"{label[1]}，x 要求梯度")

    def fake_of_x_requiring_grad() -> Any:
        # as under an op: the fake kernel runs below autograd, where nothing it computes is recorded
        x_rg = xs[1].clone().requires_grad_()
        with quiet(), FakeTensorMode() as mode, torch.no_grad():
            return answer(mode.from_tensor(x_rg), size, step)

    on_rg = _call_fake(fake_of_x_requiring_grad, rg_label, _WINDOW_INPUTS)
    if isinstance(on_rg, torch.Tensor) and on_rg.requires_grad:
        raise Wrong(*_REQUIRES_GRAD, tried=rg_label,
                    expected=("a tensor that does not require grad", "不要求梯度的张量"),
                    got=("requires_grad=True", "requires_grad=True"))
    meta_label = (f"{label[0]}, on the 'meta' device", f"{label[1]}，位于 'meta' 设备上")
    with quiet():
        on_meta = _call_fake(lambda: answer(_meta_twin(xs[1]), size, step), meta_label, _WINDOW_INPUTS)
    _compare_fake(meta_label, windows_real(xs[1], size, step), on_meta, False, help_, device="meta")
    # The same fake behind a real op: opcheck (dynamic shapes too) and a fullgraph compile.
    name = _fresh("windows")
    op = torch.library.custom_op(name, mutates_args=())(_windows_kernel)
    op.register_fake(answer)
    for label, shape, size, step, dtype, transposed in _WINDOW_PROBES:
        x = _window_input(129, shape, dtype, transposed)
        failed = _failed_tests(op, (x, size, step))
        if failed:
            test, why = next(iter(failed.items()))
            if named := _opcheck_reason(why):
                en, zh = named
            elif test == "test_aot_dispatch_dynamic":
                en, zh = (f"behind a real operator, torch.library.opcheck fails its test {test}, which traces the "
                          "op with symbolic sizes: the fake kernel must also work when the sizes it reads are "
                          "symbols rather than ints.",
                          f"注册到真实算子上之后，torch.library.opcheck 的测试 {test} 没有通过；这项测试用符号尺寸追踪算子："
                          "当 fake 内核读到的尺寸是符号而不是整数时，它也必须能工作。")
            else:
                en, zh = (f"behind a real operator, torch.library.opcheck fails its test {test}.",
                          f"注册到真实算子上之后，torch.library.opcheck 的测试 {test} 没有通过。")
            raise Wrong(en, zh, tried=(f"opcheck with {label[0]}", f"opcheck，输入：{label[1]}"),
                        expected=_ALL_SUCCESS, got=f"{test}: {why}")
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
    op.register_fake(lambda x, s: x.new_empty(x.shape))  # py_cube_scale's output is contiguous
    return op


def _cube_kernel(x: torch.Tensor, s: float) -> torch.Tensor:
    return py_cube_scale(x, s)


class _NoBackward(Exception):
    """The op's output does not require grad: no autograd formula is registered on it."""


class _GradWritten(Exception):
    """The backward wrote into the gradient it was handed."""


class _InputWritten(Exception):
    """The op's input x changed during the forward or the backward (the backward wrote into a saved tensor)."""


def _grad_of(op: Any, x: torch.Tensor, s: float, grad_out: torch.Tensor) -> Any:
    xr = x.detach().clone().requires_grad_()
    handed = grad_out.clone()
    with quiet():
        out = op(xr, s)
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            raise _NoBackward(f"the output of op(x, {s}) does not require grad although x does")
        (g,) = torch.autograd.grad(out, xr, handed)
    if not torch.equal(handed, grad_out):
        raise _GradWritten(describe(handed))
    if not torch.equal(xr.detach(), x):
        raise _InputWritten(_changed(xr.detach(), x, "x"))
    return g


def _changed(now: torch.Tensor, before: torch.Tensor, name: str) -> tuple[str, str]:
    """How ``now`` differs from ``before``, in both languages."""
    return (differs(now, before, where=name) or "",
            differs(now, before, where=name, expected="期望", lang="zh") or "")


_BACKWARD_ERRORS = [  # (text in the error, English, 中文)
    ("save_for_backward can only save", "setup_context raised an error: save_for_backward takes tensors only, each "
     "as its own argument; s is a Python float (keep it on ctx), and the inputs tuple itself is not a tensor "
     "(save inputs[0], not inputs).", "setup_context 抛出了异常：save_for_backward 只接受张量，每个张量作为一个单独的参数；"
     "s 是 Python 浮点数（把它放在 ctx 上），inputs 这个元组本身也不是张量（要保存 inputs[0]，而不是 inputs）。"),
    ("incorrect number of gradients", "the backward must return a tuple with one gradient per input of the op (x, "
     "then s).", "反向传播必须返回一个元组，算子的每个输入（先 x，再 s）各对应一个梯度。"),
    ("different than none at position 2", "the backward returns a gradient for s, but s is a Python float, not a "
     "tensor: its gradient must be None.", "反向传播为 s 返回了梯度，但 s 是 Python 浮点数而不是张量：它的梯度必须是 None。"),
    ("more than one element of the written-to tensor", "the backward writes into the gradient it receives "
     "(an in-place operation such as *=): that tensor belongs to autograd and may be shared; compute a new "
     "tensor instead.", "反向传播原地改写了它收到的梯度（例如用 *= 这样的原地运算）：这个张量属于自动微分引擎，可能被共享；"
     "请计算一个新张量。"),
]
_GRAD_WRITTEN = ("the backward writes into the gradient it receives (an in-place operation such as *=): that "
                 "tensor belongs to autograd and may be shared with other parts of the graph; compute a new "
                 "tensor instead.",
                 "反向传播原地改写了它收到的梯度（例如用 *= 这样的原地运算）：这个张量属于自动微分引擎，"
                 "可能与计算图的其他部分共享；请计算一个新张量。")
_SAVED_WRITTEN = ("the backward writes into a tensor it saved (an in-place operation such as **=, *= or mul_ on "
                  "the saved x): save_for_backward keeps the caller's tensor x itself, not a copy, so the backward "
                  "changes the learner's x; compute a new tensor instead.",
                  "反向传播原地改写了它保存的张量（例如对保存的 x 使用 **=、*= 或 mul_ 这样的原地运算）："
                  "save_for_backward 保存的就是调用者的张量 x 本身，而不是副本，所以反向传播改掉了调用者的 x；"
                  "请计算一个新张量。")
_SAVED_WRITTEN_TWICE = ("the backward writes into a tensor it saved (an in-place operation such as **=, *= or mul_ "
                        "on a saved tensor): a second backward through the same graph (gradcheck runs one per "
                        "output element, keeping the graph) finds the saved tensor changed, and autograd raises "
                        "an error; compute a new tensor instead.",
                        "反向传播原地改写了它保存的张量（例如对保存的张量使用 **=、*= 或 mul_ 这样的原地运算）："
                        "同一张计算图上的第二次反向传播（gradcheck 会保留计算图，为每个输出元素各做一次）发现保存的张量被改过，"
                        "自动微分于是报错；请计算一个新张量。")
_OUTSIDE = ("the backward reads x or s from state kept outside ctx (a global, a closure, the op): when the op is "
            "called twice before one backward, the first call's backward sees the second call's values. Keep "
            "what the backward needs on ctx, tensors with ctx.save_for_backward.",
            "反向传播从 ctx 之外保存的状态（全局变量、闭包、算子对象）读取 x 或 s：当算子在一次反向传播之前被调用两次时，"
            "第一次调用的反向传播看到的是第二次调用的值。反向传播需要的东西要放在 ctx 上，张量要用 ctx.save_for_backward 保存。")
_NOT_SAVED = ("the backward reads x from where autograd cannot watch it (a ctx attribute or other state, not "
              "ctx.save_for_backward, or x.data saved instead of x): when x is changed in place after the forward, "
              "the backward silently uses the new values and returns a wrong gradient, where x itself saved with "
              "save_for_backward makes autograd raise an error.",
              "反向传播从自动微分无法监控的地方读取 x（ctx 的属性或其他状态，而不是 ctx.save_for_backward；或者保存的是 x.data "
              "而不是 x）：前向传播之后如果 x 被原地修改，反向传播会悄悄用上新值，返回错误的梯度；而用 save_for_backward 保存 x "
              "本身会让自动微分报错。")


_FLOAT32_GRAD = ("the gradient for a float64 x has only float32 precision: the backward computes in float32 "
                 "somewhere (a .float(), or a float32 tensor, such as s turned into a tensor with torch.tensor(s), "
                 "which is float32 unless told otherwise); autograd then converts the result back to float64, "
                 "but the digits are lost. Compute in x's dtype.",
                 "对 float64 的 x，梯度只有 float32 的精度：反向传播在某处用 float32 计算（.float()，或者一个 float32 张量，"
                 "例如用 torch.tensor(s) 把 s 变成的张量，不指定 dtype 时它就是 float32）；"
                 "自动微分随后会把结果转回 float64，但丢掉的有效数字回不来了。请在 x 的 dtype 下计算。")


def _backward_error(exc: BaseException, label: tuple[str, str]) -> Wrong:
    text = one_line_error(exc)
    if isinstance(exc, _NoBackward) or "no autograd formula was registered" in text:
        return Wrong("no backward formula is registered on the op you were given: add_autograd must register it on "
                     "that op.", "传给你的算子上没有注册反向传播公式：add_autograd 必须在这个算子上注册它。",
                     tried=label, got=text)
    for needle, en, zh in _BACKWARD_ERRORS:
        if needle in text.lower():
            return Wrong(en, zh, tried=label, got=text)
    return Wrong("setup_context or the backward raised an error for this input: they must work for every x the op "
                 "accepts (0-d and non-contiguous ones too) and return one gradient per input of the op (x and s).",
                 "对这个输入，setup_context 或反向传播抛出了异常：它们必须适用于算子接受的每一个 x（包括 0 维和非连续的 x），"
                 "并为算子的每个输入（x 和 s）各返回一个梯度。", tried=label, got=text)


@task("lab11.3", "an autograd formula for a custom op", "为自定义算子注册自动微分公式", hints=[
    ("What is d/dx of s * x**3? The backward receives the gradient of the output: how does it combine with "
     "that derivative, and what does the backward return for s?",
     "s * x**3 对 x 的导数是什么？反向传播收到的是输出的梯度：它与这个导数如何组合？对 s，反向传播返回什么？"),
    ("Lecture 11, section 2: register_autograd takes a backward and a setup_context; setup_context saves what the "
     "backward needs (inputs[0] is x, inputs[1] is s), and the backward returns one gradient per input.",
     "第 11 讲第 2 节：register_autograd 接收 backward 和 setup_context；setup_context 保存反向传播需要的值"
     "（inputs[0] 是 x，inputs[1] 是 s），backward 为每个输入返回一个梯度。"),
    ("The checker also calls the op twice before one backward, and changes x in place between the forward and "
     "the backward: where must the backward find x and s so that both work?",
     "检查器还会在一次反向传播之前调用算子两次，并在前向和反向传播之间原地修改 x：反向传播应当从哪里取得 x 和 s，"
     "这两种情况才都正确？"),
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
               _tensors(133, (2, 2, 3), dtype=torch.float64)[0], 3.0),
              (("a 0-d x (shape ()) with s = 1.5", "0 维的 x（形状 ()），s = 1.5"),
               torch.tensor(-1.25, dtype=torch.float64), 1.5),
              (("a transposed x: torch.randn(4, 3).t(), shape (3, 4), with s = -2.0",
                "转置的 x：torch.randn(4, 3).t()，形状 (3, 4)，s = -2.0"),
               _tensors(135, (4, 3), dtype=torch.float64)[0].t(), -2.0),
              # 0.1 has no exact float32 value: s kept in float32 shows here
              (("x of shape (4,) with s = 0.1", "形状 (4,) 的 x，s = 0.1"),
               _tensors(141, (4,), dtype=torch.float64)[0], 0.1),
              (("x of shape (2, 3) with s = 0.0", "形状 (2, 3) 的 x，s = 0.0"),
               _tensors(142, (2, 3), dtype=torch.float64)[0], 0.0),
              (("x = [1e-120, -3e-110, 2e-105, -1e-100] with s = 1.0", "x = [1e-120, -3e-110, 2e-105, -1e-100]，s = 1.0"),
               torch.tensor([1e-120, -3e-110, 2e-105, -1e-100], dtype=torch.float64), 1.0)]
    hints = {0.0: (" With s = 0 the exact gradient is 0 everywhere; a backward that divides by s (to get x back "
                   "from the output, for example) gets nan or inf instead.",
                   "s = 0 时精确梯度处处为 0；如果反向传播除以 s（例如为了从输出反推出 x），得到的就会是 nan 或 inf。"),
             1.0: (" For such tiny x, s * x**3 underflows to 0 (or keeps only a few digits) in float64, while "
                   "3 * s * x**2 is still an ordinary float64 number: a backward that gets x back from the output, "
                   "or divides the output by x, loses it. The backward needs x itself.",
                   "对这样小的 x，s * x**3 在 float64 下会下溢为 0（或者只剩下几位有效数字），而 3 * s * x**2 仍是普通的 "
                   "float64 数：如果反向传播从输出反推出 x，或者用输出除以 x，就会丢掉它。反向传播需要的是 x 本身。")}
    for label, x, s in probes:
        grad_out = _tensors(134, tuple(x.shape), dtype=torch.float64)[0] + 0.5
        want = grad_out * 3 * s * x * x
        try:
            got = _grad_of(op, x, s, grad_out)
        except _GradWritten as exc:
            raise Wrong(*_GRAD_WRITTEN, tried=label, expected=("the incoming gradient unchanged", "传入的梯度保持不变"),
                        got=(f"it became {exc}", f"它变成了 {exc}")) from None
        except _InputWritten as exc:
            raise Wrong(*_SAVED_WRITTEN, tried=label, expected=("x unchanged", "x 保持不变"), got=exc.args[0]) from None
        except Exception as exc:  # noqa: BLE001 - reported to the learner
            raise _backward_error(exc, label) from None
        diff = differs(got, want, **_GRAD_TOL)
        if diff is None:
            continue
        if differs(got, want, rtol=1e-5, atol=0.0) is None:  # relative only: tiny gradients lost are no rounding
            raise Wrong(*_FLOAT32_GRAD, tried=label, expected=_FLOAT64_WANT, got=_precision_got(got, want))
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
            if differs(got, candidate, rtol=1e-5, atol=0.0) is None:
                raise Wrong(en, zh, tried=label, expected=describe(want), got=diff)
        hint_en, hint_zh = hints.get(s, ("", ""))
        raise Wrong("the gradient differs from d/dx (s * x**3) times the incoming gradient." + hint_en,
                    "梯度与 d/dx (s * x**3) 乘以传入梯度的结果不同。" + hint_zh, tried=label, expected=describe(want),
                    got=diff)
    _two_calls_then_backward(op)
    _changed_in_place_after_forward(op)
    x, s = probes[0][1].detach().clone().requires_grad_(), probes[0][2]
    try:
        with quiet():
            ok = torch.autograd.gradcheck(lambda t: op(t, s), (x,), raise_exception=False)
    except RuntimeError as exc:
        if "modified by an inplace operation" not in str(exc):
            raise _backward_error(exc, probes[0][0]) from None
        raise Wrong(*_SAVED_WRITTEN_TWICE, tried=(f"torch.autograd.gradcheck with {probes[0][0][0]}",
                                                  f"torch.autograd.gradcheck，{probes[0][0][1]}"),
                    got=one_line_error(exc)) from None
    if not ok:
        raise Wrong("torch.autograd.gradcheck disagrees with your backward.",
                    "torch.autograd.gradcheck 与你的反向传播不一致。", tried=probes[0][0])
    failed = _failed_tests(op, (torch.randn(3, 2, generator=torch.Generator().manual_seed(136), requires_grad=True),
                                1.5))
    if failed:
        test, why = next(iter(failed.items()))
        low = why.lower()
        if any(w in low for w in ("data-dependent", "data dependent", "_local_scalar_dense", "tolist", "item()")):
            en, zh = ("the backward must be traceable (tensor operations only, no .item(), .tolist() or Python "
                      "floats of tensors)", "反向传播必须可以被追踪（只用张量运算，不要 .item()、.tolist()，也不要把张量转成 Python 浮点数）")
        else:
            en, zh = "read the reason below", "原因见下面"
        raise Wrong(f"torch.library.opcheck fails its test {test}: {en}.",
                    f"torch.library.opcheck 的测试 {test} 没有通过：{zh}。",
                    tried=("opcheck with x of shape (3, 2), s = 1.5", "opcheck，x 的形状为 (3, 2)，s = 1.5"),
                    expected=_ALL_SUCCESS, got=f"{test}: {why}")


def _two_calls_then_backward(op: Any) -> None:
    """Two forwards, then the backward of the first: each backward must use its own call's x and s."""
    label = ("y1 = op(x1, 2.0); y2 = op(x2, -0.5); then the gradient of y1 (x1, x2 of shape (4,))",
             "y1 = op(x1, 2.0)；y2 = op(x2, -0.5)；然后求 y1 的梯度（x1、x2 的形状为 (4,)）")
    pristine = _tensors(137, (4,), (4,), dtype=torch.float64)
    x1, x2 = (t.clone().requires_grad_() for t in pristine)
    grad_out = _tensors(138, (4,), dtype=torch.float64)[0] + 0.5
    try:
        with quiet():
            y1, y2 = op(x1, 2.0), op(x2, -0.5)
            (g1,) = torch.autograd.grad(y1, x1, grad_out)
    except Exception as exc:  # noqa: BLE001 - reported to the learner
        raise _backward_error(exc, label) from None
    if not torch.equal(x1.detach(), pristine[0]):
        raise Wrong(*_SAVED_WRITTEN, tried=label, expected=("x1 unchanged", "x1 保持不变"),
                    got=_changed(x1.detach(), pristine[0], "x1"))
    want = grad_out * 6 * pristine[0] ** 2
    diff = differs(g1, want, **_FLOAT64_TOL)
    if diff is not None:
        raise Wrong(*_OUTSIDE, tried=label, expected=describe(want), got=diff)
    del y2


def _changed_in_place_after_forward(op: Any) -> None:
    """x changed in place between forward and backward: autograd must raise, or the gradient must
    still be the one at the forward's x (a saved copy); a silently new gradient is wrong."""
    label = ("y = op(x, 2.0); then x.add_(1.0) under torch.no_grad(); then the gradient of y (x of shape (4,))",
             "y = op(x, 2.0)；然后在 torch.no_grad() 下执行 x.add_(1.0)；再求 y 的梯度（x 的形状为 (4,)）")
    x = _tensors(139, (4,), dtype=torch.float64)[0].requires_grad_()
    before = x.detach().clone()
    grad_out = _tensors(140, (4,), dtype=torch.float64)[0] + 0.5
    try:
        with quiet():
            y = op(x, 2.0)
            with torch.no_grad():
                x.add_(1.0)
            (g,) = torch.autograd.grad(y, x, grad_out)
    except RuntimeError as exc:
        if "modified by an inplace operation" in str(exc):
            return
        raise _backward_error(exc, label) from None
    want = grad_out * 6 * before ** 2
    diff = differs(g, want, **_FLOAT64_TOL)
    if diff is not None:
        raise Wrong(*_NOT_SAVED, tried=label,
                    expected=("autograd's error about the in-place change (or the gradient at the forward's x)",
                              "自动微分关于原地修改的报错（或者前向传播时 x 处的梯度）"), got=diff)
