"""``lowering``: a model's way down to MLIR, stage by stage, at a glance.

``torch.export`` captures the model; torch-mlir's decompositions bring it to Core ATen; its FX
importer writes the Torch dialect; its pipelines lower that to ``linalg-on-tensors``,
``stablehlo`` and ``tosa``. For every stage the viewer keeps the dialects used, an op
histogram, the input and output types and the MLIR text. torch-mlir is imported only here,
and only when ``lowering`` is called. Introduced in course/10_export_mlir.ipynb.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .._lang import only
from .._render import Table, Viewable, table_style
from .._text import quiet
from ..errors import FxCourseError, describe, need_flag

__all__ = ["Lowering", "Stage", "lowering"]

MLIR_STAGES = ("torch", "linalg-on-tensors", "stablehlo", "tosa")
_STYLE = table_style("fxcourse-lowering", {"failed": "background:#fbe9e7"})
_BLOCKED = re.compile(r"failed to legalize operation '([^']+)'(?:.*?name = \"([^\"]+)\")?")
_LOC = re.compile(r'loc\((?:"[^"]*"|[^()])*\)(?::\s*)?')


@dataclass(frozen=True)
class Stage:
    """One stage of a lowering: its name, op histogram, function types and text."""

    name: str
    ops: dict[str, int]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    text: str = field(repr=False)

    @property
    def dialects(self) -> tuple[str, ...]:
        """Dialect prefixes of the ops (``aten`` for the FX stage), most ops first."""
        count: Counter[str] = Counter()
        for op, n in self.ops.items():
            count[op.split(".")[0]] += n
        return tuple(name for name, _ in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])))

    def histogram(self, top: int | None = None) -> str:
        """``op×count`` pairs, most frequent first (ties by name)."""
        pairs = sorted(self.ops.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return ", ".join(f"{op}×{n}" for op, n in pairs)


class Lowering(Viewable):
    """The stages of one lowering; ``to_text()``, ``to_html()``, ``stage(name)``, ``.stages``.

    >>> import torch
    >>> low = lowering(torch.nn.ReLU(), torch.randn(2, 3), stages=("torch", "linalg-on-tensors"))
    >>> [s.name for s in low.stages]
    ['aten', 'torch', 'linalg-on-tensors']
    >>> low.stage("torch").ops
    {'func.func': 1, 'func.return': 1, 'torch.aten.relu': 1}
    >>> low.stage("linalg-on-tensors").inputs
    ('tensor<2x3xf32>',)
    """

    def __init__(self, stages: Sequence[Stage]) -> None:
        self.stages = list(stages)

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise FxCourseError(got=repr(name), accepted=f"one of {[s.name for s in self.stages]}",
                            fix="pass the name of a stage this lowering ran", where="Lowering.stage",
                            zh=f"收到 {name!r}；可用的阶段是 {[s.name for s in self.stages]}。修复：传入本次下降运行过的阶段名。")

    def _table(self, top: int | None) -> Table:
        rows = [[s.name, ", ".join(s.dialects), str(sum(s.ops.values())), s.histogram(top),
                 ", ".join(s.inputs), ", ".join(s.outputs)] for s in self.stages]
        return Table(["stage", "dialects", "ops", "op histogram", "inputs", "outputs"], rows,
                     css_class="fxcourse-lowering",
                     labels=[only("stage", "阶段"), only("dialects", "方言"), only("ops", "操作个数"),
                             only("op histogram", "操作直方图"), only("inputs", "输入"), only("outputs", "输出")])

    def to_text(self, width: int | None = None, top: int | None = 6) -> str:
        """One row per stage; ``top`` most frequent ops in the histogram (None: all)."""
        return self._table(top).to_text(width=width)

    def to_html(self, top: int | None = None) -> str:
        return self._table(top).to_html(style=_STYLE)

    def __repr__(self) -> str:
        return f"<Lowering: {' -> '.join(s.name for s in self.stages)}>"


def _fx_stage(program: Any) -> Stage:
    """The decomposed ExportedProgram as a stage: aten op histogram, user input/output types."""
    import torch

    _DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
               torch.int64: "si64", torch.int32: "si32", torch.bool: "i1"}

    def tensor_type(val: Any) -> str:
        if isinstance(val, torch.Tensor):
            dims = "x".join(str(d) if isinstance(d, int) else "?" for d in val.shape)
            dtype = _DTYPES.get(val.dtype, str(val.dtype).replace("torch.", ""))
            return f"tensor<{dims}x{dtype}>" if dims else f"tensor<{dtype}>"
        return type(val).__name__

    ops: Counter[str] = Counter()
    for node in program.graph.nodes:
        if node.op == "call_function":
            target = node.target
            ops[str(target) if isinstance(target, torch._ops.OpOverload)
                else getattr(target, "__name__", str(target))] += 1
    user_inputs = set(program.graph_signature.user_inputs)
    inputs = tuple(tensor_type(n.meta.get("val")) for n in program.graph.nodes
                   if n.op == "placeholder" and n.name in user_inputs)
    (out,) = [n for n in program.graph.nodes if n.op == "output"]
    outputs = tuple(tensor_type(a.meta.get("val")) for a in out.args[0] if hasattr(a, "meta"))
    return Stage("aten", dict(sorted(ops.items())), inputs, outputs, program.graph_module.code.strip())


def _walk(operation: Any, counts: Counter[str]) -> None:
    for region in operation.regions:
        for block in region.blocks:
            for inner in block.operations:
                counts[inner.operation.name] += 1
                _walk(inner.operation, counts)


def _mlir_stage(name: str, module: Any) -> Stage:
    from torch_mlir import ir

    counts: Counter[str] = Counter()
    _walk(module.operation, counts)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    for op in module.body.operations:
        if op.operation.name == "func.func":
            ftype = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            inputs = tuple(str(t) for t in ftype.inputs)
            outputs = tuple(str(t) for t in ftype.results)
            break
    return Stage(name, dict(sorted(counts.items())), inputs, outputs, str(module))


def _blocking_op(diagnostics: Sequence[str]) -> str:
    for text in diagnostics:
        found = _BLOCKED.search(text)
        if found:
            return found.group(2) or found.group(1)
    return ""


def _fail(stage: str, exc: BaseException, diagnostics: Sequence[str]) -> FxCourseError:
    op = _blocking_op(diagnostics)
    first = _LOC.sub("", next((d for d in diagnostics if d.strip()), "") or str(exc)).strip()
    first = " ".join(first.split())
    first = first if len(first) <= 200 else first[:199] + "…"
    blocked = f", blocked by {op}" if op else ""
    blocked_zh = f"，卡在 {op} 上" if op else ""
    return FxCourseError(
        got=f"a model whose lowering to {stage!r} failed{blocked} ({type(exc).__name__}: {first})",
        accepted="a model every op of which has a lowering to that stage",
        fix=("try another stage (each has its own op coverage), replace that op in the model, "
             "or keep the stages before it"),
        where=f"lowering, stage {stage}",
        zh=(f"下降到 {stage!r} 失败{blocked_zh}（{type(exc).__name__}：{first}）；每个算子都要有到该阶段的下降规则。"
            "修复：换一个阶段（各阶段支持的算子不同），在模型中替换该算子，或只保留它之前的阶段。"))


def _export(model: Any, args: tuple[Any, ...], dynamic_shapes: Any, strict: bool) -> Any:
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        if args or dynamic_shapes is not None:  # they would be ignored: the program keeps its own
            raise FxCourseError(got="an ExportedProgram together with inputs or dynamic_shapes",
                                accepted="an ExportedProgram alone (it was traced on its own inputs), or an nn.Module "
                                         "with its inputs", where="lowering",
                                fix="pass lowering(program) alone, or lowering(model, x, dynamic_shapes=...) to export "
                                    "again on these inputs",
                                zh="lowering：ExportedProgram 已按导出时的输入追踪，这里给的输入或 dynamic_shapes 不会被使用；"
                                   "修复：只传 lowering(program)，或传 lowering(model, x, dynamic_shapes=...) 在这些输入上重新导出。")
        return model
    if not isinstance(model, torch.nn.Module):
        raise FxCourseError(got=describe(model), accepted="an nn.Module or a torch.export.ExportedProgram",
                            fix="wrap a function in an nn.Module, or export it first", where="lowering",
                            zh=f"收到 {describe(model)}；需要 nn.Module 或 torch.export.ExportedProgram。"
                               "修复：把函数包进 nn.Module，或先导出它。")
    try:
        with quiet():
            return torch.export.export(model, args, dynamic_shapes=dynamic_shapes, strict=strict)
    except Exception as exc:  # export's own errors are long; keep their first line
        first = " ".join((str(exc).strip().splitlines() or [""])[0].split())[:200]
        raise FxCourseError(
            got=f"a model torch.export could not capture ({type(exc).__name__}: {first})",
            accepted="a model export can trace with these inputs and dynamic_shapes",
            fix=("read the error's suggested fix; a branch on tensor values becomes torch.cond; "
                 "torch.export.draft_export(model, args) lists every problem at once"),
            where="lowering, stage export",
            zh=(f"torch.export 无法捕获这个模型（{type(exc).__name__}）；需要能用这些输入和 dynamic_shapes 导出的模型。"
                "修复：阅读错误信息给出的建议；依赖张量取值的分支改写成 torch.cond；"
                "torch.export.draft_export(model, args) 能一次列出所有问题。")) from None


def lowering(model: Any, *args: Any, dynamic_shapes: Any = None, stages: Sequence[str] = MLIR_STAGES,
             strict: bool = False) -> Lowering:
    """Export ``model`` on ``args`` and lower it through torch-mlir, keeping every stage.

    The first stage, ``aten``, is the exported program after torch-mlir's decompositions;
    then one stage per name in ``stages`` (``torch``, ``linalg-on-tensors``, ``stablehlo``,
    ``tosa``). A stage that fails raises :class:`FxCourseError` naming the stage and the op
    that blocked it. Introduced in course/10_export_mlir.ipynb.

    >>> import torch
    >>> low = lowering(torch.nn.Linear(4, 3), torch.randn(2, 4), stages=("stablehlo",))
    >>> low.stage("stablehlo").dialects
    ('stablehlo', 'func', 'arith')
    """
    named = not isinstance(stages, (str, bytes)) and isinstance(stages, Iterable)
    unknown = [s for s in stages if not isinstance(s, str) or s not in MLIR_STAGES] if named else [stages]
    if not named or unknown or not stages:
        raise FxCourseError(got=repr(stages), accepted=f"a non-empty sequence of names from {list(MLIR_STAGES)}",
                            fix='pass e.g. stages=("torch", "linalg-on-tensors")', where="lowering",
                            zh=f"收到 {stages!r}；需要由 {list(MLIR_STAGES)} 中的名字组成的非空序列。"
                               '修复：例如传入 stages=("torch", "linalg-on-tensors")。')
    need_flag(strict, "strict", "lowering", "leave strict out (False: export traces with Python) or pass strict=True",
              "不传 strict（即 False），或传 strict=True")
    if dynamic_shapes is not None and not isinstance(dynamic_shapes, (dict, tuple, list)):
        raise FxCourseError(got=f"dynamic_shapes={describe(dynamic_shapes)}", where="lowering",
                            accepted="None, or what torch.export takes: a dict (or tuple) giving each input's dynamic dims",
                            fix='pass e.g. dynamic_shapes={"x": {0: torch.export.Dim("batch")}}, or leave it out',
                            zh=f"lowering：dynamic_shapes={describe(dynamic_shapes)} 不可用；需要 None，或 torch.export 接受的"
                               '字典（或元组），为每个输入给出动态维度。修复：例如 dynamic_shapes={"x": {0: torch.export.Dim("batch")}}，或不传。')
    program = _export(model, args, dynamic_shapes, strict)
    from torch_mlir import fx as tm_fx
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    from torch_mlir.extras.fx_importer import FxImporter

    with quiet():
        decomposed = program.run_decompositions(get_decomposition_table())
    found = [_fx_stage(decomposed)]
    for name in stages:
        diagnostics: list[str] = []
        context = ir.Context()

        def keep(diagnostic: Any, into: list[str] = diagnostics) -> bool:
            into.append(str(diagnostic.message))
            return True  # handled: MLIR does not print it to stderr

        torch_dialect.register_dialect(context)
        context.attach_diagnostic_handler(keep)
        try:
            with quiet():
                module = tm_fx.export_and_import(decomposed, output_type=name, func_name="main",
                                                 fx_importer=FxImporter(context=context), decomposition_table={})
        except Exception as exc:
            raise _fail(name, exc, diagnostics) from None
        found.append(_mlir_stage(name, module))
    return Lowering(found)
