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
from ._dynamo_settings import keeping_settings
from .._text import first_line, quiet
from ._probe import close, describe, need_callable, seeded

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


def _inputs(seed: int, *shapes: tuple[int, ...]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for shape in shapes]


def _max_diff(a: torch.Tensor, b: torch.Tensor) -> tuple[str, str]:
    if a.shape != b.shape:
        return f"shape {tuple(a.shape)} instead of {tuple(b.shape)}", f"形状为 {tuple(a.shape)}，而不是 {tuple(b.shape)}"
    worst = f"{float((a.float() - b.float()).abs().max()):.3g}"
    return f"max abs difference {worst}", f"最大绝对误差 {worst}"


def _with(label: tuple[str, str], en: str, zh: str) -> tuple[str, str]:
    """A probe's (English, 中文) label with a few words added in each language."""
    return label[0] + en, label[1] + zh


#: The model's output, what every recording and swapping check compares with.
_EAGER_OUTPUT = ("the eager model's output", "eager 模型的输出")


def _close(a: Any, b: torch.Tensor) -> bool:
    return close(a, b, rtol=1e-4, atol=1e-5, any_float=True)


# -- exercise 1: a recording backend ------------------------------------------------------

class _TwoLayer(nn.Module):
    """One graph; records ``h`` (fc1's output, a call_function node) and ``a`` (tanh of it, a call_method
    node); the second ``h`` is node ``h_1``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(5, 6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        a = h.tanh()  # a call_method node: every kind of node may be named
        h = self.fc2(a) * 2  # a node named h_1: not the node h
        return h


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


class _ChangesItsInput(nn.Module):
    """No parameters; changes its input in place, so the caller's tensor changes too (the placeholder l_x_ is
    recorded before x.mul_(2) changes it). Called with float64 tensors."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)
        return x + 1.0


def _changes_input_refs(model: _ChangesItsInput, x: torch.Tensor) -> dict[str, torch.Tensor]:
    return {"l_x_": x.clone(), "add": x * 2.0 + 1.0}


class _AttributeNames(nn.Module):
    """Its values are named like attributes every GraphModule has (``meta``, ``code``), it is called with a
    batch of one row (a recorder that squeezes shows), and it returns its input ``x`` itself, changed in place
    (a recorder that returns a view of ``t`` shows)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        meta = self.fc(x)
        graph = meta[:, ::2]  # a strided view of meta, not contiguous (a recorder returning a copy shows)
        graph.mul_(2.0)  # changes meta's columns 0 and 2 through the view
        code = meta.relu()
        x.add_(code.sum())
        return x


def _attribute_names_refs(model: _AttributeNames, x: torch.Tensor) -> dict[str, torch.Tensor]:
    with torch.no_grad():
        meta = model.fc(x)
        later = meta.clone()
        later[:, ::2] *= 2.0
        return {"meta": meta, "graph": meta[:, ::2].clone(), "mul_": later[:, ::2].clone(), "code": later.relu(),
                "l_x_": x.clone()}


#: What a case's model does to a recorded value after it is made: name -> (the value after it, the op's text).
_CHANGED_LATER: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "y": (lambda value: value + 1.0, "y.add_(1)"), "l_x_": (lambda value: value * 2.0, "x.mul_(2)")}


def _recording_cases() -> list[tuple[tuple[str, str], nn.Module, list[str], Callable[..., dict[str, torch.Tensor]],
                                     list[torch.Tensor], bool]]:
    """(label, model, names, reference values, inputs, whether to call it once with gradients)."""
    two = seeded(_TwoLayer(), 81)
    xs_two = _inputs(810, (3, 5), (3, 5))
    brk = seeded(_BreakThenMutate(), 82)
    xs_brk = _inputs(820, (2, 4), (2, 4), (5, 4))
    xs_own = [x.double() for x in _inputs(830, (3, 4), (3, 4))]
    named = seeded(_AttributeNames(), 84)
    xs_named = _inputs(840, (1, 4), (1, 4))
    return [
        (("a two-layer model (h = fc1(x); a = h.tanh(); h = fc2(a) * 2), names ['h', 'a']",
          "两层模型（h = fc1(x); a = h.tanh(); h = fc2(a) * 2），名字 ['h', 'a']"), two, ["h", "a"], _two_layer_refs,
         xs_two, True),
        (("a model with a graph break (z = fc(x); s = z.abs().max().item(); y = z / (s + 1); "
          "y.add_(1)), names ['z', 'y']",
          "含图中断的模型（z = fc(x); s = z.abs().max().item(); y = z / (s + 1); y.add_(1)），名字 ['z', 'y']"),
         brk, ["z", "y"], _break_refs, xs_brk, True),
        (("a model that changes its input in place (x.mul_(2); return x + 1), called with float64 tensors, names "
          "['l_x_', 'add'] (l_x_ is the placeholder of x); afterwards the caller changes the tensors it passed in "
          "and got back",
          "原地修改输入的模型（x.mul_(2); return x + 1），用 float64 张量调用，名字 ['l_x_', 'add']（l_x_ 是 x 的 "
          "placeholder）；调用之后，调用方会修改它传入的和拿回的张量"),
         _ChangesItsInput(), ["l_x_", "add"], _changes_input_refs, xs_own, False),
        (("a model whose values are named like a GraphModule's own attributes (meta = fc(x); graph = meta[:, ::2]; "
          "graph.mul_(2); code = meta.relu(); x.add_(code.sum()); return x), called with one row, names "
          "['meta', 'graph', 'mul_', 'code', 'l_x_'] (nothing reads mul_)",
          "值的名字与 GraphModule 自带属性同名的模型（meta = fc(x); graph = meta[:, ::2]; graph.mul_(2); "
          "code = meta.relu(); x.add_(code.sum()); return x），输入只有一行，名字 ['meta', 'graph', 'mul_', 'code', 'l_x_']"
          "（没有节点读取 mul_）"),
         named, ["meta", "graph", "mul_", "code", "l_x_"], _attribute_names_refs, xs_named, False),
    ]


def _require_current_forward(returned: Any, gm: fx.GraphModule, label: tuple[str, str]) -> None:
    """``returned``, when it is a forward of ``gm``, is the one gm has now: gm.recompile() gives the module a new
    forward, and a forward taken before that runs the code from before the edits."""
    from torch.fx._lazy_graph_module import _LazyGraphModule

    # the lazy forward (what gm.forward is right after recompile()) always runs the current code
    current = (type(gm).forward, _LazyGraphModule._lazy_forward)
    if getattr(returned, "__self__", None) is gm and getattr(returned, "__func__", None) not in current:
        raise Wrong("the forward your backend returned is not the module's current one: it was taken before "
                    "gm.recompile(), so it runs the code from before your edits. Return gm.forward after "
                    "gm.recompile().",
                    "你的后端返回的 forward 不是模块当前的 forward：它是在 gm.recompile() 之前取得的，运行的是修改之前的代码。"
                    "请在 gm.recompile() 之后返回 gm.forward。",
                    tried=label, expected=("gm.forward after gm.recompile()", "gm.recompile() 之后的 gm.forward"),
                    got=("a forward from before the edits", "修改之前的 forward"))


def _tensors(count: int) -> tuple[str, str]:
    return (f"{count} tensor" if count == 1 else f"{count} tensors"), f"{count} 个张量"


def _stale_code(gm: fx.GraphModule) -> bool:
    """The graph was edited after its code was written, and recompile() was not called."""
    try:
        return gm.code.strip() != gm.graph.python_code("self").src.strip()
    except Exception:  # a graph that cannot produce code is reported elsewhere
        return False


@task("lab08.1", "a backend that records named nodes", "记录指定节点取值的后端", hints=[
    ("A backend gets a GraphModule and returns something to run. What must change in the graph so that a "
     "value is handed to your recorder on every call, and what must you do after changing the graph?",
     "后端拿到一个 GraphModule，并返回一个可运行的东西。要让某个值在每次调用时都交给你的记录器，计算图中要改什么？"
     "改完计算图之后还要做什么？"),
    ("Lecture 08, section 3 'A backend that edits the graph': add the recorder with add_submodule under a name "
     "of its own, insert a call_module node after the named node, let the node's other users read from the "
     "recorder, regenerate the code, and return the edited module's forward.",
     "第 08 讲第 3 节“修改计算图的后端”：用 add_submodule 以独有的名字添加记录器，在指定节点之后插入 call_module 节点，"
     "让该节点的其他使用者改为读取记录器，重新生成代码，并返回修改后模块的 forward。"),
    ("Dynamo calls the backend once per graph (a graph break makes two), and the model may change a value in "
     "place after it is made: keep a copy, and keep one store for all graphs.",
     "Dynamo 对每张计算图各调用一次后端（图中断会产生两张图），而模型可能在某个值生成之后再原地修改它："
     "请保存副本，并让所有计算图共用同一个 store。"),
])
@keeping_settings(("make_recording_backend only builds a backend that edits the graphs it gets; leave Dynamo's "
                   "settings alone.",
                   "make_recording_backend 只需构造一个修改所收到计算图的后端；请不要改动 Dynamo 的设置。"))
def _recording(answer: Any) -> None:
    need_callable(answer, "make_recording_backend")
    for label, model, names, refs, xs, with_grad in _recording_cases():
        made = answer(list(names))
        if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0])):
            raise Wrong("return a pair (backend, store).", "请返回一个二元组 (backend, store)。",
                        tried=f"make_recording_backend({names!r})", got=describe(made))
        backend, store = made
        _check_fresh_store(names, store)
        first_lists = {name: store[name] for name in names}  # every recorder appends to these very lists
        wants = [refs(model, x) for x in xs]
        edited: list[fx.GraphModule] = []
        original: dict[int, set[str]] = {}  # id(gm) -> the node names Dynamo gave it, before the backend ran

        def watching(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
            edited.append(gm)
            original[id(gm)] = {n.name for n in gm.graph.nodes}
            ops_before = [n.name for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
            try:
                returned = _code_first(backend)(gm, example_inputs)
            except KeyError as exc:
                if "already exists" not in str(exc):
                    raise
                bare = fx.GraphModule(nn.Module(), fx.Graph())  # the attributes every GraphModule has
                taken = sorted(name for name in names if hasattr(bare, name))
                raise Wrong(f"add_submodule refused a name ({exc}): a GraphModule has attributes of its own (meta, "
                            "code, graph, training, ...), and a node may be named like one of them. Add each "
                            "recorder under a name of its own that no attribute of the module has.",
                            f"add_submodule 拒绝了一个名字（{exc}）：GraphModule 本身就有一些属性（meta、code、graph、"
                            "training 等），而节点也可能恰好与其中某个同名。请用模块中没有的、独有的名字添加每个记录器。",
                            tried=label, expected=("a recorder added for every name", "每个名字都添加了记录器"),
                            got=(f"nodes named like an attribute: {', '.join(taken) or exc}",
                                 f"与属性同名的节点：{', '.join(taken) or exc}")) from None
            _require_current_forward(returned, gm, label)
            now = [n.name for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
            # fewer ops than Dynamo gave (a graph rebuilt with new names keeps its count: not a removal)
            lost = sorted(set(ops_before) - set(now)) if len(now) < len(ops_before) else []
            if lost:
                raise Wrong(f"your backend removed node(s) {', '.join(lost)} from the graph it was given: a recording "
                            "backend only adds nodes. A dead-code pass such as graph.eliminate_dead_code() removes "
                            "an in-place op whose result nothing reads (such as add_ or mul_), though it changes a value "
                            "the model uses later.",
                            f"你的后端从收到的计算图中删除了节点 {', '.join(lost)}：记录用的后端只添加节点。"
                            "graph.eliminate_dead_code() 这样的删除无用节点的 pass，会删除结果没有被读取的原地运算"
                            "（例如 add_、mul_），尽管它修改了模型之后要用的值。",
                            tried=label, expected=("every node of the graph kept", "计算图的每个节点都保留"),
                            got=(f"removed: {', '.join(lost)}", f"被删除：{', '.join(lost)}"))
            loop = next((n for n in gm.graph.nodes if n in n.all_input_nodes), None)
            if loop is not None:
                raise Wrong(f"the node {loop.name} reads its own output: moving every use of the named node to the "
                            "recorder moved the recorder's own use too. The recorder must keep reading the named "
                            "node; only the other users move (the lab's hint shows how to leave one user out).",
                            f"节点 {loop.name} 读取的是它自己的输出：把指定节点的所有使用都转到记录器上时，记录器自己的那次使用也被转走了。"
                            "记录器必须继续读取指定节点，只有其他使用者才转过去（实验说明里的提示给出了如何排除一个使用者）。",
                            tried=label, expected=("the recorder reads the named node", "记录器读取指定节点"),
                            got=(f"{loop.name} reads {loop.name}", f"{loop.name} 读取 {loop.name}"))
            return returned

        compiled = _compile(model, watching)
        held: list[torch.Tensor] = []  # what the caller passed in and got back: changed after the checks
        history: list[tuple[dict[str, int], int]] = []  # after each call: the list lengths, the backend calls so far
        for x in xs:
            x_eager, x_compiled = x.clone(), x.clone()
            with torch.no_grad():
                want_out, got_out = model(x_eager), _run(compiled, x_compiled)
            if not _close(got_out, want_out) or got_out.dtype != want_out.dtype:
                raise Wrong("the compiled model's output changed: a recorder must return its input unchanged, and "
                            "only the recorded node's users should read from it.",
                            "编译后模型的输出变了：记录器必须原样返回输入，并且只让被记录节点的使用者改为读取它。",
                            tried=label, expected=_EAGER_OUTPUT,
                            got=_max_diff(got_out, want_out) if isinstance(got_out, torch.Tensor)
                            else describe(got_out))
            if not torch.equal(x_compiled, x_eager):
                _input_not_changed(label, x, x_compiled, x_eager)
            if want_out is x_eager and got_out is not x_compiled:
                raise Wrong("the values are right, but the eager model returns its input x itself (the same tensor "
                            "object) and the compiled one returns another tensor: a recorder returned a view or a "
                            "new tensor instead of its input t itself, as the task asks.",
                            "数值是对的，但 eager 模型返回的是输入 x 本身（同一个张量对象），而编译后的模型返回了另一个张量："
                            "有记录器返回的是视图或新张量，而不是题目要求的输入 t 本身。",
                            tried=label, expected=("x itself (out is x)", "x 本身（out is x）"),
                            got=("another tensor (out is not x)", "另一个张量（out is not x）"))
            held.extend(t for t in (x_compiled, got_out) if isinstance(t, torch.Tensor))
            history.append(({name: len(store.get(name) or []) if isinstance(store, dict) else 0 for name in names},
                            len(edited)))
        with_autograd = _with(label, _WITH_GRAD[0], _WITH_GRAD[1])
        counted = _gradient_call(with_autograd, model, answer(list(names)), xs[0], names) if with_grad else None
        _check_store(label, store, names, wants, edited, history, first_lists)
        _check_copies(label, store, names, held)
        _check_rerouted(label, names, edited, original)
        if counted is not None and any(count != 1 for count in counted.values()):
            raise Wrong("with autograd on, the store did not get one value per name from the one call: a recorder "
                        "records on every call, whether or not the values require gradients.",
                        "开启 autograd 时，这一次调用并没有为每个名字各记录一个值：不论这些值是否需要梯度，记录器每次调用都要记录。",
                        tried=with_autograd, expected=("1 tensor for each name", "每个名字 1 个张量"), got=repr(counted))


def _check_fresh_store(names: list[str], store: Any) -> None:
    """Before anything is compiled, store has a key for every name, each an empty list."""
    fresh = isinstance(store, dict) and all(isinstance(store.get(name), list) and not store.get(name)
                                            for name in names) and all(name in store for name in names)
    if fresh and len({id(store[name]) for name in names}) < len(names):
        raise Wrong("the names in store share one list object (every key holds the same list, as dict.fromkeys(names, "
                    "[]) makes it), so a value recorded for one name shows up under every name. Give each name a list "
                    "of its own.",
                    "store 中的各个名字共用同一个列表对象（每个键对应的是同一个列表，dict.fromkeys(names, []) 就会这样），"
                    "于是为一个名字记录的值会出现在所有名字下面。请给每个名字各建一个自己的列表。",
                    tried=f"make_recording_backend({names!r})",
                    expected=("a list of its own for each name", "每个名字各有自己的列表"),
                    got=("one list shared by the names", "各名字共用一个列表"))
    if not fresh:
        shown = repr(dict(store)) if isinstance(store, dict) else describe(store)
        raise Wrong("store should start as a dict with a key for every name, each an empty list, before anything "
                    "is compiled (a name that no graph holds keeps its empty list).",
                    "在编译任何东西之前，store 就应当是一个 dict，每个名字都有一个键，对应一个空列表"
                    "（没有任何计算图含有的名字，就一直对应空列表）。",
                    tried=f"make_recording_backend({names!r})",
                    expected=repr({name: [] for name in names}), got=shown[:160])


def _input_not_changed(label: tuple[str, str], x: torch.Tensor, got: torch.Tensor, want: torch.Tensor) -> None:
    """The model changes its input in place; the compiled one left the caller's tensor otherwise."""
    if torch.equal(got, x):
        raise Wrong("the compiled model's output is right, but it no longer changes its input in place as the eager "
                    "model does (x.mul_(2) changes the caller's x): a recorder returned a copy of its input, so the "
                    "in-place op changed the copy. The recorder must return its input t itself, as the task says.",
                    "编译后模型的输出是对的，但它不再像 eager 模型那样原地修改输入了（x.mul_(2) 会修改调用方的 x）："
                    "有记录器返回了输入的副本，于是原地运算修改的是这个副本。记录器必须像题目说的那样返回输入 t 本身。",
                    tried=label, expected=("the caller's x changed by x.mul_(2)", "调用方的 x 被 x.mul_(2) 修改"),
                    got=("the caller's x unchanged", "调用方的 x 没有变"))
    raise Wrong("after the call the caller's x differs from what the eager model leaves in it: a recorder must "
                "return its input t itself, unchanged.",
                "调用之后，调用方的 x 与 eager 模型留下的不同：记录器必须原样返回输入 t 本身。",
                tried=label, expected=("x as eager leaves it", "eager 留下的 x"), got=_max_diff(got, want))


