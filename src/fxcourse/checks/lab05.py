"""Checkers for labs/lab05_fx_limits.ipynb (lecture course/05_fx_limits.ipynb).

Each task hands the learner's function models defined here, which the learner has not seen,
and checks three things: the result is an ``fx.GraphModule`` that FX produced (not the eager
model), it matches the eager model on new inputs, and its structure is the one the escape
hatch should give (a guarded placeholder, one ``call_module`` per leaf, one ``call_function``
per helper call).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import fx, nn

from . import Wrong, task
from .._text import one_line_error


def _need_callable(answer: Any, name: str) -> None:
    if not callable(answer) or isinstance(answer, type):
        raise Wrong(f"pass the function itself, e.g. check(..., {name}).",
                    f"请传入函数本身，例如 check(..., {name})。", got=type(answer).__name__)


def _need_graph_module(got: Any, model: Any, tried: str) -> fx.GraphModule:
    if got is model:
        raise Wrong("that is the eager model itself; return the GraphModule that FX built.",
                    "这是 eager 模型本身；请返回 FX 构建的 GraphModule。", tried=tried, got=type(got).__name__)
    if isinstance(got, fx.Graph):
        raise Wrong("that is an fx.Graph; wrap it in a module: fx.GraphModule(tracer.root, graph).",
                    "这是一个 fx.Graph；请把它包装成模块：fx.GraphModule(tracer.root, graph)。",
                    tried=tried, got="torch.fx.Graph")
    if not isinstance(got, fx.GraphModule):
        raise Wrong("return a torch.fx.GraphModule, the object FX tracing produces.",
                    "请返回 torch.fx.GraphModule，即 FX 追踪得到的对象。", tried=tried, got=type(got).__name__)
    return got


def _compare(label: str, got: Any, want: torch.Tensor, hint: tuple[str, str]) -> None:
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        shown = f"shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
        raise Wrong(*hint, tried=label, expected=f"tensor of shape {tuple(want.shape)}", got=shown)
    if got.dtype.is_floating_point or want.dtype.is_floating_point:
        same = torch.allclose(got.float(), want.float(), atol=1e-5, rtol=1e-4)
    else:
        same = torch.equal(got, want.to(got.dtype))
    if not same:
        diff = (got.float() - want.float()).abs().max()
        raise Wrong(*hint, tried=label, expected="the eager model's output",
                    got=f"max abs difference {float(diff):.3g}")


_FAILS = ("the traced module fails on a new input.", "追踪得到的模块在新输入上运行失败。")
_DIFFERS = ("on a new input the result differs from the eager model.", "在新输入上结果与 eager 模型不一致。")


def _matches_eager(gm: Any, model: Any, cases: list[tuple[str, tuple[Any, ...]]],
                   fails: tuple[str, str] = _FAILS, differs: tuple[str, str] = _DIFFERS) -> None:
    """Run ``gm`` and the eager ``model`` on each ``(label, args)`` case and compare."""
    for label, args in cases:
        with torch.no_grad():
            want = model(*args)
            try:
                out = gm(*args)
            except Exception as exc:
                raise Wrong(*fails, tried=label, got=one_line_error(exc)) from None
        _compare(label, out, want, differs)


def _root_before_trace(exc: AttributeError, tried: str) -> Wrong:
    """``fx.GraphModule(tracer.root, tracer.trace(m))`` reads ``root`` before ``trace`` sets it."""
    return Wrong("tracer.root exists only after tracer.trace(...) has run, and Python evaluates "
                 "fx.GraphModule(tracer.root, tracer.trace(model)) left to right. Trace first: "
                 "graph = tracer.trace(model), then fx.GraphModule(tracer.root, graph).",
                 "tracer.root 只有在 tracer.trace(...) 运行之后才存在，而 Python 从左到右求值 "
                 "fx.GraphModule(tracer.root, tracer.trace(model))。请先追踪：graph = tracer.trace(model)，"
                 "再 fx.GraphModule(tracer.root, graph)。",
                 tried=tried, got=one_line_error(exc))


def _is_fx_refusal(exc: BaseException) -> bool:
    """The errors symbolic_trace raises when Python asks a Proxy for a value."""
    text = str(exc)
    return isinstance(exc, fx.proxy.TraceError) or "Proxy" in text or "symbolic tracing" in text


# -- lab05.1: concrete_args ------------------------------------------------------------------
class _Pool(nn.Module):
    """Pools over the sequence dimension; `mode` picks how."""

    def __init__(self, d: int = 5) -> None:
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, x: torch.Tensor, mode: str = "mean") -> torch.Tensor:
        h = torch.tanh(self.proj(x))  # (batch, seq, d)
        if mode == "max":
            return h.amax(1)
        if mode == "sum":
            return h.sum(1)
        return h.mean(1)


class _Calibrated(nn.Module):
    """A classifier head whose output form depends on `mode` (default not the first tried)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(3, 6)
        self.fc2 = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor, mode: str = "probs") -> torch.Tensor:
        y = self.fc2(torch.relu(self.fc1(x)))
        if mode == "logits":
            return y
        if mode == "log_probs":
            return y.log_softmax(-1)
        return y.softmax(-1)


