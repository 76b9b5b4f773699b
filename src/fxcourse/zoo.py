"""The small models that lectures, labs and tests share.

Each entry is built seeded, in eval mode, with example inputs, so every notebook and test
that uses it sees the same numbers.

>>> from fxcourse import zoo
>>> model, args = zoo.example("mlp")
>>> tuple(model(*args).shape)
(2, 3)
>>> "gate" in zoo.names()
True
"""
# PEP 563: annotations below are stored as strings, so torch.fx writes a traced zoo model's
# signature as `x : _torch_Tensor_` (a global bound to the string 'torch.Tensor').
# Lecture 03, section 7 shows this; the stored outputs of lectures and labs rely on it.
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from .errors import FxCourseError, describe, refuses_bad_calls

__all__ = [
    "MLP", "Gate", "ConvBNReLU", "ClampLinear", "ItemBreak", "WrappedSplit", "SharedConv", "GraphParts",
    "MaskedPool", "CharGPT",
    "example", "mobilenet", "names", "pretend_trained", "resnet18",
]


class MLP(nn.Module):
    """Linear → ReLU → Linear: the smallest model every capture system gets right."""

    def __init__(self, d_in: int = 4, d_hidden: int = 8, d_out: int = 3) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class Gate(nn.Module):
    """A data-dependent branch: the model lecture 00 captures five ways."""

    def __init__(self, d: int = 4) -> None:
        super().__init__()
        self.linear = nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum() > 0:  # the branch depends on the values in x
            return torch.relu(y)
        return -y


class ConvBNReLU(nn.Module):
    """conv → batch norm → ReLU, the pattern conv-BN fusion folds."""

    def __init__(self, c_in: int = 3, c_out: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


class SharedConv(nn.Module):
    """A conv whose output feeds a batch norm *and* another user: it must not be fused."""

    def __init__(self, c: int = 4) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c, c, 1)
        self.bn = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.bn(y) + y


class ClampLinear(nn.Module):
    """Seed 004's module: a parameter, a linear layer and a method call with kwargs."""

    def __init__(self) -> None:
        super().__init__()
        self.param = nn.Parameter(torch.rand(3, 4))
        self.linear = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x + self.param).clamp(min=0.0, max=1.0)


class ItemBreak(nn.Module):
    """``.item()`` in the middle of forward: one graph break under torch.compile."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        scale = y.abs().max().item()
        return y / (scale + 1.0)


class _Wrapped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Linear(1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer1(x) * 100


class WrappedSplit(nn.Module):
    """Seed 002's model: a nested module, dropout and a split returning a tuple."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Linear(1, 1)
        self.wrapped = _Wrapped()
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.wrapped(self.layer1(x))
        return self.dropout(x).split(1, dim=-1)


class GraphParts(nn.Module):
    """The parts of a graph built by hand, and no ``forward`` of its own: a Linear ``proj``
    and a per-feature Parameter ``scale`` (with both signs). Introduced in
    labs/lab03_fx_ir.ipynb, exercise 4, which builds ``proj(x - y) * scale`` with the
    ``torch.fx.Graph`` API.

    >>> parts = GraphParts(3)
    >>> [name for name, _ in parts.named_parameters()]
    ['scale', 'proj.weight', 'proj.bias']
    """

    def __init__(self, features: int = 4) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.linspace(-1.0, 2.0, features))
        self.proj = nn.Linear(features, features)


class MaskedPool(nn.Module):
    """Projects ``x`` (last dimension 6), zeroes the entries where the boolean ``mask`` is False,
    and scales the sum over the last dimension by ``scale``, a Python float (default
    ``1 / x.shape[-1]``). Runs in eager PyTorch, but ``**unused`` refuses to script and the
    unannotated ``None`` defaults script wrongly. Introduced in labs/lab02_script_ir.ipynb,
    exercise 2.

    >>> tuple(MaskedPool()(torch.ones(2, 6), scale=0.5).shape)
    (2,)
    """

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x, mask=None, scale=None, **unused):
        h = self.proj(x)
        if mask is not None:
            h = h.masked_fill(~mask, 0.0)
        if scale is None:
            scale = 1.0 / h.shape[-1]
        return h.sum(-1) * scale


