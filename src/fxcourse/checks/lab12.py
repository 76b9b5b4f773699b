"""Checkers for labs/lab12_saving_compiled.ipynb (lecture course/12_saving_compiled.ipynb).

The checkers build models and files the learner has not seen, in a temporary folder of their
own. They never load a file the learner could have made unsafe with anything but the
weights-only loader or ``torch.export.load``, and never unpickle the files they build for
exercise 3: the learner's function is what reads those, and a harmless tripwire payload
records whether it ran.

Exercise 3's definition, which the lab states in both languages: a file is *safe* exactly when
``torch.load(path, weights_only=True)`` reads it; a file that loader refuses, and a file it cannot
read at all (a ``pickle.dump`` file, even of plain data; an empty or broken file; a zip that
``torch.save`` did not write), is *unsafe*. ``tests/test_checks_lab12.py`` checks the kinds of
file built here against what the installed torch's loader does.
"""
from __future__ import annotations

import copy
import os
import pickle
import tempfile
import zipfile
from typing import Any, Callable

import torch
from torch import nn

from . import Wrong, task
from .._text import one_line_error, quiet
from ._probe import Snapshot, described, differs, need_callable, require_untouched, seeded


def _inputs(seed: int, *shapes: tuple[int, ...]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for shape in shapes]


class _Folder:
    """A temporary folder that is removed afterwards, whatever happens."""

    def __enter__(self) -> str:
        self._tmp = tempfile.TemporaryDirectory(prefix="fxcourse-lab12-")
        return self._tmp.name

    def __exit__(self, *exc: Any) -> None:
        self._tmp.cleanup()


# -- exercise 1: save weights so that they load with weights_only=True ------------------------

