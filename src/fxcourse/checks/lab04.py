"""Checkers for labs/lab04_fx_passes.ipynb (lecture course/04_fx_transforms.ipynb).

Every task runs the learner's pass on models the lab does not show, compares outputs with
the untouched original, and names the usual mistake when the result shows one: fusing a
conv that has a second user, forgetting the conv's own bias, editing the input instead of a
copy, forgetting ``recompile()``, matching only one operand order, or recording a tensor
that a later in-place op overwrites.
"""
from __future__ import annotations

import copy
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import fx, nn

from . import Wrong, task
from .. import zoo

RTOL, ATOL = 1e-4, 1e-5


# ----------------------------------------------------------------------------- helpers


def _snapshot(gm: fx.GraphModule) -> tuple[Any, ...]:
    """What must not change when a pass promises to leave its input alone."""
    nodes = tuple((n.name, n.op, str(n.target), str(n.args), str(n.kwargs)) for n in gm.graph.nodes)
    state = {k: v.detach().clone() for k, v in gm.state_dict().items()}
    return nodes, gm.code, sorted(name for name, _ in gm.named_modules()), state


def _same_snapshot(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    if a[:3] != b[:3] or a[3].keys() != b[3].keys():
        return False
    return all(a[3][k].shape == b[3][k].shape and torch.equal(a[3][k], b[3][k]) for k in a[3])


def _require_untouched(before: tuple[Any, ...], gm: fx.GraphModule, label: str) -> None:
    if not _same_snapshot(before, _snapshot(gm)):
        raise Wrong("your pass changed the GraphModule it was given; work on a copy "
                    "(copy.deepcopy(gm)) and return the copy.",
                    "你的 pass 改动了传入的 GraphModule；请在副本（copy.deepcopy(gm)）上修改并返回副本。",
                    tried=label, expected="the input graph and weights unchanged",
                    got="the input was modified")


def _require_recompiled(gm: fx.GraphModule, label: str) -> None:
    fresh = gm.graph.python_code(root_module="self").src
    if fresh != gm.code:
        raise Wrong("the graph was edited but forward was not regenerated: call gm.recompile() "
                    "after the last edit.",
                    "计算图已修改，但 forward 没有重新生成：最后一次修改后请调用 gm.recompile()。",
                    tried=label, expected="gm.code generated from gm.graph", got="stale gm.code")


def _max_diff(got: Any, want: torch.Tensor) -> str:
    if not isinstance(got, torch.Tensor):
        return type(got).__name__
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} instead of {tuple(want.shape)}"
    return f"max abs difference {float((got - want).abs().max()):.3g}"


def _close(got: Any, want: torch.Tensor, rtol: float = RTOL, atol: float = ATOL) -> bool:
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    try:
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)
    except AssertionError:
        return False
    return True


def _run(gm: Any, inputs: tuple[torch.Tensor, ...], label: str) -> Any:
    """Call the learner's module; turn a crash into advice instead of a bare traceback."""
    try:
        with torch.no_grad():
            return gm(*inputs)
    except (NameError, UnboundLocalError, AttributeError, RuntimeError, TypeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise Wrong("the returned module fails when called: run gm.graph.lint() after your edits "
                    "to find the broken node, and gm.recompile() after the last one.",
                    "返回的模块一调用就出错：修改后运行 gm.graph.lint() 找出出错的节点，"
                    "最后一次修改后调用 gm.recompile()。",
                    tried=label, got=f"{type(exc).__name__}: {first}") from None


def _bn_nodes(gm: fx.GraphModule) -> list[str]:
    modules = dict(gm.named_modules())
    return [n.name for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(modules.get(n.target), nn.BatchNorm2d)]


def _require_no_dotted_attribute(gm: fx.GraphModule, label: str) -> None:
    """setattr(gm, "stem.0", m) does not replace stem[0]: it adds a module literally named "stem.0"."""
    dotted = sorted(key for m in gm.modules() for key in m._modules if "." in key)
    if dotted:
        raise Wrong(f"setattr(gm, {dotted[0]!r}, ...) added a new attribute literally named {dotted[0]!r} "
                    "instead of replacing the conv inside its parent; use gm.set_submodule(target, "
                    "new_module) for dotted targets.",
                    f"setattr(gm, {dotted[0]!r}, ...) 新增了一个名字就叫 {dotted[0]!r} 的属性，"
                    "而没有替换父模块里的那个卷积；带点的 target 请用 gm.set_submodule(target, new_module)。",
                    tried=label, got=f"a submodule named {dotted[0]!r}")


# ----------------------------------------------------------------------------- lab04.1


class _Stack(nn.Module):
    """Two foldable conv → BN pairs (one inside a Sequential) and a BN after a ReLU."""

    def __init__(self, bias: bool) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1, bias=bias), nn.BatchNorm2d(6), nn.ReLU())
        self.conv = nn.Conv2d(6, 8, 3, stride=2, groups=2, bias=bias)
        self.bn = nn.BatchNorm2d(8)
        self.post_bn = nn.BatchNorm2d(8)  # its input is a ReLU: nothing to fold into

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(self.conv(self.stem(x)))
        return self.post_bn(torch.relu(y))