def _guard_value(gm: fx.GraphModule) -> str | None:
    """The value FX's concrete_args guard for `mode` expects, or None when there is no guard."""
    prefix = "mode has been specialized to have value "
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._assert and len(node.args) > 1:
            message = str(node.args[1])
            if message.startswith(prefix):
                return message[len(prefix):].rsplit(" but got", 1)[0]
    return None


@task("lab05.1", "specialise a mode argument with concrete_args", "用 concrete_args 特化 mode 参数")
def _concrete_mode(answer: Any) -> None:
    _need_callable(answer, "trace_for_mode")
    cases: list[tuple[nn.Module, list[str], Callable[[int], torch.Tensor]]] = [
        (_Pool(), ["mean", "max", "sum"], lambda b: torch.randn(b, 7, 5)),
        (_Calibrated(), ["logits", "log_probs", "probs"], lambda b: torch.randn(b, 3)),
    ]
    torch.manual_seed(5)
    for model, modes, make_input in cases:
        model.eval()
        for mode in modes:
            tried = f"trace_for_mode({type(model).__name__}(), {mode!r})"
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = answer(model, mode)
            except fx.proxy.TraceError as exc:
                raise Wrong("symbolic_trace still met `if mode == ...` with a Proxy: pass "
                            "concrete_args={'mode': mode}; the key must be spelled exactly like forward's "
                            "parameter, or FX silently ignores it.",
                            "symbolic_trace 仍然拿着 Proxy 去判断 `if mode == ...`：请传入 "
                            "concrete_args={'mode': mode}；键必须与 forward 的参数名完全一致，否则 FX 会悄悄忽略它。",
                            tried=tried, got=one_line_error(exc)) from None
            gm = _need_graph_module(got, model, tried)
            fixed = _guard_value(gm)
            if fixed is None:
                raise Wrong("the graph has no guard for `mode`. Trace with "
                            "fx.symbolic_trace(model, concrete_args={'mode': mode}): FX then keeps a placeholder "
                            "`mode_1` and adds torch._assert so that other modes are refused.",
                            "计算图中没有针对 `mode` 的守卫。请用 fx.symbolic_trace(model, "
                            "concrete_args={'mode': mode}) 追踪：FX 会保留 placeholder `mode_1`，并加入 "
                            "torch._assert 拒绝其他 mode。",
                            tried=tried, expected="a torch._assert node for mode", got="no guard")
            if fixed != mode:
                raise Wrong("the graph is specialised to another mode: use the `mode` argument of "
                            "trace_for_mode, not a fixed string.",
                            "计算图被特化成了另一个 mode：请使用 trace_for_mode 的 `mode` 参数，而不是写死的字符串。",
                            tried=tried, expected=f"specialised to {mode!r}", got=f"specialised to {fixed!r}")
            inputs = [make_input(batch) for batch in (2, 5)]
            _matches_eager(
                gm, model, [(f"{tried}(x of shape {tuple(x.shape)}, {mode!r})", (x, mode)) for x in inputs],
                fails=("the traced module fails when called as gm(x, mode).",
                       "以 gm(x, mode) 调用追踪得到的模块时失败。"),
                differs=("on a new input the result differs from the eager model: fix only `mode`, "
                         "leave x a placeholder.",
                         "在新输入上结果与 eager 模型不一致：只固定 `mode`，x 要保持为 placeholder。"))


