"""Checkers for labs/lab05_fx_limits.ipynb (lecture course/05_fx_limits.ipynb).

Each task hands the learner's function models defined here, which the learner has not seen,
and checks three things: the result is an ``fx.GraphModule`` that FX produced (not the eager
model), it matches the eager model on new inputs, and its structure is the one the escape
hatch should give (a guarded placeholder, one ``call_module`` per leaf, one ``call_function``
per helper call).
"""
from __future__ import annotations

import inspect
import sys
import warnings
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import fx, nn

from . import Wrong, task
from .._lang import Bilingual
from .._text import one_line_error
from ._probe import Mistake, Probe, built, called, describe, differs, need_callable, run_probes


_GUARD_NODE = ("a torch._assert node for mode", "针对 mode 的 torch._assert 节点")


def _need_graph_module(got: Any, model: Any, tried: str) -> fx.GraphModule:
    if got is model:
        raise Wrong("that is the eager model itself; return the GraphModule that FX built.",
                    "这是 eager 模型本身；请返回 FX 构建的 GraphModule。", tried=tried, got=type(got).__name__)
    if isinstance(got, fx.Graph):
        raise Wrong("that is an fx.Graph, which cannot run on its own: wrap it in a GraphModule together "
                    "with the module the tracer traced (lecture 05, section 3).",
                    "这是一个 fx.Graph，它自己不能运行：请把它和追踪器追踪的那个模块一起包装成 GraphModule"
                    "（第 05 讲第 3 节）。",
                    tried=tried, got="torch.fx.Graph")
    if not isinstance(got, fx.GraphModule):
        raise Wrong("return a torch.fx.GraphModule, the object FX tracing produces.",
                    "请返回 torch.fx.GraphModule，即 FX 追踪得到的对象。", tried=tried, got=describe(got))
    return got


_ZH_MODE = {"training": "训练", "eval": " eval "}


def _modes(model: nn.Module) -> dict[str, bool]:
    return {name or "(the model itself)": m.training for name, m in model.named_modules()}


def _require_modes_kept(before: dict[str, bool], model: nn.Module, tried: Bilingual, fn: str) -> None:
    """Tracing reads the model: ``model.eval()`` (or ``.train()``) on it changes the caller's model."""
    changed = [name for name, mode in _modes(model).items() if before.get(name, mode) != mode]
    if changed:
        now = "eval" if not dict(_modes(model))[changed[0]] else "training"
        raise Wrong(f"{fn} switched the model it was handed to {now} mode ({changed[0]!r}): .eval() and .train() "
                    "change the caller's model in place, so a BatchNorm or Dropout of theirs silently behaves "
                    "differently afterwards. Tracing does not need either: trace the model as it is.",
                    f"{fn} 把传入的模型切换成了{_ZH_MODE[now]}模式（{changed[0]!r}）：.eval() 和 .train() 会原地改动调用者的模型，"
                    "之后其中的 BatchNorm 或 Dropout 会悄悄换一种行为。追踪并不需要切换模式：请按模型原样追踪。",
                    tried=tried, expected=("the model's train/eval modes unchanged", "模型的 train/eval 模式保持不变"),
                    got=(f"{changed[0]!r} switched", f"{changed[0]!r} 的模式被切换了"))


def _require_same_modes(gm: fx.GraphModule, model: nn.Module, tried: Bilingual) -> None:
    """The traced layers run in the mode the model's layers are in (a copy switched to eval is not the model)."""
    called = [str(n.target) for n in gm.graph.nodes if n.op == "call_module"]
    layers = {name: m.training for name, m in model.named_modules() if name in called}
    other = next((name for name in called if name in layers and gm.get_submodule(name).training != layers[name]), None)
    if other is not None:
        mode, now = ("training", "eval") if layers[other] else ("eval", "training")
        raise Wrong(f"the returned GraphModule's {other!r} is in {now} mode, while the model's {other!r} is in {mode} "
                    "mode: you traced a copy in another mode, so a BatchNorm or Dropout would behave differently "
                    "from the model. Trace the model as it is.",
                    f"返回的 GraphModule 中的 {other!r} 处于{_ZH_MODE[now]}模式，而模型中的 {other!r} 处于{_ZH_MODE[mode]}模式：你追踪的是"
                    "切换了模式的副本，其中的 BatchNorm 或 Dropout 会与模型表现不同。请按模型原样追踪。",
                    tried=tried, expected=(f"{other!r} in {mode} mode", f"{other!r} 处于{_ZH_MODE[mode]}模式"),
                    got=(f"{other!r} in {now} mode", f"{other!r} 处于{_ZH_MODE[now]}模式"))


