"""Checkers for labs/lab08_backends.ipynb (lecture course/08_backends_intervention.ipynb).

Every checker compiles models the learner has not seen with ``torch.compile`` and the
learner's backend, resets Dynamo before each compile, and compares with eager PyTorch.
"""
from __future__ import annotations

import re
from typing import Any, Callable

import torch
from torch import fx, nn

from . import Wrong, task
from .._text import quiet

_OPS = ("call_function", "call_method", "call_module")


def _compile(fn: Any, backend: Callable[..., Any], **kwargs: Any) -> Any:
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(fn, backend=backend, **kwargs)


def _run(compiled: Any, *args: Any) -> Any:
    """Call a compiled model with torch's warnings and log lines kept out of the notebook.

    An exception the learner's backend raised comes back as itself, not wrapped in Dynamo's
    ``BackendCompilerFailed``, so that a stub reads as "not yet implemented" and a bug
    points at the learner's own line.
    """
    from torch._dynamo.exc import BackendCompilerFailed

    try:
        with quiet():
            return compiled(*args)
    except BackendCompilerFailed as exc:
        raise exc.inner_exception from None


def _code_first(backend: Callable[..., Any]) -> Callable[..., Any]:
    """Read ``gm.code`` before calling ``backend``, as a debugging print would.

    Dynamo hands backends a lazy GraphModule that writes its code on first use, so an edit
    without ``gm.recompile()`` can seem to work. Once the code exists, only recompile()
    makes ``gm.forward`` run the edited graph; this makes a forgotten recompile show.
    """

    def code_first(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        _ = gm.code
        return backend(gm, example_inputs)

    return code_first


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> str:
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} instead of {tuple(b.shape)}"
    return f"max abs difference {float((a.float() - b.float()).abs().max()):.3g}"


def _close(a: Any, b: torch.Tensor) -> bool:
    return (isinstance(a, torch.Tensor) and a.shape == b.shape
            and torch.allclose(a.detach().float(), b.detach().float(), atol=1e-5, rtol=1e-4))


# -- exercise 1: a recording backend ------------------------------------------------------

class _TwoLayer(nn.Module):
    """One graph; records ``h`` (fc1's output) and ``a`` (tanh of it)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(5, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        a = torch.tanh(h)
        out = self.fc2(a)
        return out


class _BreakThenMutate(nn.Module):
    """``.item()`` splits it in two graphs; ``y`` is changed in place after it is made."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.fc(x)
        s = z.abs().max().item()  # graph break: z is in graph 0, y in graph 1
        y = z / (s + 1.0)
        y.add_(1.0)
        return y.sigmoid()


def _two_layer_refs(model: _TwoLayer, x: torch.Tensor) -> dict[str, torch.Tensor]:
    seen: list[torch.Tensor] = []
    handle = model.fc1.register_forward_hook(lambda mod, inp, out: seen.append(out.detach().clone()))
    try:
        with torch.no_grad():
            model(x)
    finally:
        handle.remove()
    return {"h": seen[0], "a": torch.tanh(seen[0])}


def _break_refs(model: _BreakThenMutate, x: torch.Tensor) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        z = model.fc(x)
        return {"z": z, "y": z / (z.abs().max().item() + 1.0)}


def _recording_cases() -> list[tuple[str, nn.Module, list[str], Callable[..., dict[str, torch.Tensor]],
                                     list[torch.Tensor]]]:
    torch.manual_seed(81)
    two = _TwoLayer().eval()
    xs_two = [torch.randn(3, 5), torch.randn(3, 5)]
    brk = _BreakThenMutate().eval()
    xs_brk = [torch.randn(2, 4), torch.randn(2, 4)]
    return [
        ("a two-layer model (h = fc1(x); a = tanh(h)), names ['h', 'a']", two, ["h", "a"],
         _two_layer_refs, xs_two),
        ("a model with a graph break (z = fc(x); s = z.abs().max().item(); y = z / (s + 1); "
         "y.add_(1)), names ['z', 'y']", brk, ["z", "y"], _break_refs, xs_brk),
    ]