class _ConvNorm(nn.Module):
    """Conv → BatchNorm → ReLU → mean: running statistics live in buffers, not parameters."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.norm = nn.BatchNorm2d(4)
        self.register_buffer("scale", torch.tensor([1.5, -0.5, 2.0, 0.25]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.norm(self.conv(x)))
        return h.mean(dim=(2, 3)) * self.scale


class _Gated(nn.Module):
    """Two linears and a dropout that only eval mode switches off."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(5, 6)
        self.b = nn.Linear(6, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(self.drop(torch.tanh(self.a(x))))


def _trained_norm(seed: int) -> _ConvNorm:
    """A _ConvNorm whose running statistics moved away from their defaults, handed over in
    training mode (as a model is in the middle of training): an answer must not switch it."""
    model = seeded(_ConvNorm(), seed)
    model.train()
    with torch.no_grad():
        for x in _inputs(seed + 1, (4, 2, 5, 5), (4, 2, 5, 5)):
            model(x * 3 + 1)
    return model.train()


def _half_switched(model: nn.Module) -> nn.Module:
    """``model`` in training mode except its dropout: flags an answer that switches the model to
    eval and back (``model.train(was_training)``) would not restore."""
    model.train()
    model.drop.eval()
    return model


def _weights_cases() -> list[tuple[tuple[str, str], Callable[[], nn.Module], nn.Module, list[torch.Tensor]]]:
    return [
        (("a conv + batch-norm model in training mode whose running statistics were updated",
          "处于训练模式、运行统计量已更新的 conv + batch norm 模型"),
         _ConvNorm,
         _trained_norm(121), _inputs(1210, (3, 2, 5, 5), (1, 2, 4, 6))),
        (("a linear model with dropout, in training mode except its dropout",
          "带 dropout 的线性模型，除 dropout 外处于训练模式"), _Gated, _half_switched(seeded(_Gated(), 122)),
         _inputs(1220, (4, 5), (2, 5))),
        (("a linear model with dropout, in eval mode", "带 dropout 的线性模型，处于 eval 模式"), _Gated,
         seeded(_Gated(), 123).eval(), _inputs(1230, (3, 5))),
    ]


def _flags(model: nn.Module) -> dict[str, Any]:
    """Every submodule's ``training`` flag, every parameter's ``requires_grad`` and every state
    entry's dtype: what ``Snapshot`` (values, shapes and submodule names) does not compare."""
    flags: dict[str, Any] = {f"{name or '(the model)'}.training": module.training
                             for name, module in model.named_modules()}
    flags.update({f"{name}.requires_grad": p.requires_grad for name, p in model.named_parameters()})
    flags.update({f"{name}.dtype": str(v.dtype) for name, v in model.state_dict().items()})
    return flags


def _weights_only_error(path: str) -> str | None:
    """Why ``torch.load(path)`` (weights_only=True) refuses the file, or None when it loads."""
    try:
        with quiet():
            torch.load(path, weights_only=True)
    except Exception as exc:  # refused or not a torch file: the learner sees why
        text = str(exc)
        if "WeightsUnpickler error:" in text:  # what was refused follows, on this line or the next
            after = [line.strip() for line in text.split("WeightsUnpickler error:", 1)[1].splitlines() if line.strip()]
            said = after[0].split(" by default")[0] if after else ""
        else:
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            said = lines[0] if lines else ""
        return f"{type(exc).__name__}: {said[:160]}"
    return None


def _tensors_in(obj: Any) -> list[torch.Tensor]:
    """Every tensor in what the weights-only loader returned (dicts, lists and tuples opened)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in _tensors_in(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in _tensors_in(v)]
    return []


def _not_in_files(state: dict[str, torch.Tensor], folder: str, names: list[str]) -> list[str]:
    """The state_dict entries no file of ``folder`` holds (read with the weights-only loader)."""
    held: list[torch.Tensor] = []
    for name in names:
        with quiet():
            held += _tensors_in(torch.load(os.path.join(folder, name), weights_only=True))
    return [k for k, v in state.items()
            if not any(t.shape == v.shape and torch.equal(t.detach().to(v.dtype), v) for t in held)]


@task("lab12.1", "save weights that load with weights_only=True", "保存能用 weights_only=True 加载的权重", hints=[
    ("The file must pass torch.load's default, safe loader. Which of the things you could save holds "
     "only tensors in a dictionary, and does it include everything the model's output depends on?",
     "文件必须通过 torch.load 默认的安全加载器。你能保存的东西里，哪一种只是字典里的张量？"
     "它是否包含了模型输出所依赖的一切？"),
    ("Lecture course/12_saving_compiled.ipynb, section '3 · Loading a pickle runs code': a whole pickled "
     "module is refused, a state_dict (parameters and buffers) loads. The fresh model then takes the loaded "
     "values and must be in eval mode; the model you were given keeps its mode.",
     "讲义 course/12_saving_compiled.ipynb 第“3 · 加载 pickle 会执行代码”节：整个被 pickle 的模块会被拒绝，"
     "state_dict（参数和缓冲区）可以加载。新模型随后装入这些值，并且必须处于 eval 模式；传入的模型保持原来的模式。"),
])
def _check_weights(answer: Any) -> None:
    need_callable(answer, "save_and_reload")
    for label, make, model, xs in _weights_cases():
        reference = copy.deepcopy(model).eval()  # the outputs to match, without touching the model handed over
        with torch.no_grad():
            want = [reference(x) for x in xs]
        before, flags = Snapshot.of(model), _flags(model)
        built: list[nn.Module] = []

        def make_model() -> nn.Module:
            fresh = seeded(make(), 999 + len(built)).train()  # weights unlike the saved model's; a new model trains
            built.append(fresh)
            return fresh

        tried = (f"{label[0]}; your function was given an empty folder", f"{label[1]}；传给你的函数的是一个空文件夹")
        with _Folder() as folder:
            with quiet():
                got_model = answer(model, make_model, folder)
            files = sorted(os.listdir(folder))
            if not files:
                raise Wrong("Nothing was written to the folder: save the weights into a file inside `folder`.",
                            "文件夹中没有写入任何文件：请把权重保存到 `folder` 中的一个文件里。", tried=tried)
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.isfile(path):
                    raise Wrong(f"{name!r} is a folder: save the weights into one file directly inside `folder`.",
                                f"{name!r} 是一个文件夹：请把权重保存到直接位于 `folder` 中的一个文件里。",
                                tried=tried, expected=("one file in the folder", "文件夹中的一个文件"),
                                got=("a sub-folder", "一个子文件夹"))
                refused = _weights_only_error(path)
                if refused is not None and "Unsupported operand" in refused:
                    raise Wrong(
                        f"The file {name!r} is refused by torch.load's weights-only loader ({refused}): that loader "
                        "reads the instructions of pickle protocol 2, torch.save's default, and this file was "
                        "saved with a higher pickle_protocol. Keep torch.save's default protocol.",
                        f"文件 {name!r} 被 torch.load 的仅权重加载器拒绝（{refused}）：该加载器读取的是 pickle 协议 2 "
                        "（torch.save 的默认协议）的指令，而这个文件是用更高的 pickle_protocol 保存的。请保留 torch.save 的默认协议。",
                        tried=tried, expected=("a file torch.load(path, weights_only=True) reads",
                                               "torch.load(path, weights_only=True) 能读取的文件"), got=refused)
                if refused is not None:
                    raise Wrong(
                        f"The file {name!r} is refused by torch.load's weights-only loader ({refused}). "
                        "A file holding a pickled module or other Python objects needs a full unpickler, which "
                        "can run code: save only tensors (lecture 12, section 3).",
                        f"文件 {name!r} 被 torch.load 的仅权重加载器拒绝（{refused}）。保存了被 pickle 的模块或其他 "
                        "Python 对象的文件需要完整的反序列化器，而它可能执行代码：只保存张量（第 12 讲第 3 节）。",
                        tried=tried, expected=("a file torch.load(path, weights_only=True) reads",
                                               "torch.load(path, weights_only=True) 能读取的文件"), got=refused)
            changed = sorted(k for k, v in _flags(model).items() if flags.get(k) != v)
            if changed:
                to_eval = any(k.endswith(".training") and flags[k] for k in changed)
                raise Wrong(
                    "Your function changed the model it was given: "
                    + ("it switched the model (or some of its submodules) out of training mode. Put only the "
                       "new model in eval mode; the model you were given may be in the middle of training."
                       if to_eval else "it changed the mode, the requires_grad or the dtype of some of its parts."),
                    "你的函数修改了传入的模型："
                    + ("它把模型（或其中一些子模块）切出了训练模式。只把新模型切换到 eval 模式；传入的模型可能正处于训练之中。"
                       if to_eval else "它改变了其中一些部分的模式、requires_grad 或 dtype。"),
                    tried=tried, expected=", ".join(f"{k} == {flags.get(k)}" for k in changed[:3]),
                    got=", ".join(f"{k} == {_flags(model).get(k)}" for k in changed[:3]))
            require_untouched(before, model, tried=tried, en="Your function changed the model it was given.",
                              zh="你的函数修改了传入的模型。")
            if got_model is model:
                raise Wrong("Your function returned the model it was given; return the fresh model built with "
                            "make_model(), after loading the saved weights into it.",
                            "你的函数返回了传入的那个模型；应返回用 make_model() 新建、并装入了已保存权重的模型。",
                            tried=tried)
            if not built or not any(got_model is m for m in built):
                raise Wrong("The model you returned was not built by make_model(): build the new model by calling "
                            "make_model(), then load the file into it.",
                            "你返回的模型不是由 make_model() 创建的：请调用 make_model() 新建模型，再把文件装入其中。",
                            tried=tried, got=described(got_model))
            if any(m.training for m in got_model.modules()):
                raise Wrong("The model you returned is in training mode (dropout and batch norm then behave "
                            "differently); the lab asks for it in eval mode.",
                            "你返回的模型处于训练模式（此时 dropout 和 batch norm 的行为不同）；实验要求它处于 eval 模式。",
                            tried=tried, expected="model.training == False", got="model.training == True")
            state = got_model.state_dict()
            missing = [k for k, v in before.state.items() if k not in state or not torch.equal(state[k], v)]
            if missing:
                buffers = {name for name, _ in model.named_buffers()}
                only_buffers = all(k in buffers for k in missing)
                raise Wrong(
                    f"After reloading, {missing[:3]} do not hold the saved values"
                    + (": these are buffers (running statistics, registered tensors), which model.parameters() "
                       "does not include; the state_dict does." if only_buffers else "."),
                    f"重新加载后，{missing[:3]} 的值与保存时不同"
                    + ("：它们是缓冲区（运行统计量、注册的张量），model.parameters() 不包含它们，而 state_dict 包含。"
                       if only_buffers else "。"),
                    tried=tried, expected=("every entry of the saved model's state_dict", "已保存模型 state_dict 中的每一项"),
                    got=(f"{len(missing)} entries differ", f"{len(missing)} 项不同"))
            absent = _not_in_files(before.state, folder, files)
            if absent:
                raise Wrong(
                    f"The new model holds the right values, but the file does not: {absent[:3]} are not in it. The "
                    "reloaded model must get every value from the file (as it would in another process), not from "
                    "the model you were given.",
                    f"新模型中的值是对的，但文件里没有：{absent[:3]} 不在文件中。重新加载的模型必须从文件中取得每一个值"
                    "（就像在另一个进程中那样），而不是从传入的模型中取得。",
                    tried=tried, expected=("every entry of the state_dict in the file", "文件中有 state_dict 的每一项"),
                    got=(f"{len(absent)} entries missing from the file", f"文件中缺少 {len(absent)} 项"))
        for x, w in zip(xs, want):
            with torch.no_grad():
                out = got_model(x)
            problem = differs(out, w)
            if problem is not None:
                raise Wrong(f"The reloaded model's output differs from the original's: {problem}",
                            f"重新加载的模型输出与原模型不同：{problem}",
                            tried=(f"{label[0]}, input of shape {tuple(x.shape)}", f"{label[1]}，输入形状 {tuple(x.shape)}"))


# -- exercise 2: a two-input ExportedProgram with a dynamic batch and length, saved and loaded --

class _Pooled(nn.Module):
    """Tokens (batch, length, 4) and a float mask (batch, length): a table of 16 positions is added
    to the tokens, then the kept tokens are averaged. Lengths above 16 fail in eager too."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 5)
        self.register_buffer("pos", torch.randn(16, 5, generator=torch.Generator().manual_seed(1239)))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.proj(x) + self.pos[: x.shape[1]]) * mask.unsqueeze(-1)
        return h.sum(dim=1) / mask.sum(dim=1, keepdim=True).clamp_min(1.0)