def _compare(label: Bilingual, got: Any, want: torch.Tensor, hint: tuple[str, str]) -> None:
    """The whole result: type, shape, dtype and values."""
    diff = differs(got, want, rtol=1e-4, atol=1e-5)
    if diff is not None:
        raise Wrong(*hint, tried=label, expected=describe(want), got=diff)


_FAILS = ("the traced module fails on a new input.", "追踪得到的模块在新输入上运行失败。")
_DIFFERS = ("on a new input the result differs from the eager model.", "在新输入上结果与 eager 模型不一致。")


def _matches_eager(gm: Any, model: Any, cases: list[tuple[Bilingual, tuple[Any, ...]]],
                   fails: tuple[str, str] = _FAILS, differs: tuple[str, str] = _DIFFERS) -> None:
    """Run ``gm`` and the eager ``model`` on each ``(label, args)`` case and compare."""
    for label, args in cases:
        with torch.no_grad():
            want = model(*args)
        out = called(gm, args, tried=label, en=fails[0], zh=fails[1])
        _compare(label, out, want, differs)


def _root_before_trace(exc: AttributeError, tried: str) -> Wrong:
    """``fx.GraphModule(tracer.root, tracer.trace(m))`` reads ``root`` before ``trace`` sets it."""
    return Wrong("tracer.root exists only after the tracer's trace(...) has run, and Python evaluates a "
                 "call's arguments left to right, so an expression that reads tracer.root before the "
                 "trace call reads it too early: run the trace in its own step first.",
                 "tracer.root 只有在追踪器的 trace(...) 运行之后才存在，而 Python 从左到右求值函数调用的参数，"
                 "所以在 trace 调用之前读取 tracer.root 的表达式读得太早了：请先单独执行一步追踪。",
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


class _Tempered(nn.Module):
    """A second defaulted parameter after `mode`: only `mode` is to be fixed."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, mode: str = "plain", temp: float = 2.0) -> torch.Tensor:
        y = self.lin(x) / temp
        if mode == "soft":
            return y.softmax(-1)
        return y


class _LateMode(nn.Module):
    """`mode` is the third parameter, after a float `temp`: a mode found by position is the wrong one."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor, temp: float = 1.0, mode: str = "a") -> torch.Tensor:
        y = self.lin(x) * temp
        if mode == "soft":
            return y.softmax(-1)
        if mode == "log":
            return y.log_softmax(-1)
        return y


def _signature(model: nn.Module) -> str:
    """forward's parameters as written, e.g. ``(x, mode='plain', temp=2.0)``."""
    params = inspect.signature(model.forward).parameters.values()
    return "(" + ", ".join(p.name if p.default is inspect.Parameter.empty else f"{p.name}={p.default!r}"
                           for p in params) + ")"


def _other_guards(gm: fx.GraphModule) -> list[str]:
    """Parameters other than `mode` that FX's concrete_args guards specialise."""
    found = []
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._assert and len(node.args) > 1:
            message = str(node.args[1])
            if " has been specialized to have value " in message and not message.startswith("mode "):
                found.append(message.split(" ", 1)[0])
    return found


def _guard_value(gm: fx.GraphModule) -> str | None:
    """The value FX's concrete_args guard for `mode` expects, or None when there is no guard."""
    prefix = "mode has been specialized to have value "
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch._assert and len(node.args) > 1:
            message = str(node.args[1])
            if message.startswith(prefix):
                return message[len(prefix):].rsplit(" but got", 1)[0]
    return None


@task("lab05.1", "specialise a mode argument with concrete_args", "用 concrete_args 特化 mode 参数", hints=[
    ("The branch depends only on `mode`, a plain string. Give the tracer its value, so the `if` can be "
     "decided while tracing, and keep x a traced input.",
     "分支只取决于 `mode`，一个普通字符串。把它的值交给追踪器，这样追踪时就能判断 `if`，而 x 仍是被追踪的输入。"),
    ("Lecture 05, section 2 (`concrete_args`: fix an argument's value): how to pass the value, keyed by "
     "the parameter's name, and the placeholder and torch._assert guard FX keeps for it.",
     "第 05 讲第 2 节（`concrete_args`：把参数固定为具体值）：如何按参数名传入这个值，以及 FX 为它保留的 "
     "placeholder 和 torch._assert 守卫。"),
])
def _concrete_mode(answer: Any) -> None:
    need_callable(answer, "trace_for_mode")
    cases: list[tuple[nn.Module, list[str], Callable[[int], torch.Tensor], tuple[Any, ...]]] = [
        (built(_Pool, 2), ["mean", "max", "sum"], lambda b: torch.randn(b, 7, 5, generator=gen), ()),
        (built(_Calibrated, 3), ["logits", "log_probs", "probs"], lambda b: torch.randn(b, 3, generator=gen), ()),
        (built(_Tempered, 4), ["soft", "plain"], lambda b: torch.randn(b, 4, generator=gen), ()),
        (built(_LateMode, 5), ["soft", "log"], lambda b: torch.randn(b, 4, generator=gen), (1.5,)),
    ]
    gen = torch.Generator().manual_seed(5)
    for model, modes, make_input, between in cases:
        model.train(model is cases[0][0])  # the first model in training mode: the answer must leave it so
        for mode in modes:
            tried = f"trace_for_mode({type(model).__name__}(), {mode!r})"
            before = _modes(model)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = answer(model, mode)
            except fx.proxy.TraceError as exc:
                late = ((f" This model's forward is {_signature(model)}: mode is not its second parameter, so find it "
                         "by its name, not by its position.",
                         f"这个模型的 forward 是 {_signature(model)}：mode 不是它的第二个参数，所以要按名字找它，"
                         "而不是按位置。") if between else
                        (f" This model's forward is {_signature(model)}.", f"这个模型的 forward 是 {_signature(model)}。"))
                raise Wrong("symbolic_trace still met `if mode == ...` with a Proxy, so mode was not fixed: "
                            "a concrete_args key must be spelled exactly like forward's parameter, or FX "
                            "silently ignores it." + late[0],
                            "symbolic_trace 仍然拿着 Proxy 去判断 `if mode == ...`，说明 mode 没有被固定："
                            "concrete_args 的键必须与 forward 的参数名完全一致，否则 FX 会悄悄忽略它。" + late[1],
                            tried=tried, got=one_line_error(exc)) from None
            gm = _need_graph_module(got, model, tried)
            _require_modes_kept(before, model, tried, "trace_for_mode")
            _require_same_modes(gm, model, tried)
            others = _other_guards(gm)
            if others:
                raise Wrong(f"besides `mode`, the parameter {others[0]!r} was fixed through concrete_args too: only mode "
                            "is to be specialised; every other parameter of forward stays an input of the graph, with "
                            f"its default (this model's forward is {_signature(model)}).",
                            f"除了 `mode`，参数 {others[0]!r} 也通过 concrete_args 被固定了：只应特化 mode；forward 的其他"
                            f"参数都要保持为计算图的输入，并保留各自的默认值（这个模型的 forward 是 {_signature(model)}）。",
                            tried=tried, expected=("only mode specialised", "只特化 mode"),
                            got=(f"{others[0]} specialised too", f"{others[0]} 也被特化了"))
            fixed = _guard_value(gm)
            if fixed is None and any(n.op == "placeholder" and n.name.startswith("mode_")
                                     for n in gm.graph.nodes):
                raise Wrong("`mode` was fixed, but the graph's torch._assert guard for it is gone: keep the guard "
                            "FX adds, since it is what refuses a call with another mode (lecture 05, section 2).",
                            "`mode` 已经固定了，但计算图中针对它的 torch._assert 守卫不见了：请保留 FX 加入的守卫，"
                            "正是它拒绝用其他 mode 调用（第 05 讲第 2 节）。",
                            tried=tried, expected=_GUARD_NODE,
                            got=("a mode_1 placeholder, no guard", "有 placeholder mode_1，却没有守卫"))
            if fixed is None:
                raise Wrong("the graph has no guard for `mode`: the model was not traced with `mode` fixed "
                            "through concrete_args, which keeps a placeholder `mode_1` and adds a torch._assert "
                            "that refuses other modes (lecture 05, section 2).",
                            "计算图中没有针对 `mode` 的守卫：模型不是通过 concrete_args 固定 `mode` 追踪的——那样 FX "
                            "会保留 placeholder `mode_1`，并加入拒绝其他 mode 的 torch._assert（第 05 讲第 2 节）。",
                            tried=tried, expected=_GUARD_NODE, got=("no guard", "没有守卫"))
            if fixed != mode:
                raise Wrong("the graph is specialised to another mode: use the `mode` argument of "
                            "trace_for_mode, not a fixed string.",
                            "计算图被特化成了另一个 mode：请使用 trace_for_mode 的 `mode` 参数，而不是写死的字符串。",
                            tried=tried, expected=(f"specialised to {mode!r}", f"特化为 {mode!r}"),
                            got=(f"specialised to {fixed!r}", f"特化为 {fixed!r}"))
            inputs = [make_input(batch) for batch in (2, 5)]
            shown = "".join(f", {v!r}" for v in between)
            call = "gm(x, temp, mode)" if between else "gm(x, mode)"
            _matches_eager(
                gm, model, [((f"{tried}(x of shape {tuple(x.shape)}{shown}, {mode!r})",
                              f"{tried}(形状为 {tuple(x.shape)} 的 x{shown}, {mode!r})"), (x, *between, mode))
                            for x in inputs],
                fails=(f"the traced module fails when called as {call}.",
                       f"以 {call} 调用追踪得到的模块时失败。"),
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


class _HoldsLeaf(nn.Module):
    """A traceable container whose ``clip`` is a leaf-type module."""

    def __init__(self) -> None:
        super().__init__()
        self.clip = _Rescale()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.clip(x) * 2


class _HoldsBlock(nn.Module):
    """A traceable container whose ``clip`` is a traceable custom block, not a leaf."""

    def __init__(self) -> None:
        super().__init__()
        self.clip = _Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.clip(x) - 1


class _Block(nn.Module):
    """Traceable custom block: must be traced through, not kept as a leaf."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + x


class _SoftRescale(_Rescale):
    """A subclass of a leaf class: an instance of ``_Rescale`` too, so a leaf as well."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.norm()
        if n > 2.0:
            return x / (2 * n)
        return x


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


class _NetD(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.soft = _SoftRescale()
        self.block = _Block()
        self.tail = nn.Sequential(nn.Linear(4, 4), _Threshold())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.block(self.soft(x)))


class _NetE(nn.Module):
    """a.clip is a leaf-type module, b.clip a traceable block: the same last name, different classes."""

    def __init__(self) -> None:
        super().__init__()
        self.a = _HoldsLeaf()
        self.b = _HoldsBlock()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.a(x))


def _exact_type_misses(model: nn.Module, leaf_types: tuple[type, ...]) -> list[str]:
    """Submodules that are instances of a leaf class through a subclass (``type(m)`` is not listed)."""
    return [n for n, m in model.named_modules() if n and isinstance(m, leaf_types) and type(m) not in leaf_types]


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


@task("lab05.2", "keep data-dependent submodules as leaves", "把依赖数据的子模块保留为叶子", hints=[
    ("For each submodule it meets, the tracer asks one question: record one call, or trace inside? You can "
     "answer it differently for some classes and leave the rest to the default answer.",
     "追踪器遇到每个子模块时都会问同一个问题：记录为一次调用，还是进入内部追踪？你可以对某些类给出不同的回答，其余的"
     "交给默认规则。"),
    ("Lecture 05, section 3 (Leaf modules: keep a submodule as one `call_module`): a Tracer subclass, "
     "deciding by class rather than by name, and building the GraphModule on the root the tracer used.",
     "第 05 讲第 3 节（叶子模块：把子模块保留为一个 `call_module`）：继承 Tracer，按类而不是按名字判断，并用追踪器"
     "所用的 root 构建 GraphModule。"),
])
def _leaf_modules(answer: Any) -> None:
    need_callable(answer, "trace_with_leaves")
    cases = [(_NetA, (_Threshold,)), (_NetB, (_Rescale,)), (_NetC, (_Rescale, _Threshold)),
             (_NetD, (_Rescale, _Threshold)), (_NetE, (_Rescale,))]
    for build, leaf_types in cases:
        model = built(build, 3, eval=build is not _NetB)  # _NetB in training mode: it must stay so
        before = _modes(model)
        names = ", ".join(t.__name__ for t in leaf_types) + ("," if len(leaf_types) == 1 else "")
        tried = f"trace_with_leaves({build.__name__}(), ({names}))"
        try:
            got = answer(model, leaf_types)
        except AttributeError as exc:
            if "root" not in str(exc):
                raise
            raise _root_before_trace(exc, tried) from None
        except fx.proxy.TraceError as exc:
            subclassed = _exact_type_misses(model, leaf_types)
            if subclassed:
                raise Wrong(f"tracing entered {subclassed[0]!r}, whose class is a subclass of one in leaf_types: an "
                            "instance of a subclass is an instance of the leaf class too, so it is a leaf as well. "
                            "Comparing a module's exact class (or its class name) with leaf_types misses it.",
                            f"追踪进入了 {subclassed[0]!r}，它的类是 leaf_types 中某个类的子类：子类的实例也是该叶子类的实例，"
                            "所以它同样是叶子。拿模块的确切类（或类名）与 leaf_types 比较会漏掉它。",
                            tried=tried, got=one_line_error(exc)) from None
            raise Wrong("tracing still entered a data-dependent module. Decide by the module's class "
                        "(leaf_types), not by its name: the same class can sit anywhere, under any name "
                        "(here also inside an nn.Sequential).",
                        "追踪仍然进入了依赖数据的模块。请按模块的类（leaf_types）判断，而不是按名字：同一个类可以出现"
                        "在任何位置、叫任何名字（这里还有一个在 nn.Sequential 里面）。",
                        tried=tried, got=one_line_error(exc)) from None
        gm = _need_graph_module(got, model, tried)
        _require_modes_kept(before, model, tried, "trace_with_leaves")
        _require_same_modes(gm, model, tried)
        called = [str(n.target) for n in gm.graph.nodes if n.op == "call_module"]
        leaves, default, custom = _expected_modules(model, leaf_types)
        too_coarse = sorted(custom & set(called))
        namesake = next(((c, leaf) for c in too_coarse for leaf in sorted(leaves)
                         if c.rsplit(".", 1)[-1] == leaf.rsplit(".", 1)[-1]), None)
        if namesake is not None:
            raise Wrong(f"{namesake[0]!r} became a leaf because its name ends in the same word as {namesake[1]!r}, an "
                        "instance of leaf_types; but it is a traceable custom module of another class. Decide by the module "
                        "object's class (isinstance with leaf_types), not by its name or the last part of its path.",
                        f"{namesake[0]!r} 成了叶子，因为它的名字结尾与 leaf_types 的实例 {namesake[1]!r} 相同；但它是另一个"
                        "类的、可以追踪的自定义模块。请按模块对象的类判断（对 leaf_types 用 isinstance），而不是按名字"
                        "或路径的最后一段。",
                        tried=tried, expected=(f"{namesake[0]!r} traced through", f"{namesake[0]!r} 被追踪展开"),
                        got=f"call_module {', '.join(sorted(called))}")
        if too_coarse:
            raise Wrong("a traceable custom module became a leaf too: only instances of leaf_types are new "
                        "leaves; every other module is decided by the tracer's default rule.",
                        "一个可以追踪的自定义模块也成了叶子：只有 leaf_types 的实例是新增的叶子；其他模块都按追踪器"
                        "的默认规则判断。",
                        tried=tried, expected=(f"traced through: {', '.join(sorted(custom))}",
                                              f"追踪展开：{', '.join(sorted(custom))}"),
                        got=f"call_module {', '.join(too_coarse)}")
        kept_whole = sorted(set(called) - leaves - default - custom)
        if kept_whole:
            raise Wrong(f"{', '.join(kept_whole)} became one call_module node, but it is neither an instance of "
                        "leaf_types nor a layer the tracer's default rule keeps (the default traces into "
                        "containers such as nn.Sequential and keeps the layers inside). Leave every module that is "
                        "not in leaf_types to the default rule.",
                        f"{', '.join(kept_whole)} 成了一个 call_module 节点，但它既不是 leaf_types 的实例，也不是追踪器默认规则"
                        "会保留的层（默认规则会进入 nn.Sequential 这类容器，保留其中的各层）。不属于 leaf_types 的模块请交给默认规则。",
                        tried=tried, expected=f"call_module {', '.join(sorted(leaves | default))}",
                        got=f"call_module {', '.join(sorted(called))}")
        missing_default = sorted(default - set(called))
        if missing_default:
            raise Wrong("torch.nn layers were traced through instead of staying one call_module each: "
                        "modules that are not in leaf_types should get the tracer's default answer, which "
                        "keeps torch.nn layers as leaves.",
                        "torch.nn 中的层被追踪展开了，而不是各自保持为一个 call_module：不属于 leaf_types 的模块应当"
                        "得到追踪器的默认回答——默认规则会把 torch.nn 的层保留为叶子。",
                        tried=tried, expected=f"call_module {', '.join(sorted(default))}",
                        got=f"call_module {', '.join(sorted(called))}" if called
                        else ("call_module (none)", "没有 call_module 节点"))
        for leaf in sorted(leaves):
            count = called.count(leaf)
            if count != 1:
                raise Wrong("each leaf-type submodule should be exactly one call_module node.",
                            "每个属于 leaf_types 的子模块都应当恰好是一个 call_module 节点。",
                            tried=tried, expected=(f"1 call_module node for {leaf!r}", f"{leaf!r} 对应 1 个 call_module 节点"),
                            got=(f"{count} node(s); call_module targets: {', '.join(called)}",
                                 f"{count} 个节点；call_module 的 target：{', '.join(called)}"))
        gen = torch.Generator().manual_seed(7)
        _matches_eager(gm, model, [(f"{tried}(x * {scale})", (scale * torch.randn(3, 4, generator=gen),))
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


def centre(x: torch.Tensor) -> torch.Tensor:
    """A traceable helper in the same module as the others: traced through unless it is ``fn``."""
    return x - x.mean(-1, keepdim=True)


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
        return torch.sigmoid(mix_parts(self.lin(centre(x)).chunk(3, dim=-1)))


def _module_globals(namespace: Any) -> bool:
    """Whether ``namespace`` is the global namespace of an imported module (not generated code's)."""
    name = namespace.get("__name__") if isinstance(namespace, dict) else None
    module = sys.modules.get(name) if isinstance(name, str) else None
    return module is not None and getattr(module, "__dict__", None) is namespace


@task("lab05.3", "keep a helper function as one call_function", "把辅助函数保留为一个 call_function", hints=[
    ("torch.fx.wrap works by patching a name in the module where it runs, and the checker's helpers live in "
     "a module you cannot edit. What could you hand the tracer instead of a name?",
     "torch.fx.wrap 的做法是在它运行的那个模块里替换一个名字，而检查器的辅助函数位于你无法修改的模块中。除了名字，"
     "你还能把什么交给追踪器？"),
    ("Lecture 05, section 4 (`torch.fx.wrap`: keep a free function as one `call_function`): the tracer's "
     "own option for keeping given function objects whole, and where each of the two works.",
     "第 05 讲第 4 节（`torch.fx.wrap`：把普通函数保留为一个 `call_function`）：追踪器自带的、把给定函数对象保留为"
     "整体的选项，以及两种做法各自在哪里有效。"),
])
def _helper_leaf(answer: Any) -> None:
    need_callable(answer, "trace_keeping")
    cases = [(_TwoCalls, take_first, 2, [(2, 2), (2, 3), (4, 5)]),
             (_Mixer, mix_parts, 1, [(2, 6), (5, 6)])]
    gen = torch.Generator().manual_seed(4)
    table = torch.fx._symbolic_trace._wrapped_fns_to_patch
    for build, fn, calls, shapes in cases:
        wrapped_before = dict(table)
        model = built(build, 4, eval=build is not _TwoCalls)  # _TwoCalls in training mode: it must stay so
        before = _modes(model)
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
                        "cannot be used inside trace_keeping. Hand the function object itself to the tracer "
                        "instead (lecture 05, section 4).",
                        "torch.fx.wrap 必须在调用该函数的模块的顶层执行，所以不能在 trace_keeping 内部使用。请改为把"
                        "函数对象本身交给追踪器（第 05 讲第 4 节）。",
                        tried=tried, got=one_line_error(exc)) from None
        except (fx.proxy.TraceError, RuntimeError, TypeError) as exc:
            if not _is_fx_refusal(exc):
                raise
            raise Wrong(f"tracing still went into the helper {fn.__name__}, the function trace_keeping was "
                        "given. Keep exactly that function object whole (not the notebook's own helper, not "
                        "a name): torch.fx.wrap in your notebook patches names only in the notebook's module, "
                        "and this model lives in another module (lecture 05, section 4).",
                        f"追踪仍然进入了辅助函数 {fn.__name__} 的内部，它正是传给 trace_keeping 的函数。请把这个函数"
                        "对象本身保留为整体（不是 notebook 自己的辅助函数，也不是一个名字）：notebook 中的 torch.fx.wrap "
                        "只替换 notebook 所在模块中的名字，而这个模型定义在另一个模块里（第 05 讲第 4 节）。",
                        tried=tried, got=one_line_error(exc)) from None
        # a GraphModule's generated code registers its own wrapped calls here (keyed by that code's globals);
        # an entry keyed by a real module's globals patches that module for every later trace
        changed = sorted(key[1] for key, where in table.items() if key not in wrapped_before and _module_globals(where))
        if changed:
            raise Wrong(f"trace_keeping changed FX's process-wide table of wrapped functions (entry {changed[0]!r}): from "
                        "now on every symbolic_trace in this session keeps that function whole, not only this call. "
                        "Keep the function whole for this one trace, with an option of the tracer you create, and "
                        "leave FX's global state as you found it.",
                        f"trace_keeping 改动了 FX 在整个进程范围内登记被包装函数的表（条目 {changed[0]!r}）：从此以后，"
                        "本会话里的每一次 symbolic_trace 都会把那个函数保留为整体，而不只是这一次调用。请通过你创建的"
                        "追踪器的选项，只在这一次追踪中保留该函数，并让 FX 的全局状态保持原样。",
                        tried=tried, expected=("FX's global wrap table unchanged", "FX 的全局包装表保持不变"),
                        got=(f"an entry {changed[0]!r} added", f"新增了条目 {changed[0]!r}"))
        gm = _need_graph_module(got, model, tried)
        _require_modes_kept(before, model, tried, "trace_keeping")
        _require_same_modes(gm, model, tried)
        count = sum(1 for n in gm.graph.nodes if n.op == "call_function" and n.target is fn)
        if count != calls:
            raise Wrong("every call of the helper should be one call_function node whose target is the "
                        "helper itself (the function object passed to trace_keeping).",
                        "辅助函数的每次调用都应当是一个 call_function 节点，其 target 就是该函数本身（即传给 trace_keeping 的函数对象）。",
                        tried=tried, expected=(f"{calls} call_function node(s) for {fn.__name__}",
                                               f"{fn.__name__} 对应 {calls} 个 call_function 节点"),
                        got=f"{count}")
        others = sorted({n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"
                         and n.target is not fn and getattr(n.target, "__module__", None) == fn.__module__})
        if others:
            raise Wrong(f"{', '.join(others)} became call_function nodes too, though only {fn.__name__} (the function "
                        "trace_keeping was given) should be kept whole: keep exactly that function object, not every "
                        "function of its module; everything else is traced through as symbolic_trace would.",
                        f"{', '.join(others)} 也成了 call_function 节点，而只有 {fn.__name__}（传给 trace_keeping 的函数）"
                        "应当保留为整体：请只保留这一个函数对象，而不是它所在模块的所有函数；其余部分都像 symbolic_trace "
                        "那样被追踪展开。",
                        tried=tried, expected=(f"only {fn.__name__} kept as call_function",
                                               f"只有 {fn.__name__} 保留为 call_function"),
                        got=(f"also {', '.join(others)}", f"还有 {', '.join(others)}"))
        _matches_eager(gm, model, [((f"{tried}(x of shape {shape})", f"{tried}(形状为 {shape} 的 x)"),
                                    (torch.randn(*shape, generator=gen),))
                                   for shape in shapes])


# -- lab05.4: a value-dependent size that FX can trace ------------------------------------------
def _position_ids(lengths: torch.Tensor) -> torch.Tensor:
    """Reference: position of each slot, -1 on padding; shape (batch, max(lengths))."""
    n = int(lengths.max())
    pos = torch.arange(n).expand(len(lengths), n)
    return pos.masked_fill(pos >= lengths[:, None], -1)


#: What symbolic_trace's error says -> what the learner's code asked of a Proxy (first match wins).
_REFUSALS: list[tuple[Callable[[BaseException], bool], str, str]] = [
    (lambda e: "int()" in str(e) or "__int__" in str(e),
     "int(...) asks a Proxy for a Python number, which it does not have while tracing. A size argument "
     "can stay a tensor: FX records the call with the tensor as its argument (lecture 05, section 5).",
     "int(...) 向 Proxy 要一个 Python 数字，而追踪时它并没有这个值。尺寸参数可以保持为张量：FX 会把这个张量作为参数"
     "记录下这次调用（第 05 讲第 5 节）。"),
    (lambda e: "'len'" in str(e) or "__len__" in str(e),
     "len(...) of a Proxy has no value while tracing. The number of rows can come from broadcasting "
     "against lengths instead of from a Python count (lecture 05, section 5).",
     "追踪时对 Proxy 调用 len(...) 得不到值。行数可以通过与 lengths 做广播得到，而不必用 Python 去数"
     "（第 05 讲第 5 节）。"),
    (lambda e: "iterate" in str(e) or "__iter__" in str(e),
     "a Python loop over a traced tensor cannot run while tracing (its length is unknown); compute every "
     "row at once with tensor operations.",
     "追踪时不能用 Python 循环遍历被追踪的张量（它的长度未知）；请用张量运算一次算出所有行。"),
    (lambda e: "control flow" in str(e) or "__bool__" in str(e),
     "an if, while or bool(...) on a traced value cannot be decided while tracing; choose the padding "
     "value with a tensor operation instead of a Python branch.",
     "追踪时无法判断基于被追踪值的 if、while 或 bool(...)；请用张量运算而不是 Python 分支来选择填充值。"),
]


def _diagnose_refusal(exc: BaseException) -> tuple[str, str]:
    for matches, en, zh in _REFUSALS:
        if matches(exc):
            return en, zh
    return ("symbolic_trace refused your function: somewhere Python needs a concrete value from a traced "
            "tensor; the error below names the operation.",
            "symbolic_trace 拒绝了你的函数：某处 Python 需要从被追踪的张量中取得具体的值；下面的错误信息指出了是哪个操作。")


def _valid_counts(t: torch.Tensor) -> list[int]:
    return [int(v) for v in (t >= 0).sum(-1)]


_POSITION_MISTAKES = [
    Mistake("dtype", lambda got, want, p: got.dtype != want.dtype,
            "positions are integers: the result should have position_ids's dtype (torch.int64).",
            "位置是整数：结果的 dtype 应与 position_ids 相同（torch.int64）。"),
    Mistake("rows", lambda got, want, p: got.ndim != 2 or got.shape[0] != want.shape[0],
            "the result needs one row per entry of lengths.",
            "结果中 lengths 的每一项都要对应一行。"),
    Mistake("one column too many", lambda got, want, p: got.shape[1] == want.shape[1] + 1,
            "the result has one column too many: the width is the largest length itself, since a row of "
            "length n holds positions 0 to n - 1.",
            "结果多了一列：宽度就是最大的那个长度本身，因为长度为 n 的行包含位置 0 到 n - 1。"),
    Mistake("width rounded", lambda got, want, p: got.ndim == 2 and want.shape[1] > 256
            and 0 < abs(got.shape[1] - want.shape[1]) <= want.shape[1] // 128,
            "the width is close to this input's largest length but not equal to it: the length was rounded by a "
            "low-precision float on the way (bfloat16 holds every integer only up to 256, float16 up to 2048; "
            "bfloat16 turns 70000 into 70144). Keep the lengths integers, or a dtype that holds them exactly.",
            "宽度接近当前输入的最大长度，但并不相等：长度在计算过程中被低精度浮点数舍入了（bfloat16 只能精确表示"
            "不超过 256 的所有整数，float16 不超过 2048；bfloat16 会把 70000 变成 70144）。请让 lengths 保持为整数，"
            "或者使用能精确表示它们的 dtype。"),
    Mistake("width", lambda got, want, p: got.shape[1] != want.shape[1],
            "the width is not this input's largest length. It must come from the lengths of each call: a width "
            "fixed in the code, or one computed once while tracing, is baked into the graph and stays wrong for "
            "other lengths.",
            "宽度不等于当前输入的最大长度。它必须由每次调用的 lengths 得出：写死在代码里的宽度，或者追踪时只算一次的宽度，"
            "都会被固化进计算图，换一组 lengths 就错了。"),
    Mistake("one slot too many", lambda got, want, p: _valid_counts(got) != _valid_counts(want)
            and _valid_counts(got) == [min(c + 1, want.shape[1]) for c in _valid_counts(want)],
            "each row has one position too many: a row of length n holds positions 0 to n - 1, and the slot "
            "at index n is already padding.",
            "每一行都多了一个位置：长度为 n 的行包含位置 0 到 n - 1，下标为 n 的位置已经是 padding。"),
    Mistake("padding value", lambda got, want, p: bool((got[want >= 0] == want[want >= 0]).all())
            and bool((got[want < 0] != -1).any()),
            "the positions are right but the padding slots do not hold -1.",
            "位置是对的，但 padding 处的值不是 -1。"),
]


@task("lab05.4", "a value-dependent size that symbolic_trace accepts", "让 symbolic_trace 接受依赖数值的尺寸", hints=[
    ("Find the line where Python needs a number from a traced tensor; the error names the call. Could that "
     "value stay a tensor?",
     "找出 Python 需要从被追踪张量中取数字的那一行；错误信息里写着是哪个调用。这个值能否保持为张量？"),
    ("Lecture 05, section 5 (Sizes that depend on values: the `torch.arange` claim): what FX records when a "
     "size argument is a tensor; and broadcasting instead of Python counts for the batch dimension.",
     "第 05 讲第 5 节（依赖数值的尺寸：关于 `torch.arange` 的说法）：尺寸参数是张量时 FX 记录了什么；以及用广播"
     "代替 Python 计数来处理 batch 维度。"),
])
def _position_ids_fx(answer: Any) -> None:
    need_callable(answer, "position_ids_fx")
    try:
        gm = fx.symbolic_trace(answer)
    except (fx.proxy.TraceError, RuntimeError, TypeError, AttributeError) as exc:
        if not _is_fx_refusal(exc):
            raise
        raise Wrong(*_diagnose_refusal(exc), tried="fx.symbolic_trace(position_ids_fx)",
                    got=one_line_error(exc)) from None
    probes = [Probe(f"symbolic_trace(position_ids_fx)(tensor({values}))", (torch.tensor(values),))
              for values in ([3, 1, 4], [2, 9], [1], [0, 2, 5, 5], [7, 7], [0, 0],
                             [4 * k + k % 3 for k in range(12)], [2000, 5], [70000])]  # 12 rows, a largest length of 46
    probes.append(Probe("symbolic_trace(position_ids_fx)(tensor([3, 1, 4], dtype=torch.int32))",
                        (torch.tensor([3, 1, 4], dtype=torch.int32),)))
    def traced(lengths: torch.Tensor) -> Any:
        try:
            return gm(lengths)
        except Exception as exc:
            raise Wrong("the traced function fails on new lengths: the graph holds something that was "
                        "true only for the lengths seen while tracing.",
                        "追踪得到的函数在新的 lengths 上运行失败：计算图里固化了只对追踪时那组 lengths 成立的东西。",
                        tried=f"symbolic_trace(position_ids_fx)(tensor({lengths.tolist()}))",
                        got=one_line_error(exc)) from None

    run_probes(traced, _position_ids, probes, mistakes=_POSITION_MISTAKES, what="symbolic_trace(position_ids_fx)",
               generic=("the result differs from position_ids: each row holds 0, 1, ... up to its length "
                        "minus one, then -1 up to this input's largest length.",
                        "结果与 position_ids 不一致：每一行依次是 0、1……直到该行长度减一，之后直到当前输入的最大长度都是 -1。"))
