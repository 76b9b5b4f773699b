"""Checkers for labs/lab07_guards_breaks.ipynb (lecture course/07_dynamo_guards_breaks.ipynb).

Every checker resets Dynamo before and after it runs and changes Dynamo's configuration only
inside ``config.patch`` blocks, so nothing it does leaks into the learner's notebook.
"""
from __future__ import annotations

import contextlib
import io
from typing import Any, Callable, Iterator

import torch
from torch import nn

from . import Wrong, task
from .._text import first_line, quiet


@contextlib.contextmanager
def _fresh_dynamo() -> Iterator[None]:
    """Reset Dynamo around a check; keep the learner's prints and torch's logs off the notebook."""
    torch._dynamo.reset()
    try:
        with quiet(), contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        torch._dynamo.reset()


def _need_callable(answer: Any, name: str, task_id: str) -> None:
    if not callable(answer) or isinstance(answer, type):
        raise Wrong(f"pass the function itself, e.g. check('{task_id}', {name}).",
                    f"请传入函数本身，例如 check('{task_id}', {name})。", got=type(answer).__name__)


def _differs(got: Any, want: torch.Tensor) -> str:
    """'' when ``got`` matches ``want``; otherwise a short description of how it differs."""
    if not isinstance(got, torch.Tensor):
        return type(got).__name__
    if got.shape != want.shape:
        return f"tensor of shape {tuple(got.shape)}"
    if got.dtype != want.dtype:
        return f"tensor of dtype {got.dtype}"
    if not torch.allclose(got, want, atol=1e-5, rtol=1e-4):
        return f"max abs difference {float((got - want).abs().max()):.3g}"
    return ""


# -- lab07.1 ---------------------------------------------------------------------------

def messy(x: torch.Tensor) -> torch.Tensor:
    """The function of exercise 1: three graph breaks (.item(), print, a data-dependent if)."""
    y = torch.sin(x) * 2
    scale = y.abs().max().item()
    print("scale:", scale)
    if y.sum() > 0:
        y = y / scale
    else:
        y = -y
    return y + 1


def _messy_inputs() -> list[tuple[str, torch.Tensor]]:
    gen = torch.Generator().manual_seed(707)
    out = []
    for shape in ((3, 5), (7,), (2, 3, 4)):
        x = torch.randn(shape, generator=gen)
        for sign, label in ((1, "sum > 0"), (-1, "sum < 0")):
            # sin is odd, so flipping x flips the sign of y.sum(): one input per branch
            base = x if torch.sin(x).sum() * sign > 0 else -x
            out.append((f"x of shape {tuple(shape)} with y.sum() {label[4:]}", base.clone()))
    return out


_BREAK_HINTS = (
    ("print", "remove the print (or print outside the compiled function).",
     "删除 print（或在被编译的函数之外打印）。"),
    ("Data-dependent branching", "a Python `if` on a tensor still breaks the graph; choose with torch.where "
     "(or torch.cond).", "依据张量数值的 Python `if` 仍会造成图中断；请用 torch.where（或 torch.cond）来选择。"),
    ("generic_jump", "a Python `if` on a tensor still breaks the graph; choose with torch.where "
     "(or torch.cond).", "依据张量数值的 Python `if` 仍会造成图中断；请用 torch.where（或 torch.cond）来选择。"),
    ("data-dependent", "you branch on a Python number read with .item(); keep the scale a tensor and "
     "choose with torch.where.", "你在用 .item() 读出的 Python 数上做分支；请让 scale 保持为张量，并用 torch.where 选择。"),
    ("item()", "Tensor.item() still breaks a plain torch.compile (fullgraph=True captures it on its own, "
     "which hides the break); keep the scale as a 0-d tensor: y.abs().max().",
     "Tensor.item() 在普通的 torch.compile 中仍会造成图中断（fullgraph=True 会自动捕获它，掩盖了这个中断）；"
     "请让 scale 保持为 0 维张量：y.abs().max()。"),
)


def _reason_text(message: str) -> str:
    """The first line of a break reason plus its ``Explanation:`` line (where the culprit is named)."""
    lines = [line.strip() for line in str(message).splitlines() if line.strip()]
    explanation = next((line for line in lines if line.startswith("Explanation:")), "")
    return " ".join(lines[:1] + [explanation])


def _break_hint(reason: str) -> tuple[str, str]:
    reason = _reason_text(reason)
    for key, en, zh in _BREAK_HINTS:
        if key in reason:
            return en, zh
    return ("the function still has a graph break; read the reason and rewrite that line with torch operations.",
            "函数仍有图中断；请阅读原因，并用 torch 运算改写那一行。")