class _Kept(nn.Module):
    """Arguments named ``tokens`` and ``keep`` (a bool mask), 12 positions, an output per token."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, 4)
        self.register_buffer("pos", torch.randn(12, 4, generator=torch.Generator().manual_seed(1249)))

    def forward(self, tokens: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.proj(tokens) + self.pos[: tokens.shape[1]])
        return torch.where(keep.unsqueeze(-1), h, -h.abs())


def _pooled_args(seed: int, batch: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    mask = (torch.rand(batch, length, generator=gen) > 0.3).float()
    mask[0] = 0.0  # one sequence with nothing kept
    return torch.randn(batch, length, 4, generator=gen), mask


def _kept_args(seed: int, batch: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(batch, length, 3, generator=gen), torch.rand(batch, length, generator=gen) > 0.4


_Args = tuple[torch.Tensor, torch.Tensor]


def _export_cases() -> list[tuple[tuple[str, str], nn.Module, _Args, list[_Args]]]:
    pooled = seeded(_Pooled(), 123).eval()
    kept = seeded(_Kept(), 124).eval()
    return [
        (("forward(x, mask): 16 positions, example batch 3 and length 5",
          "forward(x, mask)：16 个位置，示例的 batch 为 3、长度为 5"),
         pooled, _pooled_args(1230, 3, 5),
         [_pooled_args(1231 + i, b, n)
          for i, (b, n) in enumerate([(3, 5), (1, 5), (3, 1), (4, 16), (33, 9), (2049, 2)])]),
        (("forward(tokens, keep) with a bool mask: 12 positions, example batch 2 and length 7",
          "forward(tokens, keep)，掩码为 bool：12 个位置，示例的 batch 为 2、长度为 7"),
         kept, _kept_args(1240, 2, 7),
         [_kept_args(1241 + i, b, n) for i, (b, n) in enumerate([(2, 7), (1, 12), (9, 1), (17, 4)])]),
    ]


def _symbolic_dims(program: Any) -> list[tuple[bool, ...]]:
    """For each user input of the program, which of its dimensions are symbols (not fixed sizes)."""
    try:
        names = list(program.graph_signature.user_inputs)
        nodes = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
        return [tuple(isinstance(s, torch.SymInt) for s in nodes[name].meta["val"].shape) for name in names]
    except Exception:  # an unusual program: say every dimension was fixed
        return []


def _export_refusal(exc: BaseException, model: nn.Module, tried: Any) -> Wrong | None:
    """A named mistake for what torch.export said when the learner's export failed, else None."""
    text = str(exc)
    rows = int(model.pos.shape[0])
    if "must always be equal" in text:
        return Wrong("torch.export refused your dynamic shapes: the two inputs share their batch and their length, "
                     "but you gave each input its own Dim. One dimension that both inputs share needs one Dim object.",
                     "torch.export 拒绝了你的动态形状：两个输入共用 batch 和长度，但你给每个输入各用了一个 Dim。"
                     "两个输入共用的同一维需要同一个 Dim 对象。",
                     tried=tried, got=one_line_error(exc))
    if "satisfy the generated guard" in text:
        return Wrong(f"torch.export refused the range you gave: the model has {rows} positions (model.pos), so it "
                     "cannot run a longer input, and export will not promise a length the model cannot take. Bound "
                     "the length by the model's table, not by a number that fits one model only.",
                     f"torch.export 拒绝了你给出的取值范围：模型只有 {rows} 个位置（model.pos），无法处理更长的输入，"
                     "而 export 不会承诺模型处理不了的长度。请用模型自己的位置表来限定长度，而不是用只适合某一个模型的数字。",
                     tried=tried, expected=(f"lengths up to {rows}", f"长度最多为 {rows}"), got=one_line_error(exc))
    if "top-level keys must be the arg names" in text:
        return Wrong("torch.export refused your dynamic shapes: a dict's keys must be the names of forward's "
                     "arguments, and these differ from model to model. Read them from the model, or give the shapes "
                     "as a tuple in the order of the inputs.",
                     "torch.export 拒绝了你的动态形状：dict 的键必须是 forward 参数的名字，而不同模型的参数名不同。"
                     "请从模型中读出参数名，或者按输入的顺序用 tuple 给出形状。",
                     tried=tried, got=one_line_error(exc))
    if "specialized it to be a constant" in text:
        return Wrong("torch.export refused your dynamic shapes: a dimension you marked dynamic is fixed for this "
                     "model. The features are fixed by the model's linear layer, and a dimension the two inputs share "
                     "is fixed when you mark it in one input only. Mark the batch and the length, and in both inputs.",
                     "torch.export 拒绝了你的动态形状：你标记为动态的某一维对这个模型来说是固定的。特征维由模型的线性层固定；"
                     "两个输入共用的维度如果只在一个输入上标记，也会被固定。请标记 batch 和长度，并且在两个输入上都标记。",
                     tried=tried, got=one_line_error(exc))
    return None


