"""Checkers for labs/lab12_saving_compiled.ipynb (lecture course/12_saving_compiled.ipynb).

The checkers build models and files the learner has not seen, in a temporary folder of their
own. They never load a file the learner could have made unsafe with anything but the
weights-only loader or ``torch.export.load``, and never unpickle the files they build for
exercise 3: the learner's function is what reads those, and a harmless tripwire payload
records whether it ran.
"""
from __future__ import annotations

import os
import pickle
import tempfile
from typing import Any, Callable

import torch
from torch import nn

from . import Wrong, task
from .._text import quiet
from ._probe import Snapshot, close, describe, differs, need_callable, require_untouched, seeded


def _inputs(seed: int, *shapes: tuple[int, ...]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(shape, generator=gen) for shape in shapes]


def _close(a: Any, b: torch.Tensor) -> bool:
    return close(a, b, rtol=1e-4, atol=1e-5, any_float=True)


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
    """A _ConvNorm whose running statistics moved away from their defaults."""
    model = seeded(_ConvNorm(), seed)
    model.train()
    with torch.no_grad():
        for x in _inputs(seed + 1, (4, 2, 5, 5), (4, 2, 5, 5)):
            model(x * 3 + 1)
    return model.eval()


def _weights_cases() -> list[tuple[tuple[str, str], Callable[[], nn.Module], nn.Module, list[torch.Tensor]]]:
    return [
        (("a conv + batch-norm model whose running statistics were updated", "运行统计量已更新的 conv + batch norm 模型"),
         _ConvNorm,
         _trained_norm(121), _inputs(1210, (3, 2, 5, 5), (1, 2, 4, 6))),
        (("a linear model with dropout", "带 dropout 的线性模型"), _Gated, seeded(_Gated(), 122).eval(),
         _inputs(1220, (4, 5), (2, 5))),
    ]


def _weights_only_error(path: str) -> str | None:
    """Why ``torch.load(path)`` (weights_only=True) refuses the file, or None when it loads."""
    try:
        with quiet():
            torch.load(path, weights_only=True)
    except Exception as exc:  # refused or not a torch file: the learner sees why
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        said = next((line.split("WeightsUnpickler error: ", 1)[1].split(" by default")[0]
                     for line in lines if "WeightsUnpickler error: " in line), lines[0] if lines else "")
        return f"{type(exc).__name__}: {said[:160]}"
    return None