@task("lab07.1", "remove every graph break", "消除全部图中断")
def _no_breaks(answer: Any) -> None:
    from .._capture import capture

    _need_callable(answer, "no_breaks", "lab07.1")
    inputs = _messy_inputs()
    with _fresh_dynamo():
        for label, x in inputs:  # eager first: a stub raises NotImplementedError here
            want, got = messy(x.clone()), answer(x.clone())
            diff = _differs(got, want)
            if diff:
                raise Wrong("run eagerly, no_breaks gives a different result from messy.",
                            "在 eager 模式下，no_breaks 的结果与 messy 不同。",
                            tried=f"no_breaks({label})", expected=f"tensor of shape {tuple(want.shape)} equal to messy(x)",
                            got=diff)
        with torch._dynamo.config.patch(capture_scalar_outputs=False):
            compiled = torch.compile(answer, backend="eager", fullgraph=True)
            for label, x in inputs:
                try:
                    got = compiled(x.clone())
                except Exception as exc:
                    reason = str(exc)
                    en, zh = _break_hint(reason)
                    raise Wrong(f"torch.compile(no_breaks, fullgraph=True) refused it: {en}",
                                f"torch.compile(no_breaks, fullgraph=True) 拒绝了它：{zh}",
                                tried=f"fullgraph=True on {label}", expected="one graph",
                                got=f"{type(exc).__name__}: {first_line(reason)}") from None
                diff = _differs(got, messy(x.clone()))
                if diff:
                    raise Wrong("compiled with fullgraph=True, no_breaks gives a different result from messy.",
                                "用 fullgraph=True 编译后，no_breaks 的结果与 messy 不同。",
                                tried=f"compiled no_breaks({label})", expected="messy(x)", got=diff)
            label, x = inputs[0]
            cap = capture(answer, x.clone())
        if cap.breaks or cap.graph_count != 1:
            reason = cap.breaks[0].reason if cap.breaks else f"{cap.graph_count} graphs"
            en, zh = _break_hint(f"{reason}\nExplanation: {cap.breaks[0].explanation}" if cap.breaks else reason)
            raise Wrong(f"fullgraph=True passed, but a plain torch.compile still breaks: {en}",
                        f"fullgraph=True 通过了，但普通的 torch.compile 仍然中断：{zh}",
                        tried=f"torch.compile(no_breaks) on {label}", expected="1 graph, 0 graph breaks",
                        got=f"{cap.graph_count} graphs; {reason}")


# -- lab07.2 ---------------------------------------------------------------------------