@task("lab12.2", "export two inputs with a dynamic batch and length, save and load",
      "以动态 batch 和长度导出两个输入、保存并加载", hints=[
    ("The file must be readable by torch.export.load, and the program in it must accept batches and lengths "
     "the example did not have. Which dimensions vary, which inputs share them, and how long may a sequence "
     "be for the model itself?",
     "文件必须能被 torch.export.load 读取，而且其中的程序必须接受示例之外的 batch 和长度。哪些维会变化？"
     "哪些输入共用它们？对模型本身来说，序列最长可以多长？"),
    ("Lecture course/12_saving_compiled.ipynb, section '4 · torch.export.save and load', and lecture 10's "
     "section on dynamic shapes: a Dim names a dimension, the same Dim object in two inputs says they are equal, "
     "and a Dim can carry a max. Save the program itself with the export module's save function.",
     "讲义 course/12_saving_compiled.ipynb 第“4 · torch.export.save 与 load”节，以及第 10 讲关于动态形状的部分："
     "Dim 给一个维度命名，两个输入中用同一个 Dim 对象表示它们相等，Dim 还可以带上 max。用 export 模块的保存函数保存程序本身。"),
], time_limit=120)
def _check_export(answer: Any) -> None:
    need_callable(answer, "export_and_save")
    for label, model, example, probes in _export_cases():
        with _Folder() as folder:
            path = os.path.join(folder, "program.pt2")
            tried = (f"{label[0]}; path = a file program.pt2 in an empty folder",
                     f"{label[1]}；path 是空文件夹中的文件 program.pt2")
            before, flags = Snapshot.of(model), _flags(model)
            try:
                with quiet():
                    answer(model, tuple(t.clone() for t in example), path)
            except Exception as exc:
                named = _export_refusal(exc, model, tried)
                if named is None:
                    raise
                raise named from None
            if _flags(model) != flags:
                raise Wrong("Your function changed the model it was given: it switched the mode of the model or of "
                            "some of its submodules, or changed the requires_grad or dtype of some of its parts. "
                            "Export it as it is.",
                            "你的函数修改了传入的模型：它切换了模型或其子模块的模式，或者改变了其中一些部分的 requires_grad "
                            "或 dtype。请按原样导出它。", tried=tried)
            require_untouched(before, model, tried=tried, en="Your function changed the model it was given.",
                              zh="你的函数修改了传入的模型。")
            if not os.path.exists(path):
                raise Wrong("No file was written at `path`.", "`path` 处没有写出文件。", tried=tried)
            try:
                with quiet():
                    program = torch.export.load(path)
            except Exception as exc:
                refused = _weights_only_error(path)
                saved_with = ("it reads as a torch.save file" if refused is None
                              else "torch.load refuses it too")
                raise Wrong(
                    f"torch.export.load cannot read the file ({type(exc).__name__}); {saved_with}. Save the "
                    "ExportedProgram with the export module's own save function, not torch.save or a state_dict.",
                    f"torch.export.load 无法读取该文件（{type(exc).__name__}）。请用 export 模块自己的保存函数保存 "
                    "ExportedProgram，而不是 torch.save 或 state_dict。",
                    tried=tried, expected=("an ExportedProgram archive", "一个 ExportedProgram 存档"),
                    got=type(exc).__name__) from None
            runner = program.module()
            symbolic = _symbolic_dims(program)
            for args in probes:
                with torch.no_grad():
                    want = model(*args)
                shapes = " and ".join(str(tuple(a.shape)) for a in args)
                shapes_zh = " 和 ".join(str(tuple(a.shape)) for a in args)
                at = (f"{label[0]}, inputs of shapes {shapes}", f"{label[1]}，输入形状为 {shapes_zh}")
                try:
                    with quiet(), torch.no_grad():
                        got = runner(*(a.clone() for a in args))
                except Exception as exc:
                    batch, length = args[0].shape[:2]
                    fixed = [what for dim, what, size, seen in ((0, ("batch", " batch "), batch, example[0].shape[0]),
                                                                (1, ("length", "长度"), length, example[0].shape[1]))
                             if size != seen and not (symbolic and all(len(s) > dim and s[dim] for s in symbolic))]
                    if fixed:
                        en_what, zh_what = fixed[0]
                        size = batch if en_what == "batch" else length
                        en = (f"The loaded program refused an input with {en_what} {size} "
                              f"({type(exc).__name__}): its {en_what} was fixed to the example's at export. Every "
                              "dimension that varies must be marked dynamic, in both inputs"
                              + ("; the batch is not the only one." if en_what == "length" else "."))
                        zh = (f"加载后的程序拒绝了{zh_what}为 {size} 的输入"
                              f"（{type(exc).__name__}）：导出时{zh_what}被固定成了示例的大小。每个会变化的维度都必须"
                              "在两个输入上标记为动态" + ("；会变化的不只是 batch。" if en_what == "length" else "。"))
                    else:
                        en = (f"The loaded program refused inputs of shapes {shapes} ({type(exc).__name__}): the "
                              "dimensions are dynamic, but the range you gave them at export leaves these sizes out. "
                              "Any batch, and any length the model can take, must be accepted.")
                        zh = (f"加载后的程序拒绝了形状为 {shapes_zh} 的输入（{type(exc).__name__}）：这些维度是动态的，"
                              "但导出时给它们的取值范围不包括这些大小。任何 batch，以及模型能处理的任何长度，都必须被接受。")
                    raise Wrong(en, zh, tried=at,
                                expected=(f"an output of shape {tuple(want.shape)}", f"形状为 {tuple(want.shape)} 的输出"),
                                got=one_line_error(exc)) from None
                problem = differs(got, want)
                if problem is not None:
                    raise Wrong(f"The loaded program's output differs from the model's: {problem}",
                                f"加载后的程序输出与模型不同：{problem}", tried=at)


