"""Checkers for labs/lab10_export_mlir.ipynb (lecture course/10_export_mlir.ipynb).

Every checker uses models of its own (other sizes, other ops, forward arguments not called x) and
inputs the lab does not show, exports or compiles the learner's answer, and compares with eager
PyTorch. torch-mlir and IREE are imported only when task lab10.3 runs.
"""
from __future__ import annotations

import contextlib
import inspect
import re
from typing import Any, Callable, Iterator

import torch
from torch import nn
from torch.export import Dim
from torch.utils._python_dispatch import TorchDispatchMode

from . import Wrong, task
from .._text import one_line_error, quiet
from ._probe import Snapshot, describe, differs, need_callable, require_untouched, seeded

_L = "course/10_export_mlir.ipynb"


def _randn(seed: int, *shape: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _call(fn: Callable[..., Any], *args: Any) -> Any:
    with quiet(), torch.no_grad():
        return fn(*args)


_KEYS = ("top-level keys must be the arg names",
         "your dynamic_shapes is keyed by names this model's forward does not use: the checker's models name "
         "their arguments otherwise (the error lists them). Read the names from the model, or give the shapes "
         "by position, in the order of the inputs (lecture 10, section 3 'Dynamic shapes').",
         "你的 dynamic_shapes 用的键不是这个模型 forward 的参数名：检查器的模型给参数取了别的名字（错误信息列出了它们）。"
         "请从模型读出参数名，或者按位置、依输入的顺序给出各个形状（第 10 讲第 3 节）。")


# -- exercise 1: a batch and a length shared by two inputs ------------------------------------

class _MaskedSum(nn.Module):
    """out = sum over the length of linear(feats) * keep: feats (B, T, 5), keep (B, T)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(5, 2)

    def forward(self, feats: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        return (self.linear(feats) * keep.unsqueeze(-1)).sum(dim=1)


class _Attend(nn.Module):
    """out = sum over the length of softmax(scores) * tanh(linear(seq)): seq (B, T, 3), scores (B, T)."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 4)

    def forward(self, seq: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        weights = torch.softmax(scores, dim=1).unsqueeze(-1)
        return (weights * torch.tanh(self.proj(seq))).sum(dim=1)


_ONE_ERRORS = [
    _KEYS,
    ("must always be equal",
     "export refused your dynamic_shapes: you gave the two inputs a Dim each for a size the model needs to be "
     "equal in both (the error names it). Read the error's 'Suggested fixes' line (lecture 10, section 3 "
     "'Dynamic shapes').",
     "导出（torch.export）拒绝了你的 dynamic_shapes：模型要求两个输入在某个维度上大小相等（错误信息指出了是哪一个），你却给它们各用了一个 Dim。"
     "请阅读错误信息中的“Suggested fixes”一行（第 10 讲第 3 节）。"),
    ("specialized it to be a constant",
     "export refused your dynamic_shapes: a dimension you marked dynamic is fixed by the model, either by the "
     "weights (the feature size) or because it must equal a dimension of the other input that you left static. "
     "Mark the batch and the length dynamic in both inputs, and nothing else (lecture 10, section 3 "
     "'Dynamic shapes').",
     "导出（torch.export）拒绝了你的 dynamic_shapes：你标记为动态的某个维度被模型固定了：要么由权重决定（特征维度），要么它必须等于"
     "另一个输入中你保持静态的某个维度。请在两个输入中都把批维度和长度标为动态，其他维度不要标（第 10 讲第 3 节）。"),
    ("is not equal to",
     "export refused your dynamic_shapes: you used one Dim for two dimensions whose sizes differ in the example "
     "(the batch and the length). A Dim stands for one size; two sizes that vary independently need a Dim each "
     "(lecture 10, section 3 'Dynamic shapes').",
     "导出（torch.export）拒绝了你的 dynamic_shapes：你给示例中大小不同的两个维度（批维度和长度）用了同一个 Dim。一个 Dim 代表一个尺寸；"
     "两个各自变化的尺寸各需要一个 Dim（第 10 讲第 3 节）。"),
]


_CROSSED = re.compile(r"L\['(\w+)'\]\.size\(\)\[(\d)\] = \d+ is not equal to L\['(\w+)'\]\.size\(\)\[(\d)\]")
_DIM_WORDS = {"0": ("the batch", "批维度"), "1": ("the length", "长度")}


def _crossed_dims(text: str) -> tuple[str, str] | None:
    """Why export refused: one Dim for dimension i of one input and dimension j != i of the other
    (one input's Dims in the wrong order), read from the error's ``L['a'].size()[i] = ...
    is not equal to L['b'].size()[j]``."""
    found = _CROSSED.search(text)
    if not found or found[1] == found[3] or found[2] == found[4] or not {found[2], found[4]} <= set(_DIM_WORDS):
        return None
    (en_i, zh_i), (en_j, zh_j) = _DIM_WORDS[found[2]], _DIM_WORDS[found[4]]
    return (f"export refused your dynamic_shapes: the Dims of one input are in the wrong order. Dimension "
            f"{found[2]} of {found[1]} ({en_i}) got the same Dim as dimension {found[4]} of {found[3]} ({en_j}), "
            f"and these sizes differ in the example. In both inputs dimension 0 is the batch and dimension 1 the "
            f"length: give each input its Dims in that order, batch, then length (lecture 10, section 3 "
            f"'Dynamic shapes').",
            f"导出（torch.export）拒绝了你的 dynamic_shapes：有一个输入的 Dim 顺序错了。{found[1]} 的第 {found[2]} 维"
            f"（{zh_i}）与 {found[3]} 的第 {found[4]} 维（{zh_j}）用了同一个 Dim，而示例中这两个尺寸不同。两个输入的第 0 维"
            f"都是批维度、第 1 维都是长度：请按这个顺序（先批维度，后长度）给每个输入的 Dim（第 10 讲第 3 节）。")


def _export_or_named(answer: Callable[..., Any], model: nn.Module, args: tuple[torch.Tensor, ...], label: str,
                     errors: list[tuple[str, str, str]]) -> Any:
    try:
        return _call(answer, model, *args)
    except Exception as exc:
        text = str(exc)
        crossed = _crossed_dims(text)
        if crossed:
            raise Wrong(*crossed, tried=label, got=one_line_error(exc)) from None
        for needle, en, zh in errors:
            if needle in text:
                raise Wrong(en, zh, tried=label, got=one_line_error(exc)) from None
        raise


def _user_shapes(program: torch.export.ExportedProgram) -> list[tuple[Any, ...]]:
    """The shape of every user input of ``program``: an int where the size is fixed, the size's
    symbol (a sympy expression) where it is dynamic."""
    from torch.export.graph_signature import InputKind

    names = {s.arg.name for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT}
    shapes = []
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in names:
            shapes.append(tuple(d.node.expr if isinstance(d, torch.SymInt) else int(d)
                                for d in node.meta["val"].shape))
    return shapes


def _why_rejected(program: torch.export.ExportedProgram, sizes: dict[int, int]) -> tuple[str, str] | None:
    """Why ``program`` rejects inputs with these sizes (dimension → size) of its first input:
    a dimension fixed to the example's size, one symbol for two dimensions, or a range that
    leaves the size out."""
    first = _user_shapes(program)[0]
    words = {0: ("batch", "批维度"), 1: ("length", "长度")}
    for dim in sizes:
        if isinstance(first[dim], int):
            en, zh = words[dim]
            return (f"the exported program only accepts the example's {en} ({first[dim]}): the {en} was "
                    f"specialised. Mark it dynamic in both inputs (lecture 10, section 3 'Dynamic shapes').",
                    f"导出的程序只接受示例中的{zh}（{first[dim]}）：{zh}被特化了。请在两个输入中都把它标为动态"
                    f"（第 10 讲第 3 节）。")
    if len(sizes) > 1 and first[0] == first[1]:
        return ("the batch and the length share one size symbol, so the program accepts only inputs whose batch "
                "equals their length: they vary independently and need a Dim each (lecture 10, section 3 "
                "'Dynamic shapes').",
                "批维度和长度共用一个尺寸符号，于是程序只接受批大小等于长度的输入：这两个尺寸各自变化，各需要一个 Dim"
                "（第 10 讲第 3 节）。")
    for dim, size in sizes.items():
        bounds = program.range_constraints.get(first[dim])
        if bounds is None:
            continue
        low, high = bounds.lower, bounds.upper
        if size < low or size > high:
            en, zh = words[dim]
            shown = f"{low}..{'∞' if _is_unbounded(high) else high}"
            return (f"the {en} is dynamic, but the range you gave it ({shown}) excludes sizes the model must serve "
                    f"(here {size}): the exercise asks for any size from 1 up, with no upper limit. Leave the bounds out "
                    f"(lecture 10, section 3 'Dynamic shapes').",
                    f"{zh}是动态的，但你给它的范围（{shown}）排除了模型必须支持的大小（这里是 {size}）：练习要求从 1 起的任意大小，"
                    f"没有上限。请去掉上下界（第 10 讲第 3 节）。")
    return None


def _is_unbounded(high: Any) -> bool:
    return str(high) in ("int_oo", "oo")


def _bounded_above(program: torch.export.ExportedProgram) -> tuple[str, str] | None:
    """Why ``program`` is wrong though it ran every probe: the batch or the length has a finite
    upper end in the program's range_constraints (a ``Dim`` given a ``max``, however large)."""
    first = _user_shapes(program)[0]
    words = {0: ("batch", "批维度"), 1: ("length", "长度")}
    for dim in (0, 1):
        bounds = program.range_constraints.get(first[dim]) if not isinstance(first[dim], int) else None
        if bounds is not None and not _is_unbounded(bounds.upper):
            en, zh = words[dim]
            return (f"the {en} is dynamic, but its range in the program ({bounds.lower}..{bounds.upper}) has an upper "
                    f"limit: the program rejects any {en} above {bounds.upper}. The exercise asks for no upper limit, "
                    f"so a max of any size is wrong: leave it out (lecture 10, section 3 'Dynamic shapes').",
                    f"{zh}是动态的，但它在程序中的范围（{bounds.lower}..{bounds.upper}）有上限：程序会拒绝大于 "
                    f"{bounds.upper} 的{zh}。练习要求没有上限，所以无论 max 取多大都不对：请去掉它（第 10 讲第 3 节）。")
    return None


def _call_as_exported(program: torch.export.ExportedProgram, model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any:
    """Call ``program.module()`` the way the learner exported it: the inputs given by position, or
    by keyword (the model's own argument names) where the program was exported with kwargs."""
    module = program.module()
    spec = program.call_spec.in_spec
    if spec is None or spec.num_children != 2 or not spec.child(1).context:
        return _call(module, *inputs)
    positional = spec.child(0).num_children
    names = list(inspect.signature(model.forward).parameters)
    by_name = dict(zip(names, inputs))
    keywords = {name: by_name[name] for name in spec.child(1).context if name in by_name}
    with quiet(), torch.no_grad():
        return module(*inputs[:positional], **keywords)


def _training_flags(model: nn.Module) -> list[tuple[str, Any]]:
    """Every submodule's training flag, and every parameter's requires_grad and dtype: what
    Snapshot (values only) does not see."""
    return [(name, m.training) for name, m in model.named_modules()] + \
        [(name, p.requires_grad, p.dtype) for name, p in model.named_parameters()]


def _require_same_modes(before: list[tuple[str, Any]], model: nn.Module, tried: Any) -> None:
    after = _training_flags(model)
    if after == before:
        return
    if [m for m in after if len(m) == 2] != [m for m in before if len(m) == 2]:
        raise Wrong("your function switched the model it was given between train and eval mode (model.train() or "
                    "model.eval()); leave the model's mode as it was.",
                    "你的函数切换了传入模型的训练/评估模式（model.train() 或 model.eval()）；请保持模型原来的模式。",
                    tried=tried, expected=("every submodule's mode (training flag) as before",
                                           "每个子模块的模式（training 标志）保持不变"),
                    got=("the mode was changed", "模式被改动了"))
    raise Wrong("your function changed the parameters of the model it was given (their requires_grad or dtype); "
                "leave the model as it was.",
                "你的函数改动了传入模型的参数（requires_grad 或 dtype）；请保持模型原样。", tried=tried)


def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal values (NaN where NaN), and the same shape, strides, dtype and requires_grad."""
    return (a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype
            and a.requires_grad == b.requires_grad and torch.equal(a.detach().nan_to_num(), b.detach().nan_to_num())
            and torch.equal(a.isnan(), b.isnan()))


@task("lab10.1", "Export with a batch and a length shared by two inputs",
      "导出两个输入共享的动态批维度和长度",
      hints=[("Two sizes vary here, and each is shared by both inputs; how do you tell export that two dimensions "
              "are one size, and that two others are another?",
              "这里有两个尺寸在变化，而且每个都由两个输入共享；怎样告诉 torch.export 某两个维度是同一个尺寸、另外两个维度是另一个尺寸？"),
             ("A Dim object names a size. dynamic_shapes follows forward's arguments: keyed by their names, or "
              "given by position. Lecture 10, section 3 'Dynamic shapes' reads the error that separate Dims give.",
              "Dim 对象代表一个尺寸。dynamic_shapes 与 forward 的参数一一对应：要么以参数名为键，要么按位置给出。"
              "第 10 讲第 3 节“动态形状：Dim 与约束错误”解读了各用一个 Dim 时得到的错误。")])
def _check_shared_sizes(answer: Any) -> None:
    need_callable(answer, "export_shared_sizes")
    cases = [("_MaskedSum.forward(feats: (3, 4, 5), keep: (3, 4))", seeded(_MaskedSum(), 101),
              (_randn(1, 3, 4, 5), _randn(2, 3, 4))),
             ("_Attend.forward(seq: (4, 6, 3), scores: (4, 6))", seeded(_Attend(), 102),
              (_randn(3, 4, 6, 3), _randn(4, 4, 6)))]
    for label, model, args in cases:
        copies = tuple(a.clone() for a in args)
        before, modes = Snapshot.of(model), _training_flags(model)
        program = _export_or_named(answer, model, copies, label, _ONE_ERRORS)
        require_untouched(before, model, tried=label,
                          en="your function changed the model it was given; export it as it is.",
                          zh="你的函数改动了传入的模型；请按原样导出它。")
        _require_same_modes(modes, model, label)
        if any(not _same_tensor(c, a) for c, a in zip(copies, args)):
            raise Wrong("your function changed the example inputs it was given (their values, shape, strides, dtype "
                        "or requires_grad); leave them as they are.",
                        "你的函数改动了传入的示例输入（数值、形状、步长、dtype 或 requires_grad）；请不要改动它们。",
                        tried=label)
        if not isinstance(program, torch.export.ExportedProgram):
            raise Wrong("return the ExportedProgram itself (what torch.export.export returns), not a module made "
                        "from it or a compiled function.",
                        "请返回 ExportedProgram 本身（torch.export.export 的返回值），而不是由它得到的模块或编译后的函数。",
                        tried=label, got=describe(program))
        features = args[0].shape[2]
        for batch, length in ((2, 9), (7, 2), (1, 5), (6, 1), (10_000, 3), (3, 10_000)):
            inputs = (_randn(10 + batch + 7 * length, batch, length, features), _randn(20 + batch + 7 * length, batch, length))
            tried = (f"{label}, exported, then called with batch {batch} and length {length}",
                     f"{label}，导出后以批大小 {batch}、长度 {length} 调用")
            want = _call(model, *inputs)
            try:
                got = _call_as_exported(program, model, inputs)
            except Exception as exc:
                why = _why_rejected(program, {0: batch, 1: length})
                en, zh = why or ("the exported program fails on these sizes.", "导出的程序在这组尺寸上运行失败。")
                raise Wrong(en, zh, tried=tried, got=one_line_error(exc)) from None
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff:
                raise Wrong("the exported program gives other values than the model: export the model you were "
                            "given, with its own weights.",
                            "导出的程序与模型的结果不同：请导出传给你的那个模型，使用它自己的权重。", tried=tried, got=diff)
        bounded = _bounded_above(program)
        if bounded:
            raise Wrong(*bounded, tried=label, expected=("an upper end of int_oo (no limit)", "上界为 int_oo（没有上限）"),
                        got=(f"range_constraints: {dict(program.range_constraints)}",
                             f"range_constraints：{dict(program.range_constraints)}"))
        symbols = {str(k) for k in program.range_constraints}
        if len(symbols) != 2:
            raise Wrong("the program should have exactly two size symbols: the shared batch and the shared length.",
                        "程序中应当恰好有两个尺寸符号：共享的批维度和共享的长度。", tried=label,
                        got=(f"range_constraints with {len(symbols)} symbols", f"range_constraints 中有 {len(symbols)} 个符号"))


# -- exercise 2: SkipGate's data-dependent branch with torch.cond -----------------------------

def _skip_reference(linear: nn.Linear, x: torch.Tensor, *, swapped: bool = False) -> torch.Tensor:
    """SkipGate's forward: relu(y) + x if y.sum() > 0 else x - y, with y = linear(x) (or the other
    branch, with ``swapped``)."""
    y = linear(x)
    return (torch.relu(y) + x) if bool(y.sum() > 0) != swapped else x - y


_RELU = ("relu(y) + x branch (y.sum() > 0)", "relu(y) + x 分支（y.sum() > 0）")
_SUB = ("x - y branch (y.sum() <= 0)", "x - y 分支（y.sum() <= 0）")
_RELU_X = ("relu(y) + x branch (y.sum() > 0, while x.sum() <= 0)", "relu(y) + x 分支（y.sum() > 0，而 x.sum() <= 0）")
_SUB_X = ("x - y branch (y.sum() <= 0, while x.sum() > 0 and some y > 0)",
          "x - y 分支（y.sum() <= 0，而 x.sum() > 0，且 y 有正元素）")
_ZERO = ("an input of integer rows r and -r, so that y.sum() is exactly 0 (x - y branch)",
         "由整数行 r 和 -r 组成的输入，使 y.sum() 恰好为 0（x - y 分支）")


def _branch_inputs(linear: nn.Linear, d: int, seed: int) -> dict[tuple[str, str], torch.Tensor]:
    """Four inputs, keyed by their (English, 中文) names, drawn from a seeded generator: each branch
    once where the sign of x.sum() agrees with it and once where it does not (so a condition on x
    instead of y shows, and is told from swapped branches); the x - y one of these also has a
    positive y (so "any y > 0" shows)."""
    gen = torch.Generator().manual_seed(seed)
    found: dict[tuple[str, str], torch.Tensor] = {}
    batches = {_RELU: 3, _SUB: 5, _RELU_X: 6, _SUB_X: 4}
    while len(found) < len(batches):
        for key, batch in batches.items():
            if key in found:
                continue
            x = torch.randn(batch, d, generator=gen) * 3
            with torch.no_grad():
                y = linear(x)
            on, x_on = bool(y.sum() > 0), bool(x.sum() > 0)
            if key is _RELU and on and x_on or key is _SUB and not on and not x_on \
                    or key is _RELU_X and on and not x_on or key is _SUB_X and not on and x_on and bool((y > 0).any()):
                found[key] = x
    return {key: found[key] for key in batches}


_ONE = ("a batch of one row", "只有一行的批")
_NAN = ("an input with a NaN, so that y.sum() is NaN and y.sum() > 0 is false (x - y branch)",
        "含 NaN 的输入，使 y.sum() 为 NaN，y.sum() > 0 为假（x - y 分支）")
_ROUND = ("an input of rows 2**k·e, e' and -2**k·e, on which float32 rounding makes y.sum() exactly 0 "
          "(x - y branch), though the exact sum is positive",
          "由 2**k·e、e' 和 -2**k·e 三行组成的输入：float32 的舍入使 y.sum() 恰好为 0（x - y 分支），尽管精确的和为正")


def _one_row_and_nan(linear: nn.Linear, d: int, seed: int) -> list[tuple[tuple[str, str], torch.Tensor]]:
    """A batch of one row (an output that drops the batch dimension shows), and a batch with one
    NaN (y.sum() is NaN, so SkipGate takes x - y; a negated condition such as ~(y.sum() <= 0)
    takes the other branch)."""
    gen = torch.Generator().manual_seed(seed + 1000)
    nan = torch.randn(3, d, generator=gen) * 3
    nan[1, d // 2] = float("nan")
    return [(_ONE, torch.randn(1, d, generator=gen) * 3), (_NAN, nan)]


def _rounding_input(linear: nn.Linear, d: int) -> torch.Tensor:
    """Rows big·e_j, e_k and -big·e_j (e_k with a positive column sum of the integer weights): y is
    exact, its exact sum is positive, but SkipGate's float32 y.sum() absorbs the small row and
    comes out exactly 0, so a condition computed in float64 (or summed in another order) differs."""
    eye = torch.eye(d)
    k = int(torch.argmax(linear.weight.sum(0)))
    with torch.no_grad():
        for big in (2.0 ** 24, 2.0 ** 25, 2.0 ** 26, 2.0 ** 27):
            for j in range(d):
                x = torch.stack([big * eye[j], eye[k], -big * eye[j]])
                y = linear(x)
                if float(y.sum()) == 0.0 and float(y.double().sum()) > 0:
                    return x
    raise AssertionError("no rounding input for these weights")


_TINY = ("an input of multiples of 2**-80, so that y.sum() is tiny but positive "
         "(relu(y) + x branch; compared after scaling by 2**80)",
         "由 2**-80 的整数倍组成的输入，使 y.sum() 极小但为正（relu(y) + x 分支；比较前乘以 2**80）")
_TINY_SCALE = 2.0 ** 80


def _integer_weights(model: nn.Module, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Give ``model.linear`` small integer weights and no bias, and return two inputs on which
    every value is an exact multiple of one unit, so y.sum() is exact in any order of summation:
    rows r and -r (y.sum() exactly 0, y not 0), and 2**-80 times rows r, -r and a unit row e
    (y.sum() a few times 2**-80: positive, below any tolerance a condition might add)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        while True:
            weight = torch.randint(-2, 3, (d, d), generator=gen).float()
            if bool((weight.sum(0) > 0).any()):
                break
        model.linear.weight.copy_(weight)
        model.linear.bias.zero_()
        unit = torch.zeros(1, d)
        unit[0, int(torch.argmax(weight.sum(0)))] = 1.0
        while True:
            r = torch.randint(-3, 4, (2, d), generator=gen).float()
            zero = torch.cat([r, -r])
            y = model.linear(zero)
            if bool(y.sum() == 0) and bool((y != 0).any()):
                tiny = torch.cat([r, -r, unit]) / _TINY_SCALE
                return zero, tiny


def _graph_ops(gm: torch.fx.GraphModule) -> list[str]:
    return [getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes if n.op == "call_function"]


def _ancestors(nodes: list[torch.fx.Node]) -> set[torch.fx.Node]:
    seen: set[torch.fx.Node] = set()
    stack = list(nodes)
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.all_input_nodes)
    return seen


def _operand_ops(conds: list[torch.fx.Node]) -> list[str]:
    """The ops outside torch.cond that compute its operands and not its predicate: a relu among
    them is the relu(y) + x branch's work done whichever branch is taken."""
    predicate = _ancestors([n.args[0] for n in conds if isinstance(n.args[0], torch.fx.Node)])
    operands = _ancestors([m for n in conds for m in n.all_input_nodes if m is not n.args[0] and m.op != "get_attr"])
    return [getattr(n.target, "__name__", str(n.target)) for n in operands - predicate if n.op == "call_function"]


# ops that make relu(y)'s value (or pick by sign) however it is written: relu, clamp, maximum with 0,
# where(y > 0, ...), y * (y > 0), ...
_BRANCH_WORK = {"relu", "clamp", "clamp_min", "clamp_max", "threshold", "hardtanh", "maximum", "minimum", "max",
                "min", "fmax", "fmin", "where", "gt", "ge", "lt", "le", "abs", "sign", "sgn", "heaviside",
                "masked_fill", "softplus", "elu", "leaky_relu", "relu6"}


def _is_branch_work(op: str) -> bool:
    return op.split(".")[0].rstrip("_") in _BRANCH_WORK


def _cond_values(program: torch.export.ExportedProgram, x: torch.Tensor) -> list[tuple[list[Any], list[Any], list[Any]]]:
    """Run ``program`` on ``x`` and, at every torch.cond, run both branches on its operands: per cond
    node, (the first branch's outputs, the second's, the operands), whichever branch the
    predicate picks."""
    found: list[tuple[list[Any], list[Any], list[Any]]] = []
    flat = lambda value: list(torch.utils._pytree.tree_leaves(value))  # noqa: E731

    class Recorder(torch.fx.Interpreter):
        def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
            if target is torch.ops.higher_order.cond:
                operands = tuple(args[3])
                found.append((flat(args[1](*operands)), flat(args[2](*operands)), flat(operands)))
            return super().call_function(target, args, kwargs)

    with quiet(), torch.no_grad():
        Recorder(program.module()).run(x.clone())
    return found


def _multiple_of(value: torch.Tensor, of: torch.Tensor) -> bool:
    """Whether ``value`` is c · ``of`` for some c != 0 (same shape)."""
    if not isinstance(value, torch.Tensor) or value.shape != of.shape or not value.is_floating_point() and \
            value.dtype != torch.bool:
        return False
    value = value.detach().double()
    of = of.double()
    scale = float((value * of).sum() / (of * of).sum()) if bool((of != 0).any()) else 0.0
    return scale != 0.0 and bool(torch.allclose(value, scale * of, rtol=1e-4, atol=1e-5))


def _branch_work_outside(program: torch.export.ExportedProgram, linear: nn.Linear,
                         inputs: list[torch.Tensor]) -> bool:
    """Whether a torch.cond operand holds (a multiple of) a branch's result or a part of it:
    relu(y), relu(-y), y > 0, relu(y) + x or x - y, on inputs where y has both signs."""
    for x in inputs:
        with torch.no_grad():
            y = linear(x)
        if not (bool((y > 0).any()) and bool((y < 0).any()) and bool((x != 0).all())):
            continue
        works = [torch.relu(y), torch.relu(-y), (y > 0).float(), torch.relu(y) + x, x - y]
        try:
            values = _cond_values(program, x)
        except Exception:
            continue
        for _, _, operands in values:
            if any(_multiple_of(o.float() if isinstance(o, torch.Tensor) and o.dtype == torch.bool else o, w)
                   for o in operands for w in works):
                return True
    return False


def _branches_decide(program: torch.export.ExportedProgram, linear: nn.Linear,
                     inputs: list[torch.Tensor]) -> bool:
    """Whether a branch, run on an input where the predicate picks the other one, gives the other
    branch's result: each branch computes both results (and picks one itself)."""
    for x in inputs:
        with torch.no_grad():
            y = linear(x)
        relu_x, sub = torch.relu(y) + x, x - y
        if differs(relu_x, sub, rtol=1e-4, atol=1e-5) is None:
            continue
        try:
            values = _cond_values(program, x)
        except Exception:
            continue
        if len(values) != 1:
            continue
        first, second, _ = values[0]
        own, others = (first, relu_x), (second, sub)
        if bool(y.sum() > 0):
            own, others = others, own  # the branch not picked is the second one
        outputs, expected = own  # the branch the predicate does not pick, and its own result
        other = others[1]
        tensors = [o for o in outputs if isinstance(o, torch.Tensor) and o.shape == x.shape]
        if tensors and all(differs(o, expected, rtol=1e-4, atol=1e-5) is not None for o in tensors) and \
                any(differs(o, other, rtol=1e-4, atol=1e-5) is None for o in tensors):
            return True
    return False


_COPIES = {"clone.default", "alias.default", "view.default", "detach.default", "_to_copy.default",
           "contiguous.default", "getitem"}


@task("lab10.2", "Export SkipGate with torch.cond", "用 torch.cond 导出 SkipGate",
      hints=[("export cannot follow a Python if on a tensor's value: the branch must become part of the graph, "
              "and each branch needs every tensor it computes with.",
              "导出（torch.export）无法跟随依赖张量取值的 Python if：分支必须成为计算图的一部分，而且每个分支都需要拿到它要用的所有张量。"),
             ("torch.cond takes a boolean tensor, two functions and a tuple of operands; both functions get the "
              "same operands, as many as you pass. Lecture 10, section 5 'zoo.Gate exported at last' does it "
              "with one operand.",
              "torch.cond 接受一个布尔张量、两个函数和一个操作数元组；两个函数拿到相同的操作数，你传几个就拿到几个。"
              "第 10 讲第 5 节“终于导出 zoo.Gate：使用 torch.cond”用一个操作数做了这件事。")], time_limit=120)
def _check_cond_gate(answer: Any) -> None:
    need_callable(answer, "ExportableSkipGate", classes=True)
    if not (isinstance(answer, type) and issubclass(answer, nn.Module)):
        raise Wrong("pass the class ExportableSkipGate itself (a subclass of SkipGate).",
                    "请传入 ExportableSkipGate 类本身（SkipGate 的子类）。", got=describe(answer))
    for d, seed in ((5, 201), (3, 202)):
        model = answer(d)
        if d == 3:
            model.eval()
            zero, tiny = _integer_weights(model, d, seed)
            label = (f"ExportableSkipGate({d}) with small integer weights", f"ExportableSkipGate({d})，权重为小整数")
        else:
            seeded(model, seed)
            zero = tiny = None
            label = (f"ExportableSkipGate({d}) with seeded weights", f"ExportableSkipGate({d})，权重取固定的随机值")
        linear = model.linear
        probes = list(_branch_inputs(linear, d, seed).items()) + _one_row_and_nan(linear, d, seed)
        if zero is not None:
            probes += [(_ZERO, zero), (_TINY, tiny), (_ROUND, _rounding_input(linear, d))]
        example = probes[0][1]
        try:
            with quiet():
                program = torch.export.export(model, (example.clone(),), dynamic_shapes=({0: Dim("batch")},))
        except Exception as exc:
            if "data-dependent" in str(exc) or "GuardOnDataDependent" in type(exc).__name__:
                raise Wrong("export stopped at a branch on a tensor's value (a data-dependent expression): a "
                            "Python if or bool() on a tensor cannot be exported. Put the branch in the graph "
                            "(lecture 10, section 5 'zoo.Gate exported at last').",
                            "导出（torch.export）停在依赖张量取值的分支上（数据相关的表达式）：对张量做 Python if 或 bool() 无法导出。"
                            "请把分支放进计算图（第 10 讲第 5 节）。",
                            tried=(f"torch.export.export({label[0]}, dynamic batch)",
                                   f"torch.export.export，模型为 {label[1]}，批维度为动态"),
                            got=one_line_error(exc)) from None
            raise
        results, failures = [], []
        for branch, x in probes:
            want = _call(lambda t: _skip_reference(linear, t), x)
            other = _call(lambda t: _skip_reference(linear, t, swapped=True), x)
            handed = x.clone()
            tried = (f"{label[0]}, {branch[0]}", f"{label[1]}，{branch[1]}")
            try:
                got = _call(program.module(), handed)
            except Exception as exc:  # told after the checks of the graph, which may say why
                failures.append((tried, exc))
                continue
            if not _same_tensor(handed, x):
                raise Wrong("the exported program changed its input in place; leave the input as it was.",
                            "导出的程序原地修改了输入；请不要改动输入。", tried=tried)
            if branch is _TINY and isinstance(got, torch.Tensor):  # exact multiples of 2**-80: compare them as such
                got, want, other = got * _TINY_SCALE, want * _TINY_SCALE, other * _TINY_SCALE
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            results.append((branch, tried, diff, diff is not None and differs(got, other, rtol=1e-4, atol=1e-5) is None,
                            got, want))
        wrong = [r for r in results if r[2]]
        if wrong:
            random = [r for r in results if r[0] in (_RELU, _SUB, _RELU_X, _SUB_X)]
            branch, tried, diff, is_other, got, want = wrong[0]
            if isinstance(got, torch.Tensor) and got.shape != want.shape:
                raise Wrong("the exported program's output has another shape than SkipGate's: SkipGate returns a "
                            "tensor of x's shape, in either branch (a batch of one row included); keep every "
                            "dimension.",
                            "导出的程序输出的形状与 SkipGate 的不同：无论走哪个分支，SkipGate 都返回与 x 形状相同的张量"
                            "（只有一行的批也一样）；请保留每一个维度。",
                            tried=tried, expected=f"shape {tuple(want.shape)}", got=f"shape {tuple(got.shape)}")
            if all(r[3] for r in random):
                raise Wrong("the two branches are swapped: torch.cond runs its first function when the "
                            "condition is true (SkipGate: relu(y) + x when y.sum() > 0).",
                            "两个分支弄反了：条件为真时 torch.cond 运行第一个函数（SkipGate：y.sum() > 0 时返回 relu(y) + x）。",
                            tried=tried, got=diff)
            if is_other and branch is _ZERO:
                raise Wrong("when y.sum() is exactly 0 your program takes the relu(y) + x branch: SkipGate's "
                            "condition is strict (y.sum() > 0), so a sum of 0 takes the x - y branch.",
                            "当 y.sum() 恰好为 0 时，你的程序走了 relu(y) + x 分支：SkipGate 的条件是严格的大于"
                            "（y.sum() > 0），所以和为 0 时应当走 x - y 分支。", tried=tried, got=diff)
            if is_other and branch is _NAN:
                raise Wrong("when y.sum() is NaN your program takes the relu(y) + x branch: SkipGate's condition "
                            "y.sum() > 0 is false for NaN, so it takes x - y. A negated condition such as "
                            "not (y.sum() <= 0), or a sum that skips NaN (nansum), is not the same when the sum "
                            "is NaN.",
                            "当 y.sum() 为 NaN 时，你的程序走了 relu(y) + x 分支：对 NaN 而言 SkipGate 的条件 y.sum() > 0 "
                            "为假，所以应当走 x - y 分支。像“非 (y.sum() <= 0)”这样取反的条件，或者跳过 NaN 的求和（nansum），在和为 NaN 时都不等价。",
                            tried=tried, got=diff)
            if is_other and branch is _ROUND:
                raise Wrong("on this input SkipGate's y.sum(), a float32 sum, is exactly 0 (rounding), so it takes "
                            "x - y, but your program takes relu(y) + x: compute the condition as SkipGate does, "
                            "y.sum() > 0 on the float32 y, not in float64 nor summed in another order.",
                            "在这个输入上，SkipGate 的 y.sum()（float32 求和）因舍入恰好为 0，所以走 x - y 分支，而你的程序走了 "
                            "relu(y) + x 分支：请像 SkipGate 那样计算条件，即对 float32 的 y 求 y.sum() > 0，不要换成 float64，"
                            "也不要换一种求和顺序。", tried=tried, got=diff)
            if is_other and branch is _TINY:
                raise Wrong("when y.sum() is positive but tiny your program takes the x - y branch: SkipGate's "
                            "condition has no tolerance (y.sum() > 0), so any positive sum, however small, takes "
                            "the relu(y) + x branch.",
                            "当 y.sum() 为正但极小时，你的程序走了 x - y 分支：SkipGate 的条件没有容差（y.sum() > 0），"
                            "所以任何正的和，无论多小，都应当走 relu(y) + x 分支。", tried=tried, got=diff)
            if is_other:
                raise Wrong("your program takes the other branch on this input, though it picks the right one on "
                            "others: the condition is wrong. Check what is summed and how it is compared "
                            "(SkipGate: y.sum() > 0, y = linear(x)).",
                            "在这个输入上你的程序走了另一个分支，而在别的输入上选对了：条件写错了。请检查求和的对象和比较方式"
                            "（SkipGate：y.sum() > 0，其中 y = linear(x)）。", tried=tried, got=diff)
            raise Wrong("the exported program differs from SkipGate on this input.",
                        "导出的程序在这个输入上与 SkipGate 的结果不同。", tried=tried, got=diff)
        conds = [n for n in program.graph.nodes if n.op == "call_function" and n.target is torch.ops.higher_order.cond]
        outer = _graph_ops(program.graph_module)
        if not conds:
            raise Wrong("the values are right, but the exported graph has no cond node: both branches are "
                        "computed and one is picked (as torch.where does). The exercise asks for torch.cond, which "
                        "runs only the branch taken.",
                        "数值正确，但导出的计算图中没有 cond 节点：两个分支都计算了，再从中挑一个（像 torch.where 那样）。"
                        "本练习要求使用 torch.cond，它只运行被选中的分支。", tried=label,
                        got=(f"ops: {sorted(set(outer))}", f"算子：{sorted(set(outer))}"))
        branches = [getattr(program.graph_module, str(a.target)) for n in conds for a in n.args[1:3]
                    if isinstance(a, torch.fx.Node) and a.op == "get_attr"]
        idle = [b for b in branches if not [op for op in _graph_ops(b) if op not in _COPIES]]
        mixed = [x for branch, x in probes if branch in (_RELU, _SUB, _RELU_X, _SUB_X)]
        if idle or any(_is_branch_work(op) for op in _operand_ops(conds)) or \
                _branch_work_outside(program, linear, mixed):
            raise Wrong("the values are right, but a branch's work is done before torch.cond, whichever branch is "
                        "taken (torch.cond then only hands a result back): each branch must compute its own result, "
                        "so that only the branch taken runs.",
                        "数值正确，但某个分支的计算在 torch.cond 之前就做了，不论走哪个分支都会做（torch.cond 只是把结果交回）："
                        "每个分支必须自己计算自己的结果，这样才只运行被选中的分支。", tried=label,
                        got=(f"ops outside cond: {outer}", f"cond 之外的算子：{outer}"))
        if _branches_decide(program, linear, mixed):
            raise Wrong("the values are right, but each branch computes both results and picks one itself: run on "
                        "an input where the condition picks the other branch, it gives that branch's result. Let "
                        "each branch compute only its own result (the first relu(y) + x, the second x - y), so "
                        "that only the work of the branch taken runs.",
                        "数值正确，但每个分支都把两个结果都算了，再自己从中挑一个：在条件选中另一个分支的输入上运行它，"
                        "它给出的是另一个分支的结果。请让每个分支只计算自己的结果（第一个是 relu(y) + x，第二个是 x - y），"
                        "这样只运行被选中分支的计算。", tried=label)
        for tried, exc in failures:
            raise Wrong("the exported program fails on this input, where SkipGate returns a result.",
                        "导出的程序在这个输入上运行失败，而 SkipGate 能给出结果。", tried=tried, got=one_line_error(exc))
        for branch, tried, _, _, _, want in results:  # the module itself, called eagerly, must agree too
            handed = dict(probes)[branch].clone()
            got = _call(model, handed)
            if not _same_tensor(handed, dict(probes)[branch]):
                raise Wrong("your module, called directly (in eager mode), changed its input in place; leave the "
                            "input as it was.",
                            "直接（以 eager 模式）调用你的模块时，它原地修改了输入；请不要改动输入。",
                            tried=(f"{tried[0]}, calling the module eagerly", f"{tried[1]}，以 eager 模式直接调用模块"))
            if branch is _TINY and isinstance(got, torch.Tensor):  # ``want`` is scaled already
                got = got * _TINY_SCALE
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff:
                raise Wrong("the exported program is right, but your module called directly (in eager mode, not "
                            "exported) gives other values than SkipGate: forward must give SkipGate's values "
                            "however it is run, exported or not.",
                            "导出的程序是对的，但直接调用你的模块（eager 模式，不导出）时结果与 SkipGate 不同：无论是否导出，"
                            "forward 都必须给出 SkipGate 的结果。",
                            tried=(f"{tried[0]}, calling the module eagerly", f"{tried[1]}，以 eager 模式直接调用模块"),
                            got=diff)


# -- exercise 3: compile with torch-mlir + IREE and run ---------------------------------------

class _TanhNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 10), nn.Linear(10, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


class _Residual(nn.Module):
    """Its forward argument is not called x."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return inputs + torch.sigmoid(self.fc(inputs)) * 2


_ARITHMETIC = {"addmm", "mm", "bmm", "matmul", "linear", "tanh", "sigmoid", "mul", "add", "sub"}


class _Ops(TorchDispatchMode):
    """Records the ATen ops that run in PyTorch inside the block."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


class _ExportedAgain(BaseException):
    """Raised from torch.export.export while ``run`` is called (a BaseException, so an answer's own
    ``except Exception`` cannot turn it into another error)."""


@contextlib.contextmanager
def _no_export() -> Iterator[list[int]]:
    """Make torch.export.export raise inside the block, and count the tries."""
    tries: list[int] = []
    original = torch.export.export

    def refuse(*args: Any, **kwargs: Any) -> Any:
        tries.append(1)
        raise _ExportedAgain

    torch.export.export = refuse
    try:
        yield tries
    finally:
        torch.export.export = original


class _CompiledAgain(BaseException):
    """Raised from IREE's compiler while ``run`` is called (a BaseException, as _ExportedAgain)."""


@contextlib.contextmanager
def _no_iree_compile() -> Iterator[None]:
    """Make IREE's compiler raise inside the block: compile_str and compile_file (both end in
    ``tools.core.invoke_immediate``, looked up when called) and the in-process compiler API's
    ``Invocation.execute``."""
    from iree.compiler.api import ctypes_dl
    from iree.compiler.tools import core

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise _CompiledAgain

    originals = (core.__dict__["invoke_immediate"], ctypes_dl.Invocation.__dict__["execute"])
    core.invoke_immediate = refuse
    ctypes_dl.Invocation.execute = refuse
    try:
        yield
    finally:
        core.invoke_immediate, ctypes_dl.Invocation.execute = originals


@contextlib.contextmanager
def _iree_calls() -> Iterator[list[int]]:
    """Count the calls into compiled IREE modules inside the block, from any thread: every way of
    calling a loaded module's function (BoundModule, SystemContext, FunctionInvoker) ends in
    ``VmContext.invoke``."""
    from iree.runtime import _binding

    calls: list[int] = []
    original = _binding.VmContext.__dict__["invoke"]

    def invoke(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(self, *args, **kwargs)

    _binding.VmContext.invoke = invoke
    try:
        yield calls
    finally:
        _binding.VmContext.invoke = original


_LOADERS = ("copy_buffer", "wrap_buffer", "from_flatbuffer", "from_buffer", "mmap")


@contextlib.contextmanager
def _loaded_modules() -> Iterator[list[Any]]:
    """Record the IREE VM modules loaded inside the block."""
    from iree.runtime import _binding

    loaded: list[Any] = []
    originals = {name: _binding.VmModule.__dict__[name] for name in _LOADERS if name in _binding.VmModule.__dict__}

    def spy(original: Any) -> Any:
        def load(*args: Any, **kwargs: Any) -> Any:
            module = original(*args, **kwargs)
            loaded.append(module)
            return module
        return staticmethod(load)

    for name, original in originals.items():
        setattr(_binding.VmModule, name, spy(original))
    try:
        yield loaded
    finally:
        for name, original in originals.items():
            setattr(_binding.VmModule, name, original)


def _only_vmvx(loaded: list[Any]) -> bool:
    """Whether every loaded module whose flatbuffer can be read holds VMVX bytecode and no native
    (llvm-cpu) code."""
    blobs = []
    for module in loaded:
        try:
            blob = module.stashed_flatbuffer_blob
        except Exception:
            blob = None
        if blob is not None:
            blobs.append(bytes(blob))
    return bool(blobs) and all(b"vmvx-bytecode-fb" in b and b"-elf-" not in b for b in blobs)


_IREE_ERRORS = [
    _KEYS,
    ("dynamic_broadcast_in_dim",
     "IREE 3.13 cannot compile a StableHLO module with a dynamic batch (stablehlo.dynamic_broadcast_in_dim). "
     "Lower to another stage (lecture 10, section 9 'Run it').",
     "IREE 3.13 无法编译带动态批维度的 StableHLO 模块（stablehlo.dynamic_broadcast_in_dim）。请下降到另一个阶段（第 10 讲第 9 节）。"),
    ("tosa.",
     "IREE 3.13 cannot read the TOSA module this torch-mlir writes (the two were built against different versions "
     "of the TOSA dialect). Lower to another stage (lecture 10, section 9 'Run it').",
     "IREE 3.13 读不懂这个 torch-mlir 写出的 TOSA 模块（两者基于不同版本的 TOSA 方言构建）。请下降到另一个阶段（第 10 讲第 9 节）。"),
]


@task("lab10.3", "Compile with torch-mlir and IREE, run on the CPU", "用 torch-mlir 和 IREE 编译并在 CPU 上运行",
      hints=[("Three steps: export with a dynamic batch and lower to an MLIR text, compile the text for llvm-cpu, "
              "load it and wrap the call so it takes and returns tensors.",
              "三步：以动态批维度导出并下降成 MLIR 文本，把文本编译到 llvm-cpu，加载它并包装调用，使其接收并返回张量。"),
             ("Lecture 10, section 9 'Run it' compiles a linalg-on-tensors module and calls it with NumPy arrays; "
              "section 9 also shows which stages IREE 3.13 cannot compile with a dynamic batch. The model's "
              "input may have any name: section 3 says how dynamic_shapes follows forward's arguments.",
              "第 10 讲第 9 节“运行它：在 CPU 上使用 IREE”编译了一个 linalg-on-tensors 模块并用 NumPy 数组调用它；"
              "该节还展示了 IREE 3.13 在动态批维度下无法编译哪些阶段。模型输入的参数名可以是任意的：第 3 节说明了 "
              "dynamic_shapes 如何与 forward 的参数对应。")], time_limit=180)
def _check_iree(answer: Any) -> None:
    need_callable(answer, "compile_with_iree")
    for label, model, features, seed in (("_TanhNet (Linear 6→10, tanh, Linear 10→2; forward(x))",
                                          seeded(_TanhNet(), 301), 6, 31),
                                         ("_Residual (inputs + 2·sigmoid(Linear 3→3); forward(inputs))",
                                          seeded(_Residual(), 302), 3, 32)):
        probes = [(f"batch {b}", f"批大小 {b}", _randn(seed + b, b, features)) for b in (3, 1)]
        probes.append(("batch 7, a transposed (non-contiguous) view", "批大小 7，转置得到的（不连续的）视图",
                       _randn(seed + 7, features, 7).t()))
        probes.append(("batch 16, requires_grad=True", "批大小 16，requires_grad=True",
                       _randn(seed + 16, 16, features).requires_grad_()))
        probes.append(("batch 1000", "批大小 1000", _randn(seed + 1000, 1000, features)))
        probes.append(("batch 3 again, other values (the same shape as the first call)",
                       "再次以批大小 3 调用，数值不同（形状与第一次调用相同）", _randn(seed + 500, 3, features)))
        in_place = len(probes)  # the first probe's tensor itself, doubled in place after its call
        probes.append(("the tensor of the first call, doubled in place since (x.mul_(2))",
                       "第一次调用时的那个张量，之后被原地乘以 2（x.mul_(2)）", probes[0][2] * 2))
        wants = [_call(model, x) for _, _, x in probes]
        example = _randn(seed, 4, features)
        handed = example.clone()
        compiling = (f"compile_with_iree({label}, example of batch 4)", f"compile_with_iree({label}, 批大小为 4 的示例)")
        modes = _training_flags(model)
        try:
            with quiet(), _loaded_modules() as loaded:
                run = answer(model, handed)
        except Exception as exc:
            for needle, en, zh in _IREE_ERRORS:
                if needle in str(exc):
                    raise Wrong(en, zh, tried=compiling, got=one_line_error(exc)) from None
            raise
        if not _same_tensor(handed, example):
            raise Wrong("your function changed the example it was given (its values, shape, strides, dtype or "
                        "requires_grad); leave it as it was.",
                        "你的函数改动了传入的示例（数值、形状、步长、dtype 或 requires_grad）；请不要改动它。",
                        tried=compiling, expected=describe(example), got=describe(handed))
        _require_same_modes(modes, model, compiling)
        if _only_vmvx(loaded):
            raise Wrong("the module you loaded was compiled for IREE's vmvx backend (a portable interpreter), not "
                        "llvm-cpu: the exercise asks for native CPU code, target_backends=[\"llvm-cpu\"] "
                        "(lecture 10, section 9 'Run it').",
                        "你加载的模块是为 IREE 的 vmvx 后端（一个可移植的解释器）编译的，而不是 llvm-cpu：练习要求编译成本机 CPU "
                        "代码，即 target_backends=[\"llvm-cpu\"]（第 10 讲第 9 节）。", tried=compiling)
        if not callable(run):
            raise Wrong("return a function that takes a tensor and returns a tensor.",
                        "请返回一个接收张量并返回张量的函数。", tried=label, got=describe(run))
        with torch.no_grad():  # the compiled module froze the weights; eager now gives other values
            for p in model.parameters():
                p.add_(1.0)
        kept: list[tuple[Any, Any, Any, torch.Tensor]] = []  # (tried, result, its copy, want) of every call
        for index, ((en_probe, zh_probe, x), want) in enumerate(zip(probes, wants)):
            tried = (f"{label}: compiled on a batch of 4, called with {en_probe}",
                     f"{label}：以批大小 4 编译；调用时的输入：{zh_probe}")
            ops = _Ops()
            if index == in_place:
                fresh = first
                with torch.no_grad():
                    fresh.mul_(2)
            else:
                fresh = x.detach().clone().requires_grad_(x.requires_grad)  # clone keeps a transposed view's strides
            if index == 0:
                first = fresh
            try:
                with quiet(), _no_export() as exports, _no_iree_compile(), _loaded_modules() as late, ops, \
                        _iree_calls() as calls:
                    got = run(fresh)
            except _ExportedAgain:
                got, exports = None, [1]
            except _CompiledAgain:
                raise Wrong("your run compiles the MLIR with IREE again when it is called: compile once, in "
                            "compile_with_iree, and let run only call the compiled module.",
                            "你的 run 在被调用时又用 IREE 编译了一次 MLIR：请在 compile_with_iree 中只编译一次，"
                            "run 只负责调用编译出的模块。", tried=tried) from None
            except Exception as exc:
                text = str(exc)
                if "requires grad" in text:
                    en, zh = ("run fails on a tensor that requires grad: take the values out of autograd's "
                              "tracking before handing them to NumPy.",
                              "run 在要求梯度（requires grad）的张量上失败：交给 NumPy 之前，先把数值从自动微分（autograd）的跟踪中取出来。")
                elif "mismatch" in text and "expected 4" in text:
                    en, zh = ("the compiled module rejects this batch size: it was exported with a static batch. "
                              "Export with dimension 0 dynamic before lowering (lecture 10, section 9 'Run it').",
                              "编译出的模块拒绝这个批大小：导出时批维度是静态的。请在下降之前把第 0 维设为动态再导出（第 10 讲第 9 节）。")
                else:
                    en, zh = "run fails on this input.", "run 在这个输入上失败。"
                raise Wrong(en, zh, tried=tried, got=one_line_error(exc)) from None
            if exports:
                raise Wrong("your run exports (and compiles) the model again when it is called: compile once, with a "
                            "dynamic batch, in compile_with_iree, and let run only call the compiled module.",
                            "你的 run 在被调用时又导出（并编译）了一次模型：请在 compile_with_iree 中以动态批维度只编译一次，"
                            "run 只负责调用编译出的模块。", tried=tried)
            loaded.extend(late)
            if late and _only_vmvx(loaded):
                raise Wrong("the module your run loads was compiled for IREE's vmvx backend (a portable interpreter), "
                            "not llvm-cpu: the exercise asks for native CPU code, target_backends=[\"llvm-cpu\"] "
                            "(lecture 10, section 9 'Run it').",
                            "你的 run 加载的模块是为 IREE 的 vmvx 后端（一个可移植的解释器）编译的，而不是 llvm-cpu：练习要求编译成本机 "
                            "CPU 代码，即 target_backends=[\"llvm-cpu\"]（第 10 讲第 9 节）。", tried=tried)
            if not _same_tensor(fresh, x):
                raise Wrong("run changed the tensor it was given (its values, shape, strides, dtype or requires_grad, "
                            "e.g. with x.requires_grad_(False) instead of x.detach()); leave it as it was.",
                            "run 改动了传入的张量（数值、形状、步长、dtype 或 requires_grad，例如用 x.requires_grad_(False) "
                            "代替 x.detach()）；请不要改动它。", tried=tried, expected=describe(x), got=describe(fresh))
            torch_ops = sorted(set(ops.names) & _ARITHMETIC)
            if torch_ops:
                raise Wrong("your run computes with PyTorch (a copy of the model, or an exported program): call the "
                            "compiled IREE module instead.",
                            "你的 run 用 PyTorch 做了计算（模型的副本，或导出的程序）：请改为调用 IREE 编译出的模块。",
                            tried=tried, got=(f"PyTorch ops run: {torch_ops}", f"在 PyTorch 中运行的算子：{torch_ops}"))
            if not isinstance(got, torch.Tensor):
                raise Wrong("return a torch.Tensor, not the runtime's array or a NumPy array: convert the result.",
                            "请返回 torch.Tensor，而不是运行时的数组或 NumPy 数组：转换一下结果。",
                            tried=tried, got=describe(got))
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff and any(differs(got, old, rtol=1e-4, atol=1e-5) is None for _, _, old, _ in kept):
                raise Wrong("run returned the result of an earlier call for a new input (one of the same shape, or "
                            "the same tensor changed in place): a result kept from before, keyed by shape or by "
                            "tensor, goes stale. Call the compiled module on every call.",
                            "run 对一个新的输入返回了之前某次调用的结果（形状相同的另一个输入，或被原地修改过的同一个张量）："
                            "按形状或按张量缓存的旧结果会过时。请每次调用都运行编译出的模块。", tried=tried, got=diff)
            if not calls:
                raise Wrong("run returned without calling the compiled IREE module (no call reached IREE's runtime, "
                            "from any thread): the result must come from the compiled module.",
                            "run 没有调用 IREE 编译出的模块就返回了（没有任何线程的调用到达 IREE 运行时）：结果必须来自编译出的模块。",
                            tried=tried)
            if diff:
                if differs(got, _call(model, x), rtol=1e-4, atol=1e-5) is None:
                    raise Wrong("your function runs the PyTorch model (it follows a change of the weights made "
                                "after compiling): call the compiled IREE module instead.",
                                "你的函数运行的是 PyTorch 模型（编译之后修改权重，它的结果也跟着变）：请改为调用 IREE 编译出的模块。",
                                tried=tried, got=diff)
                raise Wrong("the compiled module's output differs from eager PyTorch.",
                            "编译出的模块的输出与 eager 模式的 PyTorch 不同。", tried=tried, got=diff)
            kept.append((tried, got, got.detach().clone(), want))
        for tried, got, _, want in kept:  # every result must still hold its values after the later calls
            diff = differs(got, want, rtol=1e-4, atol=1e-5)
            if diff:
                raise Wrong("a result run returned earlier changed when run was called again: run writes every "
                            "result into one tensor it keeps (per shape) and returns it each time. Return a new "
                            "tensor from each call.",
                            "run 之前返回的结果在再次调用 run 之后变了：run 把每次的结果写进它保留的同一个张量（按形状）并每次返回它。"
                            "请每次调用都返回一个新的张量。",
                            tried=(f"{tried[0]}, looked at again after the later calls",
                                   f"{tried[1]}，在之后的调用结束后再次查看"), got=diff)