@task("lab08.1", "a backend that records named nodes", "记录指定节点取值的后端")
def _recording(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab08.1', make_recording_backend).",
                    "请传入函数本身，例如 check('lab08.1', make_recording_backend)。",
                    got=type(answer).__name__)
    for label, model, names, refs, xs in _recording_cases():
        made = answer(list(names))
        if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
            raise Wrong("return a pair (backend, store).", "请返回一个二元组 (backend, store)。",
                        tried=f"make_recording_backend({names!r})", got=type(made).__name__)
        backend, store = made
        wants = [refs(model, x) for x in xs]
        compiled = _compile(model, _code_first(backend))
        for x in xs:
            with torch.no_grad():
                want_out, got_out = model(x), _run(compiled, x)
            if not _close(got_out, want_out):
                raise Wrong("the compiled model's output changed: a recorder must pass its input on "
                            "unchanged, and only the recorded node's users should read from it.",
                            "编译后模型的输出变了：记录器必须原样返回输入，并且只让被记录节点的使用者改为读取它。",
                            tried=label, expected="the eager model's output",
                            got=_max_diff(got_out, want_out) if isinstance(got_out, torch.Tensor)
                            else type(got_out).__name__)
        _check_store(label, store, names, wants)


def _check_store(label: str, store: Any, names: list[str], wants: list[dict[str, torch.Tensor]]) -> None:
    if not hasattr(store, "get"):
        raise Wrong("store should be a dict from node name to a list of recorded tensors.",
                    "store 应当是从节点名到已记录张量列表的 dict。", tried=label, got=type(store).__name__)
    calls = len(wants)
    if all(not store.get(name) for name in names):
        raise Wrong("nothing was recorded. Insert the recorder node, call gm.recompile() after editing "
                    "the graph (the checker reads gm.code first, so without recompile the old code runs), "
                    "return gm.forward, and fill the store you returned (create it once, outside the backend).",
                    "什么都没有记录下来。请插入记录节点，修改计算图后调用 gm.recompile()（检查器会先读取 gm.code，"
                    "不调用 recompile 就会运行旧代码），返回 gm.forward，并写入你返回的那个 store"
                    "（在后端函数之外只创建一次）。",
                    tried=label, expected=f"{calls} tensors for each of {names}", got=repr(dict(store)))
    for name in names:
        got = list(store.get(name) or [])
        if not got:
            raise Wrong(f"nothing was recorded for {name!r}. The backend is called once per graph: "
                        "with a graph break the node can be in the second graph, so edit every graph "
                        "you are given.",
                        f"{name!r} 没有任何记录。后端对每张计算图各调用一次：出现图中断时，该节点可能在第二张图里，"
                        "所以要修改收到的每一张图。",
                        tried=label, expected=f"{calls} tensors for {name!r}", got="[]")
        if any(not isinstance(t, torch.Tensor) or type(t) not in (torch.Tensor, nn.Parameter) for t in got):
            raise Wrong(f"{name!r} holds {type(got[0]).__name__} values, not real tensors recorded at run "
                        "time. Record tensors (call .item() later, outside the graph) and return gm.forward "
                        "so the recorder runs at every call; a tracing backend runs it once, on fake tensors.",
                        f"{name!r} 记录的是 {type(got[0]).__name__}，而不是运行时的真实张量。请记录张量"
                        "（需要数值时再在图外调用 .item()），并返回 gm.forward，让记录器在每次调用时运行；"
                        "会再次追踪计算图的后端只会在假张量上运行它一次。",
                        tried=label, got=", ".join(type(t).__name__ for t in got))
        if len(got) != calls:
            raise Wrong(f"{name!r} should get one tensor per call of the compiled model.",
                        f"编译后的模型每调用一次，{name!r} 应当记录一个张量。",
                        tried=f"{label}, called {calls} times", expected=f"{calls} tensors",
                        got=f"{len(got)} tensors")
        for i, (t, want) in enumerate(zip(got, wants)):
            if _close(t, want[name]):
                continue
            if name == "y" and _close(t, want[name] + 1.0):
                raise Wrong("the recorded 'y' was changed later by y.add_(1): store a copy "
                            "(t.detach().clone()), not the tensor itself.",
                            "记录下的 'y' 之后被 y.add_(1) 原地修改了：请保存副本（t.detach().clone()），"
                            "而不是张量本身。",
                            tried=f"{label}, call {i + 1}", expected="y before y.add_(1)",
                            got="y after y.add_(1)")
            raise Wrong(f"the value recorded for {name!r} differs from the eager model's.",
                        f"{name!r} 记录的值与 eager 模型不一致。",
                        tried=f"{label}, call {i + 1}", expected=f"tensor of shape {tuple(want[name].shape)}",
                        got=_max_diff(t, want[name]) if isinstance(t, torch.Tensor) else type(t).__name__)


