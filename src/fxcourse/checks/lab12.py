"""Checkers for labs/lab12_saving_compiled.ipynb (lecture course/12_saving_compiled.ipynb).

The checkers build models and files the learner has not seen, in a temporary folder of their
own. They never load a file the learner could have made unsafe with anything but the
weights-only loader or ``torch.export.load``, and never unpickle the files they build for
exercise 3: the learner's function is what reads those, and a harmless tripwire payload
records whether it ran.

Exercise 3's rule, which the lab states in both languages: a file is *safe* exactly when
``torch.load(path, weights_only=True)`` reads it with torch's own allow-list (nothing added to it);
every other file, refused or unreadable, is *unsafe*. The verdict of each kind of file built here
follows from that rule alone, and ``tests/test_checks_lab12.py`` checks each kind against what the
installed torch's loader does. The answer's calls run with the allow-list as found; whatever it adds
is named as a mistake and taken out again.
"""
from __future__ import annotations

import copy
import os
import pickle
import pickletools
import sys
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


def _with_grads(model: nn.Module, x: torch.Tensor) -> nn.Module:
    """``model`` after one backward pass: its parameters hold gradients, as in the middle of a
    training step (an answer must not clear them). The pass runs in eval mode (no dropout draw
    from the global generator, no running statistics moved); every module keeps its flag."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    model(x).square().sum().backward()
    for m, training in modes:
        m.training = training
    return model


def _in_double(model: nn.Module, seed: int) -> nn.Module:
    """``model`` in float64 with parameters drawn in float64, so that float32 cannot hold them."""
    model = seeded(model, seed).double()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=gen, dtype=torch.float64) * 1e-3)
    return model


def _half_switched(model: nn.Module) -> nn.Module:
    """``model`` in training mode except its dropout: flags an answer that switches the model to
    eval and back (``model.train(was_training)``) would not restore."""
    model.train()
    model.drop.eval()
    return model


def _weights_cases() -> list[tuple[tuple[str, str], Callable[[], nn.Module], nn.Module, list[torch.Tensor]]]:
    return [
        (("a conv + batch-norm model in training mode whose running statistics were updated",
          "处于训练模式、运行统计量已更新的卷积 + 批归一化模型"),
         _ConvNorm,
         _with_grads(_trained_norm(121), *_inputs(1211, (2, 2, 5, 5))), _inputs(1210, (3, 2, 5, 5), (1, 2, 4, 6))),
        (("a linear model with dropout, in training mode except its dropout",
          "带 dropout 的线性模型，除 dropout 外处于训练模式"), _Gated, _half_switched(seeded(_Gated(), 122)),
         _inputs(1220, (4, 5), (2, 5))),
        (("a linear model with dropout, in eval mode", "带 dropout 的线性模型，处于 eval 模式"), _Gated,
         seeded(_Gated(), 123).eval(), _inputs(1230, (3, 5))),
        (("a float64 linear model with dropout, in training mode, its parameters holding gradients",
          "float64 的带 dropout 线性模型，处于训练模式，参数带有梯度"), lambda: _Gated().double(),
         _with_grads(_in_double(_Gated(), 124).train(), _inputs(1241, (3, 5))[0].double()),
         [x.double() for x in _inputs(1240, (3, 5))]),
    ]


def _flags(model: nn.Module) -> dict[str, Any]:
    """Every submodule's ``training`` flag, every parameter's ``requires_grad`` and every state
    entry's dtype: what ``Snapshot`` (values, shapes and submodule names) does not compare."""
    flags: dict[str, Any] = {f"{name or '(the model)'}.training": module.training
                             for name, module in model.named_modules()}
    flags.update({f"{name}.requires_grad": p.requires_grad for name, p in model.named_parameters()})
    flags.update({f"{name}.dtype": str(v.dtype) for name, v in model.state_dict().items()})
    return flags


def _grads(model: nn.Module) -> dict[str, torch.Tensor | None]:
    """A copy of every parameter's ``.grad`` (None where there is none)."""
    return {name: None if p.grad is None else p.grad.detach().clone() for name, p in model.named_parameters()}


def _grads_changed(before: dict[str, torch.Tensor | None], model: nn.Module) -> list[str]:
    now = dict(model.named_parameters())
    return [name for name, g in before.items()
            if name not in now or (g is None) != (now[name].grad is None)
            or (g is not None and not torch.equal(g, now[name].grad))]


# Which files the answer opened for reading, seen through Python's audit hooks ("open" is raised by
# open(), io.open() and os.open(), so by torch.load on a path or a file object). The hook is
# installed once and records nothing unless a check is recording (a private helper of this lab).
_RECORDING: list[list[tuple[str, bool]]] = []
_HOOKED: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _RECORDING:
        return
    try:
        path, mode, flags = args
        if not isinstance(path, (str, bytes, os.PathLike)):
            return
        if isinstance(mode, str):
            reads = "r" in mode or "+" in mode
        else:
            reads = isinstance(flags, int) and (flags & os.O_ACCMODE) != os.O_WRONLY
        _RECORDING[-1].append((os.path.realpath(os.fsdecode(path)), reads))
    except Exception:  # never let the recorder break the answer
        pass


class _Opens:
    """Records the paths opened inside the ``with`` block, and whether each was opened to read."""

    def __enter__(self) -> list[tuple[str, bool]]:
        if not _HOOKED:
            sys.addaudithook(_audit)
            _HOOKED.append(True)
        self.seen: list[tuple[str, bool]] = []
        _RECORDING.append(self.seen)
        return self.seen

    def __exit__(self, *exc: Any) -> None:
        _RECORDING.remove(self.seen)


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