@task("lab12.1", "save weights that load with weights_only=True", "保存能用 weights_only=True 加载的权重", hints=[
    ("The file must pass torch.load's default, safe loader. Which of the things you could save holds "
     "only tensors in a dictionary, and does it include everything the model's output depends on?",
     "文件必须通过 torch.load 默认的安全加载器。你能保存的东西里，哪一种只是字典里的张量？"
     "它是否包含了模型输出所依赖的一切？"),
    ("Lecture course/12_saving_compiled.ipynb, section '3 · Loading a pickle runs code': a whole pickled "
     "module is refused, a state_dict (parameters and buffers) loads. The fresh model then takes the loaded "
     "values and must be in eval mode.",
     "讲义 course/12_saving_compiled.ipynb 第“3 · 加载 pickle 会执行代码”节：整个被 pickle 的模块会被拒绝，"
     "state_dict（参数和缓冲区）可以加载。新模型随后装入这些值，并且必须处于 eval 模式。"),
])
def _check_weights(answer: Any) -> None:
    need_callable(answer, "save_and_reload")
    for label, make, model, xs in _weights_cases():
        with torch.no_grad():
            want = [model(x) for x in xs]
        before = Snapshot.of(model)
        built: list[nn.Module] = []

        def make_model() -> nn.Module:
            fresh = seeded(make(), 999 + len(built)).train()  # weights unlike the saved model's; a new model trains
            built.append(fresh)
            return fresh

        with _Folder() as folder:
            with quiet():
                got_model = answer(model, make_model, folder)
            files = sorted(os.listdir(folder))
            tried = (f"{label[0]}; your function was given an empty folder", f"{label[1]}；传给你的函数的是一个空文件夹")
            if not files:
                raise Wrong("Nothing was written to the folder: save the weights into a file inside `folder`.",
                            "文件夹中没有写入任何文件：请把权重保存到 `folder` 中的一个文件里。", tried=tried)
            for name in files:
                refused = _weights_only_error(os.path.join(folder, name))
                if refused is not None:
                    raise Wrong(
                        f"The file {name!r} is refused by torch.load's weights-only loader ({refused}). "
                        "A file holding a pickled module or other Python objects needs a full unpickler, which "
                        "can run code: save only tensors (lecture 12, section 3).",
                        f"文件 {name!r} 被 torch.load 的仅权重加载器拒绝（{refused}）。保存了被 pickle 的模块或其他 "
                        "Python 对象的文件需要完整的反序列化器，而它可能执行代码：只保存张量（第 12 讲第 3 节）。",
                        tried=tried, expected=("a file torch.load(path, weights_only=True) reads",
                                               "torch.load(path, weights_only=True) 能读取的文件"), got=refused)
        if got_model is model:
            raise Wrong("Your function returned the model it was given; return the fresh model built with "
                        "make_model(), after loading the saved weights into it.",
                        "你的函数返回了传入的那个模型；应返回用 make_model() 新建、并装入了已保存权重的模型。",
                        tried=tried)
        if not built or not any(got_model is m for m in built):
            raise Wrong("The model you returned was not built by make_model(): build the new model by calling "
                        "make_model(), then load the file into it.",
                        "你返回的模型不是由 make_model() 创建的：请调用 make_model() 新建模型，再把文件装入其中。",
                        tried=tried, got=describe(got_model))
        if got_model.training:
            raise Wrong("The model you returned is in training mode (dropout and batch norm then behave "
                        "differently); the lab asks for it in eval mode.",
                        "你返回的模型处于训练模式（此时 dropout 和 batch norm 的行为不同）；实验要求它处于 eval 模式。",
                        tried=tried, expected="model.training == False", got="model.training == True")
        require_untouched(before, model, tried=tried, en="Your function changed the model it was given.",
                          zh="你的函数修改了传入的模型。")
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
        for x, w in zip(xs, want):
            with torch.no_grad():
                out = got_model(x)
            problem = differs(out, w)
            if problem is not None:
                raise Wrong(f"The reloaded model's output differs from the original's: {problem}",
                            f"重新加载的模型输出与原模型不同：{problem}",
                            tried=(f"{label[0]}, input of shape {tuple(x.shape)}", f"{label[1]}，输入形状 {tuple(x.shape)}"))


# -- exercise 2: an ExportedProgram with a dynamic batch, saved and loaded ---------------------

class _Head(nn.Module):
    """LayerNorm then a linear: a model whose output shape follows the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.fc = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.norm(x)).softmax(dim=-1)


class _Tokens(nn.Module):
    """A 3-d input (batch, tokens, features), pooled over tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x)).amax(dim=1) - x.mean(dim=(1, 2)).unsqueeze(-1)


def _export_cases() -> list[tuple[tuple[str, str], nn.Module, torch.Tensor, list[torch.Tensor]]]:
    head = seeded(_Head(), 123).eval()
    tokens = seeded(_Tokens(), 124).eval()
    return [
        (("a LayerNorm + linear + softmax model, example batch 4", "LayerNorm + linear + softmax 模型，示例的 batch 为 4"),
         head, _inputs(1230, (4, 6))[0],
         _inputs(1231, (4, 6), (1, 6), (7, 6), (33, 6))),
        (("a (batch, tokens, features) model, example batch 3", "输入为 (batch, tokens, features) 的模型，示例的 batch 为 3"),
         tokens, _inputs(1240, (3, 5, 4))[0],
         _inputs(1241, (2, 5, 4), (1, 5, 4), (9, 5, 4))),
    ]


def _batch_is_symbolic(program: Any) -> bool:
    """Whether dimension 0 of the program's first user input is a symbol (not a fixed size)."""
    try:
        names = set(program.graph_signature.user_inputs)
        (node,) = [n for n in program.graph.nodes if n.op == "placeholder" and n.name in names][:1]
        return isinstance(node.meta["val"].shape[0], torch.SymInt)
    except Exception:  # an unusual program: say the batch was fixed
        return False