def _check_copies(label: tuple[str, str], store: Any, names: list[str], held: list[torch.Tensor]) -> None:
    """The recorded values stay as they are when the caller changes the tensors it passed in and got back."""
    before = {name: [t.clone() for t in store[name]] for name in names}
    for t in held:
        t.add_(100.0)
    changed = next((name for name in names if any(not torch.equal(t, b) for t, b in zip(store[name], before[name]))),
                   None)
    if changed is not None:
        raise Wrong(f"a value recorded for {changed!r} changed when the caller changed, after the call, a tensor it "
                    "passed in or got back: the store holds that tensor itself (or a view of it), not a copy. Store a "
                    "copy, as the task says.",
                    f"调用结束后，调用方修改了它传入或拿回的张量，{changed!r} 记录的值也跟着变了：store 里保存的是那个张量本身"
                    "（或它的视图），而不是副本。请像题目说的那样保存副本。",
                    tried=label, expected=("the recorded values unchanged", "记录的值保持不变"),
                    got=(f"the values recorded for {changed!r} changed", f"{changed!r} 记录的值变了"))


#: Added to a probe's label for the call made with autograd on.
_WITH_GRAD = (", a call with gradients (x and the parameters require grad)",
              "，开启梯度的一次调用（x 和参数都需要梯度）")


def _gradient_call(tried: tuple[str, str], model: nn.Module, made: Any, x: torch.Tensor,
                   recorded: list[str]) -> dict[str, int]:
    """Compile with a fresh (backend, store) and call once with autograd on: the output and the gradients of
    x and of every parameter match eager's, and what the store holds is detached from autograd. Returns how many
    values each name in ``recorded`` got (one each is right; checked once the calls without autograd pass)."""
    backend, store = made
    names = ["x"] + [name for name, _ in model.named_parameters()]
    params = list(model.parameters())
    x_eager = x.clone().requires_grad_()
    want_out = model(x_eager)
    want = torch.autograd.grad(want_out.sum(), [x_eager, *params], allow_unused=True)
    x_compiled = x.clone().requires_grad_()
    got_out = _run(_compile(model, _code_first(backend)), x_compiled)
    if not _close(got_out, want_out.detach()):
        raise Wrong("the compiled model's output changed: a recorder must return its input unchanged, and "
                    "only the recorded node's users should read from it.",
                    "编译后模型的输出变了：记录器必须原样返回输入，并且只让被记录节点的使用者改为读取它。",
                    tried=tried, expected=_EAGER_OUTPUT,
                    got=_max_diff(got_out.detach(), want_out.detach()) if isinstance(got_out, torch.Tensor)
                    else describe(got_out))
    if got_out.requires_grad:
        got = torch.autograd.grad(got_out.sum(), [x_compiled, *params], allow_unused=True)
    else:
        got = (None,) * len(want)
    cut = [name for name, g, w in zip(names, got, want) if g is None and w is not None]
    if cut:
        shown = ", ".join(cut)
        raise Wrong(f"the compiled model's values are right, but no gradient reaches {shown}: a recorder returns a "
                    "value cut off from autograd (detached, or the detached copy it stored), so backward stops at "
                    "the recorded node. The recorder must return its input itself, still attached to autograd; only "
                    "the copy it stores is detached.",
                    f"编译后模型的数值是对的，但梯度传不到 {shown}：有记录器返回了与 autograd 断开的值（detach 过的张量，"
                    "或者它保存的那份 detach 过的副本），于是反向传播在被记录的节点处中断。记录器必须返回输入本身，"
                    "让它仍然连在 autograd 上；只有它保存的副本才需要 detach。",
                    tried=tried, expected=(f"gradients for {', '.join(names)}", f"{', '.join(names)} 的梯度"),
                    got=(f"no gradient for {shown}", f"{shown} 没有梯度"))
    wrong = next(((name, g, w) for name, g, w in zip(names, got, want)
                  if w is not None and not _close(g, w)), None)
    if wrong is not None:
        name, g, w = wrong
        raise Wrong(f"the compiled model's values are right, but its gradient for {name} differs from eager's: a "
                    "recorder must return its input as it is, so that backward through the compiled model computes "
                    "what eager computes.",
                    f"编译后模型的数值是对的，但 {name} 的梯度与 eager 不一致：记录器必须原样返回输入，"
                    "这样经过编译后模型的反向传播才与 eager 算出的一样。",
                    tried=tried, expected=(f"the eager model's gradient for {name}", f"eager 模型中 {name} 的梯度"),
                    got=_max_diff(g, w))
    for key, kept in (store.items() if isinstance(store, dict) else ()):
        attached = [t for t in (kept or []) if isinstance(t, torch.Tensor) and t.requires_grad]
        if attached:
            raise Wrong(f"the tensors recorded for {key!r} are still attached to autograd (requires_grad=True): a "
                        "copy made without detaching keeps the autograd graph of every call alive in the store. "
                        "Store a copy detached from autograd, as the task says.",
                        f"为 {key!r} 记录的张量仍然连在 autograd 上（requires_grad=True）：不先 detach 就复制，"
                        "每次调用的 autograd 图都会被 store 一直留着。请像题目说的那样，保存与 autograd 断开的副本。",
                        tried=tried, expected=("tensors with requires_grad=False", "requires_grad=False 的张量"),
                        got=(f"{len(attached)} tensor(s) with requires_grad=True",
                             f"{len(attached)} 个 requires_grad=True 的张量"))
    return {name: len(store.get(name) or []) if isinstance(store, dict) else 0 for name in recorded}


def _check_rerouted(label: tuple[str, str], names: list[str], edited: list[fx.GraphModule],
                    original: dict[int, set[str]]) -> None:
    """A call_module recorder follows every named node, and every other user reads from the recorder."""
    for gm in edited:
        for node in gm.graph.nodes:
            if node.name not in names:
                continue
            if not any(user.op == "call_module" for user in node.users):
                added = [user for user in node.users if user.name not in original.get(id(gm), set())]
                expected = (f"a call_module node reading {node.name!r}", f"一个读取 {node.name!r} 的 call_module 节点")
                if added:
                    raise Wrong(f"the recorder after {node.name!r} is a {added[0].op} node ({added[0].name}), not a "
                                "call_module node: the task asks for a recording module, added with gm.add_submodule "
                                "and called from a call_module node.",
                                f"{node.name!r} 之后的记录器是一个 {added[0].op} 节点（{added[0].name}），而不是 call_module 节点："
                                "本题要求用 gm.add_submodule 添加一个记录模块，并由 call_module 节点调用它。",
                                tried=label, expected=expected,
                                got=(f"{added[0].op} node {added[0].name}", f"{added[0].op} 节点 {added[0].name}"))
                raise Wrong(f"no recorder node was inserted after {node.name!r}: its users are the ones Dynamo made, "
                            "so the graph itself was not edited (recording by other means, such as an fx.Interpreter, "
                            "leaves it as it was). The task asks for a call_module node calling a recording module "
                            "after each named node.",
                            f"{node.name!r} 之后没有插入任何记录节点：它的使用者都是 Dynamo 生成的，也就是说计算图本身没有被修改"
                            "（用其他办法记录，例如 fx.Interpreter，不会改动计算图）。本题要求在每个指定节点之后插入一个调用记录模块的"
                            " call_module 节点。",
                            tried=label, expected=expected,
                            got=(f"{node.name!r} read by {', '.join(sorted(u.name for u in node.users))}",
                                 f"{node.name!r} 被 {', '.join(sorted(u.name for u in node.users))} 读取"))
            direct = sorted(user.name for user in node.users if user.op != "call_module")
            read = [user.name for user in node.users if user.op == "call_module" and user.users]
            if direct and read:
                raise Wrong(f"node(s) {', '.join(direct)} still read {node.name!r} itself, while other users read the "
                            f"recorder {read[0]}: every user of the named node other than the recorder must read from "
                            "the recorder, so that nothing reads the value, or changes it in place, before the recorder "
                            "has copied it.",
                            f"节点 {', '.join(direct)} 仍然直接读取 {node.name!r}，而其他使用者读取的是记录器 {read[0]}："
                            "除记录器之外，指定节点的每个使用者都必须改为读取记录器，这样在记录器复制这个值之前，"
                            "没有谁会读取它或原地修改它。",
                            tried=label, expected=(f"{node.name!r} read only by its recorder",
                                                   f"{node.name!r} 只被它的记录器读取"),
                            got=(f"also read by {', '.join(direct)}", f"还被 {', '.join(direct)} 读取"))
            if direct:
                raise Wrong(f"node(s) {', '.join(direct)} still read {node.name!r} itself, not the recorder: the recorder's "
                            "output is unused, so a pass that removes unused nodes would drop it. Move every other "
                            "user of the named node to the recorder.",
                            f"节点 {', '.join(direct)} 仍然直接读取 {node.name!r}，而不是记录器：记录器的输出没有被使用，"
                            "删除无用节点的 pass 会把它去掉。请把指定节点的其他使用者都转到记录器上。",
                            tried=label, expected=(f"{node.name!r} read only by its recorder",
                                                   f"{node.name!r} 只被它的记录器读取"),
                            got=(f"also read by {', '.join(direct)}", f"还被 {', '.join(direct)} 读取"))