def _fusion_cases() -> list[tuple[str, nn.Module, tuple[torch.Tensor, ...], list[str]]]:
    """(label, model, inputs, BN nodes that must remain)."""
    cases = []
    for bias, seed in ((False, 1), (True, 2)):
        torch.manual_seed(seed)
        model = zoo.pretend_trained(_Stack(bias).eval(), seed)
        cases.append((f"a conv/BN stack with Conv2d(bias={bias})", model, (torch.randn(2, 3, 9, 9),),
                      ["post_bn"]))
    shared, _ = zoo.example("shared_conv", seed=3)
    torch.manual_seed(3)
    cases.append(("zoo.SharedConv (its conv output feeds bn and add)", zoo.pretend_trained(shared, 3),
                  (torch.randn(2, 4, 5, 5),), ["bn"]))
    resnet, _ = zoo.example("resnet18", seed=4)
    torch.manual_seed(4)
    cases.append(("torchvision resnet18", zoo.pretend_trained(resnet, 4), (torch.randn(1, 3, 32, 32),), []))
    return cases


@task("lab04.1", "fold BatchNorm into the conv before it", "把 BatchNorm 折叠进前面的卷积")
def _fuse_conv_bn(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab04.1', fuse_conv_bn).",
                    "请传入函数本身，例如 check('lab04.1', fuse_conv_bn)。", got=type(answer).__name__)
    passed_bias_free = False
    for label, model, inputs, keep in _fusion_cases():
        gm = fx.symbolic_trace(model)
        with torch.no_grad():
            want = model(*inputs)
        before = _snapshot(gm)
        result = answer(gm)
        if not isinstance(result, fx.GraphModule):
            raise Wrong("return the fused fx.GraphModule.", "请返回融合后的 fx.GraphModule。",
                        tried=label, got=type(result).__name__)
        _require_untouched(before, gm, label)
        _require_no_dotted_attribute(result, label)
        _require_recompiled(result, label)
        remaining = _bn_nodes(result)
        got = _run(result, inputs, label)
        if "SharedConv" in label and not remaining:
            if not _close(got, want):
                raise Wrong("you fused a conv whose output has another user: SharedConv computes "
                            "bn(y) + y with y = conv(x), so after folding, `add` reads BN's output "
                            "too. Fuse only when len(conv_node.users) == 1.",
                            "你融合了一个输出还有其他使用者的卷积：SharedConv 计算的是 bn(y) + y，"
                            "其中 y = conv(x)；折叠之后 `add` 读到的也是 BN 的输出。只有当 "
                            "len(conv_node.users) == 1 时才能融合。",
                            tried=label, expected="bn kept, output unchanged",
                            got=f"bn removed, {_max_diff(got, want)}")
            raise Wrong("leave a conv whose output has another user unfused: its BN node must stay.",
                        "卷积的输出还有其他使用者时不要融合：它的 BN 节点必须保留。",
                        tried=label, expected=f"BatchNorm nodes {keep}", got="[]")
        missing = [name for name in keep if name not in remaining]
        if missing:
            raise Wrong(f"the BN node {missing[0]!r} has no conv right before it (its input is a "
                        "ReLU), so it must stay.",
                        f"BN 节点 {missing[0]!r} 前面不是卷积（它的输入是 ReLU），必须保留。",
                        tried=label, expected=f"BatchNorm nodes {keep}", got=repr(remaining))
        extra = [name for name in remaining if name not in keep]
        if extra:
            raise Wrong(f"BN node {extra[0]!r} follows a conv that feeds only it, so it can be folded; "
                        "look for call_module BatchNorm2d nodes whose args[0] is a call_module Conv2d "
                        "node (targets can be dotted, e.g. 'stem.1').",
                        f"BN 节点 {extra[0]!r} 前面的卷积只连着它，可以折叠；请查找 args[0] 是 call_module "
                        "Conv2d 节点的 call_module BatchNorm2d 节点（target 可能带点，例如 'stem.1'）。",
                        tried=label, expected=f"BatchNorm nodes {keep}", got=repr(remaining))
        if not _close(got, want):
            if "bias=True" in label and passed_bias_free:
                hint = ("right without a conv bias, wrong with one: the conv's own bias b goes "
                        "through BN too: b' = (b - running_mean) * s + beta.",
                        "没有卷积偏置时正确，有偏置时出错：卷积自身的偏置 b 也要经过 BN："
                        "b' = (b - running_mean) * s + beta。")
            else:
                hint = ("the fused model's output differs from the original. With "
                        "s = bn.weight / sqrt(bn.running_var + bn.eps): W' = W * s (per output "
                        "channel, s.reshape(-1, 1, 1, 1)) and b' = (b - running_mean) * s + bn.bias.",
                        "融合后模型的输出与原模型不同。令 s = bn.weight / sqrt(bn.running_var + bn.eps)："
                        "W' = W * s（按输出通道，s.reshape(-1, 1, 1, 1)），"
                        "b' = (b - running_mean) * s + bn.bias。")
            raise Wrong(*hint, tried=label, expected="the original model's output",
                        got=_max_diff(got, want))
        if "bias=False" in label:
            passed_bias_free = True