@task("lab12.2", "export with a dynamic batch, save and load", "以动态 batch 导出、保存并加载", hints=[
    ("The file must be readable by torch.export.load, and the program in it must accept a batch size the "
     "example did not have. Which argument of torch.export.export says that a dimension may vary?",
     "文件必须能被 torch.export.load 读取，而且其中的程序必须接受示例之外的 batch 大小。"
     "torch.export.export 的哪个参数用来声明某一维可以变化？"),
    ("Lecture course/12_saving_compiled.ipynb, section '4 · torch.export.save and load', and lecture 10's "
     "section on dynamic shapes: name dimension 0 of the input with a Dim, then save the program itself "
     "(not a state_dict and not with torch.save).",
     "讲义 course/12_saving_compiled.ipynb 第“4 · torch.export.save 与 load”节，以及第 10 讲关于动态形状的部分："
     "用 Dim 命名输入的第 0 维，然后保存程序本身（不是 state_dict，也不是用 torch.save）。"),
], time_limit=120)
def _check_export(answer: Any) -> None:
    need_callable(answer, "export_and_save")
    for label, model, example, probes in _export_cases():
        with _Folder() as folder:
            path = os.path.join(folder, "program.pt2")
            with quiet():
                answer(model, example.clone(), path)
            tried = (f"{label[0]}; path = a file program.pt2 in an empty folder",
                     f"{label[1]}；path 是空文件夹中的文件 program.pt2")
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
            for x in probes:
                with torch.no_grad():
                    want = model(x)
                try:
                    with quiet(), torch.no_grad():
                        got = runner(x)
                except Exception as exc:
                    batch = x.shape[0]
                    if _batch_is_symbolic(program):
                        en = (f"The loaded program refused an input with batch {batch} ({type(exc).__name__}): the "
                              "batch is dynamic, but the range you gave it at export leaves this size out. Any batch "
                              "size must be accepted.")
                        zh = (f"加载后的程序拒绝了 batch 为 {batch} 的输入（{type(exc).__name__}）：batch 是动态的，"
                              "但导出时给它的取值范围不包括这个大小。任何 batch 大小都必须被接受。")
                    else:
                        en = (f"The loaded program refused an input with batch {batch} ({type(exc).__name__}): its "
                              "batch was fixed to the example's at export. Mark dimension 0 as dynamic when exporting.")
                        zh = (f"加载后的程序拒绝了 batch 为 {batch} 的输入（{type(exc).__name__}）：导出时 batch "
                              "被固定成了示例的大小。导出时请把第 0 维标记为动态。")
                    raise Wrong(en, zh, tried=(f"{label[0]}, input of shape {tuple(x.shape)}",
                                               f"{label[1]}，输入形状 {tuple(x.shape)}"),
                                expected=(f"an output of shape {tuple(want.shape)}", f"形状为 {tuple(want.shape)} 的输出"),
                                got=type(exc).__name__) from None
                problem = differs(got, want)
                if problem is not None:
                    raise Wrong(f"The loaded program's output differs from the model's: {problem}",
                                f"加载后的程序输出与模型不同：{problem}",
                                tried=(f"{label[0]}, input of shape {tuple(x.shape)}",
                                       f"{label[1]}，输入形状 {tuple(x.shape)}"))


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


class _Private(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)


def _build_files(folder: str, round_: int) -> dict[str, bool]:
    """Write the exercise's files into ``folder``; return {file name: unsafe?}.

    The names say nothing about the content, and the safe and unsafe files use both
    extensions, so neither the name nor the suffix gives the answer away.
    """
    gen = torch.Generator().manual_seed(125 + round_)
    model = seeded(_Private(), 126 + round_)
    items: list[tuple[str, bool, Callable[[str], None]]] = [
        ("pt", False, lambda p: torch.save(model.state_dict(), p)),
        ("pt", True, lambda p: torch.save({"weight": torch.randn(3, generator=gen), "meta": _Payload(p)}, p)),
        ("bin", False, lambda p: torch.save({"step": 7, "lr": 0.5, "name": "adam",
                                            "moments": [torch.zeros(2), torch.ones(2)]}, p)),
        ("bin", True, lambda p: _raw_pickle(p, _Payload(p))),
        ("pt", True, lambda p: torch.save(model, p)),
        ("bin", False, lambda p: torch.save(torch.randn(2, 3, generator=gen), p)),
    ]
    order = torch.randperm(len(items), generator=gen).tolist()
    answers = {}
    for index, k in enumerate(order):
        suffix, unsafe, write = items[k]
        name = f"checkpoint_{round_}{index}.{suffix}"
        write(os.path.join(folder, name))
        answers[name] = unsafe
    return answers