def _check_store(label: tuple[str, str], store: Any, names: list[str], wants: list[dict[str, torch.Tensor]],
                 edited: list[fx.GraphModule], history: list[tuple[dict[str, int], int]],
                 first_lists: dict[str, Any]) -> None:
    if not isinstance(store, dict):
        raise Wrong("store should be a dict from node name to a list of recorded tensors.",
                    "store 应当是从节点名到已记录张量列表的 dict。", tried=label, got=describe(store))
    calls = len(wants)
    each = (f"{calls} tensors for each of {names}", f"{names} 中每个名字各 {calls} 个张量")
    counts = {name: len(store.get(name) or []) for name in names}
    if not any(counts.values()):
        if any(_stale_code(gm) for gm in edited):
            en, zh = ("the graph was edited but its code was not regenerated, so the old code ran without the "
                      "recorders (the checker reads gm.code first, as a debugging print would). Regenerate the "
                      "code after editing the graph.",
                      "计算图改了，但代码没有重新生成，所以运行的是不含记录器的旧代码（检查器会先读取 gm.code，就像调试时打印一次那样）。"
                      "修改计算图之后请重新生成代码。")
        elif isinstance(store, dict) and any(key not in names and value for key, value in store.items()):
            extra = sorted(str(key) for key, value in store.items() if key not in names and value)
            en, zh = (f"the recorders appended their values under the key(s) {', '.join(extra)}, not under the node "
                      f"names {names}: store[name] is keyed by the name of the node each recorder follows.",
                      f"记录器把值追加到了键 {', '.join(extra)} 下，而不是节点名 {names} 下：store[name] 的键是每个记录器"
                      "所跟随节点的名字。")
        elif not any(gm.graph.find_nodes(op="call_module") for gm in edited):
            en, zh = ("no call_module node was inserted in any graph: compare node.name (the names the graph shows, "
                      "e.g. in graph_table) with the names you were given.",
                      "没有在任何计算图中插入 call_module 节点：请用 node.name（计算图中显示的名字，例如 graph_table 中的）"
                      "与给定的名字比较。")
        else:
            en, zh = ("recorder nodes ran, but the store you returned stayed empty: the recorders must append to "
                      "that same dict (create it once, outside the backend, and return it).",
                      "记录节点运行了，但你返回的 store 仍然是空的：记录器必须追加到同一个 dict 中"
                      "（在后端函数之外只创建一次，并返回它）。")
        raise Wrong(en, zh, tried=label, expected=each, got=repr(counts))
    for name in names:
        if not counts[name]:
            if store.get(name) is not first_lists[name] and any(name in {n.name for n in gm.graph.nodes}
                                                               for gm in edited):
                raise Wrong(f"store[{name!r}] is empty and is not the list store started with: when Dynamo called "
                            "your backend again (for the next graph, or a new shape), it put new lists in store, and "
                            f"what the recorders had appended for {name!r} went with the old list. Make the lists "
                            "once, with the store, and only append to them.",
                            f"store[{name!r}] 是空的，而且已经不是 store 最初的那个列表：Dynamo 再次调用你的后端时"
                            f"（为下一张计算图，或为新的形状），后端在 store 里放了新列表，记录器之前为 {name!r} 追加的值"
                            "随旧列表一起丢了。请只在创建 store 时建一次列表，之后只往里追加。",
                            tried=label, expected=each, got=repr(counts))
            if any(counts[other] > calls for other in names if other != name):
                raise Wrong(f"nothing was recorded for {name!r}, and another name got too many values: two "
                            "recorders were added under the same submodule name, and add_submodule replaces the "
                            "earlier module, so both call_module nodes call the last recorder. Give each recorder "
                            "a name of its own.",
                            f"{name!r} 没有任何记录，而另一个名字记录的值太多了：两个记录器用同一个子模块名添加，"
                            "而 add_submodule 会替换先前的模块，于是两个 call_module 节点调用的都是最后那个记录器。"
                            "请给每个记录器一个独有的名字。",
                            tried=label, expected=each, got=repr(counts))
            in_first = bool(edited) and name in {n.name for n in edited[0].graph.nodes}
            if len(edited) > 1 and not in_first:
                raise Wrong(f"nothing was recorded for {name!r}. The backend is called once per graph: after the "
                            "graph break this node is in the second graph, so edit every graph you are given.",
                            f"{name!r} 没有任何记录。后端对每张计算图各调用一次：图中断之后，这个节点在第二张图里，"
                            "所以要修改收到的每一张图。",
                            tried=label, expected=(f"{calls} tensors for {name!r}", f"{name!r} 的 {calls} 个张量"),
                            got=repr(counts))
            kinds = sorted({n.op for gm in edited for n in gm.graph.nodes if n.name == name})
            done = sorted({n.op for gm in edited for n in gm.graph.nodes if n.name in names and n.name != name
                           and counts.get(n.name)})
            if kinds and done and not set(kinds) & set(done):
                raise Wrong(f"nothing was recorded for {name!r}, a {kinds[0]} node, though the {done[0]} nodes were "
                            "recorded: record every node whose name is in names, whatever its op.",
                            f"{name!r} 没有任何记录，它是一个 {kinds[0]} 节点，而 {done[0]} 节点都记录了："
                            "名字在 names 中的节点都要记录，不论它的 op 是什么。",
                            tried=label, expected=(f"{calls} tensors for {name!r}", f"{name!r} 的 {calls} 个张量"),
                            got=repr(counts))
            if any(n.name == name and not n.users for gm in edited for n in gm.graph.nodes):
                raise Wrong(f"nothing was recorded for {name!r}, though other names were: no node reads {name!r} "
                            "(an in-place op's result is often left unread), and it must be recorded all the same.",
                            f"{name!r} 没有任何记录，而其他名字有记录：没有节点读取 {name!r}（原地运算的结果常常没有人读），"
                            "但它同样要记录。", tried=label,
                            expected=(f"{calls} tensors for {name!r}", f"{name!r} 的 {calls} 个张量"), got=repr(counts))
            raise Wrong(f"nothing was recorded for {name!r}, though other names were.",
                        f"{name!r} 没有任何记录，而其他名字有记录。", tried=label,
                        expected=(f"{calls} tensors for {name!r}", f"{name!r} 的 {calls} 个张量"), got=repr(counts))
    for name in names:
        got = list(store.get(name) or [])
        if any(type(t) not in (torch.Tensor, nn.Parameter) for t in got):
            kind = type(next(t for t in got if type(t) not in (torch.Tensor, nn.Parameter))).__name__
            raise Wrong(f"{name!r} holds {kind} values, not real tensors recorded at run time. Record tensors "
                        "(turn them into numbers later, outside the graph) and return the edited module's forward "
                        "so the recorder runs at every call; a backend that traces the graph again runs it once, "
                        "on fake tensors.",
                        f"{name!r} 记录的是 {kind}，而不是运行时的真实张量。请记录张量（需要数值时再在图外转换），"
                        "并返回修改后模块的 forward，让记录器在每次调用时运行；再次追踪计算图的后端只会在假张量上运行它一次。",
                        tried=label, got=", ".join(type(t).__name__ for t in got))
        if 0 < len(got) < calls and all(_close(t, wants[calls - len(got) + i][name]) for i, t in enumerate(got)):
            # the list got no longer from one call to the next although the backend was not called in between
            replaced = any(backend_calls == before_calls and lengths[name] <= before[name]
                           for (lengths, backend_calls), (before, before_calls) in zip(history[1:], history[:-1]))
            if replaced:
                raise Wrong(f"{name!r} holds only the value of the last call: each call of the compiled model replaced "
                            "what the list held instead of adding to it (the backend was not called again in "
                            "between). Each recorder call adds one value to the list and keeps the earlier ones.",
                            f"{name!r} 只保留了最后一次调用的值：编译后的模型每调用一次，就替换掉列表里原有的内容，而不是往里追加"
                            "（这期间后端并没有被再次调用）。记录器每次调用都要往列表里追加一个值，并保留之前的值。",
                            tried=_with(label, f", called {calls} times", f"，调用 {calls} 次"),
                            expected=_tensors(calls), got=_tensors(len(got)))
            raise Wrong(f"{name!r} holds only the values of the last {len(got)} call(s): the earlier ones were lost "
                        "when Dynamo called your backend again for a new shape and the backend started a new list. "
                        "Every graph's recorders append to the lists of the one store, made once.",
                        f"{name!r} 只保留了最后 {len(got)} 次调用的值：Dynamo 因为新形状再次调用后端时，后端新建了列表，"
                        "之前的值就丢了。所有计算图的记录器都要追加到同一个 store 的列表里，这些列表只创建一次。",
                        tried=_with(label, f", called {calls} times", f"，调用 {calls} 次"),
                        expected=_tensors(calls), got=_tensors(len(got)))
        blocks = len({t.untyped_storage().data_ptr() for t in got})
        if blocks < len(got) == calls:
            raise Wrong(f"the tensors recorded for {name!r} share their memory: the recorder reuses one tensor (a "
                        "buffer it copies each value into, or the same tensor appended again), so a later call "
                        "overwrites what earlier calls recorded. Store a new copy at every call.",
                        f"为 {name!r} 记录的张量共用同一块内存：记录器反复使用同一个张量（每次把值复制进去的缓冲区，"
                        "或者再次追加的同一个张量），于是后面的调用覆盖了前面记录的值。每次调用都要保存一份新的副本。",
                        tried=_with(label, f", called {calls} times", f"，调用 {calls} 次"),
                        expected=(f"{calls} separate copies", f"{calls} 份各自独立的副本"),
                        got=(f"{len(got)} tensors in {blocks} block(s) of memory", f"{len(got)} 个张量只占用 {blocks} 块内存"))
        longer = sorted({n.name for gm in edited for n in gm.graph.nodes
                         if n.name != name and n.name.startswith(name) and n.op not in ("call_module", "output")})
        if len(got) > calls and longer:
            raise Wrong(f"{name!r} got more tensors than there were calls: a node whose name only starts with {name!r} "
                        f"({', '.join(longer)}, another node) was recorded under it too. Compare node.name with each "
                        "name exactly.",
                        f"{name!r} 记录的张量比调用次数还多：名字只是以 {name!r} 开头的节点（{', '.join(longer)}，另一个节点）"
                        "也被记在了它名下。请把 node.name 与每个名字做完全相等的比较。",
                        tried=_with(label, f", called {calls} times", f"，调用 {calls} 次"),
                        expected=_tensors(calls), got=_tensors(len(got)))
        if len(got) != calls:
            raise Wrong(f"{name!r} should get one tensor per call of the compiled model. A new input shape makes "
                        "Dynamo compile again and call the backend again: edit every graph you are given, each time.",
                        f"编译后的模型每调用一次，{name!r} 应当记录一个张量。新的输入形状会让 Dynamo 重新编译并再次调用后端："
                        "每次收到的每一张图都要修改。",
                        tried=_with(label, f", called {calls} times", f"，调用 {calls} 次"),
                        expected=_tensors(calls), got=_tensors(len(got)))
        for i, (t, want) in enumerate(zip(got, wants)):
            if _close(t, want[name]):
                if t.dtype != want[name].dtype:
                    raise Wrong(f"the values recorded for {name!r} are right, but their dtype is {t.dtype}, while the "
                                f"node's value is {want[name].dtype}: store a copy of the value as it is, in its own "
                                "dtype.",
                                f"{name!r} 记录的数值是对的，但 dtype 是 {t.dtype}，而节点的值是 {want[name].dtype}："
                                "请按原样保存值的副本，保持它自己的 dtype。",
                                tried=_with(label, f", call {i + 1}", f"，第 {i + 1} 次调用"),
                                expected=(f"dtype {want[name].dtype}", f"dtype 为 {want[name].dtype}"),
                                got=(f"dtype {t.dtype}", f"dtype 为 {t.dtype}"))
                continue
            later, op = _CHANGED_LATER.get(name, (None, ""))
            if later is not None and _close(t, later(want[name])):
                raise Wrong(f"the recorded {name!r} was changed later by {op}: store a copy of the value, not the "
                            "tensor itself.",
                            f"记录下的 {name!r} 之后被 {op} 原地修改了：请保存值的副本，而不是张量本身。",
                            tried=_with(label, f", call {i + 1}", f"，第 {i + 1} 次调用"),
                            expected=(f"{name} before {op}", f"{op} 之前的 {name}"),
                            got=(f"{name} after {op}", f"{op} 之后的 {name}"))
            other = next((o for o in names if o != name and _close(t, want[o])), None)
            if other is not None:
                raise Wrong(f"the value recorded for {name!r} is the value of {other!r}: each recorder must store "
                            "under the name of the node it follows.",
                            f"{name!r} 记录的值其实是 {other!r} 的值：每个记录器都必须以它所跟随的节点的名字保存。",
                            tried=_with(label, f", call {i + 1}", f"，第 {i + 1} 次调用"),
                            expected=(f"the value of {name!r}", f"{name!r} 的值"),
                            got=(f"the value of {other!r}", f"{other!r} 的值"))
            raise Wrong(f"the value recorded for {name!r} differs from the eager model's.",
                        f"{name!r} 记录的值与 eager 模型不一致。",
                        tried=_with(label, f", call {i + 1}", f"，第 {i + 1} 次调用"),
                        expected=(f"tensor of shape {tuple(want[name].shape)}", f"形状为 {tuple(want[name].shape)} 的张量"),
                        got=_max_diff(t, want[name]) if isinstance(t, torch.Tensor) else describe(t))


# -- exercise 2: swap relu for clamp ------------------------------------------------------

_RELU_FUNCTIONS = (torch.relu, torch.nn.functional.relu, torch.relu_)  # F.relu_ is torch.relu_
_CLAMP_NAMES = ("clamp", "clip", "clamp_min")


def _clamp_targets() -> dict[Any, bool]:
    """Every call_function target that clamps, mapped to whether it works in place: torch.clamp, clip and
    clamp_min, the Tensor methods called as functions (torch.Tensor.clamp) and the ATen ops (aten.clamp,
    aten.clamp.default), each with its in-place form (its name ends in ``_``)."""
    targets: dict[Any, bool] = {}
    for base in _CLAMP_NAMES:
        for name, in_place in ((base, False), (base + "_", True)):
            for owner in (torch, torch.Tensor):
                if hasattr(owner, name):
                    targets[getattr(owner, name)] = in_place
            packet = getattr(torch.ops.aten, name, None)
            if packet is not None:
                targets[packet] = in_place
                for overload in packet.overloads():
                    targets[getattr(packet, overload)] = in_place
    return targets


_CLAMP_TARGETS = _clamp_targets()