def _layout(path: str) -> tuple[str, int | None]:
    """How the file is laid out, read without unpickling anything: "torch" (a zip with a data.pkl, or
    torch.save's older format, which opens with its magic number), "pickle" (a bare pickle, as
    pickle.dump writes) or "other"; and the protocol its pickle's PROTO instruction names (None:
    protocol 0 or 1, or no pickle)."""
    def first_ops(fh: Any) -> tuple[int | None, Any]:
        protocol, first = None, None
        for op, arg, _ in pickletools.genops(fh):
            if op.name == "PROTO":
                protocol = arg
            if op.name in ("PROTO", "FRAME"):
                continue
            first = (op.name, arg)
            break
        return protocol, first

    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                pickles = [n for n in archive.namelist() if n.endswith("data.pkl")]
                if not pickles:
                    return "other", None
                with archive.open(pickles[0]) as fh:
                    head = fh.read(2)
            return "torch", head[1] if len(head) == 2 and head[0] == 0x80 else None
        with open(path, "rb") as fh:
            protocol, first = first_ops(fh)
    except Exception:  # not a pickle at all
        return "other", None
    legacy = first is not None and first[0] == "LONG1" and first[1] == torch.serialization.MAGIC_NUMBER
    return ("torch" if legacy else "pickle"), protocol


def _weights_only_load(path: str) -> Any:
    with quiet():
        return torch.load(path, weights_only=True)


def _shares_memory(got: nn.Module, given: nn.Module) -> list[str]:
    """The state entries of ``got`` that change when ``given``'s tensors change (``given`` is the
    checker's own model; this runs after everything else about it was compared)."""
    mine = {k: v.detach().clone() for k, v in got.state_dict().items()}
    with torch.no_grad():
        for v in given.state_dict().values():
            v.add_(1)
    return [k for k, v in got.state_dict().items() if k in mine and not torch.equal(v, mine[k])]


