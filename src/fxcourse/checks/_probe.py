"""The shape every checker shares: run the answer on probes, compare the whole result with the
reference, and name the known mistake when the result matches one.

A task then reads as its data::

    @task("lab09.1", "…", "…", hints=[("nudge", "提示"), ("concept, lecture 09 §2", "概念")])
    def _task(answer):
        need_callable(answer, "my_fn")
        run_probes(answer, reference, probes=[Probe("x with negative entries", (x,)), …],
                   mistakes=[Mistake("forgot the bias", lambda got, want, p: …, "…", "…")])

Introduced in labs/lab00_warmup.ipynb (the checker of every lab uses it).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import torch

from .._lang import Bilingual, Phrase
from .._text import one_line_error
from .._values import describe, differs
from . import Wrong

__all__ = ["Mistake", "Probe", "Snapshot", "built", "called", "clone_args", "close", "counted_once", "describe",
           "differs", "need_callable", "plain_counts", "require_untouched", "run_probes", "seeded"]


def need_callable(answer: Any, name: str, *, classes: bool = False) -> None:
    """Raise :class:`Wrong` unless ``answer`` is a function (or, with ``classes``, a class)."""
    if not callable(answer) or (isinstance(answer, type) and not classes):
        raise Wrong(f"pass the function itself, e.g. check(..., {name}) (without calling it).",
                    f"请传入函数本身，例如 check(..., {name})（不要调用它）。", got=described(answer))


def described(value: Any) -> Phrase:
    """``describe(value)`` for feedback: English (also in ``both``), 中文 for a 中文-only reader."""
    return Phrase(describe(value), describe(value, lang="zh"))


def _diff_phrase(diff: str, got: Any, want: Any, compare: Callable[..., str | None], **zh_words: str) -> Bilingual:
    """The 中文 twin of ``differs``' line, when ``compare`` is ``differs`` itself."""
    if compare is not differs:
        return diff
    try:
        zh = differs(got, want, lang="zh", **zh_words)
    except Exception:  # the English line stands alone rather than no line at all
        zh = None
    return Phrase(diff, zh) if zh else diff


def seeded(model: torch.nn.Module, seed: int, scale: float = 0.5) -> torch.nn.Module:
    """``model`` in eval mode, its parameters drawn from a generator of the checker's own (so
    checking never moves the learner's random numbers).

    >>> import torch
    >>> a, b = seeded(torch.nn.Linear(2, 2), 3), seeded(torch.nn.Linear(2, 2), 3)
    >>> torch.equal(a.weight, b.weight), a.training
    (True, False)
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale)
    return model.eval()


def built(factory: Callable[[], Any], seed: int, *, eval: bool = True) -> Any:
    """``factory()`` with its parameters drawn after ``torch.manual_seed(seed)``, inside
    ``fork_rng`` so the learner's random numbers do not move; in eval mode unless ``eval=False``.

    >>> import torch
    >>> state = torch.get_rng_state()
    >>> a, b = built(lambda: torch.nn.Linear(2, 2), 3), built(lambda: torch.nn.Linear(2, 2), 3)
    >>> torch.equal(a.weight, b.weight), a.training, torch.equal(state, torch.get_rng_state())
    (True, False, True)
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        made = factory()
    return made.eval() if eval else made


def plain_counts(got: Any, *, text_keys: bool = False) -> Any:
    """A counting answer as a plain dict: a Counter or any mapping is a dict, keys counted zero
    times may be left in or out (with ``text_keys``, keys compared as text); anything else as it is.

    >>> from collections import Counter
    >>> plain_counts(Counter(a=2, b=0)), plain_counts([1])
    ({'a': 2}, [1])
    """
    if isinstance(got, dict):
        return {(str(k) if text_keys else k): v for k, v in got.items() if not (isinstance(v, int) and v == 0)}
    return got


def close(got: Any, want: torch.Tensor, *, rtol: float = 1e-5, atol: float = 1e-6, any_float: bool = False) -> bool:
    """``got`` is a tensor of ``want``'s shape with values within the tolerances. By default its
    dtype and device must match too (:func:`differs`); ``any_float`` compares both as float32
    (for answers whose dtype the task leaves open).

    >>> close(torch.ones(2), torch.ones(2)), close(torch.ones(2, 1), torch.ones(2))
    (True, False)
    >>> close(torch.ones(2, dtype=torch.float64), torch.ones(2)), close([1.0], torch.ones(1))
    (False, False)
    """
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return False
    if any_float:
        return bool(torch.allclose(got.detach().float(), want.detach().float(), rtol=rtol, atol=atol))
    return differs(got, want, rtol=rtol, atol=atol) is None


def called(fn: Callable[..., Any], args: Sequence[Any], *, tried: Bilingual, en: str, zh: str,
           errors: tuple[type[BaseException], ...] = (Exception,)) -> Any:
    """``fn(*args)`` without autograd; one of ``errors`` becomes :class:`Wrong` with ``en``/``zh``
    (what failed, where to look) and the exception's first line, instead of a bare traceback."""
    try:
        with torch.no_grad():
            return fn(*args)
    except errors as exc:
        raise Wrong(en, zh, tried=tried, got=one_line_error(exc)) from None