# -- exercise 3: which saved files are unsafe to load ---------------------------------------

_TRIPPED: list[str] = []


def _tripwire(name: str) -> str:
    """What the payload files call when something unpickles them: it only records the call."""
    _TRIPPED.append(name)
    return name


class _Payload:
    """A harmless payload: unpickling it calls _tripwire instead of building an object."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_tripwire, (self.name,))


class _TorchCall:
    """Unpickles as a call of a harmless torch function that is not on the weights-only allow-list."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (nn.init.calculate_gain, ("relu",))


class _Allowed:
    """Unpickles as ``torch.Size([2, 3])``: a call the weights-only loader allows."""

    def __reduce__(self) -> tuple[Any, tuple[tuple[int, ...]]]:
        return (torch.Size, ((2, 3),))


class _Private(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)


def _raw_pickle(obj: Any, protocol: int | None = None) -> Callable[[str], None]:
    def write(path: str) -> None:
        with open(path, "wb") as fh:
            pickle.dump(obj, fh, protocol=protocol)
    return write


def _raw_bytes(data: bytes) -> Callable[[str], None]:
    def write(path: str) -> None:
        with open(path, "wb") as fh:
            fh.write(data)
    return write


def _plain_zip(path: str) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes/readme.txt", "step 7, lr 0.5")
        archive.writestr("notes/weights.csv", "0.5,0.25\n")