# -- exercise 2: swap relu for clamp ------------------------------------------------------

_RELU_FUNCTIONS = (torch.relu, torch.nn.functional.relu)
_CLAMP_FUNCTIONS = (torch.clamp, torch.clip, torch.clamp_min)


def _is_relu(node: fx.Node) -> bool:
    if node.op == "call_function":
        return any(node.target is f for f in _RELU_FUNCTIONS)
    return node.op == "call_method" and node.target == "relu"


def _is_clamp(node: fx.Node) -> bool:
    if node.op == "call_function":
        return any(node.target is f for f in _CLAMP_FUNCTIONS)
    return node.op == "call_method" and node.target in ("clamp", "clip", "clamp_min")


def _relu_kind(node: fx.Node) -> str:
    if node.op == "call_method":
        return "the method call x.relu() (a call_method node whose target is the string 'relu')"
    if node.target is torch.nn.functional.relu:
        return "torch.nn.functional.relu (what an nn.ReLU module becomes in Dynamo's graph)"
    return "torch.relu"


class _ModuleReLU(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class _ThreeReLUs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc(x)) - 0.5
        y = y.relu() * 2
        return torch.nn.functional.relu(y - 0.3)


class _ReLUAroundBreak(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.fc(x) - 0.1)
        scale = y.sum().item()  # graph break: one relu in each graph
        return (y * scale - 1.0).relu()


def _edited_graph(returned: Any, gm: fx.GraphModule) -> fx.GraphModule | None:
    """The GraphModule whose forward the backend returned (or the GraphModule itself)."""
    if isinstance(returned, fx.GraphModule):
        return returned
    owner = getattr(returned, "__self__", None)
    if isinstance(owner, fx.GraphModule) and getattr(returned, "__name__", "") in ("forward", "_lazy_forward"):
        return owner
    return None