@dataclass(frozen=True)
class Snapshot:
    """What must not change when an answer promises to leave a module alone: its graph's nodes
    and generated code (an ``fx.GraphModule``), its submodules' names, and every parameter and
    buffer by value.

    >>> m = torch.nn.Linear(2, 2)
    >>> before = Snapshot.of(m)
    >>> before.same(Snapshot.of(m))
    True
    >>> _ = m.weight.data.add_(1)
    >>> before.same(Snapshot.of(m))
    False
    """

    nodes: tuple[Any, ...]
    code: str | None
    modules: tuple[str, ...]
    state: dict[str, torch.Tensor]

    @classmethod
    def of(cls, module: torch.nn.Module) -> "Snapshot":
        graph = getattr(module, "graph", None)
        nodes = tuple((n.name, n.op, str(n.target), str(n.args), str(n.kwargs)) for n in graph.nodes) \
            if isinstance(module, torch.fx.GraphModule) else ()
        code = module.code if isinstance(module, torch.fx.GraphModule) else None
        state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        return cls(nodes, code, tuple(sorted(name for name, _ in module.named_modules())), state)

    def same(self, other: "Snapshot") -> bool:
        if (self.nodes, self.code, self.modules) != (other.nodes, other.code, other.modules):
            return False
        if self.state.keys() != other.state.keys():
            return False
        return all(self.state[k].shape == other.state[k].shape and torch.equal(self.state[k], other.state[k])
                   for k in self.state)


def require_untouched(before: Snapshot, module: torch.nn.Module, *, tried: Bilingual, en: str, zh: str,
                      expected: Bilingual = ("the module it was given unchanged", "传入的模块保持不变"),
                      got: Bilingual = ("the module was modified", "传入的模块被改动了")) -> None:
    """Raise :class:`Wrong` (``en``/``zh``) when ``module`` no longer matches ``before``."""
    if not before.same(Snapshot.of(module)):
        raise Wrong(en, zh, tried=tried, expected=expected, got=got)


def clone_args(args: Sequence[Any]) -> tuple[Any, ...]:
    """Fresh copies of probe arguments, so neither side sees what the other wrote in place."""
    def one(a: Any) -> Any:
        if isinstance(a, torch.Tensor):
            return a.detach().clone().requires_grad_(a.requires_grad)
        if isinstance(a, (list, tuple)):
            return type(a)(one(x) for x in a)
        if isinstance(a, dict):
            return {k: one(v) for k, v in a.items()}
        return a
    return tuple(one(a) for a in args)


@dataclass(frozen=True)
class Probe:
    """One input the checker tries: a label the learner reads, and the positional arguments."""

    label: Bilingual  # a plain string, or an (English, 中文) pair when it is words
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: ``matches(got, want, probe)`` recognises its result; the messages
    say what the learner did and which idea to revisit, never the code to paste."""

    name: str
    matches: Callable[[Any, Any, Probe], bool]
    en: str
    zh: str


def counted_once(what_en: str, what_zh: str) -> Mistake:
    """The counting task's classic near-miss: every count is 1 (which ``what`` occur, not how many).

    >>> m = counted_once("kinds", "类型")
    >>> m.matches({"a": 1, "b": 1}, {"a": 3, "b": 1}, None), m.en.split(":")[0]
    (True, 'every count is 1')
    """
    return Mistake(f"each of the {what_en} once",
                   lambda got, want, p: set(got) == set(want) and all(v == 1 for v in got.values()),
                   f"every count is 1: the dict records which {what_en} occur, not how many nodes have each one.",
                   f"每个计数都是 1：这个 dict 只记录了出现过哪些{what_zh.rstrip()}，而不是每种{what_zh}有多少个节点。")


def _matches(mistake: Mistake, got: Any, want: Any, probe: Probe) -> bool:
    try:
        return bool(mistake.matches(got, want, probe))
    except Exception:  # a predicate that cannot read this result does not match it
        return False


def run_probes(answer: Callable[..., Any], reference: Callable[..., Any], probes: Iterable[Probe], *,
               mistakes: Sequence[Mistake] = (), what: str = "your function",
               compare: Callable[[Any, Any], str | None] = differs,
               generic: tuple[str, str] | None = None, no_grad: bool = True) -> None:
    """Call ``answer`` and ``reference`` on fresh copies of every probe and compare whole results.

    The first probe whose result differs raises :class:`Wrong`, naming the first known
    mistake the result matches, else ``generic`` (or a plain "differs from the reference").
    An answer that writes into its input is wrong too when the reference does not.
    """
    for probe in probes:
        ref_args, ans_args = clone_args(probe.args), clone_args(probe.args)
        with torch.no_grad() if no_grad else contextlib.nullcontext():
            want = reference(*ref_args, **probe.kwargs)
            got = answer(*ans_args, **probe.kwargs)
        diff = compare(got, want)
        if diff is None:
            diff = differs(ans_args, ref_args, where="input after the call")
            if diff is not None:
                got_in = _diff_phrase(diff, ans_args, ref_args, differs, where="调用后的输入", expected="期望")
                raise Wrong(f"{what} changed its input in place; leave the input as it was.",
                            f"{what} 原地修改了输入；请不要改动输入。", tried=probe.label, got=got_in)
            continue
        shown = _diff_phrase(diff, got, want, compare, where="结果", expected="期望")
        for mistake in mistakes:
            if _matches(mistake, got, want, probe):
                raise Wrong(mistake.en, mistake.zh, tried=probe.label, expected=described(want), got=shown)
        en, zh = generic or (f"{what} gives a different result from the reference.",
                             f"{what} 的结果与参考答案不同。")
        raise Wrong(en, zh, tried=probe.label, expected=described(want), got=shown)