def _under_key(obj: Any, key: str) -> list[torch.Tensor]:
    """The tensors stored under ``key`` in the dicts of what the weights-only loader returned."""
    found: list[torch.Tensor] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key and isinstance(v, torch.Tensor):
                found.append(v)
            else:
                found += _under_key(v, key)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            found += _under_key(v, key)
    return found


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
     "第 12 讲第 3 节“加载 pickle 会执行代码”：整个被 pickle 的模块会被拒绝，"
     "state_dict（参数和缓冲区）可以加载。新模型随后装入这些值，并且必须处于 eval 模式；传入的模型保持原来的模式。"),
])
def _check_weights(answer: Any) -> None:
    need_callable(answer, "save_and_reload")
    for label, make, model, xs in _weights_cases():
        reference = copy.deepcopy(model).eval()  # the outputs to match, without touching the model handed over
        with torch.no_grad():
            want = [reference(x) for x in xs]
        before, flags, grads = Snapshot.of(model), _flags(model), _grads(model)
        built: list[nn.Module] = []

        def make_model() -> nn.Module:
            fresh = seeded(make(), 999 + len(built)).train()  # weights unlike the saved model's; a new model trains
            built.append(fresh)
            return fresh

        tried = (f"{label[0]}; your function was given an empty folder", f"{label[1]}；传给你的函数的是一个空文件夹")
        with _Folder() as folder:
            with quiet(), _Opens() as opened:
                got_model = answer(model, make_model, folder)
            files = sorted(os.listdir(folder))
            if not files:
                raise Wrong("Nothing was written to the folder: save the weights into a file inside `folder`.",
                            "文件夹中没有写入任何文件：请把权重保存到 `folder` 中的一个文件里。", tried=tried)
            if len(files) > 1:
                raise Wrong(f"Your function wrote {len(files)} files into the folder ({', '.join(files[:4])}); the lab "
                            "asks for one file that holds every value the model needs.",
                            f"你的函数在文件夹中写了 {len(files)} 个文件（{', '.join(files[:4])}）；实验要求的是一个文件，"
                            "其中包含模型所需的每一个值。",
                            tried=tried, expected=("one file in the folder", "文件夹中的一个文件"),
                            got=(f"{len(files)} files", f"{len(files)} 个文件"))
            for name in files:
                path = os.path.join(folder, name)
                if not os.path.isfile(path):
                    raise Wrong(f"{name!r} is a folder: save the weights into one file directly inside `folder`.",
                                f"{name!r} 是一个文件夹：请把权重保存到直接位于 `folder` 中的一个文件里。",
                                tried=tried, expected=("one file in the folder", "文件夹中的一个文件"),
                                got=("a sub-folder", "一个子文件夹"))
                refused = _weights_only_error(path)
                layout, protocol = _layout(path)
                if refused is not None and layout == "pickle":
                    raise Wrong(
                        f"The file {name!r} was written with pickle, not torch.save: torch.load's weights-only loader "
                        f"cannot read it ({refused}), and opening it takes pickle.load, a full unpickler that can run "
                        "code. Save the state_dict with torch.save.",
                        f"文件 {name!r} 是用 pickle 而不是 torch.save 写出的：torch.load 的仅权重加载器读不了它（{refused}），"
                        "打开它需要 pickle.load 这个可能执行代码的完整反序列化器。请用 torch.save 保存 state_dict。",
                        tried=tried, expected=("a file torch.load(path, weights_only=True) reads",
                                               "torch.load(path, weights_only=True) 能读取的文件"), got=refused)
                if refused is not None and layout == "other":
                    raise Wrong(
                        f"The file {name!r} is no torch.save file: torch.load's weights-only loader cannot read it "
                        f"({refused}). Save the weights with torch.save.",
                        f"文件 {name!r} 不是 torch.save 写出的文件：torch.load 的仅权重加载器读不了它（{refused}）。"
                        "请用 torch.save 保存权重。",
                        tried=tried, expected=("a file torch.load(path, weights_only=True) reads",
                                               "torch.load(path, weights_only=True) 能读取的文件"), got=refused)
                if refused is not None and "Unsupported operand" in refused and protocol != 2:
                    raise Wrong(
                        f"The file {name!r} is refused by torch.load's weights-only loader ({refused}): it was saved "
                        f"with pickle protocol {protocol if protocol is not None else '0 or 1'}, whose instructions that "
                        "loader does not all read. Keep torch.save's default protocol, 2.",
                        f"文件 {name!r} 被 torch.load 的仅权重加载器拒绝（{refused}）：它是用 pickle 协议 "
                        f"{protocol if protocol is not None else '0 或 1'} 保存的，该加载器并不读取这个协议的全部指令。"
                        "请保留 torch.save 的默认协议 2。",
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
            cleared = _grads_changed(grads, model)
            if cleared:
                now = dict(model.named_parameters())
                raise Wrong(
                    "Your function changed the gradients of the model it was given (for example by zeroing or "
                    "clearing them): a model in the middle of training keeps the gradients it has accumulated. Leave "
                    "the model you were given as it is; saving needs only its state_dict.",
                    "你的函数改动了传入模型的梯度（例如把它们清零或清空）：正在训练中的模型要保留已经累积的梯度。"
                    "请让传入的模型保持原样；保存只需要它的 state_dict。",
                    tried=tried, expected=f"{cleared[0]}.grad == the gradient it held",
                    got=f"{cleared[0]}.grad == " + ("None" if cleared[0] not in now or now[cleared[0]].grad is None
                                                     else "a changed tensor"))
            require_untouched(before, model, tried=tried, en="Your function changed the model it was given.",
                              zh="你的函数修改了传入的模型。")
            if got_model is model:
                raise Wrong("Your function returned the model it was given; return the fresh model built with "
                            "make_model(), after loading the saved weights into it.",
                            "你的函数返回了传入的那个模型；应返回用 make_model() 新建、并装入了已保存权重的模型。",
                            tried=tried)
            inner = getattr(got_model, "_orig_mod", None)
            if inner is not None and any(inner is m for m in built):
                raise Wrong("The model you returned is the new model wrapped by torch.compile; return the model itself "
                            "(built by make_model(), with the file loaded into it, in eval mode).",
                            "你返回的是被 torch.compile 包装过的新模型；请返回模型本身（由 make_model() 创建、装入了文件、处于 eval 模式）。",
                            tried=tried, expected=("the model make_model() built", "make_model() 创建的模型"),
                            got=described(got_model))
            if isinstance(got_model, nn.Module) and not any(got_model is m for m in built) and any(
                    sub is m for sub in got_model.modules() for m in built):
                raise Wrong("The model you returned wraps the new model in another module; return the model itself, "
                            "as make_model() built it.",
                            "你返回的模型把新模型包在了另一个模块里；请返回 make_model() 创建的模型本身。",
                            tried=tried, expected=("the model make_model() built", "make_model() 创建的模型"),
                            got=described(got_model))
            if not built or not any(got_model is m for m in built):
                raise Wrong("The model you returned was not built by make_model(): build the new model by calling "
                            "make_model(), then load the file into it.",
                            "你返回的模型不是由 make_model() 创建的：请调用 make_model() 新建模型，再把文件装入其中。",
                            tried=tried, got=described(got_model))
            if any(m.training for m in got_model.modules()):
                raise Wrong("The model you returned is in training mode (dropout and batch norm then behave "
                            "differently); the lab asks for it in eval mode.",
                            "你返回的模型处于训练模式（此时 dropout 和批归一化的行为不同）；实验要求它处于 eval 模式。",
                            tried=tried, expected="model.training == False", got="model.training == True")
            state = got_model.state_dict()
            missing = [k for k, v in before.state.items() if k not in state or not torch.equal(state[k], v)]
            recast = [k for k in missing if k in state and state[k].dtype != before.state[k].dtype]
            if recast:
                k = recast[0]
                raise Wrong(
                    f"The model you returned holds {recast[:3]} as {state[k].dtype}, but the saved model's are "
                    f"{before.state[k].dtype}: make_model() builds the model in the right dtype; load the file into it "
                    "without casting it.",
                    f"你返回的模型中 {recast[:3]} 是 {state[k].dtype}，而保存的模型中是 {before.state[k].dtype}："
                    "make_model() 建出的模型 dtype 是对的；请把文件装入其中，不要转换它的 dtype。",
                    tried=tried, expected=f"{k}.dtype == {before.state[k].dtype}", got=f"{k}.dtype == {state[k].dtype}")
            if missing:
                saved = [_weights_only_load(os.path.join(folder, name)) for name in files]
                cast = next(((k, t.dtype) for k in missing for obj in saved for t in _under_key(obj, k)
                             if t.shape == before.state[k].shape and t.dtype != before.state[k].dtype), None)
                if cast is not None:
                    k, dtype = cast
                    raise Wrong(
                        f"After reloading, {missing[:3]} do not hold the saved values exactly: the file holds "
                        f"{k} as {dtype}, but the model's is {before.state[k].dtype}. A round trip must give back "
                        "every value bit for bit: save the tensors in the dtype they have.",
                        f"重新加载后，{missing[:3]} 的值与保存时不完全相同：文件中的 {k} 是 {dtype}，而模型中的是 "
                        f"{before.state[k].dtype}。保存再加载必须逐位还原每一个值：请按张量原有的 dtype 保存。",
                        tried=tried, expected=(f"{k} saved as {before.state[k].dtype}", f"{k} 以 {before.state[k].dtype} 保存"),
                        got=(f"{k} saved as {dtype}", f"{k} 以 {dtype} 保存"))
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
            where = {os.path.realpath(os.path.join(folder, name)) for name in files}
            if not any(reads and path in where for path, reads in opened):
                raise Wrong(
                    "The new model holds the right values, but your function never opened the saved file to read it: "
                    "it took the values from the model it was given. Load the file into the new model, as another "
                    "process would have to.",
                    "新模型中的值是对的，但你的函数从未打开保存的文件来读取：这些值取自传入的模型。"
                    "请把文件装入新模型，就像另一个进程必须做的那样。",
                    tried=tried, expected=("the saved file read back", "读回已保存的文件"),
                    got=("the file written, never read", "文件只被写出，从未被读取"))
        shared = _shares_memory(got_model, model)
        if shared:
            raise Wrong(
                f"The model you returned shares its tensors ({shared[:3]}) with the model you were given: when that "
                "model trains on, yours changes with it. Its values must come from the file, in tensors of its own.",
                f"你返回的模型与传入的模型共用张量（{shared[:3]}）：传入的模型继续训练时，你的模型也会跟着变。"
                "它的值必须来自文件，并放在它自己的张量中。",
                tried=tried, expected=("tensors of its own", "自己的张量"),
                got=("tensors shared with the given model", "与传入模型共用的张量"))
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
          "forward(x, mask)：16 个位置，示例的批大小为 3、长度为 5"),
         pooled, _pooled_args(1230, 3, 5),
         [_pooled_args(1231 + i, b, n)
          for i, (b, n) in enumerate([(3, 5), (1, 5), (3, 1), (4, 16), (33, 9), (2049, 2), (100003, 1)])]),
        (("forward(tokens, keep) with a bool mask: 12 positions, example batch 2 and length 7",
          "forward(tokens, keep)，掩码为 bool：12 个位置，示例的批大小为 2、长度为 7"),
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


def _batch_bounds(program: Any) -> list[str]:
    """The upper bounds the program's range constraints put on its inputs' batch symbol, as text
    ("int_oo" when unbounded); empty when the program has no such symbol to read."""
    try:
        names = list(program.graph_signature.user_inputs)
        nodes = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
        bounds = []
        for name in names:
            size = nodes[name].meta["val"].shape[0]
            if isinstance(size, torch.SymInt) and size.node.expr in program.range_constraints:
                bounds.append(str(program.range_constraints[size.node.expr].upper))
        return bounds
    except Exception:  # an unusual program: nothing to read
        return []


def _export_refusal(exc: BaseException, model: nn.Module, tried: Any) -> Wrong | None:
    """A named mistake for what torch.export said when the learner's export failed, else None."""
    text = str(exc)
    rows = int(model.pos.shape[0])
    if "must always be equal" in text:
        return Wrong("torch.export refused your dynamic shapes: the two inputs share their batch and their length, "
                     "but you gave each input its own Dim. One dimension that both inputs share needs one Dim object.",
                     "torch.export 拒绝了你的动态形状：两个输入共用批大小和长度，但你给每个输入各用了一个 Dim。"
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
                     "两个输入共用的维度如果只在一个输入上标记，也会被固定。请标记批维度和长度维，并且在两个输入上都标记。",
                     tried=tried, got=one_line_error(exc))
    return None


@task("lab12.2", "export two inputs with a dynamic batch and length, save and load",
      "以动态的批大小和长度导出双输入模型、保存并加载", hints=[
    ("The file must be readable by torch.export.load, and the program in it must accept batches and lengths "
     "the example did not have. Which dimensions vary, which inputs share them, and how long may a sequence "
     "be for the model itself?",
     "文件必须能被 torch.export.load 读取，而且其中的程序必须接受示例之外的批大小和长度。哪些维会变化？"
     "哪些输入共用它们？对模型本身来说，序列最长可以多长？"),
    ("Lecture course/12_saving_compiled.ipynb, section '4 · torch.export.save and load', and lecture 10's "
     "section on dynamic shapes: a Dim names a dimension, the same Dim object in two inputs says they are equal, "
     "and a Dim can carry a max. Save the program itself with the export module's save function.",
     "第 12 讲第 4 节“torch.export.save 与 load”，以及第 10 讲关于动态形状的部分："
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
                    try:
                        keywords = dict(program.example_inputs[1] or {})
                    except Exception:  # an unusual program: nothing to read
                        keywords = {}
                    if keywords:
                        raise Wrong(
                            f"The loaded program refused the inputs given positionally ({type(exc).__name__}): it was "
                            f"exported with {', '.join(sorted(keywords))} as keyword argument"
                            + ("s, and takes them only so. " if len(keywords) > 1 else ", and takes it only so. ") +
                            "The program must be callable as the model is, with the two tensors positionally: export "
                            "with the example as args, not kwargs.",
                            f"加载后的程序拒绝了按位置传入的输入（{type(exc).__name__}）：导出时 {', '.join(sorted(keywords))} "
                            "是作为关键字参数传入的，程序也就只接受这种方式。程序必须能像模型一样按位置接受这两个张量调用：请把示例作为 "
                            "args 而不是 kwargs 传给导出。",
                            tried=at, expected=(f"an output of shape {tuple(want.shape)}", f"形状为 {tuple(want.shape)} 的输出"),
                            got=one_line_error(exc)) from None
                    batch, length = args[0].shape[:2]
                    fixed = [what for dim, what, size, seen in ((0, ("batch", "批大小"), batch, example[0].shape[0]),
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
                              "在两个输入上标记为动态" + ("；会变化的不只是批大小。" if en_what == "length" else "。"))
                    else:
                        en = (f"The loaded program refused inputs of shapes {shapes} ({type(exc).__name__}): the "
                              "dimensions are dynamic, but the range you gave them at export leaves these sizes out. "
                              "Any batch, and any length the model can take, must be accepted.")
                        zh = (f"加载后的程序拒绝了形状为 {shapes_zh} 的输入（{type(exc).__name__}）：这些维度是动态的，"
                              "但导出时给它们的取值范围不包括这些大小。任何批大小，以及模型能处理的任何长度，都必须被接受。")
                    raise Wrong(en, zh, tried=at,
                                expected=(f"an output of shape {tuple(want.shape)}", f"形状为 {tuple(want.shape)} 的输出"),
                                got=one_line_error(exc)) from None
                problem = differs(got, want)
                if problem is not None:
                    raise Wrong(f"The loaded program's output differs from the model's: {problem}",
                                f"加载后的程序输出与模型不同：{problem}", tried=at)
            capped = [b for b in _batch_bounds(program) if b not in ("int_oo", "oo")]
            if capped:
                raise Wrong(f"The loaded program accepts batches of at most {capped[0]}: the batch's Dim has a max. "
                            "Any batch size must be accepted; only the length is bounded, by the model's table of "
                            "positions.",
                            f"加载后的程序只接受不超过 {capped[0]} 的批大小：批维度的 Dim 带有 max。必须接受任意批大小；"
                            "只有长度受限，而限制它的是模型的位置表。",
                            tried=tried, expected=("a batch range with no upper bound", "没有上界的批大小取值范围"),
                            got=(f"batch <= {capped[0]}", f"批大小 <= {capped[0]}"))


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


class _BuiltinCall:
    """Unpickles as ``getattr("abc", "upper")``: a Python builtin the weights-only loader refuses."""

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (getattr, ("abc", "upper"))


class _LinearCall:
    """Unpickles as ``nn.Linear(2, 2)``: a torch class the weights-only loader refuses to build."""

    def __reduce__(self) -> tuple[Any, tuple[int, int]]:
        return (nn.Linear, (2, 2))


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


def _broken_save(obj: Any, *, cut: bool = False) -> Callable[[str], None]:
    """A torch.save archive of ``obj`` with its first tensor's data record left out (``cut``: cut to
    4 bytes): the pickle is intact and names nothing unsafe, but the loader cannot read the file.
    (A cut record is read by loading options that skip the data, such as map_location="meta".)"""
    def write(path: str) -> None:
        whole = path + ".whole"
        torch.save(obj, whole)
        try:
            with zipfile.ZipFile(whole) as source, zipfile.ZipFile(path, "w") as target:
                for info in source.infolist():
                    data = source.read(info.filename)
                    if info.filename.endswith("/data/0"):
                        if not cut:
                            continue
                        data = data[:4]
                    target.writestr(info, data)
        finally:
            os.remove(whole)
    return write


def _plain_zip(path: str) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes/readme.txt", "step 7, lr 0.5")
        archive.writestr("notes/weights.csv", "0.5,0.25\n")


# What a kind of file is, in the feedback: (English, 中文). The order is the order in which a wrong verdict is
# reported: the plain cases first, then those that only a narrower reading of the rule gets wrong.
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
    "linear_call": ("torch.save of a dict whose pickle builds an nn.Linear(2, 2)",
                    "torch.save 保存的 dict，其 pickle 会构建一个 nn.Linear(2, 2)"),
    "builtin_call": ("torch.save of a dict whose pickle calls a Python builtin (getattr)",
                     "torch.save 保存的 dict，其 pickle 会调用一个 Python 内置函数（getattr）"),
    "raw_plain": ("pickle.dump of a dict of numbers and strings", "pickle.dump 保存的由数字和字符串组成的 dict"),
    "raw_int": ("pickle.dump of the int 3, pickle protocol 2", "pickle.dump 以 pickle 协议 2 保存的整数 3"),
    "empty": ("an empty file", "一个空文件"),
    "garbage": ("a file of bytes that are no pickle", "一个内容不是 pickle 的字节文件"),
    "zip": ("a zip archive of two text files, no checkpoint in it", "一个只有两个文本文件、没有检查点的 zip 存档"),
    "p4_payload": ("torch.save with pickle_protocol=4 of tensors next to an object whose __reduce__ names a function",
                   "以 pickle_protocol=4 用 torch.save 保存的张量，旁边还有一个 __reduce__ 指向某个函数的对象"),
    "p4_plain": ("torch.save with pickle_protocol=4 of a dict of tensors", "以 pickle_protocol=4 用 torch.save 保存的张量 dict"),
    "broken": ("a torch.save archive of tensors with a tensor's data record missing",
               "一个缺少某个张量数据记录的 torch.save 张量存档"),
    "truncated": ("a torch.save archive of tensors with a tensor's data record cut short",
                  "一个某个张量的数据记录被截短了的 torch.save 张量存档"),
    "legacy": ("torch.save of tensors in its older format (_use_new_zipfile_serialization=False)",
               "torch.save 以旧格式（_use_new_zipfile_serialization=False）保存的张量"),
    "exception": ("torch.save of a tensor next to a ValueError instance", "torch.save 保存的张量，旁边还有一个 ValueError 实例"),
    "nested": ("torch.save of a jagged nested tensor", "torch.save 保存的 jagged 嵌套张量（nested tensor）"),
    "sparse": ("torch.save of a sparse tensor (the loader warns while reading it)",
               "torch.save 保存的稀疏张量（加载器读取时会发出警告）"),
    "p3_plain": ("torch.save with pickle_protocol=3 of a dict of tensors and a number (the loader warns while reading it)",
                 "以 pickle_protocol=3 用 torch.save 保存的张量和数字 dict（加载器读取时会发出警告）"),
    "p1_plain": ("torch.save with pickle_protocol=1 of a dict of tensors", "以 pickle_protocol=1 用 torch.save 保存的张量 dict"),
    "p3_bytes": ("torch.save with pickle_protocol=3 of a tensor next to bytes",
                 "以 pickle_protocol=3 用 torch.save 保存的张量，旁边还有 bytes"),
}
_SAFE_KINDS = ("state_dict", "plain", "tensor", "batch_norm", "dtypes", "list", "allowed", "legacy", "exception",
               "nested", "sparse", "p3_plain")
_REFUSED_KINDS = ("payload", "raw_payload", "module", "torch_call", "linear_call", "builtin_call", "p4_payload",
                  "p4_plain", "p1_plain", "p3_bytes")
# What the loader does not read in a file saved with another pickle protocol than torch.save's default (2).
_PROTOCOL_OF = {"p4_payload": 4, "p4_plain": 4, "p1_plain": 1, "p3_bytes": 3}
_UNREADABLE_KINDS = ("broken", "truncated", "raw_plain", "raw_int", "empty", "garbage", "zip")


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
        ("bin", "legacy", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "step": 7}, p,
                                               _use_new_zipfile_serialization=False)),
        ("pt", "payload", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "meta": _Payload(p)}, p)),
        ("bin", "raw_payload", lambda p: _raw_pickle(_Payload(p))(p)),
        ("pt", "module", lambda p: torch.save(model, p)),
        ("bin", "torch_call", lambda p: torch.save({"weight": torch.ones(2), "gain": _TorchCall()}, p)),
        ("pt", "linear_call", lambda p: torch.save({"weight": torch.ones(2), "layer": _LinearCall()}, p)),
        ("bin", "builtin_call", lambda p: torch.save({"weight": torch.ones(2), "name": _BuiltinCall()}, p)),
        ("pt", "p4_payload", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "meta": _Payload(p)}, p,
                                                  pickle_protocol=4)),
        ("bin", "p4_plain", lambda p: torch.save({"weight": torch.randn(3, generator=gen)}, p, pickle_protocol=4)),
        ("pt", "broken", _broken_save({"weight": torch.ones(3), "bias": torch.zeros(2)})),
        ("bin", "truncated", _broken_save({"weight": torch.randn(3, generator=gen), "step": 7}, cut=True)),
        ("pt", "raw_plain", _raw_pickle({"step": 7, "lr": 0.5, "name": "adam"})),
        ("bin", "raw_int", _raw_pickle(3, protocol=2)),
        ("pt", "empty", _raw_bytes(b"")),
        ("bin", "garbage", _raw_bytes(bytes(range(97, 123)) * 3)),
        ("pt", "zip", _plain_zip),
        ("bin", "exception", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "error": ValueError("bad lr")},
                                                  p)),
        ("pt", "nested", lambda p: torch.save(torch.nested.nested_tensor(
            [torch.randn(2, generator=gen), torch.randn(3, generator=gen)], layout=torch.jagged), p)),
        ("bin", "sparse", lambda p: torch.save(torch.randn(3, 3, generator=gen).relu().to_sparse(), p)),
        ("pt", "p3_plain", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "step": 7}, p,
                                                pickle_protocol=3)),
        ("bin", "p1_plain", lambda p: torch.save({"weight": torch.randn(3, generator=gen)}, p, pickle_protocol=1)),
        ("pt", "p3_bytes", lambda p: torch.save({"weight": torch.randn(3, generator=gen), "blob": b"ab"}, p,
                                                pickle_protocol=3)),
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