class _Block(nn.Module):
    """One pre-norm transformer block: causal self-attention, then an MLP, each residual."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class CharGPT(nn.Module):
    """A character-level GPT: token and position embeddings, ``layers`` transformer blocks
    (causal ``scaled_dot_product_attention``), a final LayerNorm and a linear head. Random
    weights, nothing downloaded. Input: token ids of shape (batch, length ≤ ``block``);
    output: logits of shape (batch, length, ``vocab``). Introduced in the capstone lecture.

    >>> model, (idx,) = example("char_gpt")
    >>> tuple(idx.shape), tuple(model(idx).shape)
    ((2, 32), (2, 32, 65))
    """

    def __init__(self, vocab: int = 65, block: int = 32, d: int = 64, heads: int = 4,
                 layers: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(block, d)
        self.blocks = nn.Sequential(*(_Block(d, heads) for _ in range(layers)))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        return self.head(self.ln(self.blocks(x)))


def pretend_trained(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every ``BatchNorm2d`` running statistics and affine weights like a trained
    model's (a fresh BN is an identity in eval mode, which would hide fusion bugs).
    Changes ``model`` in place and returns it. Introduced in course/04_fx_transforms.ipynb.

    >>> model, _ = example("conv_bn_relu")
    >>> float(pretend_trained(model).bn.running_var.min()) >= 0.5
    True
    """
    if not isinstance(model, nn.Module):
        raise FxCourseError(got=describe(model), accepted="an nn.Module (e.g. the model of zoo.example('conv_bn_relu'))",
                            fix="pass the model itself, not its output or its name", where="zoo.pretend_trained",
                            zh=f"zoo.pretend_trained：收到 {describe(model)}；需要一个 nn.Module（例如 "
                               "zoo.example('conv_bn_relu') 返回的模型）。修复：传入模型本身，而不是它的输出或名字。")
    _check_seed(seed, "zoo.pretend_trained")
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.running_mean.copy_(0.5 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
                m.weight.copy_(0.5 + torch.rand(c, generator=gen))
                m.bias.copy_(0.5 * torch.randn(c, generator=gen))
    return model


def resnet18() -> nn.Module:
    """torchvision's resnet18 with random weights (nothing is downloaded)."""
    import torchvision

    return torchvision.models.resnet18(weights=None)


def mobilenet() -> nn.Module:
    """torchvision's mobilenet_v3_small (depthwise convolutions, squeeze-and-excitation,
    hardswish) with random weights (nothing is downloaded)."""
    import torchvision

    return torchvision.models.mobilenet_v3_small(weights=None)


_ENTRIES: dict[str, tuple[Callable[[], nn.Module], Callable[[], tuple[torch.Tensor, ...]]]] = {
    "mlp": (MLP, lambda: (torch.randn(2, 4),)),
    "gate": (Gate, lambda: (torch.randn(2, 4),)),
    "conv_bn_relu": (ConvBNReLU, lambda: (torch.randn(1, 3, 8, 8),)),
    "shared_conv": (SharedConv, lambda: (torch.randn(1, 4, 5, 5),)),
    "clamp_linear": (ClampLinear, lambda: (torch.randn(3, 4),)),
    "item_break": (ItemBreak, lambda: (torch.randn(2, 4),)),
    "wrapped_split": (WrappedSplit, lambda: (torch.tensor([[1.0]]),)),
    "resnet18": (resnet18, lambda: (torch.randn(1, 3, 64, 64),)),
    "mobilenet": (mobilenet, lambda: (torch.randn(1, 3, 64, 64),)),
    "char_gpt": (CharGPT, lambda: (torch.randint(0, 65, (2, 32)),)),
}


def _check_seed(seed: object, where: str) -> None:
    """A seed torch.manual_seed takes: a whole number from -2**63 to 2**64 - 1."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not -2**63 <= seed < 2**64:
        shown = describe(seed) if not isinstance(seed, int) or isinstance(seed, bool) else f"{seed} (outside torch's range)"
        raise FxCourseError(got=f"seed={shown}", accepted="a whole number from -2**63 to 2**64 - 1", fix="pass e.g. seed=0",
                            where=where, zh=f"{where}：seed={shown} 不可用；需要 -2**63 到 2**64 - 1 之间的整数，例如 seed=0。")


def names() -> list[str]:
    """The names :func:`example` accepts."""
    return list(_ENTRIES)


def example(name: str, seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """Build zoo model ``name`` (seeded, eval mode) and its example inputs.

    The seed applies to a forked random stream: the global torch generator is left
    where the caller had it.
    """
    _check_seed(seed, "zoo.example")
    if not isinstance(name, str) or name not in _ENTRIES:
        raise FxCourseError(
            got=describe(name) if not isinstance(name, str) else repr(name), accepted=f"one of {', '.join(names())}",
            fix="pick a name from fxcourse.zoo.names()", where="zoo.example",
            zh=f"zoo.example：没有名为 {name!r} 的模型；可选：{'、'.join(names())}。"
               "修复：从 fxcourse.zoo.names() 中选一个名字。",
        )
    build, inputs = _ENTRIES[name]
    # Seed a forked stream: the caller's global random stream goes on as if this
    # call had never happened (issue: a helper must not move the learner's RNG).
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = build().eval()
        return model, inputs()


# A misspelt keyword or a missing argument: a FxCourseError, not Python's TypeError.
pretend_trained = refuses_bad_calls(pretend_trained, "zoo.pretend_trained")
resnet18 = refuses_bad_calls(resnet18, "zoo.resnet18")
mobilenet = refuses_bad_calls(mobilenet, "zoo.mobilenet")
names = refuses_bad_calls(names, "zoo.names")
example = refuses_bad_calls(example, "zoo.example")