class _CountingBackend:
    """A backend that records every graph it is given and runs it unchanged."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []
        self.__name__ = "counting_backend"

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        return gm.forward


def _hidden_head() -> Callable[[torch.Tensor], torch.Tensor]:
    gen = torch.Generator().manual_seed(72)
    weight, bias = torch.randn(6, 5, generator=gen), torch.randn(5, generator=gen)

    def head(x: torch.Tensor) -> torch.Tensor:  # x: (batch, 6)
        h = torch.nn.functional.layer_norm(x, (6,))
        return torch.softmax(h @ weight + bias, dim=-1)

    return head


def _symbolic_dims(gm: torch.fx.GraphModule) -> list[str]:
    shapes = []
    for node in gm.graph.nodes:
        value = node.meta.get("example_value")
        if node.op == "placeholder" and isinstance(value, torch.Tensor):
            shapes.append(str(tuple(value.shape)))
    return shapes


@task("lab07.2", "compile once for three batch sizes", "三种批大小只编译一次")
def _compile_once(answer: Any) -> None:
    _need_callable(answer, "compile_once", "lab07.2")
    fn = _hidden_head()
    gen = torch.Generator().manual_seed(27)
    batches = (3, 5, 11)
    inputs = [torch.randn(b, 6, generator=gen) for b in batches]
    backend = _CountingBackend()
    tried = f"compile_once(head, backend) called with batch sizes {batches} (head: (batch, 6) -> (batch, 5))"
    with _fresh_dynamo():
        compiled = answer(fn, backend)
        if not callable(compiled):
            raise Wrong("return the compiled function.", "请返回编译后的函数。", tried=tried,
                        got=type(compiled).__name__)
        for x in inputs:
            try:
                out = compiled(x)
            except Exception as exc:
                marked = sorted({d for t in inputs for d in getattr(t, "_dynamo_dynamic_indices", set())})
                if type(exc).__name__ != "ConstraintViolationError" or not marked or 0 in marked:
                    raise
                raise Wrong(f"you marked dim {marked[0]} as dynamic, but head needs it to be exactly 6 (the weight "
                            "has 6 rows), so Dynamo refused the mark. The batch is dim 0: mark_dynamic(x, 0).",
                            f"你把第 {marked[0]} 维标记为动态，但 head 要求这一维恰好是 6（权重有 6 行），所以 Dynamo "
                            "拒绝了这个标记。批大小是第 0 维：mark_dynamic(x, 0)。",
                            tried=tried, expected="1 compile",
                            got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
            diff = _differs(out, fn(x))
            if diff:
                raise Wrong("the compiled function gives a different result from the original.",
                            "编译后的函数与原函数结果不同。", tried=f"{tried}; batch {x.shape[0]}",
                            expected=f"tensor of shape {(x.shape[0], 5)} equal to head(x)", got=diff)
        marked = sorted({d for x in inputs for d in getattr(x, "_dynamo_dynamic_indices", set())})
    n = len(backend.graphs)
    if n == 1:
        return
    got = f"{n} compiles"
    if n == 0:
        raise Wrong("the backend you were given was never called: pass it on, torch.compile(fn, backend=backend).",
                    "给你的 backend 从未被调用：请把它传下去，torch.compile(fn, backend=backend)。",
                    tried=tried, expected="1 compile", got=got)
    shapes = "; ".join(" ".join(_symbolic_dims(gm)) for gm in backend.graphs)
    got = f"{n} compiles, input shapes per graph: {shapes}"
    if marked and 0 not in marked:
        raise Wrong(f"you marked dim {marked[0]} as dynamic, but the batch is dim 0: mark_dynamic(x, 0).",
                    f"你把第 {marked[0]} 维标记为动态，但批大小是第 0 维：mark_dynamic(x, 0)。",
                    tried=tried, expected="1 compile", got=got)
    if n == 2:
        raise Wrong("the second batch size recompiled: Dynamo makes a dimension dynamic only after it has seen it "
                    "change. Mark dim 0 dynamic before the first call (torch._dynamo.mark_dynamic(x, 0)) or "
                    "compile with dynamic=True.",
                    "第二个批大小触发了重新编译：Dynamo 只有在看到某一维变化之后才会把它变成动态的。请在第一次调用前把第 0 维"
                    "标记为动态（torch._dynamo.mark_dynamic(x, 0)），或者用 dynamic=True 编译。",
                    tried=tried, expected="1 compile", got=got)
    raise Wrong("every batch size compiled again; dynamic=False turns dynamic shapes off. Mark dim 0 dynamic "
                "(torch._dynamo.mark_dynamic(x, 0)) or compile with dynamic=True.",
                "每个批大小都重新编译了；dynamic=False 会关闭动态形状。请把第 0 维标记为动态"
                "（torch._dynamo.mark_dynamic(x, 0)），或者用 dynamic=True 编译。",
                tried=tried, expected="1 compile", got=got)


# -- lab07.3 ---------------------------------------------------------------------------

_KINDS = {
    "shape": "size mismatch",
    "dtype": "dtype mismatch",
    "requires_grad": "requires_grad mismatch",
    "stride": "stride mismatch",
}


def _guarded(x: torch.Tensor) -> torch.Tensor:
    return (torch.tanh(x) * 3).sum(0)


@task("lab07.3", "fail a chosen guard", "让指定的守卫失败")
def _fail_guard(answer: Any) -> None:
    from .._capture import capture

    _need_callable(answer, "fail_guard", "lab07.3")
    gen = torch.Generator().manual_seed(73)
    for shape in ((5, 4), (3, 6)):
        x = torch.randn(shape, generator=gen)
        for kind, expected in _KINDS.items():
            tried = f"fail_guard(x, {kind!r}) with x of shape {shape}, float32, contiguous"
            new = answer(x.clone(), kind)
            if not isinstance(new, torch.Tensor):
                raise Wrong("return a tensor.", "请返回一个张量。", tried=tried, got=type(new).__name__)
            with _fresh_dynamo():
                cap = capture(_guarded, x)
                cap.call_again(new)
            reasons = [first_line(r.reason) for r in cap.recompiles]
            if not reasons:
                raise Wrong(f"no guard failed: the compiled function accepted the new tensor as it was. "
                            f"Change the tensor's {kind}.",
                            f"没有守卫失败：编译好的函数直接接受了新张量。请改变张量的 {kind}。",
                            tried=tried, expected=f"a recompile: tensor 'x' {expected}",
                            got=f"no recompile (shape {tuple(new.shape)}, {new.dtype}, stride {new.stride()}, "
                                f"requires_grad={new.requires_grad})")
            if expected in reasons[0]:
                continue
            if kind == "stride" and "size mismatch" in reasons[0]:
                hint = ("the shape changed as well (x.t() swaps the sizes); keep x's shape and change only the "
                        "strides, i.e. the order in which the same shape is laid out in memory.",
                        "形状也变了（x.t() 会交换各维尺寸）；请保持 x 的形状不变，只改变步长，即同样形状的数据在内存中的排列顺序。")
            else:
                hint = (f"a different guard failed first; change only the {kind} and keep everything else as in x.",
                        f"先失败的是另一个守卫；请只改变 {kind}，其余保持与 x 相同。")
            raise Wrong(*hint, tried=tried, expected=f"tensor 'x' {expected}", got=reasons[0])


# -- lab07.4 ---------------------------------------------------------------------------

class Router(nn.Module):
    """The model of exercise 4: which layer runs depends on the input's norm."""

    def __init__(self) -> None:
        super().__init__()
        self.small = nn.Linear(4, 4)
        self.large = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.norm() > 2.0:
            return torch.relu(self.large(x))
        return self.small(x) * 0.5