@task("lab08.2", "a backend that swaps relu for clamp", "把 relu 换成 clamp 的后端")
def _swap(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the backend function itself, e.g. check('lab08.2', relu_to_clamp).",
                    "请传入后端函数本身，例如 check('lab08.2', relu_to_clamp)。", got=type(answer).__name__)
    torch.manual_seed(82)
    cases = [("a model with an nn.ReLU module", _ModuleReLU().eval(), torch.randn(5, 4)),
             ("a model with torch.relu, x.relu() and F.relu", _ThreeReLUs().eval(), torch.randn(5, 4)),
             ("a model with a relu on each side of a graph break", _ReLUAroundBreak().eval(),
              torch.randn(3, 4))]
    for label, model, x in cases:
        seen: list[tuple[int, Any, fx.GraphModule]] = []

        def watching(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
            relus = sum(1 for n in gm.graph.nodes if _is_relu(n))
            returned = _code_first(answer)(gm, example_inputs)
            seen.append((relus, returned, gm))
            return returned

        compiled = _compile(model, watching)
        with torch.no_grad():
            want = model(x)
            try:
                got = _run(compiled, x)
            except TypeError as exc:
                if "inplace" not in str(exc):
                    raise
                raise Wrong("torch.clamp got relu's keyword argument inplace=False: build the clamp node "
                            "with kwargs {'min': 0} only, not with the relu node's kwargs.",
                            "torch.clamp 收到了 relu 的关键字参数 inplace=False：构造 clamp 节点时只传 "
                            "{'min': 0}，不要沿用 relu 节点的 kwargs。",
                            tried=label, expected="clamp(x, min=0)",
                            got=str(exc).splitlines()[0][:120]) from None
        for relus, returned, gm in seen:
            _check_swapped_graph(label, relus, returned, gm)
        if not _close(got, want):
            raise Wrong("the compiled model's output changed: clamp(x, min=0) must take relu's input.",
                        "编译后模型的输出变了：clamp(x, min=0) 的输入必须是原来 relu 的输入。",
                        tried=label, expected="the eager model's output",
                        got=_max_diff(got, want) if isinstance(got, torch.Tensor) else type(got).__name__)


def _check_swapped_graph(label: str, relus: int, returned: Any, gm: fx.GraphModule) -> None:
    edited = _edited_graph(returned, gm)
    if edited is None:
        raise Wrong("return the edited GraphModule's forward (gm.forward), as in the lecture, so the "
                    "graph that runs is the one you edited.",
                    "请像讲义中那样返回修改后 GraphModule 的 forward（gm.forward），这样运行的才是你修改过的计算图。",
                    tried=label, expected="gm.forward", got=type(returned).__name__)
    left = [n for n in edited.graph.nodes if _is_relu(n)]
    if left:
        raise Wrong(f"a relu is still in the graph: {_relu_kind(left[0])}. Match all three spellings.",
                    f"计算图里仍有 relu：{_relu_kind(left[0])}。三种写法都要匹配。",
                    tried=label, expected="no relu node", got=f"node {left[0].name}: {left[0].op} "
                    f"{getattr(left[0].target, '__name__', left[0].target)}")
    clamps = sum(1 for n in edited.graph.nodes if _is_clamp(n))
    if clamps < relus:
        raise Wrong("each relu should become a clamp node (torch.clamp(x, min=0)).",
                    "每个 relu 都应当变成一个 clamp 节点（torch.clamp(x, min=0)）。",
                    tried=label, expected=f"at least {relus} clamp nodes", got=f"{clamps}")
    if edited.code.strip() != edited.graph.python_code("self").src.strip():
        raise Wrong("the graph was edited but its code was not regenerated: call gm.recompile() after "
                    "editing, otherwise gm.forward still runs the old code (the checker reads gm.code "
                    "before calling your backend, as a debugging print would).",
                    "计算图改了，但代码没有重新生成：修改后要调用 gm.recompile()，否则 gm.forward 运行的仍是旧代码"
                    "（检查器在调用你的后端之前读取了 gm.code，就像调试时打印一次那样）。",
                    tried=label, expected="gm.code matching gm.graph", got="gm.code from before the edit")


# -- exercise 3: refuse large graphs --------------------------------------------------------

def _chain(k: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """k ops alternating torch.sin (call_function) and .cos() (call_method)."""

    def chain(x: torch.Tensor) -> torch.Tensor:
        for i in range(k):
            x = torch.sin(x) if i % 2 == 0 else x.cos()
        return x

    return chain


def _split_chain(x: torch.Tensor) -> torch.Tensor:
    x = torch.sin(x).cos().tanh()  # graph 0: 3 ops
    torch._dynamo.graph_break()
    return x.exp().sin().cos().neg().abs().sigmoid()  # graph 1: 6 ops


def _ops(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in _OPS)


def _call_functions(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function")


def _limit_run(make: Any, limit: int, fn: Any, x: torch.Tensor) -> tuple[list[fx.GraphModule], Any, Any]:
    """Compile ``fn`` with the learner's backend; return the graphs, the output, the exception."""
    backend = make(limit)
    if not callable(backend):
        raise Wrong("make_limited_backend(n) should return a backend function.",
                    "make_limited_backend(n) 应当返回一个后端函数。", tried=f"make_limited_backend({limit})",
                    got=type(backend).__name__)
    graphs: list[fx.GraphModule] = []

    def watching(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        graphs.append(gm)
        return backend(gm, example_inputs)

    compiled = _compile(fn, watching)
    try:
        with quiet():
            return graphs, compiled(x), None
    except Exception as exc:  # what torch.compile surfaces is part of what we check
        if isinstance(getattr(exc, "inner_exception", exc), NotImplementedError):
            raise NotImplementedError from None
        return graphs, None, exc


@task("lab08.3", "a backend that refuses graphs over n ops", "拒绝超过 n 个算子的计算图的后端")
def _limited(answer: Any) -> None:
    from torch._dynamo.exc import BackendCompilerFailed

    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab08.3', make_limited_backend).",
                    "请传入函数本身，例如 check('lab08.3', make_limited_backend)。", got=type(answer).__name__)
    x = torch.randn(6)
    cases = [(4, _chain(3), "a chain of 3 ops"), (4, _chain(4), "a chain of exactly 4 ops"),
             (1, _chain(1), "a chain of 1 op"), (4, _chain(7), "a chain of 7 ops"),
             (5, _chain(6), "a chain of 6 ops (3 of them method calls)"),
             (4, _split_chain, "a function split by a graph break into graphs of 3 and 6 ops")]
    for limit, fn, what in cases:
        label = f"{what}, make_limited_backend({limit})"
        graphs, out, exc = _limit_run(answer, limit, fn, x)
        sizes = [_ops(gm) for gm in graphs]
        too_big = [s for s in sizes if s > limit]
        if exc is None and not too_big:
            if not _close(out, fn(x)):
                raise Wrong("under the limit the backend should return gm.forward unchanged.",
                            "未超过上限时，后端应当原样返回 gm.forward。", tried=label,
                            expected="the eager result", got=_max_diff(out, fn(x))
                            if isinstance(out, torch.Tensor) else type(out).__name__)
            continue
        if exc is None:
            hint = ("the graph has more ops than the limit but compiled anyway.",
                    "计算图的算子数超过了上限，却仍然编译通过了。")
            if all(_call_functions(gm) <= limit for gm in graphs):
                hint = ("count call_method nodes too: x.cos() is a call_method node, not call_function.",
                        "call_method 节点也要计数：x.cos() 是 call_method 节点，而不是 call_function。")
            raise Wrong(hint[0] + " Raise GraphTooLarge when the count is over n.",
                        hint[1] + "算子数超过 n 时请抛出 GraphTooLarge。", tried=label,
                        expected=f"BackendCompilerFailed wrapping GraphTooLarge ({max(too_big)} ops > {limit})",
                        got="no exception")
        inner = getattr(exc, "inner_exception", exc) if isinstance(exc, BackendCompilerFailed) else exc
        if not too_big:
            _refused_small(label, limit, sizes, graphs, inner)
        if type(inner).__name__ != "GraphTooLarge":
            raise Wrong("raise the GraphTooLarge exception defined at the top of the lab.",
                        "请抛出本实验开头定义的 GraphTooLarge 异常。", tried=label,
                        expected="GraphTooLarge", got=f"{type(inner).__name__}: {str(inner)[:120]}")
        if not isinstance(exc, BackendCompilerFailed):
            raise Wrong("torch.compile should surface your exception as BackendCompilerFailed.",
                        "torch.compile 应当把你的异常包装成 BackendCompilerFailed 抛出。", tried=label,
                        expected="BackendCompilerFailed", got=type(exc).__name__)
        count, message = too_big[0], str(inner)
        numbers = set(re.findall(r"\d+", message))
        if str(count) not in numbers or str(limit) not in numbers:
            raise Wrong("the message should name the graph's op count and the limit, e.g. "
                        "'graph has 7 ops, more than the limit of 4'.",
                        "报错信息应当写明计算图的算子数和上限，例如 'graph has 7 ops, more than the limit of 4'。",
                        tried=label, expected=f"a message with {count} and {limit}", got=repr(message))


def _refused_small(label: str, limit: int, sizes: list[int], graphs: list[fx.GraphModule],
                   inner: BaseException) -> None:
    text = str(inner)
    if isinstance(inner, AssertionError) and "callable" in text:
        raise Wrong("under the limit, return gm.forward (a callable): returning None makes Dynamo fail.",
                    "未超过上限时要返回 gm.forward（一个可调用对象）：返回 None 会让 Dynamo 报错。",
                    tried=label, expected="a callable", got=f"{type(inner).__name__}: {text[:120]}")
    if type(inner).__name__ != "GraphTooLarge":
        raise Wrong("a graph under the limit should compile and run.", "未超过上限的计算图应当正常编译并运行。",
                    tried=label, expected=f"graphs of {sizes} ops compiled",
                    got=f"{type(inner).__name__}: {text[:120]}")
    nodes = max(len(gm.graph.nodes) for gm in graphs)
    if max(sizes) < limit and nodes > limit:
        raise Wrong("count only the ops (call_function, call_method and call_module nodes); "
                    "placeholders and the output node are not ops.",
                    "只统计算子（call_function、call_method 和 call_module 节点）；placeholder 和 output 节点不算算子。",
                    tried=label, expected=f"{max(sizes)} ops, allowed", got=text[:120])
    raise Wrong(f"refuse only graphs with *more* than n ops: a graph with exactly {limit} ops compiles.",
                f"只拒绝算子数*超过* n 的计算图：恰好 {limit} 个算子的图应当可以编译。",
                tried=label, expected=f"{max(sizes)} ops, allowed", got=text[:120])