# What a kind of file is, in the feedback: (English, 中文). Safe kinds first.
_KINDS: dict[str, tuple[str, str]] = {
    "state_dict": ("torch.save of a state_dict", "torch.save 保存的 state_dict"),
    "plain": ("torch.save of numbers, a string and a list of tensors", "torch.save 保存的数字、字符串和张量列表"),
    "tensor": ("torch.save of one tensor", "torch.save 保存的单个张量"),
    "batch_norm": ("torch.save of a BatchNorm state_dict (an int64 num_batches_tracked)",
                   "torch.save 保存的 BatchNorm state_dict（含 int64 的 num_batches_tracked）"),
    "dtypes": ("torch.save of int64 and float64 tensors", "torch.save 保存的 int64 和 float64 张量"),
    "list": ("torch.save of a list holding an nn.Parameter, a number and a string",
             "torch.save 保存的 list，其中有一个 nn.Parameter、一个数字和一个字符串"),
    "allowed": ("torch.save of a torch.Size, a torch.device, a dtype, a set, bytes and an allowed call",
                "torch.save 保存的 torch.Size、torch.device、dtype、set、bytes 以及一个允许的调用"),
    "payload": ("torch.save of tensors next to an object whose __reduce__ names a function",
                "torch.save 保存的张量，旁边还有一个 __reduce__ 指向某个函数的对象"),
    "raw_payload": ("pickle.dump of an object whose __reduce__ names a function",
                    "pickle.dump 保存的、__reduce__ 指向某个函数的对象"),
    "module": ("torch.save of a whole nn.Module", "torch.save 保存的整个 nn.Module"),
    "torch_call": ("torch.save of a dict whose pickle calls a torch function (nn.init.calculate_gain)",
                   "torch.save 保存的 dict，其 pickle 会调用一个 torch 函数（nn.init.calculate_gain）"),
    "raw_plain": ("pickle.dump of a dict of numbers and strings", "pickle.dump 保存的由数字和字符串组成的 dict"),
    "raw_int": ("pickle.dump of the int 3, pickle protocol 2", "pickle.dump 以 pickle 协议 2 保存的整数 3"),
    "empty": ("an empty file", "一个空文件"),
    "garbage": ("a file of bytes that are no pickle", "一个内容不是 pickle 的字节文件"),
    "zip": ("a zip archive that torch.save did not write", "一个不是 torch.save 写出的 zip 存档"),
}
_SAFE_KINDS = ("state_dict", "plain", "tensor", "batch_norm", "dtypes", "list", "allowed")
_REFUSED_KINDS = ("payload", "raw_payload", "module", "torch_call")
_UNREADABLE_KINDS = ("raw_plain", "raw_int", "empty", "garbage", "zip")