def _torch_own_globals() -> set[Any]:
    """What torch itself puts on the weights-only loader's allow-list: what was there when this module was
    imported, and what torch adds when it is imported (Python's built-in exception classes and two traceback
    types, from torch.distributed; the jagged nested tensor's class and rebuild function; torch._dynamo's
    _DimRange once it is imported), in case something cleared the list before that."""
    import builtins
    import traceback

    own = set(_FOUND_AT_IMPORT)
    own.update(t for t in vars(builtins).values() if isinstance(t, type) and issubclass(t, BaseException))
    own.update((traceback.StackSummary, traceback.FrameSummary))
    try:
        from torch.nested._internal.nested_tensor import NestedTensor, _rebuild_njt

        own.update((NestedTensor, _rebuild_njt))
    except Exception:  # another torch: nothing more to add
        pass
    decorators = sys.modules.get("torch._dynamo.decorators")  # imported with torch._dynamo, which adds it
    if decorators is not None and hasattr(decorators, "_DimRange"):
        own.add(decorators._DimRange)
    return own


_FOUND_AT_IMPORT = frozenset(torch.serialization.get_safe_globals())


def _named(entries: Any) -> str:
    """One entry of the allow-list to show: ValueError when it is among them, else the first by name."""
    entries = list(entries)
    if ValueError in entries:
        return "ValueError"
    names = sorted(getattr(g, "__qualname__", None) or repr(g) for g in entries)
    return names[0] if names else "?"


