"""Checkers for labs/lab04_fx_passes.ipynb (lecture course/04_fx_transforms.ipynb).

Every task runs the learner's pass on models the lab does not show, compares outputs with
the untouched original, and names the usual mistake when the result shows one: fusing a
conv that has a second user or a BatchNorm in training mode, folding into (or deleting) a module that
another node also calls, forgetting the conv's own bias,
editing the input instead of a copy, forgetting ``recompile()``, matching only one operand
order, a probe that reads itself, or recording a tensor that a later in-place op overwrites.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import fx, nn

from . import Wrong, task
from .. import zoo
from .._lang import Bilingual
from .._text import one_line_error
from ._probe import Snapshot, built, called, close, describe, differs, need_callable, require_untouched

RTOL, ATOL = 1e-4, 1e-5


# ----------------------------------------------------------------------------- helpers


def _require_untouched(before: Snapshot, gm: fx.GraphModule, label: Bilingual) -> None:
    require_untouched(before, gm, tried=label,
                      en="your pass changed the GraphModule it was given; make a deep copy first (weights "
                         "included), edit the copy and return it.",
                      zh="你的 pass 改动了传入的 GraphModule；请先做一份深拷贝（连同权重），在副本上修改并返回副本。",
                      expected=("the input graph and weights unchanged", "传入的计算图和权重保持不变"),
                      got=("the input was modified", "传入的模块被改动了"))


def _require_recompiled(gm: fx.GraphModule, label: Bilingual) -> None:
    fresh = gm.graph.python_code(root_module="self").src
    if fresh != gm.code:
        raise Wrong("the graph was edited but forward was not regenerated from it after the last edit "
                    "(lecture 03, section 7: generated code, and why edits need recompile()).",
                    "计算图已修改，但最后一次修改之后没有据此重新生成 forward（第 03 讲第 7 节：生成的代码，以及为什么"
                    "修改后需要 recompile()）。",
                    tried=label, expected=("gm.code generated from gm.graph", "由 gm.graph 生成的 gm.code"),
                    got=("stale gm.code", "过时的 gm.code"))


def _max_diff(got: Any, want: torch.Tensor) -> Bilingual:
    if not isinstance(got, torch.Tensor):
        return type(got).__name__
    if got.shape != want.shape:
        return (f"shape {tuple(got.shape)} instead of {tuple(want.shape)}",
                f"形状为 {tuple(got.shape)}，而不是 {tuple(want.shape)}")
    worst = f"{float((got - want).abs().max()):.3g}"
    return f"max abs difference {worst}", f"最大绝对误差 {worst}"


def _close(got: Any, want: torch.Tensor, rtol: float = RTOL, atol: float = ATOL) -> bool:
    return close(got, want, rtol=rtol, atol=atol)


def _run(gm: Any, inputs: tuple[torch.Tensor, ...], label: Bilingual) -> Any:
    """Call the learner's module; a crash becomes advice instead of a bare traceback."""
    return called(gm, inputs, tried=label,
                  errors=(NameError, UnboundLocalError, AttributeError, RuntimeError, TypeError),
                  en="the returned module fails when called: run gm.graph.lint() after your edits "
                     "to find the broken node, and gm.recompile() after the last one.",
                  zh="返回的模块一调用就出错：修改后运行 gm.graph.lint() 找出出错的节点，"
                     "最后一次修改后调用 gm.recompile()。")


def _bn_nodes(gm: fx.GraphModule) -> list[str]:
    modules = dict(gm.named_modules())
    return [n.name for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(modules.get(n.target), nn.BatchNorm2d)]


def _require_no_dotted_attribute(gm: fx.GraphModule, label: Bilingual) -> None:
    """setattr(gm, "stem.0", m) does not replace stem[0]: it adds a module literally named "stem.0"."""
    dotted = sorted(key for m in gm.modules() for key in m._modules if "." in key)
    if dotted:
        raise Wrong(f"setattr with {dotted[0]!r} added a new attribute literally named {dotted[0]!r} "
                    "instead of replacing the conv inside its parent; a dotted target needs the module "
                    "method that walks the path (the exercise names it).",
                    f"用 setattr 设置 {dotted[0]!r} 新增了一个名字就叫 {dotted[0]!r} 的属性，"
                    "而没有替换父模块里的那个卷积；带点的 target 需要用能沿路径查找的模块方法（练习中提到过它）。",
                    tried=label, got=(f"a submodule named {dotted[0]!r}", f"名为 {dotted[0]!r} 的子模块"))


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


class _Up(nn.Module):
    """A transposed conv followed by a BN: BN folds into a Conv2d only, not into this producer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.ConvTranspose2d(6, 6, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class _Clash(nn.Module):
    """A top-level ``conv``/``bn`` pair (a dilated Conv2d, foldable) next to a nested ``block.conv``/``block.bn``
    (a ConvTranspose2d, not foldable): a module looked up by the last part of its path is the wrong one."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=2, dilation=2)
        self.bn = nn.BatchNorm2d(6)
        self.block = _Up()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.bn(self.conv(x)))


class _ConvCalledTwice(nn.Module):
    """One conv module called at two places, the first call followed by a BN: folding into that module changes
    the second call too."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x)) + torch.relu(self.conv(x))


class _BNCalledTwice(nn.Module):
    """A foldable reflect-padded conv → BN, then one BN module called at two places, after a conv and after a
    ReLU: the second call still needs the module after the first one is folded."""

    def __init__(self) -> None:
        super().__init__()
        self.pad = nn.Conv2d(3, 3, 3, padding=1, padding_mode="reflect")
        self.pad_bn = nn.BatchNorm2d(3)
        self.conv = nn.Conv2d(3, 3, 1)
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.pad_bn(self.pad(x))
        return self.bn(self.conv(y)) + self.bn(torch.relu(y))


class _Pair(nn.Module):
    """Conv2d(3, 4, 3) → BatchNorm2d(4, **bn_options) → ReLU."""

    def __init__(self, **bn_options: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4, **bn_options)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class _KeywordPair(_Pair):
    """The BN's input passed by keyword: the conv node is in the BN node's kwargs, not its args."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(input=self.conv(x)))


def _stats(model: nn.Module, seed: int) -> nn.Module:
    """Trained-looking statistics and affine weights for every BN, leaving out what a BN does not have
    (``affine=False``: no weight or bias; ``track_running_stats=False``: no running statistics)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                for name, make in (("running_mean", lambda: 0.5 * torch.randn(c, generator=gen)),
                                   ("running_var", lambda: 0.5 + torch.rand(c, generator=gen)),
                                   ("weight", lambda: 0.5 + torch.rand(c, generator=gen)),
                                   ("bias", lambda: 0.5 * torch.randn(c, generator=gen))):
                    if getattr(m, name) is not None:
                        getattr(m, name).copy_(make())
    return model


def _trained(factory: Callable[[], nn.Module], seed: int) -> nn.Module:
    """Seeded weights and trained-looking BN statistics, without moving the learner's RNG."""
    return zoo.pretend_trained(built(factory, seed, eval=False), seed)


@dataclass(frozen=True)
class _FusionCase:
    label: tuple[str, str]
    model: nn.Module
    inputs: tuple[torch.Tensor, ...]
    keep: dict[str, str]  # BN node that must stay -> why: "relu", "shared", "train", "train_in_eval"
    optional: frozenset[str] = frozenset()  # BN nodes that may be folded or kept (a module called twice)
    note: tuple[str, str] | None = None  # what this model has that the others lack: said when the pass crashes