def _clamp_target(node: fx.Node) -> bool | None:
    """Whether a clamp node works in place (None: the node is no clamp)."""
    if node.op == "call_method":
        name = str(node.target)
        return name.endswith("_") if name.rstrip("_") in _CLAMP_NAMES else None
    if node.op != "call_function":
        return None
    try:
        return _CLAMP_TARGETS.get(node.target)
    except TypeError:  # an unhashable target is no clamp
        return None


def _is_relu(node: fx.Node) -> bool:
    if node.op == "call_function":
        return any(node.target is f for f in _RELU_FUNCTIONS)
    return node.op == "call_method" and node.target in ("relu", "relu_")


def _is_clamp(node: fx.Node) -> bool:
    return _clamp_target(node) is not None


def _clamp_input(node: fx.Node) -> Any:
    """What a clamp node clamps: its first argument, or the keyword input (torch) / self (ATen)."""
    return node.args[0] if node.args else node.kwargs.get("input", node.kwargs.get("self"))


def _in_place(node: fx.Node) -> bool:
    """A relu (inplace=True) or a clamp that changes its input in place."""
    if _is_relu(node):
        if node.target in (torch.relu_, "relu_"):
            return True
        flag = node.kwargs.get("inplace", node.args[1] if len(node.args) > 1 else False)
        return flag is True
    return bool(_clamp_target(node))


def _relu_kind(node: fx.Node) -> tuple[str, str]:
    if node.target == "relu_":
        return ("the in-place method call x.relu_() (a call_method node whose target is the string 'relu_')",
                "原地方法调用 x.relu_()（target 为字符串 'relu_' 的 call_method 节点）")
    if node.target is torch.relu_:
        return ("the in-place function torch.relu_ (F.relu_ is the same function)",
                "原地函数 torch.relu_（F.relu_ 就是同一个函数）")
    if node.op == "call_method":
        return ("the method call x.relu() (a call_method node whose target is the string 'relu')",
                "方法调用 x.relu()（target 为字符串 'relu' 的 call_method 节点）")
    if node.target is torch.nn.functional.relu:
        return ("torch.nn.functional.relu (what an nn.ReLU module becomes in Dynamo's graph)",
                "torch.nn.functional.relu（nn.ReLU 模块在 Dynamo 计算图中的形式）")
    return "torch.relu", "torch.relu"


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


class _ReLUReused(nn.Module):
    """Each ReLU's input is read again after it: h after an in-place ReLU, a after an out-of-place one."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)
        self.plain = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        out = h + self.act(h)  # the in-place ReLU changes h before the sum reads it: 2 * relu(h)
        a = out - 1.0
        return a + self.plain(a)  # out of place (F.relu with inplace=False): a keeps its negative entries


class _PositionalInplace(nn.Module):
    """F.relu(h, True) and F.relu(g, False): inplace given by position, which Dynamo's graph keeps as a
    positional argument."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 1.0
        r = torch.nn.functional.relu(h, True)  # changes h in place: h + r is 2 * relu(x)
        g = x - 0.5
        s = torch.nn.functional.relu(g, False)  # leaves g as it is: g + s keeps g's negative entries
        return h + r + g + s


class _InPlaceSpellings(nn.Module):
    """The in-place spellings of relu: the method x.relu_() and the function torch.relu_ (= F.relu_)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 1.0
        h.relu_()
        g = x - 0.3
        torch.relu_(g)
        return h + g * 2


class _ReLUOfInput(nn.Module):
    """An in-place relu of the model's input: the caller's tensor changes too."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.relu(x, inplace=True) * 2