def _has_cond(gm: torch.fx.GraphModule) -> bool:
    return any(node.target is torch.ops.higher_order.cond for node in gm.graph.nodes)


@task("lab07.4", "torch.cond so that torch.export works", "用 torch.cond 让 torch.export 成功")
def _cond_router(answer: Any) -> None:
    model = answer() if isinstance(answer, type) else answer
    if not isinstance(model, nn.Module):
        raise Wrong("pass the class CondRouter (or an instance of it).",
                    "请传入 CondRouter 类（或它的实例）。", got=type(model).__name__)
    torch.manual_seed(74)
    reference = Router().eval()
    try:
        model.load_state_dict(reference.state_dict())
    except RuntimeError as exc:
        raise Wrong("keep Router's layers (self.small, self.large) so the weights can be loaded.",
                    "请保留 Router 的层（self.small、self.large），以便加载权重。",
                    got=first_line(str(exc))) from None
    model.eval()
    gen = torch.Generator().manual_seed(47)
    direction = torch.randn(3, 4, generator=gen)
    direction = direction / direction.norm()
    inputs = [("x with norm 5 (the large branch)", 5 * direction), ("x with norm 0.5 (the small branch)", 0.5 * direction)]
    with torch.no_grad():
        for label, x in inputs:  # eager first: a stub raises NotImplementedError here
            diff = _differs(model(x), reference(x))
            if diff:
                raise Wrong("run eagerly, CondRouter gives a different result from Router.",
                            "在 eager 模式下，CondRouter 的结果与 Router 不同。",
                            tried=f"CondRouter()({label})", expected="Router()(x)", got=diff)
    with _fresh_dynamo(), contextlib.redirect_stderr(io.StringIO()):
        try:
            exported = torch.export.export(model, (inputs[0][1],))
        except Exception as exc:
            raise Wrong("torch.export refused the model: a Python `if` on a tensor cannot be exported; "
                        "use torch.cond(pred, true_fn, false_fn, (x,)).",
                        "torch.export 拒绝了这个模型：依据张量数值的 Python `if` 无法导出；"
                        "请使用 torch.cond(pred, true_fn, false_fn, (x,))。",
                        tried="torch.export.export(CondRouter(), (x,))", expected="an ExportedProgram",
                        got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
        if not _has_cond(exported.graph_module):
            raise Wrong("the export worked, but its graph has no cond: this exercise asks for torch.cond, so that only "
                        "the chosen branch runs.",
                        "导出成功了，但图中没有 cond：本题要求使用 torch.cond，使运行时只执行被选中的分支。",
                        tried="torch.export.export(CondRouter(), (x,))",
                        expected="a torch.ops.higher_order.cond node", got="no cond node")
        runnable = exported.module()
        with torch.no_grad():
            for label, x in inputs:
                diff = _differs(runnable(x), reference(x))
                if diff:
                    raise Wrong("the exported program gives a different result from Router on one branch.",
                                "导出的程序在其中一个分支上与 Router 结果不同。",
                                tried=f"exported.module()({label})", expected="Router()(x)", got=diff)