def _raw_pickle(path: str, obj: Any) -> None:
    with open(path, "wb") as fh:
        pickle.dump(obj, fh)


@task("lab12.3", "spot the unsafe files", "找出不安全的文件", hints=[
    ("You must decide without running the file. Which loader refuses anything that is not a tensor or a "
     "plain container, before calling it? Another way: a pickle can be read instruction by instruction.",
     "你必须在不运行文件的前提下做出判断。哪个加载器会在调用之前拒绝一切不是张量或普通容器的东西？"
     "另一种方法：pickle 可以逐条指令地读取。"),
    ("Lecture course/12_saving_compiled.ipynb, section '3 · Loading a pickle runs code': torch.load's "
     "default weights-only mode, and pickletools listing what a pickle imports without running it. A file "
     "is unsafe when that loader refuses it.",
     "讲义 course/12_saving_compiled.ipynb 第“3 · 加载 pickle 会执行代码”节：torch.load 默认的仅权重模式，以及用 "
     "pickletools 在不运行的情况下列出 pickle 导入的内容。被该加载器拒绝的文件就是不安全的。"),
])
def _check_unsafe(answer: Any) -> None:
    need_callable(answer, "is_unsafe")
    for round_ in range(2):
        with _Folder() as folder:
            answers = _build_files(folder, round_)
            folder_of = (f"a folder of {len(answers)} files made with torch.save and pickle.dump",
                         f"一个文件夹，其中有 {len(answers)} 个用 torch.save 和 pickle.dump 生成的文件")
            del _TRIPPED[:]
            verdicts: dict[str, Any] = {}
            for name in sorted(answers):
                with quiet():
                    verdicts[name] = answer(os.path.join(folder, name))
                if _TRIPPED:
                    del _TRIPPED[:]
                    raise Wrong(
                        f"Checking {name!r} ran the payload inside it: your function loaded the file with a full "
                        "unpickler. Decide without running the file (lecture 12, section 3).",
                        f"检查 {name!r} 时运行了其中的载荷：你的函数用完整的反序列化器加载了这个文件。"
                        "请在不运行文件的前提下做出判断（第 12 讲第 3 节）。",
                        tried=folder_of, expected=("no code from the file runs", "文件中的代码不会运行"),
                        got=("the file's payload ran", "文件中的载荷运行了"))
            for name, verdict in verdicts.items():
                if not isinstance(verdict, bool):
                    raise Wrong("is_unsafe must return True or False.", "is_unsafe 必须返回 True 或 False。",
                                tried=name, expected=("a bool", "一个 bool"), got=describe(verdict))
            wrong = sorted(name for name in answers if verdicts[name] != answers[name])
            if not wrong:
                continue
            said_all = all(verdicts.values())
            by_suffix = all(verdicts[n] == n.endswith(".bin") for n in answers) or all(
                verdicts[n] == n.endswith(".pt") for n in answers)
            if said_all:
                en, zh = ("You called every file unsafe, but some hold only tensors, numbers, strings and "
                          "lists, which the weights-only loader reads.",
                          "你把所有文件都判为不安全，但其中有些只包含张量、数字、字符串和列表，仅权重加载器可以读取它们。")
            elif by_suffix:
                en, zh = ("Your verdicts follow the file's extension; an extension says nothing about what a file "
                          "holds. Read the content.",
                          "你的判断跟着文件扩展名走；扩展名并不能说明文件里是什么。请读取内容。")
            else:
                en, zh = "Some files were judged wrongly.", "有些文件判断错了。"
            shown = ", ".join(f"{n}: {verdicts[n]!r}" for n in wrong[:3])
            raise Wrong(en, zh, tried=folder_of,
                        expected=", ".join(f"{n}: {answers[n]!r}" for n in wrong[:3]), got=shown)