# -- lab05.2: leaf modules -------------------------------------------------------------------
class _Threshold(nn.Module):
    """Data-dependent: shifts its output down when the maximum is large."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        if y.max() > 1.0:
            return y - y.max()
        return y


class _Rescale(nn.Module):
    """Data-dependent, no parameters: normalises only large inputs."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.norm()
        if n > 4.0:
            return x / n
        return x


class _Block(nn.Module):
    """Traceable custom block: must be traced through, not kept as a leaf."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + x


class _NetA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = _Block()
        self.gate = _Threshold()
        self.post = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.post(self.gate(self.pre(x)))


class _NetB(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), _Rescale(), nn.Tanh())
        self.skip = _Rescale()
        self.block = _Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.body(x) + self.skip(x))


class _NetC(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = _Rescale()
        self.mid = _Block()
        self.head = _Threshold()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mid(self.norm(x)))


def _expected_modules(model: nn.Module, leaf_types: tuple[type, ...]) -> tuple[set[str], set[str], set[str]]:
    """(leaf paths, torch.nn paths outside leaves, custom traceable paths) of a checker model."""
    leaves = {n for n, m in model.named_modules() if n and isinstance(m, leaf_types)}

    def inside(name: str) -> bool:
        return any(name.startswith(leaf + ".") for leaf in leaves)

    default = {n for n, m in model.named_modules() if n and n not in leaves and not inside(n)
               and m.__module__.startswith("torch.nn") and not isinstance(m, nn.Sequential)}
    custom = {n for n, m in model.named_modules() if n and n not in leaves and not inside(n)
              and not m.__module__.startswith("torch.nn")}
    return leaves, default, custom


@task("lab05.2", "keep data-dependent submodules as leaves", "把依赖数据的子模块保留为叶子")
def _leaf_modules(answer: Any) -> None:
    _need_callable(answer, "trace_with_leaves")
    cases = [(_NetA, (_Threshold,)), (_NetB, (_Rescale,)), (_NetC, (_Rescale, _Threshold))]
    for build, leaf_types in cases:
        torch.manual_seed(3)
        model = build().eval()
        names = ", ".join(t.__name__ for t in leaf_types)
        tried = f"trace_with_leaves({build.__name__}(), ({names},))"
        try:
            got = answer(model, leaf_types)
        except AttributeError as exc:
            if "root" not in str(exc):
                raise
            raise _root_before_trace(exc, tried) from None
        except fx.proxy.TraceError as exc:
            raise Wrong("tracing still entered a data-dependent module. Decide by the module's type, "
                        "isinstance(m, leaf_types), not by its name: the same class can sit anywhere, under "
                        "any name (here also inside an nn.Sequential).",
                        "追踪仍然进入了依赖数据的模块。请按模块的类型判断，即 isinstance(m, leaf_types)，而不是按"
                        "名字：同一个类可以出现在任何位置、叫任何名字（这里还有一个在 nn.Sequential 里面）。",
                        tried=tried, got=one_line_error(exc)) from None
        gm = _need_graph_module(got, model, tried)
        called = [str(n.target) for n in gm.graph.nodes if n.op == "call_module"]
        leaves, default, custom = _expected_modules(model, leaf_types)
        too_coarse = sorted(custom & set(called))
        if too_coarse:
            raise Wrong("a traceable custom module became a leaf too: return True only for instances of "
                        "leaf_types, and super().is_leaf_module(...) for the rest.",
                        "一个可以追踪的自定义模块也成了叶子：只对 leaf_types 的实例返回 True，其余模块交给 "
                        "super().is_leaf_module(...)。",
                        tried=tried, expected=f"traced through: {', '.join(sorted(custom))}",
                        got=f"call_module {', '.join(too_coarse)}")
        missing_default = sorted(default - set(called))
        if missing_default:
            raise Wrong("torch.nn layers were traced through instead of staying one call_module each: "
                        "for modules that are not in leaf_types, return super().is_leaf_module(m, "
                        "module_qualified_name).",
                        "torch.nn 中的层被追踪展开了，而不是各自保持为一个 call_module：对不属于 leaf_types "
                        "的模块，请返回 super().is_leaf_module(m, module_qualified_name)。",
                        tried=tried, expected=f"call_module {', '.join(sorted(default))}",
                        got=f"call_module {', '.join(sorted(called)) or '(none)'}")
        for leaf in sorted(leaves):
            count = called.count(leaf)
            if count != 1:
                raise Wrong("each leaf-type submodule should be exactly one call_module node.",
                            "每个属于 leaf_types 的子模块都应当恰好是一个 call_module 节点。",
                            tried=tried, expected=f"1 call_module node for {leaf!r}",
                            got=f"{count} node(s); call_module targets: {', '.join(called)}")
        _matches_eager(gm, model, [(f"{tried}(x * {scale})", (scale * torch.randn(3, 4),))
                                   for scale in (0.05, 5.0)])


# -- lab05.3: a helper kept as one call_function ----------------------------------------------
# Public names on purpose: FX's autowrap skips module globals whose name starts with "_".
def take_first(x: torch.Tensor, k: int) -> torch.Tensor:
    """The first k columns, zero-padded when x is narrower: an `if` on a size."""
    n = x.shape[-1]
    if n >= k:
        return x[..., :k]
    return F.pad(x, (0, k - n))


def mix_parts(parts: Any) -> torch.Tensor:
    """parts[0] + 2 * parts[1] + 3 * parts[2] + ...: a loop over len(parts)."""
    out = parts[0]
    for i in range(1, len(parts)):
        out = out + parts[i] * (i + 1)
    return out


class _TwoCalls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(take_first(x, 3)) + take_first(2 * x, 3)


class _Mixer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(mix_parts(self.lin(x).chunk(3, dim=-1)))


@task("lab05.3", "keep a helper function as one call_function", "把辅助函数保留为一个 call_function")
def _helper_leaf(answer: Any) -> None:
    _need_callable(answer, "trace_keeping")
    cases = [(_TwoCalls, take_first, 2, [(2, 2), (2, 3), (4, 5)]),
             (_Mixer, mix_parts, 1, [(2, 6), (5, 6)])]
    for build, fn, calls, shapes in cases:
        torch.manual_seed(4)
        model = build().eval()
        tried = f"trace_keeping({build.__name__}(), {fn.__name__})"
        try:
            got = answer(model, fn)
        except AttributeError as exc:
            if "root" not in str(exc):
                raise
            raise _root_before_trace(exc, tried) from None
        except NotImplementedError as exc:
            if "top level" not in str(exc):
                raise  # the stub: "not yet implemented"
            raise Wrong("torch.fx.wrap must run at the top level of the module that calls the function, so it "
                        "cannot be used inside trace_keeping. Give the function object to the tracer: "
                        "fx.Tracer(autowrap_functions=(fn,)).",
                        "torch.fx.wrap 必须在调用该函数的模块的顶层执行，所以不能在 trace_keeping 内部使用。请把函数"
                        "对象交给追踪器：fx.Tracer(autowrap_functions=(fn,))。",
                        tried=tried, got=one_line_error(exc)) from None
        except (fx.proxy.TraceError, RuntimeError, TypeError) as exc:
            if not _is_fx_refusal(exc):
                raise
            raise Wrong("tracing still went into the helper. torch.fx.wrap at the top of your notebook only "
                        "patches names in your notebook's module; this model lives in another module. Pass "
                        "the function to the tracer: fx.Tracer(autowrap_functions=(fn,)).",
                        "追踪仍然进入了辅助函数内部。写在 notebook 顶层的 torch.fx.wrap 只替换 notebook 所在模块"
                        "中的名字，而这个模型定义在另一个模块里。请把函数交给追踪器："
                        "fx.Tracer(autowrap_functions=(fn,))。",
                        tried=tried, got=one_line_error(exc)) from None
        gm = _need_graph_module(got, model, tried)
        count = sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is fn)
        if count != calls:
            raise Wrong("every call of the helper should be one call_function node whose target is the "
                        "helper itself.",
                        "辅助函数的每次调用都应当是一个 call_function 节点，其 target 就是该函数本身。",
                        tried=tried, expected=f"{calls} call_function node(s) for {fn.__name__}",
                        got=f"{count}")
        _matches_eager(gm, model, [(f"{tried}(x of shape {shape})", (torch.randn(*shape),))
                                   for shape in shapes])


# -- lab05.4: a value-dependent size that FX can trace ------------------------------------------
def _position_ids(lengths: torch.Tensor) -> torch.Tensor:
    """Reference: position of each slot, -1 on padding; shape (batch, max(lengths))."""
    n = int(lengths.max())
    pos = torch.arange(n).expand(len(lengths), n)
    return pos.masked_fill(pos >= lengths[:, None], -1)


@task("lab05.4", "a value-dependent size that symbolic_trace accepts", "让 symbolic_trace 接受依赖数值的尺寸")
def _position_ids_fx(answer: Any) -> None:
    _need_callable(answer, "position_ids_fx")
    try:
        gm = fx.symbolic_trace(answer)
    except (fx.proxy.TraceError, RuntimeError, TypeError) as exc:
        if not _is_fx_refusal(exc):
            raise
        raise Wrong("symbolic_trace still refuses: int(...) and len(...) ask a Proxy for a Python number. "
                    "Pass the 0-d tensor lengths.max() to torch.arange directly, and use broadcasting "
                    "(lengths[:, None]) instead of len(lengths).",
                    "symbolic_trace 仍然拒绝：int(...) 和 len(...) 都在向 Proxy 要 Python 数字。请把 0 维张量 "
                    "lengths.max() 直接传给 torch.arange，并用广播（lengths[:, None]）代替 len(lengths)。",
                    tried="fx.symbolic_trace(position_ids_fx)", got=one_line_error(exc)) from None
    for values in ([3, 1, 4], [2, 9], [1], [0, 2, 5, 5], [7, 7]):
        lengths = torch.tensor(values)
        want = _position_ids(lengths)
        try:
            out = gm(lengths)
        except Exception as exc:
            raise Wrong("the traced function fails on new lengths.", "追踪得到的函数在新的 lengths 上运行失败。",
                        tried=f"symbolic_trace(position_ids_fx)(tensor({values}))",
                        got=one_line_error(exc)) from None
        _compare(f"symbolic_trace(position_ids_fx)(tensor({values}))", out, want,
                 ("the result differs from position_ids: the width must be this input's lengths.max() "
                  "(not a fixed number, not the batch size), with -1 on padding.",
                  "结果与 position_ids 不一致：宽度必须是当前输入的 lengths.max()（不是固定的数，也不是 batch "
                  "大小），padding 位置为 -1。"))