class _AllowListWatch:
    """Around one call of the answer: the answer runs with torch's own allow-list (what it found, plus torch's
    own entries where something removed them before the check); every global it adds to the weights-only
    loader's allow-list (``add_safe_globals`` or the ``safe_globals`` context, which both go through
    ``_weights_only_unpickler._add_safe_globals``, or set some other way) is recorded in ``added``, every entry
    missing while the loader looked the list up in ``narrowed``, every entry missing afterwards in ``left``.
    Afterwards the list is put back exactly as it was found."""

    def __enter__(self) -> "_AllowListWatch":
        from torch import _weights_only_unpickler as unpickler

        self._unpickler = unpickler
        self._found = set(torch.serialization.get_safe_globals())
        self._add = unpickler._add_safe_globals
        self._lookup = unpickler._get_user_allowed_globals
        self._start = self._found | _torch_own_globals()
        if self._start != self._found:
            unpickler._clear_safe_globals()
            self._add(list(self._start))
        self.added: list[Any] = []
        self.narrowed: set[Any] = set()
        self.left: set[Any] = set()

        def recording(safe_globals: list[Any]) -> None:
            self.added.extend(g for g in safe_globals if g not in self._start)  # what was there widens nothing
            self._add(safe_globals)

        def looked_up() -> dict[str, Any]:
            self.narrowed.update(self._start - set(unpickler._marked_safe_globals_set))
            return self._lookup()

        unpickler._add_safe_globals = recording
        unpickler._get_user_allowed_globals = looked_up
        return self

    def __exit__(self, *exc: Any) -> None:
        self._unpickler._add_safe_globals = self._add
        self._unpickler._get_user_allowed_globals = self._lookup
        now = set(torch.serialization.get_safe_globals())
        self.added.extend(g for g in now if g not in self._start and g not in self.added)  # set some other way
        self.left = self._start - now
        self._unpickler._clear_safe_globals()
        if self._found:
            self._add(list(self._found))