def _build_files(folder: str, round_: int) -> dict[str, str]:
    """Write the exercise's files into ``folder``; return {file name: kind} (see ``_KINDS``).

    The names say nothing about the content, and the safe and unsafe files use both
    extensions, so neither the name nor the suffix gives the answer away.
    """
    gen = torch.Generator().manual_seed(125 + round_)
    model = seeded(_Private(), 126 + round_)
    norm = nn.BatchNorm1d(3)
    with torch.no_grad():
        norm.train()(torch.randn(4, 3, generator=gen))
    items: list[tuple[str, str, Callable[[str], None]]] = [
        ("pt", "state_dict", lambda p: torch.save(model.state_dict(), p)),
        ("bin", "plain", lambda p: torch.save({"step": 7, "lr": 0.5, "name": "adam",
                                               "moments": [torch.zeros(2), torch.ones(2)]}, p)),
        ("bin", "tensor", lambda p: torch.save(torch.randn(2, 3, generator=gen), p)),
        ("pt", "batch_norm", lambda p: torch.save(norm.state_dict(), p)),
        ("bin", "dtypes", lambda p: torch.save({"ids": torch.arange(5),
                                                "loss": torch.ones(3, dtype=torch.float64)}, p)),
        ("bin", "list", lambda p: torch.save([nn.Parameter(torch.randn(2, generator=gen)), 3, "adam"], p)),
        ("pt", "allowed", lambda p: torch.save({"shape": torch.Size([4, 3]), "device": torch.device("cpu"),
                                                "dtype": torch.float16, "tags": {"a", "b"}, "blob": b"\x00\x01",
                                                "size": _Allowed()}, p)),
        ("pt", "payload", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "meta": _Payload(p)}, p)),
        ("bin", "raw_payload", lambda p: _raw_pickle(_Payload(p))(p)),
        ("pt", "module", lambda p: torch.save(model, p)),
        ("bin", "torch_call", lambda p: torch.save({"weight": torch.ones(2), "gain": _TorchCall()}, p)),
        ("pt", "raw_plain", _raw_pickle({"step": 7, "lr": 0.5, "name": "adam"})),
        ("bin", "raw_int", _raw_pickle(3, protocol=2)),
        ("pt", "empty", _raw_bytes(b"")),
        ("bin", "garbage", _raw_bytes(bytes(range(97, 123)) * 3)),
        ("pt", "zip", _plain_zip),
    ]
    order = torch.randperm(len(items), generator=gen).tolist()
    kinds = {}
    for index, k in enumerate(order):
        suffix, kind, write = items[k]
        name = f"checkpoint_{round_}{index:02d}.{suffix}"
        write(os.path.join(folder, name))
        kinds[name] = kind
    return kinds


def _unsafe(kind: str) -> bool:
    return kind not in _SAFE_KINDS