class _ReadBeforeInPlace(nn.Module):
    """h is read (y = h * 2) before its in-place relu: a clamp placed earlier than the relu changes y."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 1.0
        y = h * 2
        h.relu_()
        return y + h


class _ReLUOfInputs(nn.Module):
    """Out-of-place relus whose inputs nothing else reads: the model's input and its parameter. Neither
    may change (the caller's x and the model's weight are compared after the call)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.linspace(-1.0, 1.0, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + torch.nn.functional.relu(self.w)


class _ReLUOfViews(_ReLUOfInputs):
    """Out-of-place relus of views that nothing else reads: a row of the input and a slice of the parameter.
    A view shares its base's memory, so an in-place clamp of it changes the caller's x or the weight."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x[0]) * 2 + torch.relu(self.w[:4].view(-1))


class _NotReLUs(nn.Module):
    """Nodes that are no ReLU though their name or their target's name says relu."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        relu = x.sigmoid()  # a call_method node named relu
        out = torch.nn.functional.leaky_relu(x, 0.1) + torch.relu(relu - 0.5)
        return out + torch.nn.functional.relu6(x * 4)


class _IntegerReLUs(nn.Module):
    """ReLUs of an int64 tensor: relu keeps the dtype, a clamp with a float bound (min=0.0) does not."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(x - 3) + (x - 5).relu()
        return out * 2 + torch.nn.functional.relu(x - 4, inplace=True)


def _integer_input(seed: int) -> torch.Tensor:
    return torch.randint(-4, 12, (3, 4), generator=torch.Generator().manual_seed(seed))


#: Said when a clamp's float bound turns an integer tensor into a float one (or cannot be cast in place).
_FLOAT_BOUND = (
    "a clamp node clamps at the float 0.0: relu keeps an integer tensor's dtype, but a clamp whose bound is a "
    "float turns an integer tensor into a float one (and its in-place form cannot write floats into an integer "
    "tensor). Clamp at the integer 0, as the task says.",
    "有一个 clamp 节点的界限是浮点数 0.0：relu 保持整数张量的 dtype，而界限为浮点数的 clamp 会把整数张量变成浮点张量"
    "（它的原地版本则无法把浮点数写回整数张量）。请像题目说的那样，以整数 0 为界。")


def _float_bound(seen: list[tuple[list[fx.Node], Any, fx.GraphModule]]) -> fx.Node | None:
    """A clamp node (in the graphs the backend edited) whose lower bound is a float."""
    for _, returned, gm in seen:
        for node in (_edited_graph(returned, gm) or gm).graph.nodes:
            if _is_clamp(node) and isinstance(_clamp_min(node), float):
                return node
    return None


def _edited_graph(returned: Any, gm: fx.GraphModule) -> fx.GraphModule | None:
    """The GraphModule whose forward the backend returned (or the GraphModule itself)."""
    if isinstance(returned, fx.GraphModule):
        return returned
    owner = getattr(returned, "__self__", None)
    if isinstance(owner, fx.GraphModule) and getattr(returned, "__name__", "") in ("forward", "_lazy_forward"):
        return owner
    return None


@task("lab08.2", "a backend that swaps relu for clamp", "把 relu 换成 clamp 的后端", hints=[
    ("Print the graph a backend gets for a model with nn.ReLU, torch.relu and x.relu(): how does each ReLU "
     "appear as a node (its op and its target)?",
     "打印一个同时含有 nn.ReLU、torch.relu 和 x.relu() 的模型交给后端的计算图：每个 ReLU 各自以什么样的节点出现"
     "（它的 op 和 target）？"),
    ("Lecture 08, section 3 'A backend that edits the graph': insert the new node next to the old one, move "
     "every use of the old node to the new one, remove the old node, regenerate the code, and return the "
     "edited module's forward.",
     "第 08 讲第 3 节“修改计算图的后端”：在旧节点旁边插入新节点，把旧节点的所有使用者转到新节点上，删除旧节点，"
     "重新生成代码，并返回修改后模块的 forward。"),
    ("The new node takes the relu's input and only the keyword min=0; a relu's own kwargs (inplace) do not carry "
     "over as keywords, but what inplace=True means does: that relu changes its input, so its clamp must too. "
     "A graph break gives the backend a second graph to edit.",
     "新节点接收 relu 的输入，关键字参数只有 min=0；relu 自己的 kwargs（inplace）不能照搬成关键字参数，但 inplace=True 的含义要保留："
     "那个 relu 会修改它的输入，所以它的 clamp 也要修改。图中断会让后端再收到一张需要修改的计算图。"),
])
@keeping_settings(("relu_to_clamp only edits the graphs it gets; leave Dynamo's settings alone.",
                   "relu_to_clamp 只需修改它收到的计算图；请不要改动 Dynamo 的设置。"))
def _swap(answer: Any) -> None:
    need_callable(answer, "relu_to_clamp")
    cases = [(("a model with an nn.ReLU module", "含 nn.ReLU 模块的模型"), seeded(_ModuleReLU(), 83),
              _inputs(830, (5, 4))[0]),
             (("a model with torch.relu, x.relu() and F.relu", "含 torch.relu、x.relu() 和 F.relu 的模型"),
              seeded(_ThreeReLUs(), 84), _inputs(840, (5, 4))[0]),
             (("a model with a relu on each side of a graph break", "图中断两侧各有一个 relu 的模型"),
              seeded(_ReLUAroundBreak(), 85), _inputs(850, (3, 4))[0]),
             (("a model that reads each relu's input again after it: h = fc(x); out = h + act(h) with "
               "act = nn.ReLU(inplace=True); a = out - 1; return a + plain(a) with plain = nn.ReLU()",
               "在每个 relu 之后再次读取其输入的模型：h = fc(x); out = h + act(h)，其中 act = nn.ReLU(inplace=True)；"
               "a = out - 1; return a + plain(a)，其中 plain = nn.ReLU()"),
              seeded(_ReLUReused(), 89), _inputs(890, (6, 4))[0]),
             (("a function whose relus get inplace by position: h = x * 1.0; r = F.relu(h, True); g = x - 0.5; "
               "s = F.relu(g, False); return h + r + g + s",
               "relu 的 inplace 以位置参数给出的函数：h = x * 1.0; r = F.relu(h, True); g = x - 0.5; "
               "s = F.relu(g, False); return h + r + g + s"),
              _PositionalInplace(), _inputs(891, (3, 4))[0]),
             (("a function with the in-place spellings: h = x * 1.0; h.relu_(); g = x - 0.3; torch.relu_(g); "
               "return h + g * 2",
               "使用原地写法的函数：h = x * 1.0; h.relu_(); g = x - 0.3; torch.relu_(g); return h + g * 2"),
              _InPlaceSpellings(), _inputs(893, (3, 4))[0]),
             (("a function whose in-place relu changes its input: return F.relu(x, inplace=True) * 2 (the caller's x "
               "is compared with eager's after the call)",
               "其中原地 relu 会修改输入的函数：return F.relu(x, inplace=True) * 2（调用之后，会把调用方的 x 与 eager 的比较）"),
              _ReLUOfInput(), _inputs(894, (3, 4))[0]),
             (("a function that reads h before its in-place relu: h = x * 1.0; y = h * 2; h.relu_(); return y + h",
               "在原地 relu 之前读取 h 的函数：h = x * 1.0; y = h * 2; h.relu_(); return y + h"),
              _ReadBeforeInPlace(), _inputs(896, (3, 4))[0]),
             (("a model whose out-of-place relus take its input and its parameter w, which nothing else reads: "
               "return torch.relu(x) + F.relu(self.w) (the caller's x and w are compared with eager's after the call)",
               "非原地 relu 以模型的输入和参数 w 为输入、且没有别的节点读取它们的模型：return torch.relu(x) + F.relu(self.w)"
               "（调用之后，会把调用方的 x 和 w 与 eager 的比较）"),
              _ReLUOfInputs(), _inputs(897, (3, 4))[0]),
             (("a model whose out-of-place relus take views that nothing else reads: return torch.relu(x[0]) * 2 + "
               "torch.relu(self.w[:4].view(-1)) (the caller's x and w are compared with eager's after the call)",
               "非原地 relu 以没有别的节点读取的视图为输入的模型：return torch.relu(x[0]) * 2 + "
               "torch.relu(self.w[:4].view(-1))（调用之后，会把调用方的 x 和 w 与 eager 的比较）"),
              _ReLUOfViews(), _inputs(898, (3, 4))[0]),
             (("a function with nodes that are no ReLU: relu = x.sigmoid(); out = F.leaky_relu(x, 0.1) + "
               "torch.relu(relu - 0.5); return out + F.relu6(x * 4)",
               "含有并非 ReLU 的节点的函数：relu = x.sigmoid(); out = F.leaky_relu(x, 0.1) + torch.relu(relu - 0.5); "
               "return out + F.relu6(x * 4)"),
              _NotReLUs(), _inputs(895, (3, 4))[0] * 2),
             (("a function of an integer (int64) tensor: out = torch.relu(x - 3) + (x - 5).relu(); "
               "return out * 2 + F.relu(x - 4, inplace=True)",
               "接收整数（int64）张量的函数：out = torch.relu(x - 3) + (x - 5).relu(); "
               "return out * 2 + F.relu(x - 4, inplace=True)"),
              _IntegerReLUs(), _integer_input(892))]
    for label, model, x in cases:
        seen: list[tuple[list[fx.Node], Any, fx.GraphModule]] = []
        in_place: list[tuple[str, bool]] = []  # (the relu input's name, whether the relu was in place)
        # per graph: each node's place in the graph Dynamo gave, and where the in-place relus of each input were
        orders: list[tuple[dict[str, int], dict[str, list[int]]]] = []
        others: list[tuple[fx.GraphModule, dict[str, tuple[str, Any]]]] = []  # the nodes that are no relu

        def watching(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
            others.append((gm, {n.name: (n.op, n.target) for n in gm.graph.nodes
                                if n.op in _OPS and not _is_relu(n)}))
            inputs = [n.args[0] for n in gm.graph.nodes if _is_relu(n) and n.args]
            in_place.extend((n.args[0].name, _in_place(n)) for n in gm.graph.nodes
                            if _is_relu(n) and n.args and isinstance(n.args[0], fx.Node))
            relus: dict[str, list[int]] = {}
            for k, n in enumerate(gm.graph.nodes):
                if _is_relu(n) and _in_place(n) and n.args and isinstance(n.args[0], fx.Node):
                    relus.setdefault(n.args[0].name, []).append(k)
            orders.append(({n.name: k for k, n in enumerate(gm.graph.nodes)}, relus))
            returned = _code_first(answer)(gm, example_inputs)
            _require_current_forward(returned, gm, label)
            seen.append((inputs, returned, gm))
            return returned

        compiled = _compile(model, watching)
        x_eager, x_compiled = x.clone(), x.clone()
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        with torch.no_grad():
            want = model(x_eager)
            try:
                got = _run(compiled, x_compiled)
            except TypeError as exc:
                if "inplace" not in str(exc):
                    raise
                raise Wrong("torch.clamp got relu's keyword argument inplace=False: the clamp node needs only "
                            "the keyword min=0, not the relu node's kwargs.",
                            "torch.clamp 收到了 relu 的关键字参数 inplace=False：clamp 节点只需要关键字参数 min=0，"
                            "不要沿用 relu 节点的 kwargs。",
                            tried=label, expected=("clamp with min=0 only", "只带 min=0 的 clamp"),
                            got=str(exc).splitlines()[0][:120]) from None
            except RuntimeError as exc:
                node = _float_bound(seen)
                if node is None or x.is_floating_point():
                    raise
                raise Wrong(*_FLOAT_BOUND, tried=label, expected=_EAGER_OUTPUT,
                            got=f"RuntimeError: {str(exc).splitlines()[0][:120]}") from None
        for relu_inputs, returned, gm in seen:
            _check_swapped_graph(label, relu_inputs, returned, gm, others)
        if isinstance(got, torch.Tensor) and got.dtype != want.dtype:
            en, zh = _FLOAT_BOUND if _float_bound(seen) is not None else (
                "the compiled model's output has another dtype than eager's: each clamp must keep its input's "
                "dtype, as relu does.",
                "编译后模型输出的 dtype 与 eager 不同：每个 clamp 都必须像 relu 一样保持输入的 dtype。")
            raise Wrong(en, zh, tried=label, expected=(f"dtype {want.dtype}", f"dtype 为 {want.dtype}"),
                        got=(f"dtype {got.dtype}", f"dtype 为 {got.dtype}"))
        if not _close(got, want):
            _name_replaced_non_relu(label, seen, others)
            _name_in_place_mistake(label, in_place, seen, got, want)
            _name_early_clamp(label, seen, orders, got, want)
            raise Wrong("the compiled model's output changed, although every relu became a clamp.",
                        "每个 relu 都换成了 clamp，但编译后模型的输出变了。",
                        tried=label, expected=_EAGER_OUTPUT,
                        got=_max_diff(got, want) if isinstance(got, torch.Tensor) else describe(got))
        changed = [k for k, v in model.state_dict().items() if not torch.equal(v, weights[k])]
        if changed:
            raise Wrong(f"the compiled model's output is right, but it changed the model's own {changed[0]}: a relu "
                        "that is not in place leaves its input alone, even when nothing else reads that input, and "
                        "a parameter's relu reads the model's weight. Only a relu with inplace=True (or relu_) becomes "
                        "an in-place clamp.",
                        f"编译后模型的输出是对的，但它修改了模型自己的 {changed[0]}：非原地的 relu 不会改动它的输入，"
                        "即使没有别的节点再读取这个输入；而参数的 relu 读取的正是模型的权重。只有 inplace=True 的 relu"
                        "（或 relu_）才换成原地运算的 clamp。",
                        tried=label, expected=(f"{changed[0]} unchanged", f"{changed[0]} 保持不变"),
                        got=_max_diff(model.state_dict()[changed[0]], weights[changed[0]]))
        if not torch.equal(x_compiled, x_eager):
            _name_replaced_non_relu(label, seen, others)
            if torch.equal(x_compiled, x):
                raise Wrong("the compiled model's output is right, but the caller's x is left as it was, while the "
                            "eager model's in-place relu changes it: where a relu is in place, its clamp must change its "
                            "input in place too (the in-place form of clamp). An out-of-place clamp whose result the later "
                            "readers use gives them the right values, but the tensor itself, and whoever else holds it, "
                            "such as the caller, is left unchanged.",
                            "编译后模型的输出是对的，但调用方的 x 保持原样，而 eager 模型里原地运算的 relu 会修改它：relu 是原地运算时，"
                            "它的 clamp 也必须原地修改输入（用 clamp 的原地版本）。非原地的 clamp 即使让之后的读取者改用它的结果，"
                            "读到的数值虽然对，张量本身以及持有它的其他人（例如调用方）看到的却仍是原来的值。",
                            tried=label, expected=("the caller's x changed by the in-place relu",
                                                   "调用方的 x 被原地 relu 修改"),
                            got=("the caller's x unchanged", "调用方的 x 没有变"))
            raise Wrong("the compiled model's output is right, but the caller's x differs after the call from what the "
                        "eager model leaves in it: a clamp must change its input in place exactly where the relu it "
                        "replaces does.",
                        "编译后模型的输出是对的，但调用之后调用方的 x 与 eager 模型留下的不同：只有在被替换的 relu 原地修改输入的地方，"
                        "clamp 才能原地修改输入，而且在那里必须这样做。",
                        tried=label, expected=("x as eager leaves it", "eager 留下的 x"), got=_max_diff(x_compiled, x_eager))


def _name_replaced_non_relu(label: tuple[str, str], seen: list[tuple[list[fx.Node], Any, fx.GraphModule]],
                            others: list[tuple[fx.GraphModule, dict[str, tuple[str, Any]]]]) -> None:
    """Name a node that was no relu but is gone from the graph the backend returned (or runs another target)."""
    for (_, returned, gm), (_, before) in zip(seen, others):
        after = {n.name: (n.op, n.target) for n in (_edited_graph(returned, gm) or gm).graph.nodes}
        gone = next((name for name, kept in before.items() if after.get(name) != kept), None)
        if gone is None:
            continue
        op, target = before[gone]
        shown = getattr(target, "__name__", target)
        raise Wrong(f"the node {gone} ({op} {shown}) is no ReLU, but your backend replaced it: pick the ReLU nodes by "
                    "their op and target, as the task lists them. A node's name (Dynamo names a node after the "
                    "variable it was assigned to), or a target whose name merely contains 'relu' (leaky_relu, "
                    "relu6), does not make it a ReLU.",
                    f"节点 {gone}（{op} {shown}）并不是 ReLU，你的后端却把它替换了：请像题目列出的那样，按 op 和 target "
                    "挑出 ReLU 节点。节点的名字（Dynamo 用它被赋值给的变量来命名节点），或者 target 的名字里碰巧含有 'relu'"
                    "（leaky_relu、relu6），都不能说明它是 ReLU。",
                    tried=label, expected=(f"the node {gone} left as it is", f"节点 {gone} 保持原样"),
                    got=(f"the node {gone} replaced", f"节点 {gone} 被替换了"))


def _name_in_place_mistake(label: tuple[str, str], in_place: list[tuple[str, bool]],
                           seen: list[tuple[list[fx.Node], Any, fx.GraphModule]], got: Any, want: torch.Tensor) -> None:
    """Name a clamp whose in-placeness differs from the relu it replaced (when the output changed)."""
    clamps: dict[str, list[bool]] = {}
    for _, returned, gm in seen:
        edited = _edited_graph(returned, gm) or gm
        for node in edited.graph.nodes:
            if _is_clamp(node) and isinstance(_clamp_input(node), fx.Node):
                clamps.setdefault(_clamp_input(node).name, []).append(_in_place(node))
    got_line = _max_diff(got, want) if isinstance(got, torch.Tensor) else describe(got)
    if any(was and not any(clamps.get(name, [])) for name, was in in_place):
        raise Wrong("a relu with inplace=True changes its input in place, and the model reads that input again "
                    "after the relu; your clamp leaves its input as it was, so that later read sees the values from "
                    "before the relu. Where a relu is in place, the clamp must change its input in place too; where it "
                    "is not, it must not. inplace can come as a keyword (nn.ReLU(inplace=True) gives "
                    "F.relu(h, inplace=True)) or by position (F.relu(h, True)): the graph keeps it the way it was given; "
                    "x.relu_() and torch.relu_ are always in place.",
                    "inplace=True 的 relu 会原地修改它的输入，而模型在 relu 之后还会再次读取这个输入；你的 clamp 没有改动它的输入，"
                    "于是之后的读取看到的是 relu 之前的值。relu 是原地运算时，clamp 也必须原地修改它的输入；relu 不是原地运算时，"
                    "clamp 也不能是。inplace 既可能是关键字参数（nn.ReLU(inplace=True) 变成 F.relu(h, inplace=True)），"
                    "也可能是位置参数（F.relu(h, True)）：计算图按它被传入的方式保留它；x.relu_() 和 torch.relu_ 则总是原地运算。",
                    tried=label, expected=_EAGER_OUTPUT, got=got_line)
    if any(not was and any(clamps.get(name, [])) for name, was in in_place):
        raise Wrong("a relu that was not in place became a clamp that changes its input in place, and the model "
                    "reads that input again after the relu, so it now sees clamped values. Only a relu with "
                    "inplace=True (or an in-place spelling, relu_) becomes an in-place clamp; inplace=False given by "
                    "position, as in F.relu(h, False), is not in place either.",
                    "一个不是原地运算的 relu 被换成了原地修改输入的 clamp，而模型在 relu 之后还会再次读取这个输入，"
                    "于是读到的是被 clamp 过的值。只有 inplace=True 的 relu（或原地写法 relu_）才换成原地运算的 clamp；"
                    "以位置参数给出的 inplace=False（如 F.relu(h, False)）同样不是原地运算。",
                    tried=label, expected=_EAGER_OUTPUT, got=got_line)


def _name_early_clamp(label: tuple[str, str], seen: list[tuple[list[fx.Node], Any, fx.GraphModule]],
                      orders: list[tuple[dict[str, int], dict[str, list[int]]]], got: Any,
                      want: torch.Tensor) -> None:
    """Name an in-place clamp placed before a node that, in the graph Dynamo gave, read the clamp's input
    before the relu did (so that node now reads clamped values)."""
    for (_, returned, gm), (order, relus) in zip(seen, orders):
        nodes = list((_edited_graph(returned, gm) or gm).graph.nodes)
        place = {n: k for k, n in enumerate(nodes)}
        for clamp in nodes:
            source = _clamp_input(clamp) if _is_clamp(clamp) and _in_place(clamp) else None
            if not isinstance(source, fx.Node) or source.name not in relus:
                continue
            relu_at = min(relus[source.name])
            early = [u.name for u in source.users if u is not clamp and place.get(u, -1) > place[clamp]
                     and order.get(u.name, relu_at) < relu_at]
            if early:
                raise Wrong(f"an in-place clamp sits earlier in the graph than the relu it replaces: {early[0]} reads "
                            "the relu's input before the relu in the model, but after your clamp in the edited graph, "
                            "so it now reads clamped values. Put each clamp where its relu was.",
                            f"有一个原地 clamp 在计算图中的位置比它替换的 relu 更靠前：在模型里，{early[0]} 在 relu 之前读取 relu 的输入，"
                            "而在修改后的计算图中它排在你的 clamp 之后，于是读到的是被 clamp 过的值。请把每个 clamp 放在它的 relu 原来的位置。",
                            tried=label, expected=_EAGER_OUTPUT,
                            got=_max_diff(got, want) if isinstance(got, torch.Tensor) else describe(got))


def _clamp_min(node: fx.Node) -> Any:
    """The lower bound a clamp node applies (None when it has none)."""
    return node.args[1] if len(node.args) > 1 else node.kwargs.get("min")


def _check_swapped_graph(label: tuple[str, str], relu_inputs: list[fx.Node], returned: Any, gm: fx.GraphModule,
                         others: list[tuple[fx.GraphModule, dict[str, tuple[str, Any]]]]) -> None:
    edited = _edited_graph(returned, gm)
    no_relu = ("no relu node", "没有 relu 节点")
    if edited is None:
        raise Wrong("return the edited GraphModule's forward, as in the lecture, so the graph that runs is the one "
                    "you edited.",
                    "请像讲义中那样返回修改后 GraphModule 的 forward，这样运行的才是你修改过的计算图。",
                    tried=label, expected=("the edited module's forward", "修改后模块的 forward"), got=describe(returned))
    left = [n for n in edited.graph.nodes if _is_relu(n)]
    clamped = {_clamp_input(n) for n in edited.graph.nodes if _is_clamp(n)}
    # a relu with no users whose input a clamp reads: replaced but not removed (x.relu_() has no users at all)
    unused = [n for n in left if not n.users and n.args and n.args[0] in clamped]
    if unused:
        raise Wrong("the relu's users now read from the clamp, but the relu node itself is still in the graph "
                    "(with no users): remove it from the graph.",
                    "relu 的使用者已经改为读取 clamp，但 relu 节点本身仍留在计算图中（没有任何使用者）：请把它从计算图中删除。",
                    tried=label, expected=no_relu,
                    got=(f"node {unused[0].name} with no users", f"节点 {unused[0].name}，没有使用者"))
    if left and left[0].users and all(_is_clamp(user) for user in left[0].users):
        raise Wrong("a clamp node reads the relu's output, so the relu still runs: the clamp must read the relu's "
                    "input, and the relu node goes.",
                    "有一个 clamp 节点读取的是 relu 的输出，所以 relu 仍在运行：clamp 必须读取 relu 的输入，并删除 relu 节点。",
                    tried=label, expected=no_relu,
                    got=(f"node {left[0].name} read by {', '.join(u.name for u in left[0].users)}",
                         f"节点 {left[0].name} 被 {', '.join(u.name for u in left[0].users)} 读取"))
    if left or len([n for n in edited.graph.nodes if _is_clamp(n)]) < len(relu_inputs):
        _name_replaced_non_relu(label, [(relu_inputs, returned, gm)], [o for o in others if o[0] is gm])
    if left:
        en, zh = _relu_kind(left[0])
        if "relu" not in left[0].name:
            en, zh = (f"{en}, in a node named {left[0].name}: Dynamo names a node after the variable it was assigned "
                      "to, so pick the ReLU nodes by their op and target, not by their name.",
                      f"{zh}，所在节点名为 {left[0].name}：Dynamo 用节点被赋值给的变量来命名节点，所以要按 op 和 target "
                      "挑出 ReLU 节点，而不是按名字。")
        else:
            en, zh = f"{en}. Match every spelling the task lists.", f"{zh}。题目列出的每种写法都要匹配。"
        raise Wrong(f"a relu is still in the graph: {en}", f"计算图里仍有 relu：{zh}",
                    tried=label, expected=no_relu,
                    got=(f"node {left[0].name}: {left[0].op} {getattr(left[0].target, '__name__', left[0].target)}",
                         f"节点 {left[0].name}：{left[0].op} {getattr(left[0].target, '__name__', left[0].target)}"))
    clamps = [n for n in edited.graph.nodes if _is_clamp(n)]
    if len(clamps) < len(relu_inputs):
        raise Wrong("each relu should become a clamp node with min=0. If you made them, check that nothing removed "
                    "them afterwards: graph.eliminate_dead_code() removes an in-place clamp whose result nothing "
                    "reads, though it changes its input.",
                    "每个 relu 都应当变成一个 min=0 的 clamp 节点。如果你已经建了这些节点，请检查之后有没有什么把它们删掉了："
                    "graph.eliminate_dead_code() 会删除结果没有被读取的原地 clamp，尽管它会修改输入。",
                    tried=label, expected=(f"at least {len(relu_inputs)} clamp nodes", f"至少 {len(relu_inputs)} 个 clamp 节点"),
                    got=f"{len(clamps)}")
    wrong_bound = [n for n in clamps if _clamp_min(n) != 0 or isinstance(_clamp_min(n), bool)
                   or n.kwargs.get("max") is not None or (len(n.args) > 2 and n.args[2] is not None)]
    if wrong_bound:
        node = wrong_bound[0]
        raise Wrong("a clamp node does not clamp at min=0 only: relu keeps values of at least 0 and leaves larger "
                    "ones as they are.",
                    "有一个 clamp 节点的界限不是仅有 min=0：relu 保留不小于 0 的值，较大的值保持不变。",
                    tried=label, expected="clamp(input, min=0)",
                    got=(f"node {node.name}: args {len(node.args)}, kwargs {sorted(node.kwargs)}",
                         f"节点 {node.name}：{len(node.args)} 个位置参数，kwargs {sorted(node.kwargs)}"))
    taken = {_clamp_input(n).name for n in clamps if isinstance(_clamp_input(n), fx.Node)}
    missing = [n.name for n in relu_inputs if n.name not in taken]
    if missing:
        raise Wrong("a clamp node does not take the relu's input: each clamp must read the node the relu read "
                    "(not the relu itself, and not another node).",
                    "有一个 clamp 节点接收的不是 relu 的输入：每个 clamp 都必须读取原来 relu 读取的那个节点（不是 relu 本身，也不是别的节点）。",
                    tried=label, expected=(f"clamp nodes reading {[n.name for n in relu_inputs]}",
                                           f"读取 {[n.name for n in relu_inputs]} 的 clamp 节点"),
                    got=(f"clamp nodes reading {sorted(taken)}", f"读取 {sorted(taken)} 的 clamp 节点"))
    if _stale_code(edited):
        raise Wrong("the graph was edited but its code was not regenerated, so the old code still runs (the "
                    "checker reads gm.code before calling your backend, as a debugging print would). Regenerate "
                    "the code after editing the graph.",
                    "计算图改了，但代码没有重新生成，所以运行的仍是旧代码（检查器在调用你的后端之前读取了 gm.code，"
                    "就像调试时打印一次那样）。修改计算图之后请重新生成代码。",
                    tried=label, expected=("gm.code matching gm.graph", "与 gm.graph 一致的 gm.code"),
                    got=("gm.code from before the edit", "修改之前的 gm.code"))


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


def _split_even(x: torch.Tensor) -> torch.Tensor:
    x = torch.sin(x).cos().tanh()  # graph 0: 3 ops
    torch._dynamo.graph_break()
    return x.exp().sin().neg()  # graph 1: 3 ops


def _scaled_wave(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sin(x).cos() * y  # 3 ops, 2 placeholders


def _sine_branch(t: torch.Tensor) -> torch.Tensor:
    return t.sin()


def _cosine_branch(t: torch.Tensor) -> torch.Tensor:
    return t.cos()


def _chosen_wave(x: torch.Tensor) -> torch.Tensor:
    # 5 ops (sum, gt, cond, getitem, mul) and 2 get_attr nodes: the branches are submodules of the graph
    return torch.cond(x.sum() > 0, _sine_branch, _cosine_branch, (x,)) * 2


def _sine_pair(t: torch.Tensor) -> torch.Tensor:
    return t.sin().neg()


def _cosine_pair(t: torch.Tensor) -> torch.Tensor:
    return t.cos().abs()


def _chosen_pair(x: torch.Tensor) -> torch.Tensor:
    # 5 ops and 2 get_attr nodes, as _chosen_wave, but each branch holds 2 ops: 4 inside the branches
    return torch.cond(x.sum() > 0, _sine_pair, _cosine_pair, (x,)) * 2


def _both_ways(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return t.sin(), t.cos()


def _other_way(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return t.cos(), t.sin()


def _chosen_two(x: torch.Tensor) -> torch.Tensor:
    # 6 ops (sum, gt, cond, getitem, getitem, add): a cond with two results gives two getitem nodes
    a, b = torch.cond(x.sum() > 0, _both_ways, _other_way, (x,))
    return a + b


def _sorted_wave(x: torch.Tensor) -> torch.Tensor:
    # 3 ops (sort, getitem, cos): a getitem node without torch.cond
    return torch.sort(x)[0].cos()


def _changed_in_place(x: torch.Tensor) -> torch.Tensor:
    # 4 ops (sin, add_, mul_, cos); add_ and mul_ change y in place, and no node reads their results
    y = x.sin()
    y.add_(1.0)
    y.mul_(2.0)
    return y.cos()


def _set_first(x: torch.Tensor) -> torch.Tensor:
    # 3 ops (sin, setitem, cos): y[0] = 0.0 is an operator.setitem node that no node reads
    y = x.sin()
    y[0] = 0.0
    return y.cos()


def _no_grad_wave(x: torch.Tensor) -> torch.Tensor:
    # 4 ops: torch.no_grad() puts two _set_grad_enabled nodes (no node reads them) around sin
    with torch.no_grad():
        y = x.sin()
    return y.cos()


def _skipping(skip: Callable[[fx.Node], bool]) -> Callable[[fx.GraphModule], int]:
    """A count of the ops that leaves out the nodes ``skip`` picks."""
    return lambda gm: sum(1 for n in gm.graph.nodes if n.op in _OPS and not skip(n))


def _is_getitem(node: fx.Node) -> bool:
    import operator

    return node.target is operator.getitem


def _is_higher_order(node: fx.Node) -> bool:
    return isinstance(node.target, torch._ops.HigherOrderOperator)


def _is_python_operator(node: fx.Node) -> bool:
    return getattr(node.target, "__module__", None) in ("_operator", "operator")


def _ops_with_branches(gm: fx.GraphModule) -> int:
    """The ops of the graph plus those inside the GraphModules it holds (torch.cond's branches)."""
    return _ops(gm) + sum(_ops(m) for m in gm.modules() if m is not gm and isinstance(m, fx.GraphModule))


def _ops(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in _OPS)


def _call_functions(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op == "call_function")


def _limit_run(make: Any, limit: int, fn: Any, args: tuple[torch.Tensor, ...]) -> tuple[list[fx.GraphModule], Any, Any]:
    """Compile ``fn`` with the learner's backend; return the graphs, the output, the exception."""
    backend = make(limit)
    if not callable(backend):
        raise Wrong("make_limited_backend(n) should return a backend function.",
                    "make_limited_backend(n) 应当返回一个后端函数。", tried=f"make_limited_backend({limit})",
                    got=type(backend).__name__)
    graphs: list[fx.GraphModule] = []

    def watching(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        graphs.append(gm)
        returned = backend(gm, example_inputs)
        _RETURNED[id(gm)] = returned
        return returned

    compiled = _compile(fn, watching)
    try:
        with quiet():
            return graphs, compiled(*args), None
    except Exception as exc:  # what torch.compile surfaces is part of what we check
        if isinstance(getattr(exc, "inner_exception", exc), NotImplementedError):
            raise NotImplementedError from None
        return graphs, None, exc


_REF_GRAPHS: dict[str, list[fx.GraphModule]] = {}

#: What the learner's backend returned for each graph (by id of the graph) in the current check of lab08.3.
_RETURNED: dict[int, Any] = {}


def _reference_graphs(what: str, fn: Any, args: tuple[torch.Tensor, ...]) -> list[fx.GraphModule]:
    """Every graph Dynamo hands a backend for ``fn`` (a backend that refuses nothing); computed once."""
    if what not in _REF_GRAPHS:
        graphs: list[fx.GraphModule] = []
        compiled = _compile(fn, lambda gm, example_inputs: graphs.append(gm) or gm.forward)
        with quiet():
            compiled(*args)
        torch._dynamo.reset()
        _REF_GRAPHS[what] = graphs
    return _REF_GRAPHS[what]


def _refused_at(graphs: list[fx.GraphModule], limit: int, count: Callable[[fx.GraphModule], int],
                strict: bool) -> int | None:
    """Index of the first graph a backend counting with ``count`` refuses (None: it refuses none)."""
    for i, gm in enumerate(graphs):
        if count(gm) > limit or (strict and count(gm) == limit):
            return i
    return None


#: Known ways to count or compare wrongly: name, count, refuses at exactly n, English, 中文.
_LIMIT_MISTAKES: list[tuple[str, Callable[[fx.GraphModule], int], bool, str, str]] = [
    ("every node", lambda gm: len(gm.graph.nodes), False,
     "you count every node: placeholders and the output node are not ops. Count only call_function, "
     "call_method and call_module nodes.",
     "你统计了所有节点：placeholder 和 output 节点不是算子。请只统计 call_function、call_method 和 call_module 节点。"),
    ("every node but the output", lambda gm: sum(1 for n in gm.graph.nodes if n.op != "output"), False,
     "you count the placeholders as ops: an input is not an op. Count only call_function, call_method and "
     "call_module nodes.",
     "你把 placeholder 也算作算子了：输入不是算子。请只统计 call_function、call_method 和 call_module 节点。"),
    ("every node but one placeholder and the output", lambda gm: len(gm.graph.nodes) - 2, False,
     "you subtract a fixed count of non-op nodes, but a graph has one placeholder per input (here two): count "
     "the call_function, call_method and call_module nodes themselves.",
     "你减去的是固定数目的非算子节点，但每个输入都对应一个 placeholder（这里有两个）：请直接统计 call_function、"
     "call_method 和 call_module 节点。"),
    ("ops inside the branches counted", _ops_with_branches, False,
     "you count the ops inside torch.cond's branches too: the branches are subgraphs the graph holds as "
     "submodules (it fetches them with get_attr nodes), not nodes of the graph you were given. Count only the "
     "call_function, call_method and call_module nodes of that graph; the cond node itself is one of them.",
     "你把 torch.cond 分支内部的算子也算进去了：分支是计算图作为子模块持有的子图（由 get_attr 节点取出），而不是你收到的那张计算图的节点。"
     "请只统计那张计算图中的 call_function、call_method 和 call_module 节点；cond 节点本身就是其中之一。"),
    ("distinct targets", lambda gm: len({n.target for n in gm.graph.nodes if n.op in _OPS}), False,
     "you count each kind of op once: two nodes with the same target are two ops (a chain that calls sin three "
     "times has three sin ops). Count the nodes themselves, not their distinct targets.",
     "你把每一种算子只算了一次：target 相同的两个节点是两个算子（调用三次 sin 的链有三个 sin 算子）。"
     "请统计节点本身，而不是不同 target 的种数。"),
    ("distinct names", lambda gm: len({re.sub(r"_\d+$", "", n.name) for n in gm.graph.nodes if n.op in _OPS}), False,
     "you count each kind of op once: nodes named sin, sin_1 and sin_2 are three ops, not one. Count the nodes "
     "themselves, not the distinct names they share.",
     "你把每一种算子只算了一次：名为 sin、sin_1、sin_2 的节点是三个算子，而不是一个。请统计节点本身，而不是它们共用的名字有几种。"),
    ("get_attr counted", lambda gm: _ops(gm) + sum(1 for n in gm.graph.nodes if n.op == "get_attr"), False,
     "you count get_attr nodes as ops: a get_attr node only fetches an attribute of the module (here the two "
     "branches torch.cond chooses between); it computes nothing. Count only call_function, call_method and "
     "call_module nodes.",
     "你把 get_attr 节点也算作了算子：get_attr 节点只是取出模块的一个属性（这里是 torch.cond 在其间选择的两个分支），"
     "它本身不做任何计算。请只统计 call_function、call_method 和 call_module 节点。"),
    ("getitem skipped", _skipping(_is_getitem), False,
     "you leave out the getitem nodes: taking one result out of an op that returns several (cond[0] after "
     "torch.cond, torch.sort(x)[0]) is a call_function node (its target is operator.getitem), so it is an op "
     "like any other.",
     "你漏掉了 getitem 节点：从返回多个结果的算子中取出一个结果（torch.cond 之后的 cond[0]、torch.sort(x)[0]）"
     "是一个 call_function 节点（target 为 operator.getitem），和其他节点一样是算子。"),
    ("cond skipped", _skipping(_is_higher_order), False,
     "you leave out the cond node: torch.cond is a call_function node of the graph (its target is "
     "torch.ops.higher_order.cond), and it is an op; only the branches it chooses between are fetched by "
     "get_attr nodes.",
     "你漏掉了 cond 节点：torch.cond 是计算图中的一个 call_function 节点（target 为 torch.ops.higher_order.cond），"
     "它是算子；只有它在其间选择的两个分支才由 get_attr 节点取出。"),
    ("unused results skipped", _skipping(lambda n: not n.users), False,
     "you leave out ops whose result no node reads: y.add_(1.0) changes y in place, so nothing needs its "
     "result, but it is an op all the same. Count every call_function, call_method and call_module node, "
     "read or not.",
     "你漏掉了结果没有被任何节点读取的算子：y.add_(1.0) 原地修改 y，没有谁需要它的返回值，但它照样是算子。"
     "请统计每一个 call_function、call_method 和 call_module 节点，不论它的结果有没有被读取。"),
    ("unread ops skipped unless in place", _skipping(
        lambda n: not n.users and not str(getattr(n.target, "__name__", n.target)).endswith("_")), False,
     "you leave out ops whose result no node reads unless their name ends in _: y[0] = 0.0 is an operator.setitem "
     "node and torch.no_grad() adds _set_grad_enabled nodes; no node reads their results, and their names do not "
     "end in _, but each is an op. Count every call_function, call_method and call_module node, read or not.",
     "你漏掉了结果没有被读取、名字又不以 _ 结尾的算子：y[0] = 0.0 是一个 operator.setitem 节点，torch.no_grad() 会加入 "
     "_set_grad_enabled 节点；没有节点读取它们的结果，名字也不以 _ 结尾，但它们都是算子。请统计每一个 call_function、"
     "call_method 和 call_module 节点，不论它的结果有没有被读取。"),
    ("python operators skipped", _skipping(_is_python_operator), False,
     "you leave out the Python operators: x > 0, a * b and cond[0] are call_function nodes whose targets come "
     "from Python's operator module (operator.gt, operator.mul, operator.getitem), and they are ops too.",
     "你漏掉了 Python 运算符：x > 0、a * b 和 cond[0] 都是 call_function 节点，它们的 target 来自 Python 的 "
     "operator 模块（operator.gt、operator.mul、operator.getitem），它们也是算子。"),
    ("call_function only", _call_functions, False,
     "you count only call_function nodes: x.cos() is a call_method node, and it is an op too.",
     "你只统计了 call_function 节点：x.cos() 是 call_method 节点，它也是算子。"),
    ("refuses at exactly n", _ops, True,
     "you refuse a graph with exactly n ops: refuse only graphs with more than n.",
     "你拒绝了恰好有 n 个算子的计算图：只应拒绝算子数超过 n 的计算图。"),
    ("refuses only from n + 2", lambda gm: _ops(gm) - 1, False,
     "you accept a graph with n + 1 ops: that is already more than n. Refuse every graph whose op count is over n.",
     "你接受了有 n + 1 个算子的计算图：这已经超过 n 了。算子数超过 n 的计算图都要拒绝。"),
    ("never refuses", lambda gm: 0, False,
     "the backend never refused a graph, not even one with more ops than the limit.",
     "这个后端从不拒绝计算图，即使算子数超过了上限。"),
]


#: Named instead of "refuses at exactly n" when the refusal's message gives one op more than the graph has.
_OUTPUT_COUNTED = (
    "you count the output node as an op (your message gives one op more than the graph has): only call_function, "
    "call_method and call_module nodes are ops.",
    "你把 output 节点也算作了算子（报错信息里的算子数比计算图实际多 1）：只有 call_function、call_method 和 call_module "
    "节点才是算子。")


@task("lab08.3", "a backend that refuses graphs over n ops", "拒绝超过 n 个算子的计算图的后端", hints=[
    ("Print the nodes of a small graph with their op: which of them are operations, and which are the inputs "
     "and the output?",
     "打印一张小计算图的节点及其 op：哪些是运算，哪些是输入和输出？"),
    ("Lecture 08, section 6 'When a backend says no': a backend refuses a graph by raising; torch.compile "
     "reports it as BackendCompilerFailed, whose inner_exception is yours. A graph that is accepted runs as the "
     "backend returns it.",
     "第 08 讲第 6 节“当后端拒绝编译时”：后端通过抛出异常来拒绝一张计算图；torch.compile 把它报告为 BackendCompilerFailed，"
     "其 inner_exception 就是你的异常。被接受的计算图按后端返回的样子运行。"),
    ("Over n means more than n: a graph with exactly n ops is accepted. The backend is called once per graph, "
     "and a graph break makes two.",
     "超过 n 指的是多于 n：恰好有 n 个算子的计算图应当被接受。后端对每张计算图各调用一次，而图中断会产生两张图。"),
])
@keeping_settings(("make_limited_backend only builds a backend that counts and refuses; leave Dynamo's "
                   "settings alone.",
                   "make_limited_backend 只需构造一个计数并拒绝的后端；请不要改动 Dynamo 的设置。"))
def _limited(answer: Any) -> None:
    from torch._dynamo.exc import BackendCompilerFailed

    need_callable(answer, "make_limited_backend")
    _RETURNED.clear()
    x, y = _inputs(86, (6,), (6,))
    two_tensors = ("a function of two tensors with 3 ops", "接收两个张量、含 3 个算子的函数")
    cases = [(4, _chain(3), ("a chain of 3 ops", "3 个算子组成的链")),
             (4, _chain(4), ("a chain of exactly 4 ops", "恰好 4 个算子组成的链")),
             (1, _chain(1), ("a chain of 1 op", "只有 1 个算子的链")),
             (0, _chain(1), ("a chain of 1 op", "只有 1 个算子的链")),
             (4, _chain(7), ("a chain of 7 ops", "7 个算子组成的链")),
             (5, _chain(6), ("a chain of 6 ops (3 of them method calls)", "6 个算子组成的链（其中 3 个是方法调用）")),
             (4, _split_even, ("a function split by a graph break into two graphs of 3 ops",
                               "被图中断分成两张计算图（各 3 个算子）的函数")),
             (4, _split_chain, ("a function split by a graph break into graphs of 3 and 6 ops",
                                "被图中断分成两张计算图（3 个和 6 个算子）的函数")),
             (4, _scaled_wave, two_tensors),
             (3, _scaled_wave, two_tensors),
             (5, _chosen_wave, ("a function with torch.cond (5 ops; the two branches are get_attr nodes)",
                                "含 torch.cond 的函数（5 个算子；两个分支是 get_attr 节点）")),
             (4, _chosen_wave, ("a function with torch.cond (5 ops; the two branches are get_attr nodes)",
                                "含 torch.cond 的函数（5 个算子；两个分支是 get_attr 节点）")),
             (5, _chosen_two, ("a function with a torch.cond that returns two tensors: a, b = torch.cond(...); "
                               "return a + b (6 ops, of which 2 are getitem nodes)",
                               "含返回两个张量的 torch.cond 的函数：a, b = torch.cond(...); return a + b"
                               "（6 个算子，其中 2 个是 getitem 节点）")),
             (4, _chosen_two, ("a function with a torch.cond that returns two tensors: a, b = torch.cond(...); "
                               "return a + b (6 ops, of which 2 are getitem nodes)",
                               "含返回两个张量的 torch.cond 的函数：a, b = torch.cond(...); return a + b"
                               "（6 个算子，其中 2 个是 getitem 节点）")),
             (2, _sorted_wave, ("torch.sort(x)[0].cos() (3 ops, one of them a getitem node)",
                                "torch.sort(x)[0].cos()（3 个算子，其中 1 个是 getitem 节点）")),
             (2, _scaled_wave, two_tensors),
             (3, _changed_in_place, ("y = x.sin(); y.add_(1.0); y.mul_(2.0); return y.cos() (4 ops; no node reads "
                                     "the results of add_ and mul_)",
                                     "y = x.sin(); y.add_(1.0); y.mul_(2.0); return y.cos()（4 个算子；add_ 和 mul_ "
                                     "的结果没有被任何节点读取）")),
             (4, _changed_in_place, ("y = x.sin(); y.add_(1.0); y.mul_(2.0); return y.cos() (4 ops; no node reads "
                                     "the results of add_ and mul_)",
                                     "y = x.sin(); y.add_(1.0); y.mul_(2.0); return y.cos()（4 个算子；add_ 和 mul_ "
                                     "的结果没有被任何节点读取）")),
             (2, _set_first, ("y = x.sin(); y[0] = 0.0; return y.cos() (3 ops; y[0] = 0.0 is a setitem node "
                              "that no node reads)",
                              "y = x.sin(); y[0] = 0.0; return y.cos()（3 个算子；y[0] = 0.0 是一个没有被任何节点读取的 "
                              "setitem 节点）")),
             (3, _no_grad_wave, ("with torch.no_grad(): y = x.sin(); then return y.cos() (4 ops: sin, cos and two "
                                 "_set_grad_enabled nodes)",
                                 "with torch.no_grad(): y = x.sin()；然后 return y.cos()（4 个算子：sin、cos 和两个 "
                                 "_set_grad_enabled 节点）")),
             (4, _no_grad_wave, ("with torch.no_grad(): y = x.sin(); then return y.cos() (4 ops: sin, cos and two "
                                 "_set_grad_enabled nodes)",
                                 "with torch.no_grad(): y = x.sin()；然后 return y.cos()（4 个算子：sin、cos 和两个 "
                                 "_set_grad_enabled 节点）")),
             (8, _chosen_pair, ("a function with torch.cond (5 ops; the two branches are get_attr nodes, each "
                                "branch holds 2 ops of its own)",
                                "含 torch.cond 的函数（5 个算子；两个分支是 get_attr 节点，每个分支内部各有 2 个算子）"))]
    runs = []
    for limit, fn, what in cases:
        args = (x, y) if fn is _scaled_wave else (x,)
        graphs, out, exc = _limit_run(answer, limit, fn, args)
        inner = getattr(exc, "inner_exception", exc) if isinstance(exc, BackendCompilerFailed) else exc
        refused = len(graphs) - 1 if exc is not None and type(inner).__name__ == "GraphTooLarge" else None
        runs.append((limit, fn, what, graphs, out, exc, exc is None or refused is not None, refused, args))
    if all(run[6] for run in runs):  # every run either ran or refused with GraphTooLarge: compare decisions
        decisions = [run[7] for run in runs]
        refs = [_reference_graphs(what[0], fn, (x, y) if fn is _scaled_wave else (x,)) for _, fn, what, *_ in runs]
        truth = [_refused_at(g, limit, _ops, False) for g, (limit, *_) in zip(refs, runs)]
        if decisions != truth:
            first = next(i for i, (d, t) in enumerate(zip(decisions, truth)) if d != t)
            limit, _, what = cases[first]

            def said(index: int | None) -> tuple[str, str]:
                if index is None:
                    return "compiled and ran", "编译并运行"
                return f"refused graph {index + 1}", f"拒绝第 {index + 1} 张计算图"
            for name, count, strict, en, zh in _LIMIT_MISTAKES:
                if [_refused_at(g, limit_, count, strict) for g, (limit_, *_) in zip(refs, runs)] == decisions:
                    want, sizes = said(truth[first]), [_ops(g) for g in refs[first]]
                    if name == "refuses at exactly n" and decisions[first] is not None:
                        # the same decisions as counting the output node as an op: the message tells which
                        said_count = sizes[decisions[first]] + 1
                        if str(said_count) in re.findall(r"\d+", str(getattr(runs[first][5], "inner_exception",
                                                                             runs[first][5]))):
                            en, zh = _OUTPUT_COUNTED
                    raise Wrong(en, zh, tried=_with(what, f", make_limited_backend({limit})",
                                                    f"，make_limited_backend({limit})"),
                                expected=(f"{want[0]} (graphs of {sizes} ops)", f"{want[1]}（各计算图的算子数：{sizes}）"),
                                got=said(decisions[first]))
    for limit, fn, what, graphs, out, exc, _, _, args in runs:
        label = _with(what, f", make_limited_backend({limit})", f"，make_limited_backend({limit})")
        sizes = [_ops(gm) for gm in graphs]
        too_big = [s for s in sizes if s > limit]
        if exc is None and not too_big:
            if not _close(out, fn(*args)):
                raise Wrong("under the limit the graph should run as it is: return its forward unchanged.",
                            "未超过上限时，计算图应当原样运行：请原样返回它的 forward。", tried=label,
                            expected=("the eager result", "eager 的结果"), got=_max_diff(out, fn(*args))
                            if isinstance(out, torch.Tensor) else type(out).__name__)
            continue
        if exc is None:
            big = next(gm for gm in graphs if _ops(gm) > limit)
            listed = ", ".join(n.name for n in big.graph.nodes if n.op in _OPS)
            hint = (f"the graph has more ops than the limit but compiled anyway; its ops are the nodes {listed}.",
                    f"计算图的算子数超过了上限，却仍然编译通过了；它的算子是节点 {listed}。")
            special = any(_is_getitem(n) or _is_higher_order(n) or not n.users
                          for gm in graphs for n in gm.graph.nodes if n.op in _OPS)
            if _ops(graphs[0]) <= limit < max(sizes):
                hint = ("the graph over the limit is the one after the graph break: the backend is called once per "
                        "graph, so count and refuse each graph it is given.",
                        "超过上限的是图中断之后的那张计算图：后端对每张计算图各调用一次，所以收到的每一张图都要计数并在超限时拒绝。")
            elif all(_call_functions(gm) <= limit for gm in graphs) and not special:
                hint = ("count call_method nodes too: x.cos() is a call_method node, not call_function.",
                        "call_method 节点也要计数：x.cos() 是 call_method 节点，而不是 call_function。")
            raise Wrong(hint[0] + " Refuse it with GraphTooLarge when the count is over n.",
                        hint[1] + "算子数超过 n 时请用 GraphTooLarge 拒绝它。", tried=label,
                        expected=(f"BackendCompilerFailed wrapping GraphTooLarge ({max(too_big)} ops > {limit})",
                                  f"包装着 GraphTooLarge 的 BackendCompilerFailed（{max(too_big)} 个算子 > {limit}）"),
                        got=("no exception", "没有抛出异常"))
        inner = getattr(exc, "inner_exception", exc) if isinstance(exc, BackendCompilerFailed) else exc
        if not too_big and len(graphs) > 1 and type(inner).__name__ == "GraphTooLarge" and sum(sizes) > limit:
            raise Wrong("each graph is under the limit, but the backend refused the second one: it adds up the ops of "
                        "every graph it has been given. Count the ops of each graph on its own; keep no count from "
                        "one call of the backend to the next.",
                        "每张计算图都没有超过上限，但后端拒绝了第二张：它把收到过的所有计算图的算子数累加了起来。"
                        "请对每张计算图单独计数；不要在后端的多次调用之间保留计数。",
                        tried=label, expected=(f"graphs of {sizes} ops compiled", f"算子数为 {sizes} 的计算图编译通过"),
                        got=str(inner)[:120])
        if not too_big:
            _refused_small(label, limit, sizes, graphs, inner)
        big = next(gm for gm in graphs if _ops(gm) > limit)
        if id(big) in _RETURNED and not callable(_RETURNED[id(big)]):
            returned = _RETURNED[id(big)]
            raise Wrong(f"for a graph over the limit your backend returned {describe(returned)} instead of raising "
                        "GraphTooLarge: a backend refuses a graph by raising the exception, not by returning. Dynamo "
                        "then failed on its own, because a backend must return something callable.",
                        f"对于超过上限的计算图，你的后端返回了 {describe(returned, lang='zh')}，而没有抛出 GraphTooLarge："
                        "后端要通过抛出异常来拒绝计算图，而不是通过返回值。Dynamo 随后自己报错了，因为后端必须返回一个可调用对象。",
                        tried=label, expected=(f"GraphTooLarge raised ({max(too_big)} ops > {limit})",
                                               f"抛出 GraphTooLarge（{max(too_big)} 个算子 > {limit}）"),
                        got=(f"returned {describe(returned)}", f"返回了 {describe(returned, lang='zh')}"))
        if type(inner).__name__ != "GraphTooLarge":
            raise Wrong(f"your backend raised {type(inner).__name__}, not the GraphTooLarge exception defined at the "
                        "top of the lab: refuse a graph over the limit with GraphTooLarge. If you did not raise "
                        f"{type(inner).__name__} yourself, it comes from the code your backend runs (read its message "
                        "below).",
                        f"你的后端抛出的是 {type(inner).__name__}，而不是本实验开头定义的 GraphTooLarge 异常：请用 GraphTooLarge "
                        f"拒绝超过上限的计算图。如果 {type(inner).__name__} 不是你主动抛出的，那就来自你的后端所运行的代码"
                        "（请阅读下面的信息）。", tried=label,
                        expected="GraphTooLarge", got=f"{type(inner).__name__}: {str(inner)[:120]}")
        if not isinstance(exc, BackendCompilerFailed) and callable(_RETURNED.get(id(big))):
            raise Wrong("your backend accepted the graph and returned a function that raises GraphTooLarge when it is "
                        "called: the refusal comes only when the compiled model runs, not while torch.compile compiles "
                        "it. Refuse in the backend itself: raise GraphTooLarge there, so that torch.compile reports "
                        "BackendCompilerFailed.",
                        "你的后端接受了这张计算图，返回的函数在被调用时才抛出 GraphTooLarge：拒绝发生在编译后的模型运行时，"
                        "而不是在 torch.compile 编译时。请在后端本身里拒绝：在那里抛出 GraphTooLarge，"
                        "这样 torch.compile 才会报告 BackendCompilerFailed。",
                        tried=label, expected="BackendCompilerFailed", got=f"{type(exc).__name__}: {str(exc)[:120]}")
        if not isinstance(exc, BackendCompilerFailed):
            raise Wrong("torch.compile should surface your exception as BackendCompilerFailed.",
                        "torch.compile 应当把你的异常包装成 BackendCompilerFailed 抛出。", tried=label,
                        expected="BackendCompilerFailed", got=type(exc).__name__)
        _check_message(label, too_big[0], limit, inner)
    _direct_call(answer)
    _kept_apart(answer)


def _doubles_its_input(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2.0)
    return x + 1.0


def _kept_apart(answer: Any) -> None:
    """Two backends made one after the other each keep their own limit, and a backend under its limit leaves
    the caller's tensors as the model leaves them (it counts nodes; it does not run the graph itself)."""
    big, small = answer(100), answer(0)
    label = ("big = make_limited_backend(100); small = make_limited_backend(0); then torch.compile(fn, "
             "backend=big) with fn = a chain of 3 ops",
             "big = make_limited_backend(100); small = make_limited_backend(0)；然后 torch.compile(fn, backend=big)，"
             "其中 fn = 3 个算子组成的链")
    (x,) = _inputs(89, (5,))
    try:
        _run(_compile(_chain(3), big), x.clone())
    except Exception as exc:
        raise Wrong("a backend made with a limit of 100 refused a graph of 3 ops once a second backend had been made "
                    "with a limit of 0: the backends share one limit. Each backend keeps the n it was made with (a "
                    "closure over n), whatever backends are made after it.",
                    "用上限 100 构造的后端，在又用上限 0 构造了第二个后端之后，拒绝了只有 3 个算子的计算图：两个后端共用了同一个上限。"
                    "每个后端都要保留构造它时的 n（闭包捕获 n），不受之后构造的后端影响。",
                    tried=label, expected=("the graph compiled and ran", "计算图被编译并运行"),
                    got=f"{type(exc).__name__}: {first_line(str(exc))}") from None
    del small
    mine, theirs = torch.ones(3), torch.ones(3)
    _doubles_its_input(theirs)
    _run(_compile(_doubles_its_input, big), mine)
    if not torch.equal(mine, theirs):
        raise Wrong("under its limit your backend changed the caller's tensor once more than the model does: it ran "
                    "the graph itself on example_inputs (the caller's real tensors), and a graph that changes its "
                    "input in place changed them. Count the nodes without running the graph.",
                    "在上限之内，你的后端让调用方的张量比模型多改了一次：它自己在 example_inputs（调用方真实的张量）上运行了计算图，"
                    "而原地修改输入的计算图就把它们改了。请只数节点，不要运行计算图。",
                    tried=("make_limited_backend(100) on fn(x): x.mul_(2); return x + 1, with x = torch.ones(3)",
                           "make_limited_backend(100)，fn(x): x.mul_(2); return x + 1，x = torch.ones(3)"),
                    expected=("x is 2.0 after the call, as in eager", "调用之后 x 为 2.0，与 eager 相同"),
                    got=(f"x is {mine[0].item():g}", f"x 为 {mine[0].item():g}"))


def _check_message(label: tuple[str, str], count: int, limit: int, inner: BaseException) -> None:
    """The refusal's message names the graph's op count and the limit, each as what it is."""
    message = str(inner)
    numbers = set(re.findall(r"\d+", message))
    as_count = re.findall(r"(\d+)\s*(?:ops?\b|operators?\b|nodes?\b|个算子|个节点)", message)
    said = [number for number in as_count if number != str(limit)]
    if str(limit) in numbers and str(count) not in numbers and said:
        raise Wrong(f"the message names the limit, but its other number is not the graph's op count: it says "
                    f"{said[0]} where the graph has {count} ops. Put in the message the count your backend compares "
                    "with the limit, and look again at which nodes that count takes, and how often.",
                    f"报错信息写了上限，但另一个数不是这张计算图的算子数：它写的是 {said[0]}，而计算图有 {count} 个算子。"
                    "请在报错信息里写出后端与上限比较的那个数，并再看看这个数统计了哪些节点、各统计了几次。",
                    tried=label, expected=(f"{count} ops, limit {limit}", f"{count} 个算子，上限 {limit}"),
                    got=repr(message))
    if str(count) not in numbers or str(limit) not in numbers:
        raise Wrong("the message should name the graph's op count and the limit, e.g. "
                    "'graph has 7 ops, more than the limit of 4'.",
                    "报错信息应当写明计算图的算子数和上限，例如 'graph has 7 ops, more than the limit of 4'。",
                    tried=label, expected=(f"a message with {count} and {limit}", f"含有 {count} 和 {limit} 的报错信息"),
                    got=repr(message))
    as_limit = re.findall(r"(?:limit|上限)\D{0,12}?(\d+)", message, flags=re.I)
    if str(limit) in as_count and str(count) not in as_count and str(count) in as_limit and str(limit) not in as_limit:
        raise Wrong("the message gives the two numbers the wrong way round: it calls the limit the graph's op count "
                    "and the op count the limit.",
                    "报错信息把两个数写反了：它把上限说成了计算图的算子数，又把算子数说成了上限。",
                    tried=label, expected=(f"{count} ops, limit {limit}", f"{count} 个算子，上限 {limit}"),
                    got=repr(message))


class _Block(nn.Module):
    """As torch.fx.symbolic_trace records it: two call_module nodes, a call_method and a call_function."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 6)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.act(self.lin(x)).tanh())


def _direct_call(answer: Any) -> None:
    """Hand the backend an fx graph with call_module nodes (torch.compile inlines modules, so its graphs
    have none): 4 ops, refused under a limit of 3 and run as it is under a limit of 4."""
    model = seeded(_Block(), 88)
    (x,) = _inputs(87, (2, 6))
    with torch.no_grad():
        want = model(x)
    for limit in (3, 4):
        gm = fx.symbolic_trace(model)
        label = (f"backend = make_limited_backend({limit}); backend(gm, [x]) with gm = torch.fx.symbolic_trace(<Linear, "
                 "ReLU as submodules, then .tanh(), torch.sigmoid>), 4 ops of which 2 are call_module",
                 f"backend = make_limited_backend({limit}); backend(gm, [x])，其中 gm = torch.fx.symbolic_trace(<作为子模块的 "
                 "Linear、ReLU，再接 .tanh()、torch.sigmoid>)，共 4 个算子，其中 2 个是 call_module")
        backend = answer(limit)
        try:
            with quiet(), torch.no_grad():
                compiled = backend(gm, [x])
                out = compiled(x) if limit == 4 and callable(compiled) else compiled
        except Exception as exc:
            if type(exc).__name__ != "GraphTooLarge":
                raise Wrong("your backend fails on an fx graph handed to it directly: a backend is a function of "
                            "(gm, example_inputs) and must work on any GraphModule.",
                            "直接交给你的后端一张 fx 计算图时它出错了：后端就是一个接收 (gm, example_inputs) 的函数，"
                            "对任何 GraphModule 都应当能工作。",
                            tried=label, got=f"{type(exc).__name__}: {str(exc)[:120]}") from None
            if limit == 4:
                _refused_small(label, limit, [4], [gm], exc)
            _check_message(label, 4, limit, exc)
            continue
        if limit == 3:
            hint = ("the graph has 4 ops, more than the limit of 3, but the backend accepted it.",
                    "计算图有 4 个算子，超过了上限 3，后端却接受了它。")
            if sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method")) <= limit:
                hint = ("count call_module nodes too: a call of a submodule (here nn.Linear and nn.ReLU) is an op. "
                        "torch.compile inlines modules, but a backend can be handed any fx graph.",
                        "call_module 节点也要计数：调用子模块（这里是 nn.Linear 和 nn.ReLU）也是算子。torch.compile "
                        "会把模块内联展开，但后端可能收到任何 fx 计算图。")
            raise Wrong(*hint, tried=label,
                        expected=("GraphTooLarge (4 ops > 3)", "GraphTooLarge（4 个算子 > 3）"),
                        got=("no exception", "没有抛出异常"))
        if not _close(out, want):
            raise Wrong("under the limit the graph should run as it is: return its forward unchanged.",
                        "未超过上限时，计算图应当原样运行：请原样返回它的 forward。", tried=label,
                        expected=("the model's result", "模型的结果"),
                        got=_max_diff(out, want) if isinstance(out, torch.Tensor) else type(out).__name__)


def _refused_small(label: tuple[str, str], limit: int, sizes: list[int], graphs: list[fx.GraphModule],
                   inner: BaseException) -> None:
    text = str(inner)
    if isinstance(inner, AssertionError) and "callable" in text:
        raise Wrong("under the limit, return gm.forward (a callable): returning None makes Dynamo fail.",
                    "未超过上限时要返回 gm.forward（一个可调用对象）：返回 None 会让 Dynamo 报错。",
                    tried=label, expected=("a callable", "一个可调用对象"), got=f"{type(inner).__name__}: {text[:120]}")
    if type(inner).__name__ != "GraphTooLarge":
        name = type(inner).__name__
        raise Wrong(f"your backend raised {name} on a graph under the limit, so the compile failed: a graph under "
                    f"the limit should compile and run. The {name} and its message are shown below; if you did not "
                    "raise it yourself, it comes from the code your backend runs (read the message).",
                    f"你的后端在一张未超过上限的计算图上抛出了 {name}，导致编译失败：未超过上限的计算图应当正常编译并运行。"
                    f"下面给出了这个 {name} 及其信息；如果它不是你主动抛出的，那就来自你的后端所运行的代码（请阅读这条信息）。",
                    tried=label, expected=(f"graphs of {sizes} ops compiled", f"算子数为 {sizes} 的计算图编译通过"),
                    got=f"{name}: {text[:160]}")
    nodes = max(len(gm.graph.nodes) for gm in graphs)
    allowed = (f"{max(sizes)} ops, allowed", f"{max(sizes)} 个算子，应当接受")
    said = [int(n) for n in re.findall(r"(\d+)\s*(?:ops?\b|operators?\b|nodes?\b|个算子|个节点)", text)]
    if said and said[0] > nodes:
        raise Wrong(f"your backend says this graph has {said[0]} ops, more than it has nodes at all ({nodes}): the count "
                    "goes on from graphs the backend was given before. Count the ops of each graph on its own; keep "
                    "no count from one call of the backend to the next.",
                    f"你的后端说这张计算图有 {said[0]} 个算子，比它全部的节点数（{nodes}）还多：这个计数是接着之前收到的计算图继续累加的。"
                    "请对每张计算图单独计数；不要在后端的多次调用之间保留计数。",
                    tried=label, expected=allowed, got=text[:120])
    if max(sizes) < limit and nodes > limit:
        raise Wrong("count only the ops (call_function, call_method and call_module nodes); "
                    "placeholders and the output node are not ops.",
                    "只统计算子（call_function、call_method 和 call_module 节点）；placeholder 和 output 节点不算算子。",
                    tried=label, expected=allowed, got=text[:120])
    raise Wrong(f"refuse only graphs with *more* than n ops: a graph with exactly {limit} ops compiles.",
                f"只拒绝算子数*超过* n 的计算图：恰好 {limit} 个算子的图应当可以编译。",
                tried=label, expected=allowed, got=text[:120])