# ----------------------------------------------------------------------------- lab04.2


def _silu_twice(x: torch.Tensor) -> torch.Tensor:
    a = x * torch.sigmoid(x)
    b = torch.sigmoid(a) * a
    return a * torch.sigmoid(b)  # not a SiLU: the operands differ


class _GatedMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(6, 12)
        self.down = nn.Linear(12, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.up(x)
        h = torch.sigmoid(h) * h
        y = self.down(h)
        return y * torch.sigmoid(y) + x


def _silu_cases() -> list[tuple[str, fx.GraphModule, Callable[..., Any], tuple[torch.Tensor, ...], int]]:
    torch.manual_seed(5)
    mlp = _GatedMLP().eval()
    return [
        ("a function with x*sigmoid(x), sigmoid(a)*a and a*sigmoid(b)", fx.symbolic_trace(_silu_twice),
         _silu_twice, (torch.randn(3, 5),), 2),
        ("an MLP with sigmoid(h)*h and y*sigmoid(y)", fx.symbolic_trace(mlp), mlp, (torch.randn(4, 6),), 2),
    ]


def _mul_orders(gm: fx.GraphModule) -> tuple[int, int]:
    """How many SiLUs are left written as x*sigmoid(x) and as sigmoid(x)*x."""
    plain = swapped = 0
    for n in gm.graph.nodes:
        if n.op != "call_function" or len(n.args) != 2:
            continue
        a, b = n.args
        if isinstance(b, fx.Node) and b.target is torch.sigmoid and b.args[0] is a:
            plain += 1
        if isinstance(a, fx.Node) and a.target is torch.sigmoid and a.args[0] is b:
            swapped += 1
    return plain, swapped


@task("lab04.2", "rewrite x * sigmoid(x) into silu with replace_pattern",
      "用 replace_pattern 把 x * sigmoid(x) 改写为 silu")
def _silu_rewrite(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab04.2', silu_rewrite).",
                    "请传入函数本身，例如 check('lab04.2', silu_rewrite)。", got=type(answer).__name__)
    for label, gm, original, inputs, want_count in _silu_cases():
        with torch.no_grad():
            want = original(*inputs)
        count = answer(gm)
        if isinstance(count, (list, tuple)):
            raise Wrong("return the number of replacements, e.g. len(matches) summed over your "
                        "replace_pattern calls, not the list of matches.",
                        "请返回替换的次数（例如各次 replace_pattern 返回列表的 len 之和），而不是匹配列表本身。",
                        tried=label, expected=str(want_count), got=type(count).__name__)
        plain, swapped = _mul_orders(gm)
        silus = sum(n.target is F.silu for n in gm.graph.nodes)
        if swapped and not plain and silus:
            raise Wrong("sigmoid(x) * x was left alone: to the matcher it is a different graph from "
                        "x * sigmoid(x) (the operands of mul are swapped); call replace_pattern a "
                        "second time with that order.",
                        "sigmoid(x) * x 没有被替换：对匹配器而言，它与 x * sigmoid(x) 是两张不同的图"
                        "（mul 的两个操作数交换了）；请用这种顺序再调用一次 replace_pattern。",
                        tried=label, expected=f"{want_count} replaced", got=f"{silus} replaced")
        if plain and not swapped and silus:
            raise Wrong("x * sigmoid(x) was left alone; the operand order matters to the matcher: "
                        "rewrite both x * torch.sigmoid(x) and torch.sigmoid(x) * x.",
                        "x * sigmoid(x) 没有被替换；对匹配器而言操作数顺序很重要："
                        "x * torch.sigmoid(x) 和 torch.sigmoid(x) * x 两种都要改写。",
                        tried=label, expected=f"{want_count} replaced", got=f"{silus} replaced")
        if silus == 0:
            raise Wrong("nothing was rewritten: a pattern matches only the same ops written the same way; "
                        "the graph multiplies with `*` (operator.mul), so write the pattern as "
                        "x * torch.sigmoid(x), not torch.mul(...), and pass gm itself to replace_pattern.",
                        "什么都没有被改写：模式只能匹配以同样方式写出的同样算子；计算图里的乘法是 `*`"
                        "（operator.mul），所以模式要写成 x * torch.sigmoid(x)，而不是 torch.mul(...)，"
                        "并把 gm 本身传给 replace_pattern。",
                        tried=label, expected=f"{want_count} calls to F.silu", got="0 calls to F.silu")
        if silus != want_count or plain or swapped:
            raise Wrong("the graph should call torch.nn.functional.silu once per SiLU written out by "
                        "hand, and only there (a * sigmoid(b) with a different b is not a SiLU).",
                        "计算图中每个手写的 SiLU 都应换成一次 torch.nn.functional.silu 调用，而且只换这些"
                        "（a * sigmoid(b) 中 b 不同时不是 SiLU）。",
                        tried=label, expected=f"{want_count} calls to F.silu",
                        got=f"{silus} calls to F.silu, {plain + swapped} SiLU(s) still written out")
        if not isinstance(count, int) or count != want_count:
            raise Wrong("return how many replacements you made (an int).",
                        "请返回替换的次数（一个 int）。",
                        tried=label, expected=str(want_count), got=repr(count))
        _require_recompiled(gm, label)
        got = _run(gm, inputs, label)
        if not _close(got, want, rtol=1e-5, atol=1e-6):
            raise Wrong("the rewritten graph computes something else: the replacement must be "
                        "F.silu(x) of the same x the pattern multiplied.",
                        "改写后的计算图结果变了：替换结果必须是对模式中同一个 x 调用 F.silu(x)。",
                        tried=label, expected="the original output", got=_max_diff(got, want))


# ----------------------------------------------------------------------------- lab04.3


class _Recorder(fx.Interpreter):
    """Reference values: a copy of every node's result, taken as soon as it is computed."""

    def __init__(self, gm: fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, torch.Tensor] = {}

    def run_node(self, n: fx.Node) -> Any:
        result = super().run_node(n)
        if isinstance(result, torch.Tensor):
            self.values[n.name] = result.detach().clone()
        return result


class _Branchy(nn.Module):
    """A node with two users ('silu') and a nested module call."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(5, 7), nn.Tanh())
        self.head = nn.Linear(7, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.inner(x))
        return self.head(h) + h.sum(dim=-1, keepdim=True)


def _probe_cases() -> list[tuple[str, nn.Module, list[str], list[torch.Tensor]]]:
    torch.manual_seed(6)
    branchy = _Branchy().eval()
    resnet, _ = zoo.example("resnet18", seed=7)
    torch.manual_seed(7)
    zoo.pretend_trained(resnet, 7)
    return [
        ("a small model, names ['silu', 'inner_1', 'head']", branchy, ["silu", "inner_1", "head"],
         [torch.randn(2, 5), torch.randn(2, 5)]),
        ("torchvision resnet18, names ['layer1_0_bn1', 'add_3', 'layer4_1_relu_1', 'fc']", resnet,
         ["layer1_0_bn1", "add_3", "layer4_1_relu_1", "fc"],
         [torch.randn(1, 3, 32, 32), torch.randn(1, 3, 32, 32)]),
    ]


@task("lab04.3", "insert probes that record chosen activations", "插入探针，记录指定节点的激活值")
def _insert_probes(answer: Any) -> None:
    if not callable(answer):
        raise Wrong("pass the function itself, e.g. check('lab04.3', insert_probes).",
                    "请传入函数本身，例如 check('lab04.3', insert_probes)。", got=type(answer).__name__)
    for label, model, names, inputs in _probe_cases():
        gm = fx.symbolic_trace(model)
        before = _snapshot(gm)
        returned = answer(gm, list(names))
        if not (isinstance(returned, tuple) and len(returned) == 2
                and isinstance(returned[0], fx.GraphModule) and isinstance(returned[1], dict)):
            raise Wrong("return a pair (probed GraphModule, records dict).",
                        "请返回一个二元组 (插入探针后的 GraphModule, 记录用的 dict)。",
                        tried=label, got=type(returned).__name__)
        probed, records = returned
        _require_untouched(before, gm, label)
        _require_recompiled(probed, label)
        history = []
        for call, x in enumerate(inputs, start=1):
            recorder = _Recorder(gm)
            with torch.no_grad():
                want_out = recorder.run(x)
            history.append(recorder.values)
            got_out = _run(probed, (x,), label)
            if not _close(got_out, want_out, rtol=1e-5, atol=1e-6):
                raise Wrong("the probes changed the model's output: a probe must return its input "
                            "unchanged, and every other node must keep reading the same values.",
                            "探针改变了模型的输出：探针必须原样返回输入，其他节点读到的值也必须不变。",
                            tried=f"{label}, call {call}", expected="the original output",
                            got=_max_diff(got_out, want_out))
            if not records:
                raise Wrong("nothing was recorded: is each probe a call_module node in the graph "
                            "(gm.add_submodule + graph.call_module) and did you call recompile()?",
                            "什么都没有记录下来：每个探针是否都是计算图中的 call_module 节点"
                            "（gm.add_submodule + graph.call_module）？是否调用了 recompile()？",
                            tried=f"{label}, call {call}", expected=repr(sorted(names)), got="{}")
            if sorted(records) != sorted(names):
                raise Wrong("records must have exactly the requested node names as keys.",
                            "records 的键必须恰好是所请求的节点名。",
                            tried=f"{label}, call {call}", expected=repr(sorted(names)),
                            got=repr(sorted(map(str, records))))
            for name in names:
                got, want = records[name], recorder.values[name]
                if _close(got, want, rtol=1e-5, atol=1e-6):
                    continue
                if call > 1 and _close(got, history[0][name], rtol=1e-5, atol=1e-6):
                    raise Wrong("the records still hold the first call's values: store the value "
                                "every time the probe runs.",
                                "records 里仍是第一次调用的值：探针每次运行都要重新存储。",
                                tried=f"{label}, call {call}, node {name!r}")
                if (isinstance(got, torch.Tensor) and got.shape == want.shape
                        and bool((want < 0).any()) and _close(got, want.clamp(min=0))):
                    raise Wrong(f"{name!r} was overwritten after it was recorded: the nn.ReLU(inplace=True) "
                                "that runs next changed the same tensor. Store a copy: x.detach().clone().",
                                f"{name!r} 在记录之后被覆盖了：紧接着运行的 nn.ReLU(inplace=True) 修改了同一个张量。"
                                "请保存副本：x.detach().clone()。",
                                tried=f"{label}, call {call}, node {name!r}",
                                expected="values with negatives", got="the values after ReLU")
                raise Wrong(f"records[{name!r}] is not the output of node {name!r}.",
                            f"records[{name!r}] 不是节点 {name!r} 的输出。",
                            tried=f"{label}, call {call}", expected=f"tensor of shape {tuple(want.shape)}",
                            got=_max_diff(got, want))