def _fusion_cases() -> list[_FusionCase]:
    gen = torch.Generator().manual_seed(41)

    def image(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    cases = []
    for bias, seed in ((False, 1), (True, 2)):
        cases.append(_FusionCase((f"a conv/BN stack with Conv2d(bias={bias}), eval mode",
                                  f"一组 conv/BN，Conv2d(bias={bias})，eval 模式"),
                                 _trained(lambda: _Stack(bias), seed).eval(), (image(2, 3, 9, 9),), {"post_bn": "relu"}))
    shared, _ = zoo.example("shared_conv", seed=3)
    cases.append(_FusionCase(("zoo.SharedConv (its conv output feeds bn and add), eval mode",
                              "zoo.SharedConv（卷积的输出同时送入 bn 和 add），eval 模式"),
                             zoo.pretend_trained(shared, 3), (image(2, 4, 5, 5),), {"bn": "shared"}))
    cases.append(_FusionCase(("the conv/BN stack with Conv2d(bias=True) in training mode (model.train())",
                              "同一组 conv/BN，Conv2d(bias=True)，训练模式（model.train()）"),
                             _trained(lambda: _Stack(True), 5).train(), (image(4, 3, 9, 9),),
                             {"stem_1": "train", "bn": "train", "post_bn": "train"}))
    mixed = _trained(lambda: _Stack(False), 6).eval()
    mixed.stem[1].train()
    cases.append(_FusionCase(("the conv/BN stack in eval mode except stem[1], a BN left in training mode",
                              "同一组 conv/BN，除 stem[1] 外都是 eval 模式，stem[1] 这个 BN 仍处于训练模式"),
                             mixed, (image(3, 3, 9, 9),), {"stem_1": "train_in_eval", "post_bn": "relu"}))
    cases.append(_FusionCase(("float64: a top-level conv (a Conv2d with dilation=2) → bn, and a nested block.conv "
                              "(a ConvTranspose2d) → block.bn, eval mode",
                              "float64：顶层 conv（dilation=2 的 Conv2d）→ bn，以及嵌套的 block.conv（ConvTranspose2d）"
                              "→ block.bn，eval 模式"),
                             _trained(_Clash, 7).double().eval(), (image(2, 3, 7, 7).double(),),
                             {"block_bn": "transpose"}))
    cases.append(_FusionCase(("one conv module called at two places, bn(conv(x)) + relu(conv(x)), eval mode",
                              "同一个卷积模块在两处被调用：bn(conv(x)) + relu(conv(x))，eval 模式"),
                             _trained(_ConvCalledTwice, 8).eval(), (image(2, 3, 6, 6),), {},
                             optional=frozenset({"bn"})))
    cases.append(_FusionCase(("y = pad_bn(pad(x)) with a Conv2d of padding_mode='reflect', then one BN module called "
                              "at two places, bn(conv(y)) + bn(relu(y)), eval mode",
                              "y = pad_bn(pad(x))，其中 Conv2d 的 padding_mode='reflect'；然后同一个 BN 模块在两处被调用："
                              "bn(conv(y)) + bn(relu(y))，eval 模式"),
                             _trained(_BNCalledTwice, 9).eval(), (image(2, 3, 6, 6),), {"bn_1": "relu"},
                             optional=frozenset({"bn"})))
    trains = _trained(lambda: _Stack(True), 10).train()
    trains.stem[1].eval()
    trains.bn.eval()
    cases.append(_FusionCase(("the conv/BN stack with Conv2d(bias=True) in training mode (model.train()) except the "
                              "two BNs after convs, stem[1] and bn, switched to eval mode (their convs stay in training "
                              "mode)",
                              "同一组 conv/BN，Conv2d(bias=True)，训练模式（model.train()），只有卷积后面的两个 BN（stem[1] "
                              "和 bn）切换到了 eval 模式（它们前面的卷积仍处于训练模式）"),
                             trains, (image(3, 3, 9, 9),), {"post_bn": "relu"},
                             note=("Here the BNs stem[1] and bn are in eval mode while the convs before them are in "
                                   "training mode: a conv computes the same in either mode, so these pairs are still "
                                   "folded, and each fused conv keeps its conv's mode (training). A helper that accepts "
                                   "only eval-mode modules needs a conv in eval mode; the mode you give back must be "
                                   "the conv's own.",
                                   "这里 stem[1] 和 bn 这两个 BN 处于 eval 模式，而它们前面的卷积处于训练模式：卷积在两种模式下"
                                   "计算相同，所以这两对照样要折叠，融合后的卷积保持原卷积的模式（训练模式）。只接受 eval 模式"
                                   "模块的折叠函数需要一个 eval 模式的卷积；最后交还的模式必须是原卷积自己的模式。")))
    cases.append(_FusionCase(("conv → BatchNorm2d(4, affine=False) → relu, eval mode",
                              "conv → BatchNorm2d(4, affine=False) → relu，eval 模式"),
                             _stats(built(lambda: _Pair(affine=False), 11), 11), (image(2, 3, 7, 7),), {},
                             note=("This BN was built with affine=False: bn.weight and bn.bias are None, so γ = 1 and "
                                   "β = 0 in the formulas, and it is still folded.",
                                   "这个 BN 是用 affine=False 创建的：bn.weight 和 bn.bias 都是 None，所以公式里 γ = 1、"
                                   "β = 0，它照样要折叠。")))
    cases.append(_FusionCase(("conv → BN → relu with the BN's input passed by keyword, self.bn(input=self.conv(x)), "
                              "eval mode",
                              "conv → BN → relu，BN 的输入按关键字传入：self.bn(input=self.conv(x))，eval 模式"),
                             _stats(built(_KeywordPair, 12), 12), (image(2, 3, 7, 7),), {},
                             note=("This BN receives its input by keyword: the conv node is in the BN node's kwargs "
                                   "(under 'input'), and its args are empty.",
                                   "这个 BN 的输入是按关键字传入的：卷积节点在 BN 节点的 kwargs 里（键为 'input'），"
                                   "它的 args 是空的。")))
    cases.append(_FusionCase(("conv → BatchNorm2d(4, track_running_stats=False) → relu, eval mode",
                              "conv → BatchNorm2d(4, track_running_stats=False) → relu，eval 模式"),
                             _stats(built(lambda: _Pair(track_running_stats=False), 13), 13), (image(2, 3, 7, 7),),
                             {"bn": "batch_stats"},
                             note=("This BN was built with track_running_stats=False: it has no running statistics "
                                   "(bn.running_var is None) and normalises with each batch's mean and variance even "
                                   "in eval mode, so it cannot be folded: leave it unfused.",
                                   "这个 BN 是用 track_running_stats=False 创建的：它没有 running 统计量（bn.running_var "
                                   "is None），即使在 eval 模式下也用每个 batch 自己的均值和方差归一化，所以不能折叠："
                                   "保持不融合。")))
    resnet, _ = zoo.example("resnet18", seed=4)
    cases.append(_FusionCase(("torchvision resnet18, eval mode", "torchvision resnet18，eval 模式"),
                             zoo.pretend_trained(resnet, 4),
                             (image(1, 3, 32, 32),), {}))
    return cases


_MUST_STAY = {
    "relu": ("BN node {name!r} has no conv right before it (its input is a ReLU), so it must stay.",
             "BN 节点 {name!r} 前面不是卷积（它的输入是 ReLU），必须保留。"),
    "shared": ("you fused a conv whose output has another user: SharedConv computes bn(y) + y with "
               "y = conv(x), so after folding, `add` reads BN's output too. Fuse only when the conv's "
               "output has exactly one user, the BN (lecture 04, section 6).",
               "你融合了一个输出还有其他使用者的卷积：SharedConv 计算的是 bn(y) + y，其中 y = conv(x)；折叠之后 "
               "`add` 读到的也是 BN 的输出。只有当卷积的输出恰好只有 BN 这一个使用者时才能融合（第 04 讲第 6 节）。"),
    "transpose": ("BN node {name!r} follows a ConvTranspose2d and was folded into it. The formulas fold BN into "
                  "an nn.Conv2d, whose weight has the output channels first; a transposed conv keeps them second, "
                  "so scaling its weight per output channel scales the wrong axis. Fold only when the producer is "
                  "an nn.Conv2d, as the exercise says.",
                  "BN 节点 {name!r} 前面是 ConvTranspose2d，却被折叠进去了。这些公式是把 BN 折叠进 nn.Conv2d 的，"
                  "它的权重第一维是输出通道；转置卷积的输出通道在第二维，按输出通道缩放它的权重就缩放错了轴。"
                  "请像练习要求的那样，只在生产者是 nn.Conv2d 时折叠。"),
    "train": ("BN node {name!r} is in training mode and was folded. In training mode BatchNorm normalises "
              "with the statistics of each batch, not its running statistics, so it is not a fixed "
              "per-channel map and folding it changes the model: leave a training-mode BN as it is "
              "(lecture 04, section 6).",
              "BN 节点 {name!r} 处于训练模式，却被折叠了。训练模式下 BatchNorm 用每个 batch 自己的统计量归一化，"
              "而不是 running 统计量，所以它不是固定的逐通道仿射变换，折叠会改变模型：训练模式的 BN 请保持原样"
              "（第 04 讲第 6 节）。"),
    "batch_stats": ("BN node {name!r} was built with track_running_stats=False and was folded. Such a BN has no "
                    "running statistics and normalises with each batch's mean and variance even in eval mode, so it "
                    "is not a fixed per-channel map: leave it unfused.",
                    "BN 节点 {name!r} 是用 track_running_stats=False 创建的，却被折叠了。这种 BN 没有 running 统计量，"
                    "即使在 eval 模式下也用每个 batch 自己的均值和方差归一化，所以不是固定的逐通道仿射变换：请保持不融合。"),
    "train_in_eval": ("BN node {name!r} is in training mode although the model around it is in eval mode, "
                      "and it was folded: decide by each BatchNorm's own mode, not by the mode of the "
                      "GraphModule (modules can be switched one by one).",
                      "BN 节点 {name!r} 处于训练模式（尽管外层模型处于 eval 模式），却被折叠了：请按每个 BatchNorm "
                      "自己的模式判断，而不是按 GraphModule 的模式（模块可以逐个切换模式）。"),
}


def _namesake(gm: nn.Module, target: str) -> str | None:
    """Another module whose dotted path ends with the same last part as ``target``, of another type."""
    mine = gm.get_submodule(target)
    last = target.rsplit(".", 1)[-1]
    return next((name for name, m in gm.named_modules() if name and name != target
                 and name.rsplit(".", 1)[-1] == last and type(m) is not type(mine)), None)


def _last_part_wrong(en: str, zh: str, name: str, other: str) -> tuple[str, str]:
    return (f"{en} This model has {name!r} and {other!r}, two modules of different types whose paths end in the "
            f"same name: looking a target up by the last part of its path finds the wrong one. Look modules up by "
            f"the whole dotted target (dict(gm.named_modules()) or gm.get_submodule).",
            f"{zh}这个模型里有 {name!r} 和 {other!r} 两个类型不同、路径最后一段同名的模块：按路径最后一段查找 target "
            f"会找错模块。请按完整的带点 target 查找模块（dict(gm.named_modules()) 或 gm.get_submodule）。")


_CONV_SETTINGS = ("stride", "padding", "dilation", "groups", "padding_mode")


def _lost_setting(before: nn.Module, after: nn.Module) -> str | None:
    """A conv setting (or the dtype) the fused conv no longer has: it was built afresh, not copied."""
    for name, conv in before.named_modules():
        if not isinstance(conv, nn.Conv2d):
            continue
        try:
            new = after.get_submodule(name)
        except AttributeError:
            continue
        if not isinstance(new, nn.Conv2d):
            continue
        for attr in _CONV_SETTINGS:
            if getattr(new, attr, None) != getattr(conv, attr):
                return f"{name}.{attr}: {getattr(conv, attr)!r} → {getattr(new, attr, None)!r}"
        if new.weight.dtype != conv.weight.dtype:
            return f"{name}.weight.dtype: {conv.weight.dtype} → {new.weight.dtype}"
    return None


def _retyped(before: nn.Module, after: nn.Module) -> tuple[str, str, str] | None:
    """A leaf module whose path is in both but whose type changed (a fold writes a Conv2d over a Conv2d only)."""
    now = dict(after.named_modules())
    for name, m in before.named_modules():
        if name and name in now and not any(True for _ in m.children()) and type(now[name]) is not type(m):
            return name, type(m).__name__, type(now[name]).__name__
    return None


def _calls(gm: fx.GraphModule) -> dict[str, list[str]]:
    """Module target -> the call_module nodes that call it."""
    calls: dict[str, list[str]] = {}
    for n in gm.graph.nodes:
        if n.op == "call_module":
            calls.setdefault(str(n.target), []).append(n.name)
    return calls


def _deleted_shared(gm: fx.GraphModule, node: str, target: str, label: Bilingual, got: Bilingual) -> Wrong:
    if len(_calls(gm).get(target, [])) < 2:
        return Wrong(f"node {node!r} still calls {target!r}, but your pass deleted that module: delete a module only "
                     "after no node calls it any more.",
                     f"节点 {node!r} 仍在调用 {target!r}，但你的 pass 把这个模块删掉了：只有在没有任何节点再调用某个模块"
                     "之后，才能删除它。",
                     tried=label, expected=(f"module {target!r} kept for node {node!r}", f"为节点 {node!r} 保留模块 {target!r}"),
                     got=got)
    return Wrong(f"node {node!r} still calls {target!r}, but your pass deleted that module. The same module is called "
                 "at more than one place in the graph (it is shared): folding one of its calls must neither delete nor "
                 "change a module that another node still calls. Fold only when the conv module and the BN module "
                 "are each called by a single node.",
                 f"节点 {node!r} 仍在调用 {target!r}，但你的 pass 把这个模块删掉了。同一个模块在计算图中被多处调用（它是"
                 "共享的）：折叠其中一处调用时，既不能删除、也不能改动其他节点仍在调用的模块。只有当卷积模块和 BN 模块"
                 "都只被一个节点调用时才折叠。",
                 tried=label, expected=(f"module {target!r} kept for node {node!r}", f"为节点 {node!r} 保留模块 {target!r}"),
                 got=got)


def _require_called_modules_exist(gm: fx.GraphModule, result: fx.GraphModule, label: Bilingual) -> None:
    for n in result.graph.nodes:
        if n.op != "call_module":
            continue
        try:
            result.get_submodule(str(n.target))
        except AttributeError:
            raise _deleted_shared(gm, n.name, str(n.target), label,
                                  (f"no module {n.target!r}", f"没有模块 {n.target!r}")) from None


def _changed_shared_conv(gm: fx.GraphModule, result: fx.GraphModule) -> tuple[str, list[str]] | None:
    """A conv module called at several places in ``gm`` whose weights the pass changed (BN folded into it)."""
    for target, nodes in _calls(gm).items():
        conv = gm.get_submodule(target)
        if len(nodes) < 2 or not isinstance(conv, nn.Conv2d):
            continue
        try:
            new = result.get_submodule(target)
        except AttributeError:
            continue
        same = (isinstance(new, nn.Conv2d) and new.weight.shape == conv.weight.shape
                and torch.equal(new.weight.detach(), conv.weight.detach())
                and (new.bias is None) == (conv.bias is None)
                and (conv.bias is None or torch.equal(new.bias.detach(), conv.bias.detach())))
        if not same:
            return target, nodes
    return None


def _all_modes(module: nn.Module) -> dict[str, bool]:
    return {name or "(the GraphModule itself)": m.training for name, m in module.named_modules()}


def _require_modes_kept(before: dict[str, bool], module: nn.Module, label: Bilingual, fn: str) -> None:
    """The caller's module keeps every train/eval flag (``model.eval()`` on it is a change the caller sees)."""
    changed = [name for name, mode in _all_modes(module).items() if before.get(name, mode) != mode]
    if changed:
        raise Wrong(f"{fn} switched the train/eval mode of the GraphModule it was given ({changed[0]!r}): calling "
                    ".eval() or .train() on it changes the caller's model, and a BatchNorm of theirs then behaves "
                    "differently. Leave the module you were handed as you found it, its modes included.",
                    f"{fn} 切换了传入的 GraphModule 的 train/eval 模式（{changed[0]!r}）：对它调用 .eval() 或 .train() "
                    "会改动调用者的模型，其中的 BatchNorm 随之表现不同。请让传入的模块保持原样，模式也不例外。",
                    tried=label, expected=("the caller's modes unchanged", "调用者的模块模式保持不变"),
                    got=(f"{changed[0]!r} switched", f"{changed[0]!r} 的模式被切换了"))


def _modes(gm: nn.Module) -> dict[str, bool]:
    """train/eval mode of every leaf module (the containers FX creates for dotted paths start in
    training mode whatever the model's mode, and nothing reads their flag)."""
    return {name: m.training for name, m in gm.named_modules() if name and not any(True for _ in m.children())}


@task("lab04.1", "fold BatchNorm into the conv before it", "把 BatchNorm 折叠进前面的卷积", hints=[
    ("Which BatchNorms can become part of the conv before them? Look at each BN's input node, how many "
     "users that node has, and whether the BN normalises with running statistics or with the batch's.",
     "哪些 BatchNorm 可以并入它前面的卷积？看每个 BN 的输入节点、这个节点有几个使用者，以及这个 BN 是用 running "
     "统计量还是用当前 batch 的统计量来归一化。"),
    ("Lecture 04, section 6 (A real pass: folding batch norm into convolution): the maths, the one-user "
     "rule, and why a BN in training mode cannot be folded.",
     "第 04 讲第 6 节（一个真正的 pass：把 batch norm 折叠进卷积）：公式、只有一个使用者的规则，以及为什么训练模式的 "
     "BN 不能折叠。"),
    ("Work on a copy; replace the conv by its dotted path, move the BN's users to the conv node, erase the "
     "BN node; then check the graph and regenerate the code (lecture 04, section 1, Graph surgery).",
     "在副本上操作；按带点的路径替换卷积，把 BN 的使用者改接到卷积节点，删除 BN 节点；然后检查计算图并重新生成代码"
     "（第 04 讲第 1 节，图手术）。"),
])
def _fuse_conv_bn(answer: Any) -> None:
    need_callable(answer, "fuse_conv_bn")
    passed_bias_free = False
    for case in _fusion_cases():
        label, model = case.label, case.model
        gm = fx.symbolic_trace(model)
        with torch.no_grad():
            want = copy.deepcopy(model)(*case.inputs)  # a copy: a training-mode BN updates its statistics
        before, modes, caller_modes = Snapshot.of(gm), _modes(gm), _all_modes(gm)
        try:
            result = answer(gm)
        except RuntimeError as exc:  # lint() on a graph whose node calls a module the pass deleted
            dangling = re.search(r"Node (\S+) target (\S+) references nonexistent attribute", str(exc))
            if dangling is None:
                raise
            raise _deleted_shared(gm, dangling.group(1), dangling.group(2), label, one_line_error(exc)) from None
        except AssertionError as exc:
            if "eval" not in str(exc):
                raise
            if case.note is not None:
                raise Wrong(f"your pass raised AssertionError on this model. {case.note[0]}",
                            f"你的 pass 在这个模型上抛出了 AssertionError。{case.note[1]}",
                            tried=label, got=one_line_error(exc)) from None
            raise Wrong("the folding helper you call accepts only modules in eval mode, and this model has "
                        "a BatchNorm in training mode: skip such a BN instead of folding it.",
                        "你调用的折叠函数只接受 eval 模式的模块，而这个模型里有处于训练模式的 BatchNorm："
                        "遇到这种 BN 请跳过，不要折叠。", tried=label, got=one_line_error(exc)) from None
        except (TypeError, AttributeError, IndexError, KeyError) as exc:
            if case.note is None:
                raise
            raise Wrong(f"your pass raised {type(exc).__name__} on this model. {case.note[0]}",
                        f"你的 pass 在这个模型上抛出了 {type(exc).__name__}。{case.note[1]}",
                        tried=label, got=one_line_error(exc)) from None
        if not isinstance(result, fx.GraphModule):
            raise Wrong("return the fused fx.GraphModule.", "请返回融合后的 fx.GraphModule。",
                        tried=label, got=describe(result))
        _require_modes_kept(caller_modes, gm, label, "fuse_conv_bn")
        _require_untouched(before, gm, label)
        _require_no_dotted_attribute(result, label)
        _require_called_modules_exist(gm, result, label)
        _require_recompiled(result, label)
        changed = sorted(name for name, mode in _modes(result).items() if modes.get(name, mode) != mode)
        if changed:
            raise Wrong(f"your pass switched the train/eval mode of {changed[0]!r}; a pass keeps every "
                        "module's mode as it found it.",
                        f"你的 pass 切换了 {changed[0]!r} 的 train/eval 模式；pass 应保持每个模块原来的模式。",
                        tried=label, expected=("modes unchanged", "各模块的模式保持不变"),
                        got=(f"{changed[0]!r} switched", f"{changed[0]!r} 的模式被切换了"))
        swapped = _retyped(gm, result)
        if swapped is not None:
            path, was, now = swapped
            other = _namesake(gm, path)
            en, zh = (f"{path!r} was a {was} and is now a {now}: your pass put a module in the wrong place.",
                      f"{path!r} 原来是 {was}，现在却是 {now}：你的 pass 把模块放错了位置。")
            if other is not None:
                en, zh = _last_part_wrong(en, zh, path, other)
            raise Wrong(en, zh, tried=label, expected=(f"{path!r}: a {was}", f"{path!r}：{was}"),
                        got=(f"{path!r}: a {now}", f"{path!r}：{now}"))
        remaining = _bn_nodes(result)
        gone = [name for name in case.keep if name not in remaining]
        if gone:
            en, zh = _MUST_STAY[case.keep[gone[0]]]
            if case.keep[gone[0]] == "transpose":
                producer = next(n.args[0] for n in gm.graph.nodes if n.name == gone[0]).target
                try:
                    kept_type = isinstance(result.get_submodule(producer), nn.ConvTranspose2d)
                except AttributeError:
                    kept_type = False
                if not kept_type:  # a Conv2d now sits where the ConvTranspose2d was: found by its last name part
                    en, zh = _last_part_wrong(
                        f"BN node {gone[0]!r} was folded and {producer!r} is no longer the ConvTranspose2d it was.",
                        f"BN 节点 {gone[0]!r} 被折叠了，而 {producer!r} 已不再是原来的 ConvTranspose2d。",
                        producer, _namesake(gm, producer) or "?")
                    en, zh = en.replace("{", "{{").replace("}", "}}"), zh.replace("{", "{{").replace("}", "}}")
            got = _run(result, case.inputs, label)
            diff = differs(got, want, rtol=RTOL, atol=ATOL)
            diff_en, diff_zh = (diff, diff) if diff else ("same output", "输出相同")
            raise Wrong(en.format(name=gone[0]), zh.format(name=gone[0]), tried=label,
                        expected=(f"BatchNorm nodes {sorted(case.keep)} kept", f"保留 BatchNorm 节点 {sorted(case.keep)}"),
                        got=(f"BatchNorm nodes {remaining}; {diff_en}", f"BatchNorm 节点 {remaining}；{diff_zh}"))
        extra = [name for name in remaining if name not in case.keep and name not in case.optional]
        producer = next(((n.all_input_nodes or [None])[0] for n in gm.graph.nodes if extra and n.name == extra[0]), None)
        other = _namesake(gm, str(producer.target)) if isinstance(producer, fx.Node) else None
        if extra and other is not None:
            en, zh = _last_part_wrong(
                f"BN node {extra[0]!r} is in eval mode and follows the Conv2d {producer.target!r}, which feeds only it, "
                "but it was not folded.",
                f"BN 节点 {extra[0]!r} 处于 eval 模式，前面是只连着它的 Conv2d {producer.target!r}，却没有被折叠。",
                str(producer.target), other)
            raise Wrong(en, zh, tried=label,
                        expected=(f"BatchNorm nodes {sorted(case.keep)}", f"BatchNorm 节点 {sorted(case.keep)}"),
                        got=repr(remaining))
        if extra:
            note_en, note_zh = (" " + case.note[0], case.note[1]) if case.note else ("", "")
            raise Wrong(f"BN node {extra[0]!r} is in eval mode and follows a conv that feeds only it, so it "
                        "can be folded; look for call_module BatchNorm2d nodes whose input is a call_module "
                        f"Conv2d node (targets can be dotted, e.g. 'stem.1').{note_en}",
                        f"BN 节点 {extra[0]!r} 处于 eval 模式，前面的卷积只连着它，可以折叠；请查找输入是 call_module "
                        f"Conv2d 节点的 call_module BatchNorm2d 节点（target 可能带点，例如 'stem.1'）。{note_zh}",
                        tried=label, expected=(f"BatchNorm nodes {sorted(case.keep)}", f"BatchNorm 节点 {sorted(case.keep)}"),
                        got=repr(remaining))
        lost = _lost_setting(gm, result)
        if lost is not None:
            raise Wrong("the fused conv does not keep the original conv's settings: it was built afresh and lost one "
                        "(stride, padding, dilation, groups, padding_mode and the dtype all stay). Start the fused conv "
                        "from a copy of the conv and change only its weight and bias.",
                        "融合后的卷积没有保留原卷积的设置：它是重新创建的，丢了其中一项（stride、padding、dilation、groups、"
                        "padding_mode 和 dtype 都要保持）。请从原卷积的副本出发，只修改权重和偏置。",
                        tried=label, expected=("the conv's own settings", "原卷积自己的设置"), got=lost)
        got = _run(result, case.inputs, label)
        diff = differs(got, want, rtol=RTOL, atol=ATOL)
        if diff is not None:
            shared = _changed_shared_conv(gm, result)
            if shared is not None:
                target, nodes = shared
                raise Wrong(f"the conv module {target!r} is called at {len(nodes)} places (nodes {nodes}) and a BN was "
                            "folded into that module: every call of it now computes conv + BN, not only the call before "
                            "the BN. A module called at more than one place is shared; fold only when the conv module "
                            "and the BN module are each called by a single node.",
                            f"卷积模块 {target!r} 在 {len(nodes)} 处被调用（节点 {nodes}），而 BN 被折叠进了这个模块：它的"
                            "每一处调用现在都计算卷积 + BN，而不只是 BN 前面那一处。被多处调用的模块是共享的；只有当卷积"
                            "模块和 BN 模块都只被一个节点调用时才折叠。",
                            tried=label, expected=("the original model's output", "原模型的输出"), got=diff)
            if "bias=True" in label[0] and passed_bias_free:
                hint = ("right without a conv bias, wrong with one: the conv's own bias goes through BN too "
                        "(the b in the exercise's formula for the new bias).",
                        "没有卷积偏置时正确，有偏置时出错：卷积自身的偏置也要经过 BN（即练习中新偏置公式里的 b）。")
            else:
                hint = ("the fused model's output differs from the original: compare your new weight and bias "
                        "with the exercise's formulas (one scale per output channel).",
                        "融合后模型的输出与原模型不同：请把你算出的新权重和新偏置与练习中的公式对照（每个输出通道一个缩放系数）。")
            raise Wrong(*hint, tried=label, expected=("the original model's output", "原模型的输出"), got=diff)
        if "bias=False" in label[0]:
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


def _three_and_a_decoy(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = torch.sigmoid(x) * x
    b = torch.sigmoid(y) * a  # not a SiLU: sigmoid of y times a
    s = b + y
    c = s * torch.sigmoid(s)
    return torch.sigmoid(c) * c + a * torch.sigmoid(a)


def _some_already_silu(x: torch.Tensor) -> torch.Tensor:
    """Two F.silu calls already there; three SiLUs by hand, two of them as x * sigmoid(x) and one the other way."""
    a = F.silu(x)  # already F.silu: not a replacement
    b = a * torch.sigmoid(a)
    c = torch.sigmoid(b) * b
    d = c * torch.sigmoid(c)
    return F.silu(d) - a


def _silu_cases() -> list[tuple[tuple[str, str], fx.GraphModule, Callable[..., Any], tuple[torch.Tensor, ...], int]]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(5)
        mlp = _GatedMLP().eval()
    gen = torch.Generator().manual_seed(42)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * 3

    return [
        (("a function with x*sigmoid(x), sigmoid(a)*a and a*sigmoid(b)",
          "含 x*sigmoid(x)、sigmoid(a)*a 和 a*sigmoid(b) 的函数"), fx.symbolic_trace(_silu_twice),
         _silu_twice, (randn(3, 5),), 2),
        (("an MLP with sigmoid(h)*h and y*sigmoid(y)", "含 sigmoid(h)*h 和 y*sigmoid(y) 的 MLP"),
         fx.symbolic_trace(mlp), mlp, (randn(4, 6),), 2),
        (("a function of x and y with four SiLUs in both orders and sigmoid(y)*a",
          "以 x、y 为输入的函数：两种顺序写出的四个 SiLU，外加 sigmoid(y)*a"),
         fx.symbolic_trace(_three_and_a_decoy), _three_and_a_decoy, (randn(2, 3), randn(2, 3)), 4),
        (("a function that already calls F.silu twice and writes three more SiLUs out by hand, two of them as "
          "x*sigmoid(x)", "已经调用了两次 F.silu、另外还手写了三个 SiLU（其中两个写成 x*sigmoid(x)）的函数"),
         fx.symbolic_trace(_some_already_silu), _some_already_silu, (randn(3, 4),), 3),
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


def _decoys(gm: fx.GraphModule) -> int:
    """How many products a * sigmoid(b) (either order) with b not a the graph holds: not SiLUs."""
    count = 0
    for n in gm.graph.nodes:
        if n.op != "call_function" or len(n.args) != 2:
            continue
        a, b = n.args
        for sig, other in ((b, a), (a, b)):
            if (isinstance(sig, fx.Node) and sig.op == "call_function" and sig.target is torch.sigmoid
                    and sig.args and sig.args[0] is not other):
                count += 1
                break
    return count


def _only_silu(x: torch.Tensor) -> torch.Tensor:
    return F.silu(x) + 1


def _mul_spelled(x: torch.Tensor) -> torch.Tensor:
    return torch.mul(x, torch.sigmoid(x)) + 1


def _mul_spelled_swapped(x: torch.Tensor) -> torch.Tensor:
    return torch.mul(torch.sigmoid(x), x) + 1


def _rewrites(answer: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Whether ``answer`` puts an F.silu call into the traced ``fn`` (its pattern is spelled the way ``fn`` is)."""
    gm = fx.symbolic_trace(fn)
    try:
        answer(gm)
    except Exception:  # an answer that cannot handle this graph tells nothing here
        return False
    return any(n.target is F.silu for n in gm.graph.nodes)


_TORCH_MUL = ("{shown} was left alone, and your pattern for it is spelled with torch.mul: on a graph that computes "
              "torch.mul({args}) your rewrite does put in F.silu. The model multiplies with `*`, which the graph "
              "records as operator.mul, another target than torch.mul, so that pattern never matches it: write the "
              "pattern's product with `*`.",
              "{shown} 没有被替换，而你为它写的模式用的是 torch.mul：在计算 torch.mul({args}) 的计算图上，你的改写确实"
              "换上了 F.silu。模型用 `*` 做乘法，计算图把它记录为 operator.mul，与 torch.mul 是不同的 target，所以那个"
              "模式永远匹配不到它：请在模式里用 `*` 写乘法。")


def _pattern_and_replacement_swapped(answer: Any) -> bool:
    """Whether ``answer`` rewrites an F.silu call into something else (it searched for the replacement)."""
    gm = fx.symbolic_trace(_only_silu)
    try:
        answer(gm)
    except Exception:  # an answer that cannot handle this graph tells nothing here
        return False
    return not any(n.target is F.silu for n in gm.graph.nodes)


@task("lab04.2", "rewrite x * sigmoid(x) into silu with replace_pattern",
      "用 replace_pattern 把 x * sigmoid(x) 改写为 silu", hints=[
          ("A pattern matches only the same ops, written the same way, in the same order. How many ways of "
           "writing SiLU does the exercise name, and what does each call of the rewriter return?",
           "模式只匹配以同样方式、同样顺序写出的同样算子。练习里提到了几种 SiLU 的写法？改写函数每次调用返回什么？"),
          ("Lecture 04, section 5 (`replace_pattern`: rewrite by example): patterns are traced functions, "
           "the multiplication the model writes with `*` is operator.mul, and a product with its operands "
           "swapped is another pattern.",
           "第 04 讲第 5 节（`replace_pattern`：照着例子改写）：模式是被追踪的函数；模型里用 `*` 写的乘法是 "
           "operator.mul；两个操作数交换后的乘积就是另一个模式。"),
      ])
def _silu_rewrite(answer: Any) -> None:
    need_callable(answer, "silu_rewrite")
    for label, gm, original, inputs, want_count in _silu_cases():
        with torch.no_grad():
            want = original(*inputs)
        existing = sum(n.target is F.silu for n in gm.graph.nodes)  # F.silu calls that were there already
        decoys, code_before = _decoys(gm), gm.graph.python_code(root_module="self").src
        count = answer(gm)
        replaced = (f"{want_count} replaced", f"替换 {want_count} 处")
        calls = (f"{want_count} calls to F.silu", f"调用 F.silu {want_count} 次")
        if isinstance(count, (list, tuple)):
            raise Wrong("return the number of replacements (an int), not the matches themselves: each "
                        "call of the rewriter returns a list with one entry per replacement.",
                        "请返回替换的次数（一个 int），而不是匹配结果本身：改写函数每次调用都返回一个列表，每次替换对应一项。",
                        tried=label, expected=str(want_count), got=type(count).__name__)
        plain, swapped = _mul_orders(gm)
        total = sum(n.target is F.silu for n in gm.graph.nodes)
        silus = total - existing
        if _decoys(gm) < decoys:
            raise Wrong("a product of two different values, a * sigmoid(b) with b not a, was rewritten: it is not a "
                        "SiLU and must stay. A pattern with two separate inputs matches such products too; a SiLU "
                        "pattern has one input, used on both sides of the product.",
                        "两个不同值的乘积 a * sigmoid(b)（b 不是 a）被改写了：它不是 SiLU，必须保留。有两个独立输入的"
                        "模式也会匹配这样的乘积；SiLU 的模式只有一个输入，乘积两边用的都是它。",
                        tried=label, expected=(f"{decoys} such product(s) kept", f"保留 {decoys} 个这样的乘积"),
                        got=(f"{_decoys(gm)} left", f"只剩 {_decoys(gm)} 个"))
        if swapped and not plain and silus and _rewrites(answer, _mul_spelled_swapped):
            en, zh = (t.format(shown="sigmoid(x) * x", args="torch.sigmoid(x), x") for t in _TORCH_MUL)
            raise Wrong(en, zh, tried=label, expected=replaced, got=(f"{silus} replaced", f"替换了 {silus} 处"))
        if plain and not swapped and silus and _rewrites(answer, _mul_spelled):
            en, zh = (t.format(shown="x * sigmoid(x)", args="x, torch.sigmoid(x)") for t in _TORCH_MUL)
            raise Wrong(en, zh, tried=label, expected=replaced, got=(f"{silus} replaced", f"替换了 {silus} 处"))
        if swapped and not plain and silus:
            raise Wrong("sigmoid(x) * x was left alone: to the matcher it is a different graph from "
                        "x * sigmoid(x) (the operands of mul are swapped); call replace_pattern a "
                        "second time with that order.",
                        "sigmoid(x) * x 没有被替换：对匹配器而言，它与 x * sigmoid(x) 是两张不同的图"
                        "（mul 的两个操作数交换了）；请用这种顺序再调用一次 replace_pattern。",
                        tried=label, expected=replaced, got=(f"{silus} replaced", f"替换了 {silus} 处"))
        if plain and not swapped and silus:
            raise Wrong("x * sigmoid(x) was left alone; the operand order matters to the matcher: "
                        "rewrite both orders the exercise names.",
                        "x * sigmoid(x) 没有被替换；对匹配器而言操作数顺序很重要：练习中提到的两种顺序都要改写。",
                        tried=label, expected=replaced, got=(f"{silus} replaced", f"替换了 {silus} 处"))
        if silus == 0 and plain + swapped < want_count:
            raise Wrong("the SiLUs written out by hand are gone, but the graph calls torch.nn.functional.silu "
                        "nowhere: the replacement must compute silu of the matched value.",
                        "手写的 SiLU 不见了，但计算图里没有任何 torch.nn.functional.silu 调用：替换函数必须对匹配到的值计算 silu。",
                        tried=label, expected=calls,
                        got=(f"0 calls to F.silu, {plain + swapped} SiLU(s) still written out",
                             f"调用 F.silu 0 次，仍有 {plain + swapped} 个手写的 SiLU"))
        if (silus == 0 and isinstance(count, int) and not isinstance(count, bool) and count > 0
                and gm.graph.python_code(root_module="self").src != code_before):
            raise Wrong(f"you report {count} replacement(s) and gm was rewritten, but its graph calls "
                        "torch.nn.functional.silu nowhere: the replacement writes the product out again instead of "
                        "calling F.silu. The replacement function must return F.silu of its input.",
                        f"你报告了 {count} 次替换，gm 也确实被改写了，但它的计算图里没有任何 "
                        "torch.nn.functional.silu 调用：替换函数又把乘积写了一遍，而没有调用 F.silu。替换函数必须返回"
                        "对其输入调用 F.silu 的结果。",
                        tried=label, expected=calls, got=("0 calls to F.silu", "调用 F.silu 0 次"))
        if silus == 0 and isinstance(count, int) and not isinstance(count, bool) and count > 0:
            raise Wrong(f"you report {count} replacement(s), but gm itself still holds every SiLU written out by "
                        "hand: the rewrite has to edit the GraphModule it was given, in place, not a copy.",
                        f"你报告了 {count} 次替换，但 gm 本身仍保留着所有手写的 SiLU：改写必须原地修改传入的 "
                        "GraphModule，而不是它的副本。",
                        tried=label, expected=(f"{want_count} calls to F.silu in gm", f"gm 中调用 F.silu {want_count} 次"),
                        got=("0 calls to F.silu in gm", "gm 中调用 F.silu 0 次"))
        if silus == 0 and _pattern_and_replacement_swapped(answer):
            raise Wrong("nothing was rewritten, and on a graph that already calls F.silu your rewrite turns that call "
                        "into a SiLU written out by hand: the pattern and the replacement are the other way round. "
                        "The rewriter takes the GraphModule, then what to find, then what to put in its place.",
                        "什么都没有被改写；而在一张已经调用 F.silu 的计算图上，你的改写反而把这个调用换成了手写的 SiLU："
                        "模式和替换写反了。改写函数的参数依次是 GraphModule、要查找的模式、用来替换的内容。",
                        tried=label, expected=calls, got=("0 calls to F.silu", "调用 F.silu 0 次"))
        if silus == 0:
            raise Wrong("nothing was rewritten: a pattern matches only the same ops written the same way. The "
                        "graph calls torch.sigmoid as a function and multiplies with `*` (operator.mul); a pattern "
                        "that spells either one differently (a tensor method, another multiplication function) "
                        "matches nothing.",
                        "什么都没有被改写：模式只能匹配以同样方式写出的同样算子。计算图以函数形式调用 torch.sigmoid，"
                        "并用 `*`（operator.mul）做乘法；只要模式对其中任何一个换了写法（张量方法、别的乘法函数），"
                        "就什么也匹配不到。",
                        tried=label, expected=calls, got=("0 calls to F.silu", "调用 F.silu 0 次"))
        if silus != want_count or plain or swapped:
            raise Wrong("the graph should call torch.nn.functional.silu once per SiLU written out by "
                        "hand, and only there (a * sigmoid(b) with a different b is not a SiLU).",
                        "计算图中每个手写的 SiLU 都应换成一次 torch.nn.functional.silu 调用，而且只换这些"
                        "（a * sigmoid(b) 中 b 不同时不是 SiLU）。",
                        tried=label, expected=calls,
                        got=(f"{silus} calls to F.silu, {plain + swapped} SiLU(s) still written out",
                             f"调用 F.silu {silus} 次，仍有 {plain + swapped} 个手写的 SiLU"))
        if existing and count == total != want_count:
            raise Wrong(f"you return how many F.silu calls the graph has ({total}), but {existing} of them were there "
                        "before your rewrite: return how many replacements the rewriter reports.",
                        f"你返回的是计算图中 F.silu 调用的总数（{total}），但其中 {existing} 个在改写之前就已存在："
                        "请返回改写函数报告的替换次数。",
                        tried=label, expected=str(want_count), got=repr(count))
        if not isinstance(count, int) or count != want_count:
            raise Wrong("return how many replacements you made (an int).",
                        "请返回替换的次数（一个 int）。",
                        tried=label, expected=str(want_count), got=repr(count))
        _require_recompiled(gm, label)
        got = _run(gm, inputs, label)
        diff = differs(got, want, rtol=1e-5, atol=1e-6)
        in_place = any(n.target is F.silu and (n.kwargs.get("inplace") is True or n.args[1:2] == (True,))
                       for n in gm.graph.nodes)
        if diff is not None and in_place:
            raise Wrong("the rewritten graph computes something else: your replacement calls F.silu with "
                        "inplace=True, which overwrites its input with the result, and other nodes still read that "
                        "input. The replacement must leave its input unchanged.",
                        "改写后的计算图结果变了：你的替换以 inplace=True 调用 F.silu，它会用结果覆盖输入，而别的节点仍在"
                        "读取这个输入。替换不能改动它的输入。",
                        tried=label, expected=("the original output", "原来的输出"), got=diff)
        if diff is not None:
            raise Wrong("the rewritten graph computes something else: the replacement must apply SiLU to "
                        "the same value the pattern multiplied.",
                        "改写后的计算图结果变了：替换结果必须对模式中相乘的同一个值应用 SiLU。",
                        tried=label, expected=("the original output", "原来的输出"), got=diff)


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


class _Double(nn.Module):
    """Run in float64: a record converted to float32 on the way is not the node's value."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu() * 2


def _probe_cases() -> list[tuple[tuple[str, str], nn.Module, list[str], list[torch.Tensor]]]:
    branchy = built(_Branchy, 6, eval=False)  # training mode: a pass must not switch it
    resnet, _ = zoo.example("resnet18", seed=7)
    zoo.pretend_trained(resnet, 7)
    gen = torch.Generator().manual_seed(43)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen)

    return [
        (("a small model in training mode, names ['x', 'silu', 'inner_1', 'head']",
          "一个处于训练模式的小模型，names ['x', 'silu', 'inner_1', 'head']"),
         branchy, ["x", "silu", "inner_1", "head"],
         [randn(2, 5), randn(3, 5)]),
        (("torchvision resnet18, names ['layer1_0_bn1', 'add_3', 'layer4_1_relu_1', 'fc']",
          "torchvision resnet18，names ['layer1_0_bn1', 'add_3', 'layer4_1_relu_1', 'fc']"), resnet,
         ["layer1_0_bn1", "add_3", "layer4_1_relu_1", "fc"],
         [randn(1, 3, 32, 32), randn(1, 3, 32, 32)]),
        (("a float64 model, Linear(4, 4).double() then relu, names ['lin', 'relu']",
          "一个 float64 模型：Linear(4, 4).double() 再接 relu，names ['lin', 'relu']"),
         built(_Double, 8).double(), ["lin", "relu"], [randn(3, 4).double(), randn(2, 4).double()]),
    ]


def _without_probe_node(gm: fx.GraphModule, probed: fx.GraphModule, names: list[str]) -> list[str]:
    """The requested names with no new call_module node (a module gm does not hold) reading them."""
    old = {name for name, _ in gm.named_modules()}
    nodes = {n.name: n for n in probed.graph.nodes}
    return [name for name in names if nodes.get(name) is None
            or not any(u.op == "call_module" and str(u.target) not in old and nodes[name] in u.args
                       for u in nodes[name].users)]


def _bypassed(gm: fx.GraphModule, probed: fx.GraphModule, names: list[str]) -> tuple[str, str] | None:
    """(watched node, user) for a user that still reads a watched node instead of its probe."""
    old = {name for name, _ in gm.named_modules()}
    nodes = {n.name: n for n in probed.graph.nodes}
    for name in names:
        node = nodes.get(name)
        if node is None:
            continue
        user = next((u for u in node.users if not (u.op == "call_module" and str(u.target) not in old)), None)
        if user is not None:
            return name, user.name
    return None


def _reads_later(gm: fx.GraphModule) -> tuple[str, str] | None:
    """(node, input) for the first node that reads a node placed after it (or itself)."""
    seen: set[fx.Node] = set()
    for n in gm.graph.nodes:
        late = next((a for a in n.all_input_nodes if a not in seen), None)
        if late is not None:
            return n.name, late.name
        seen.add(n)
    return None


def _too_early(node: str, reads: str) -> tuple[str, str]:
    return (f"probe node {node!r} reads {reads!r} but comes before it in the graph: a node can only read nodes "
            "created before it, so create each probe right after the node it watches, not before it.",
            f"探针节点 {node!r} 读取 {reads!r}，却在计算图中排在它前面：节点只能读取在它之前创建的节点，所以每个探针"
            "要紧跟在它观察的节点之后创建，而不是之前。")


def _reads_itself(gm: fx.GraphModule) -> str | None:
    return next((n.name for n in gm.graph.nodes if n in n.all_input_nodes), None)


_SELF_LOOP = (
    "a probe node reads its own output: moving the watched node's users to the probe moved the probe "
    "itself too. Keep the probe reading the watched node (lecture 04, section 1).",
    "探针节点读取的是它自己的输出：把被观察节点的使用者改接到探针时，探针本身也被改接了。请让探针继续读取被观察的节点"
    "（第 04 讲第 1 节）。")


@task("lab04.3", "insert probes that record chosen activations", "插入探针，记录指定节点的激活值", hints=[
    ("A probe is a module of your own, called by a new call_module node placed right after the node it "
     "watches. Every user of the watched node should read the probe's output instead, except the probe "
     "itself.",
     "探针是你自己定义的模块，由一个紧跟在被观察节点之后的新 call_module 节点调用。被观察节点的所有使用者都应改为读取"
     "探针的输出——探针自己除外。"),
    ("Lecture 04, section 1 (Graph surgery: insert, rewire, erase) shows inserting a node and moving users; "
     "section 8 (torchvision's feature extractor) shows why a tensor you kept can change after you kept it.",
     "第 04 讲第 1 节（图手术：插入、改接、删除）演示了插入节点和改接使用者；第 8 节（torchvision 的特征提取器）"
     "说明了为什么你保存下来的张量在保存之后还会改变。"),
])
def _insert_probes(answer: Any) -> None:
    need_callable(answer, "insert_probes")
    for label, model, names, inputs in _probe_cases():
        gm = fx.symbolic_trace(model)
        before, caller_modes = Snapshot.of(gm), _all_modes(gm)
        try:
            returned = answer(gm, list(names))
        except RuntimeError as exc:
            if "before it has been defined" not in str(exc):
                raise
            used = re.match(r"Argument '([^']+)' of Node '([^']+)'", str(exc))
            if used and used.group(1) != used.group(2):
                raise Wrong(*_too_early(used.group(2), used.group(1)), tried=label, got=one_line_error(exc)) from None
            raise Wrong(_SELF_LOOP[0], _SELF_LOOP[1], tried=label, got=one_line_error(exc)) from None
        if not (isinstance(returned, tuple) and len(returned) == 2
                and isinstance(returned[0], fx.GraphModule) and isinstance(returned[1], dict)):
            raise Wrong("return a pair (probed GraphModule, records dict).",
                        "请返回一个二元组 (插入探针后的 GraphModule, 记录用的 dict)。",
                        tried=label, got=type(returned).__name__)
        probed, records = returned
        _require_modes_kept(caller_modes, gm, label, "insert_probes")
        _require_untouched(before, gm, label)
        early = _reads_later(probed)
        if early is not None and early[0] != early[1]:
            raise Wrong(*_too_early(*early), tried=label,
                        got=(f"{early[0]!r} before {early[1]!r}", f"{early[0]!r} 排在 {early[1]!r} 之前"))
        loop = _reads_itself(probed)
        if loop is not None:
            raise Wrong(*_SELF_LOOP, tried=label, got=(f"node {loop!r} reads its own output", f"节点 {loop!r} 读取了它自己的输出"))
        _require_recompiled(probed, label)
        taken = _retyped(gm, probed)
        if taken is not None:
            path, was, now = taken
            raise Wrong(f"the model's submodule {path!r}, a {was}, is now a {now}: a probe module was added under a name "
                        "that the model already uses (a node and a submodule often share a name), and adding a module "
                        "under a taken name replaces the one there. Give each probe a name no module has yet.",
                        f"模型的子模块 {path!r} 原来是 {was}，现在却是 {now}：探针模块是用模型已经在用的名字添加的（节点和"
                        "子模块常常同名），用已被占用的名字添加模块会替换掉原来的模块。请给每个探针起一个还没有模块用过的名字。",
                        tried=label, expected=(f"{path!r}: a {was}", f"{path!r}：{was}"),
                        got=(f"{path!r}: a {now}", f"{path!r}：{now}"))
        lacking = _without_probe_node(gm, probed, names)
        unprobed = lacking[0] if lacking else None
        inputs_of_gm = {n.name for n in gm.graph.nodes if n.op == "placeholder"}
        if lacking and len(lacking) < len(names) and set(lacking) <= inputs_of_gm:
            raise Wrong(f"the graph of the returned GraphModule has no probe after {unprobed!r}, a placeholder (an "
                        "input of the graph): a placeholder is a node like any other, and the exercise asks for a probe "
                        "after any node but the output, placeholders included.",
                        f"返回的 GraphModule 的计算图中，placeholder（计算图的输入）{unprobed!r} 之后没有探针：placeholder "
                        "和其他节点一样也是节点，练习要求在除 output 之外的任何节点之后都能插入探针，placeholder 也不例外。",
                        tried=label, expected=(f"a probe reading {unprobed!r}", f"一个读取 {unprobed!r} 的探针"),
                        got=("no probe after the placeholder", "placeholder 之后没有探针"))
        if unprobed is not None:
            raise Wrong(f"the graph of the returned GraphModule has no probe after {unprobed!r}: each probe is a new "
                        "call_module node, right after the node it watches, whose input is that node; records filled "
                        "some other way (an Interpreter, a hook, a replaced forward) are not a probe in the graph.",
                        f"返回的 GraphModule 的计算图中，{unprobed!r} 之后没有探针：每个探针都是一个新的 call_module 节点，"
                        "紧跟在它观察的节点之后，并以该节点为输入；用别的办法（Interpreter、hook、替换 forward）填写 "
                        "records 不算计算图中的探针。",
                        tried=label, expected=(f"a call_module node reading {unprobed!r}", f"一个读取 {unprobed!r} 的 call_module 节点"),
                        got=("no such node", "没有这样的节点"))
        bypassed = _bypassed(gm, probed, names)
        if bypassed is not None:
            name, user = bypassed
            raise Wrong(f"node {user!r} still reads {name!r} directly, not the probe's output: the probe is a dead end "
                        "that nothing uses (dead-code elimination would remove it, and a probe that changed its value "
                        "would change nothing). Move every user of the watched node, except the probe itself, to the "
                        "probe, as the exercise says.",
                        f"节点 {user!r} 仍然直接读取 {name!r}，而不是探针的输出：探针成了没人使用的死胡同（死代码消除会"
                        "把它删掉）。请像练习要求的那样，把被观察节点的所有使用者（探针自己除外）都改接到探针上。",
                        tried=label, expected=(f"every user of {name!r} reads its probe", f"{name!r} 的每个使用者都读取它的探针"),
                        got=(f"{user!r} reads {name!r}", f"{user!r} 读取 {name!r}"))
        history = []
        for call, x in enumerate(inputs, start=1):
            at_call = (f"{label[0]}, call {call}", f"{label[1]}，第 {call} 次调用")
            recorder = _Recorder(gm)
            with torch.no_grad():
                want_out = recorder.run(x)
            history.append(recorder.values)
            got_out = _run(probed, (x,), label)
            if differs(got_out, want_out, rtol=1e-5, atol=1e-6) is not None:
                raise Wrong("the probes changed the model's output: a probe must return its input "
                            "unchanged, and every other node must keep reading the same values.",
                            "探针改变了模型的输出：探针必须原样返回输入，其他节点读到的值也必须不变。",
                            tried=at_call, expected=("the original output", "原来的输出"),
                            got=_max_diff(got_out, want_out))
            if not records:
                raise Wrong("nothing was recorded: is each probe a call_module node of the new graph, calling "
                            "a module registered on the new GraphModule, and was forward regenerated?",
                            "什么都没有记录下来：每个探针是否都是新计算图中的 call_module 节点、调用的是注册在新 "
                            "GraphModule 上的模块？forward 是否重新生成了？",
                            tried=at_call, expected=repr(sorted(names)), got="{}")
            missing = [name for name in names if name not in records]
            placeholders = [name for name in missing if name in {n.name for n in gm.graph.nodes if n.op == "placeholder"}]
            if placeholders and sorted(records) == sorted(set(names) - set(placeholders)):
                raise Wrong(f"{placeholders[0]!r} is a placeholder (an input of the graph) and was not recorded: a "
                            "placeholder is a node like any other, and the exercise asks for probes after any node but "
                            "the output, placeholders included.",
                            f"{placeholders[0]!r} 是 placeholder（计算图的输入），却没有被记录：placeholder 和其他节点一样"
                            "也是节点，练习要求在除 output 之外的任何节点之后都能插入探针，placeholder 也不例外。",
                            tried=at_call, expected=repr(sorted(names)), got=repr(sorted(map(str, records))))
            if sorted(records) != sorted(names):
                raise Wrong("records must have exactly the requested node names as keys.",
                            "records 的键必须恰好是所请求的节点名。",
                            tried=at_call, expected=repr(sorted(names)),
                            got=repr(sorted(map(str, records))))
            for name in names:
                got, want = records[name], recorder.values[name]
                diff = differs(got, want, rtol=1e-5, atol=1e-6, where=f"records[{name!r}]")
                if diff is None:
                    continue
                at_node = (f"{at_call[0]}, node {name!r}", f"{at_call[1]}，节点 {name!r}")
                if call > 1 and _close(got, history[0][name], rtol=1e-5, atol=1e-6):
                    raise Wrong("the records still hold the first call's values: store the value "
                                "every time the probe runs.",
                                "records 里仍是第一次调用的值：探针每次运行都要重新存储。",
                                tried=at_node)
                if (isinstance(got, torch.Tensor) and got.shape == want.shape
                        and bool((want < 0).any()) and _close(got, want.clamp(min=0))):
                    raise Wrong(f"{name!r} was overwritten after it was recorded: the nn.ReLU(inplace=True) "
                                "that runs next changed the same tensor. Store a copy of the values, not a "
                                "reference to the tensor.",
                                f"{name!r} 在记录之后被覆盖了：紧接着运行的 nn.ReLU(inplace=True) 修改了同一个张量。"
                                "请保存数值的副本，而不是对这个张量的引用。",
                                tried=at_node, expected=("values with negatives", "含负数的值"),
                                got=("the values after ReLU", "经过 ReLU 之后的值"))
                if isinstance(got, torch.Tensor) and got.dtype != want.dtype:
                    raise Wrong(f"records[{name!r}] has dtype {got.dtype}, but node {name!r} computed {want.dtype}: "
                                "record a copy of the value as it is, in its own dtype.",
                                f"records[{name!r}] 的 dtype 是 {got.dtype}，而节点 {name!r} 算出的是 {want.dtype}："
                                "请原样记录值的副本，保持它自己的 dtype。",
                                tried=at_node, expected=describe(want), got=describe(got))
                raise Wrong(f"records[{name!r}] is not the output of node {name!r} in this call.",
                            f"records[{name!r}] 不是节点 {name!r} 在这次调用中的输出。",
                            tried=at_call, expected=describe(want), got=diff)