@task("lab12.3", "spot the unsafe files", "找出不安全的文件", hints=[
    ("You must decide without running anything the file names, and your function must answer for every "
     "file, even one that is not a checkpoint at all. Which loader refuses anything that is not a tensor or a "
     "plain container, before calling it, and what does it do with a file it cannot read?",
     "你必须在不运行文件中指定的任何东西的前提下做出判断，而且你的函数必须对每个文件都给出答案，即使它根本不是检查点。"
     "哪个加载器会在调用之前拒绝一切不是张量或普通容器的东西？它遇到读不了的文件时会怎样？"),
    ("Lecture course/12_saving_compiled.ipynb, section '3 · Loading a pickle runs code': torch.load's "
     "default weights-only mode refuses a file before calling anything in it. A file is safe exactly when that "
     "loader, with its default options and nothing added to its allow-list, reads the whole file; a file it "
     "refuses, and a file it cannot read at all, is unsafe.",
     "第 12 讲第 3 节“加载 pickle 会执行代码”：torch.load 默认的仅权重模式会在调用文件中的"
     "任何东西之前拒绝它。当且仅当该加载器在默认选项下、不往允许列表里添加任何东西时能读取整个文件，这个文件才是安全的；"
     "它拒绝的文件，以及它根本读不了的文件，都是不安全的。"),
])
def _check_unsafe(answer: Any) -> None:
    need_callable(answer, "is_unsafe")
    for round_ in range(2):
        with _Folder() as folder:
            with quiet():
                kinds = _build_files(folder, round_)
            folder_of = (f"a folder of {len(kinds)} files: made with torch.save and pickle.dump, and a few that are "
                         "no checkpoint at all",
                         f"一个有 {len(kinds)} 个文件的文件夹：有用 torch.save 和 pickle.dump 生成的，也有几个根本不是检查点")
            verdicts: dict[str, Any] = {}
            raised: dict[str, Exception] = {}
            tripped: list[str] = []
            widened: list[tuple[str, Any]] = []
            narrowed: list[tuple[str, set[Any], bool]] = []
            for name in sorted(kinds):
                del _TRIPPED[:]
                watch = _AllowListWatch()
                try:
                    with quiet(), watch:
                        verdicts[name] = answer(os.path.join(folder, name))
                except NotImplementedError:  # the lab's stub: not yet implemented
                    raise
                except Exception as exc:  # judged below, after every file had its turn
                    raised[name] = exc
                widened += [(name, g) for g in watch.added]
                if watch.narrowed or watch.left:
                    narrowed.append((name, watch.narrowed or watch.left, bool(watch.narrowed)))
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
            if widened:
                name, added_global = widened[0]
                shown = getattr(added_global, "__qualname__", None) or repr(added_global)
                raise Wrong(
                    f"Checking {name!r}, your function widened the weights-only loader's allow-list (it added "
                    f"{shown} with add_safe_globals or safe_globals): the loader then calls what it would refuse. The "
                    "rule is whether torch.load(path, weights_only=True) reads the file with torch's own allow-list, "
                    "nothing added.",
                    f"检查 {name!r} 时，你的函数扩大了仅权重加载器的允许列表（用 add_safe_globals 或 safe_globals 加入了 "
                    f"{shown}）：加载器于是会调用它本来要拒绝的东西。规则是 torch.load(path, weights_only=True) "
                    "在 torch 自带、未添加任何内容的允许列表下能否读取该文件。",
                    tried=folder_of, expected=("the allow-list left as it was", "允许列表保持原样"),
                    got=(f"{shown} added", f"加入了 {shown}"))
            if narrowed:
                name, removed, while_loading = narrowed[0]
                shown = _named(removed)
                more = len(removed) - 1
                what = (f"{shown} and {more} other entries" if more else shown, f"{shown} 等 {more + 1} 项" if more else shown)
                if while_loading:
                    en = (f"Checking {name!r}, your function loaded the file with a narrowed allow-list ({what[0]} "
                          "removed, by clear_safe_globals or otherwise). The list is not empty to begin with: torch puts "
                          "Python's built-in exception classes and a few of its own types (the nested tensor's) on it when "
                          "it is imported, and the rule takes the list as torch has it; a saved ValueError, for example, "
                          "is safe.")
                    zh = (f"检查 {name!r} 时，你的函数在允许列表被缩小的情况下加载了文件（用 clear_safe_globals 或其他方式移除了 "
                          f"{what[1]}）。这个列表一开始就不是空的：torch 在导入时会把 Python 内置的异常类和它自己的几种类型"
                          "（例如嵌套张量的类型）放进去，而规则用的就是 torch 所设的列表；例如保存下来的 ValueError 是安全的。")
                else:
                    en = (f"Checking {name!r}, your function left the weights-only loader's allow-list narrower than it "
                          f"found it ({what[0]} removed). Leave the list as you found it: the safe_globals context removes, "
                          "when it exits, every entry it was given, even those that were on the list before, and "
                          "clear_safe_globals empties it.")
                    zh = (f"检查 {name!r} 时，你的函数让仅权重加载器的允许列表比原来更窄（移除了 {what[1]}）。请让列表保持原样："
                          "safe_globals 上下文在退出时会移除交给它的每一项，即使这些项原本就在列表中；clear_safe_globals 则会清空列表。")
                raise Wrong(en, zh, tried=folder_of, expected=("the allow-list left as it was", "允许列表保持原样"),
                            got=(f"{what[0]} removed", f"移除了 {what[1]}"))
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
            elif first == "legacy":
                en, zh = ("You called a file unsafe that torch.load(path, weights_only=True) reads: torch.save's "
                          "older format (_use_new_zipfile_serialization=False) holds only tensors and plain data, and "
                          "the loader reads it with its default options. An option such as mmap=True, which needs the "
                          "zip format, is not part of the rule.",
                          "你把一个 torch.load(path, weights_only=True) 能读取的文件判为不安全：torch.save 的旧格式"
                          "（_use_new_zipfile_serialization=False）只包含张量和普通数据，加载器用默认选项就能读取它。"
                          "mmap=True 这样需要 zip 格式的选项不属于规则的一部分。")
            elif first in ("exception", "nested"):
                en, zh = ("You called a file unsafe that torch.load(path, weights_only=True) reads: its allow-list is not "
                          "empty to begin with. When it is imported, torch puts Python's built-in exception classes (a "
                          "saved ValueError, say) and a few of its own types (the jagged nested tensor's) on it; "
                          "torch.serialization.get_safe_globals() shows them. A list of your own that leaves them out, "
                          "or a cleared list, is narrower than the loader's.",
                          "你把一个 torch.load(path, weights_only=True) 能读取的文件判为不安全：它的允许列表一开始就不是空的。"
                          "torch 在导入时会把 Python 内置的异常类（例如保存下来的 ValueError）和它自己的几种类型（例如 jagged "
                          "嵌套张量的类型）放进去；torch.serialization.get_safe_globals() 可以看到它们。漏掉它们的自定义列表，"
                          "或者被清空的列表，都比加载器的窄。")
            elif first in ("sparse", "p3_plain"):
                en, zh = ("You called a file unsafe that torch.load(path, weights_only=True) reads: the loader warns "
                          "while reading it (it checks a sparse tensor's invariants; it notes a pickle protocol other "
                          "than the default 2), but a warning is not a refusal. A protocol-3 file of tensors and numbers "
                          "is read; turning warnings into errors, or calling every protocol but 2 refused, gets such "
                          "files wrong.",
                          "你把一个 torch.load(path, weights_only=True) 能读取的文件判为不安全：加载器读取它时会发出警告"
                          "（检查稀疏张量的不变量；提示 pickle 协议不是默认的 2），但警告并不是拒绝。只有张量和数字的协议 3 "
                          "文件是可以读取的；把警告变成错误，或者把 2 以外的所有协议都当作会被拒绝，都会判错这样的文件。")
            elif first in _SAFE_KINDS:
                en, zh = ("You called a file unsafe that torch.load(path, weights_only=True) reads: its allow-list "
                          "takes tensors of every dtype, buffers such as num_batches_tracked, and a few torch types "
                          "(torch.Size, torch.device, dtypes) besides sets and bytes. If you check the names a "
                          "pickle imports yourself, your list is narrower than the loader's.",
                          "你把一个 torch.load(path, weights_only=True) 能读取的文件判为不安全：它的允许列表接受各种 dtype "
                          "的张量、num_batches_tracked 这样的缓冲区，以及 set、bytes 之外的几种 torch 类型（torch.Size、"
                          "torch.device、dtype）。如果你自己检查 pickle 导入的名字，你的列表比加载器的窄。")
            elif first in ("torch_call", "linear_call", "builtin_call"):
                en, zh = ("You called a file safe that the weights-only loader refuses: its pickle calls a function "
                          "or builds a class that is not on the loader's allow-list (a torch function, a torch class, "
                          "a Python builtin). Coming from torch or from Python itself does not make a callable safe "
                          "to call while loading.",
                          "你把一个仅权重加载器会拒绝的文件判为安全：它的 pickle 会调用一个不在加载器允许列表中的函数或类"
                          "（torch 函数、torch 类、Python 内置函数）。来自 torch 或 Python 本身，并不意味着加载时调用它就是安全的。")
            elif first in ("p1_plain", "p3_bytes"):
                protocol = _PROTOCOL_OF[first]
                how = (("writes booleans (a tensor's requires_grad flag) with the INT instruction",
                        "用 INT 指令写布尔值（例如张量的 requires_grad 标志）") if protocol == 1 else
                       ("writes bytes with the SHORT_BINBYTES instruction (protocol 2 writes them as a call the loader "
                        "allows)", "用 SHORT_BINBYTES 指令写 bytes（协议 2 则把 bytes 写成加载器允许的调用）"))
                en, zh = (f"You called a file safe that the weights-only loader refuses: it was saved with "
                          f"pickle_protocol={protocol}, which {how[0]}; that loader does not read this instruction. It reads "
                          "the instructions of torch.save's default protocol, 2; a file written with another protocol is "
                          "refused as soon as it holds one it does not read, even when it holds only tensors and plain "
                          "data. The protocol number alone does not tell: read every instruction, or let the loader "
                          "decide.",
                          f"你把一个仅权重加载器会拒绝的文件判为安全：它是用 pickle_protocol={protocol} 保存的，该协议{how[1]}，"
                          "而该加载器不读取这条指令。加载器读取的是 torch.save 默认协议 2 的指令；用其他协议写出的文件，只要含有"
                          "它不读取的指令就会被拒绝，即使其中只有张量和普通数据。只看协议号是判断不了的：要读全部指令，或者交给加载器判断。")
            elif first in ("p4_payload", "p4_plain"):
                en, zh = ("You called a file safe that the weights-only loader refuses: it was saved with "
                          "pickle_protocol=4, whose instructions (FRAME, STACK_GLOBAL) that loader does not read, so it "
                          "refuses the file even when it holds only tensors. torch.save's default protocol is 2. If you "
                          "read a pickle's instructions yourself, read all of them: protocol 4 imports names with "
                          "STACK_GLOBAL, not GLOBAL.",
                          "你把一个仅权重加载器会拒绝的文件判为安全：它是用 pickle_protocol=4 保存的，该加载器不读取这个协议的指令"
                          "（FRAME、STACK_GLOBAL），所以即使文件里只有张量，它也会拒绝。torch.save 的默认协议是 2。"
                          "如果你自己读取 pickle 的指令，就要读全部指令：协议 4 用 STACK_GLOBAL 而不是 GLOBAL 导入名字。")
            elif first in ("broken", "truncated"):
                en, zh = ("You called a file safe that the weights-only loader cannot read: its pickle names nothing "
                          "unsafe, but the data record of a tensor is missing from the archive or cut short. Reading "
                          "the names a pickle imports is not enough, nor is loading with an option that skips the "
                          "data (map_location='meta', mmap=True): the rule is whether the loader, with its default "
                          "options, reads the whole file.",
                          "你把一个仅权重加载器读不了的文件判为安全：它的 pickle 没有指定任何不安全的东西，但存档里某个张量的"
                          "数据记录缺失或被截短了。只读取 pickle 导入的名字是不够的，用跳过数据的选项（map_location='meta'、"
                          "mmap=True）加载也不够：规则是加载器在默认选项下能否读取整个文件。")
            elif first in _REFUSED_KINDS:
                en, zh = ("You called a file safe that the weights-only loader refuses: its pickle names a class or "
                          "function to import and call.",
                          "你把一个仅权重加载器会拒绝的文件判为安全：它的 pickle 指定了要导入并调用的类或函数。")
            elif first in ("raw_plain", "raw_int"):
                en, zh = ("You called a pickle.dump file safe because it holds only plain data. "
                          "torch.load(path, weights_only=True) cannot read this file at all (it is not laid out as "
                          "torch.save writes), so opening it takes pickle.load, a full unpickler: by the lab's rule it "
                          "is unsafe, whatever it holds.",
                          "你因为一个 pickle.dump 文件只包含普通数据就把它判为安全。torch.load(path, weights_only=True) "
                          "根本读不了这个文件（它不是按 torch.save 的方式组织的），所以打开它需要 pickle.load 这个完整的反序列化器："
                          "按照本实验的规则，无论内容是什么，它都是不安全的。")
            else:
                en, zh = ("You called a file safe that is no checkpoint at all (empty, not a pickle, or a zip archive "
                          "with no checkpoint in it): the weights-only loader cannot read it, so it is unsafe.",
                          "你把一个根本不是检查点的文件（空文件、不是 pickle、或其中没有检查点的 zip 存档）判为安全："
                          "仅权重加载器读不了它，所以它是不安全的。")
            shown = [n for n in wrong[:3]]
            raise Wrong(en, zh,
                        tried=(f"{folder_of[0]}; " + "; ".join(f"{n}: {_KINDS[kinds[n]][0]}" for n in shown),
                               f"{folder_of[1]}；" + "；".join(f"{n}：{_KINDS[kinds[n]][1]}" for n in shown)),
                        expected=", ".join(f"{n}: {_unsafe(kinds[n])!r}" for n in shown),
                        got=", ".join(f"{n}: {verdicts[n]!r}" for n in shown))