@task("lab12.3", "spot the unsafe files", "找出不安全的文件", hints=[
    ("You must decide without running anything the file names, and your function must answer for every "
     "file, even one that is not a checkpoint at all. Which loader refuses anything that is not a tensor or a "
     "plain container, before calling it, and what does it do with a file it cannot read?",
     "你必须在不运行文件中指定的任何东西的前提下做出判断，而且你的函数必须对每个文件都给出答案，即使它根本不是检查点。"
     "哪个加载器会在调用之前拒绝一切不是张量或普通容器的东西？它遇到读不了的文件时会怎样？"),
    ("Lecture course/12_saving_compiled.ipynb, section '3 · Loading a pickle runs code': torch.load's "
     "default weights-only mode refuses a file before calling anything in it. A file is safe only when that "
     "loader reads it; a file it refuses, and a file it cannot read at all (a pickle.dump file, a broken "
     "file), is unsafe.",
     "讲义 course/12_saving_compiled.ipynb 第“3 · 加载 pickle 会执行代码”节：torch.load 默认的仅权重模式会在调用文件中的"
     "任何东西之前拒绝它。只有该加载器能读取的文件才是安全的；它拒绝的文件，以及它根本读不了的文件（pickle.dump 写出的文件、"
     "损坏的文件），都是不安全的。"),
])
def _check_unsafe(answer: Any) -> None:
    need_callable(answer, "is_unsafe")
    for round_ in range(2):
        with _Folder() as folder:
            kinds = _build_files(folder, round_)
            folder_of = (f"a folder of {len(kinds)} files: made with torch.save and pickle.dump, and a few that are "
                         "no checkpoint at all",
                         f"一个有 {len(kinds)} 个文件的文件夹：有用 torch.save 和 pickle.dump 生成的，也有几个根本不是检查点")
            verdicts: dict[str, Any] = {}
            raised: dict[str, Exception] = {}
            tripped: list[str] = []
            for name in sorted(kinds):
                del _TRIPPED[:]
                try:
                    with quiet():
                        verdicts[name] = answer(os.path.join(folder, name))
                except NotImplementedError:  # the lab's stub: not yet implemented
                    raise
                except Exception as exc:  # judged below, after every file had its turn
                    raised[name] = exc
                if _TRIPPED:
                    tripped.append(name)
            del _TRIPPED[:]
            if tripped:
                name = tripped[0]
                raise Wrong(
                    f"Checking {name!r} ran the payload inside it: your function loaded the file with a full "
                    "unpickler. Decide without running the file (lecture 12, section 3).",
                    f"检查 {name!r} 时运行了其中的载荷：你的函数用完整的反序列化器加载了这个文件。"
                    "请在不运行文件的前提下做出判断（第 12 讲第 3 节）。",
                    tried=folder_of, expected=("no code from the file runs", "文件中的代码不会运行"),
                    got=("the file's payload ran", "文件中的载荷运行了"))
            if raised:
                name = min(raised, key=lambda n: (list(_KINDS).index(kinds[n]), n))  # the most telling first
                exc = raised[name]
                kind = _KINDS[kinds[name]]
                raise Wrong(
                    f"Your function raised on {name!r} ({kind[0]}) instead of answering. Every file gets a "
                    "verdict: one that torch.load's weights-only loader cannot read at all is unsafe too.",
                    f"你的函数在 {name!r}（{kind[1]}）上抛出了异常，而没有给出答案。每个文件都要有判断："
                    "torch.load 的仅权重加载器根本读不了的文件同样是不安全的。",
                    tried=(f"{folder_of[0]}; {name}: {kind[0]}", f"{folder_of[1]}；{name}：{kind[1]}"),
                    expected=repr(_unsafe(kinds[name])), got=one_line_error(exc))
            for name, verdict in verdicts.items():
                if not isinstance(verdict, bool):
                    raise Wrong("is_unsafe must return True or False.", "is_unsafe 必须返回 True 或 False。",
                                tried=name, expected=("a bool", "一个 bool"), got=described(verdict))
            wrong = sorted((name for name in kinds if verdicts[name] != _unsafe(kinds[name])),
                           key=lambda n: (list(_KINDS).index(kinds[n]), n))
            if not wrong:
                continue
            first = kinds[wrong[0]]
            if all(verdicts.values()):
                en, zh = ("You called every file unsafe, but some hold only tensors, numbers, strings and "
                          "lists, which the weights-only loader reads.",
                          "你把所有文件都判为不安全，但其中有些只包含张量、数字、字符串和列表，仅权重加载器可以读取它们。")
            elif all(verdicts[n] == n.endswith(".bin") for n in kinds) or all(
                    verdicts[n] == n.endswith(".pt") for n in kinds):
                en, zh = ("Your verdicts follow the file's extension; an extension says nothing about what a file "
                          "holds. Read the content.",
                          "你的判断跟着文件扩展名走；扩展名并不能说明文件里是什么。请读取内容。")
            elif first in _SAFE_KINDS:
                en, zh = ("You called a file unsafe that torch.load(path, weights_only=True) reads: its allow-list "
                          "takes tensors of every dtype, buffers such as num_batches_tracked, and a few torch types "
                          "(torch.Size, torch.device, dtypes) besides sets and bytes. If you check the names a "
                          "pickle imports yourself, your list is narrower than the loader's.",
                          "你把一个 torch.load(path, weights_only=True) 能读取的文件判为不安全：它的允许列表接受各种 dtype "
                          "的张量、num_batches_tracked 这样的缓冲区，以及 set、bytes 之外的几种 torch 类型（torch.Size、"
                          "torch.device、dtype）。如果你自己检查 pickle 导入的名字，你的列表比加载器的窄。")
            elif first == "torch_call":
                en, zh = ("You called a file safe that the weights-only loader refuses: its pickle calls a torch "
                          "function that is not on the loader's allow-list. Coming from torch does not make a "
                          "function safe to call while loading.",
                          "你把一个仅权重加载器会拒绝的文件判为安全：它的 pickle 会调用一个不在加载器允许列表中的 torch 函数。"
                          "来自 torch 并不意味着加载时调用它就是安全的。")
            elif first in _REFUSED_KINDS:
                en, zh = ("You called a file safe that the weights-only loader refuses: its pickle names a class or "
                          "function to import and call.",
                          "你把一个仅权重加载器会拒绝的文件判为安全：它的 pickle 指定了要导入并调用的类或函数。")
            elif first in ("raw_plain", "raw_int"):
                en, zh = ("You called a pickle.dump file safe because it holds only plain data. torch.load cannot "
                          "read it at all (it is not a torch.save archive), so opening it takes pickle.load, a full "
                          "unpickler: by the lab's definition it is unsafe, whatever it holds.",
                          "你因为一个 pickle.dump 文件只包含普通数据就把它判为安全。torch.load 根本读不了它（它不是 torch.save "
                          "存档），所以打开它需要 pickle.load 这个完整的反序列化器：按照本实验的定义，无论内容是什么，它都是不安全的。")
            else:
                en, zh = ("You called a file safe that is no checkpoint at all (empty, not a pickle, or a zip that "
                          "torch.save did not write): the weights-only loader cannot read it, and nothing shows what "
                          "it holds, so it is unsafe.",
                          "你把一个根本不是检查点的文件（空文件、不是 pickle、或不是 torch.save 写出的 zip）判为安全："
                          "仅权重加载器读不了它，也无从知道其中是什么，所以它是不安全的。")
            shown = [n for n in wrong[:3]]
            raise Wrong(en, zh,
                        tried=(f"{folder_of[0]}; " + "; ".join(f"{n}: {_KINDS[kinds[n]][0]}" for n in shown),
                               f"{folder_of[1]}；" + "；".join(f"{n}：{_KINDS[kinds[n]][1]}" for n in shown)),
                        expected=", ".join(f"{n}: {_unsafe(kinds[n])!r}" for n in shown),
                        got=", ".join(f"{n}: {verdicts[n]!r}" for n in shown))
