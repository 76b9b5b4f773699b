"""``inductor_code`` and ``aot_graphs``: what AOTAutograd and Inductor make of a function.

``inductor_code(fn, *args)`` compiles ``fn`` with Inductor and returns an
:class:`InductorCode`: the kernels Inductor generated (name, the post-grad FX nodes fused
into each, their ATen ops, the C++ or Triton source), the calls it left to a library or to
eager ATen (``extern_kernels.mm``, a fallback such as ``aten.sort``), and the wrapper's
``call`` function that allocates buffers and runs them in order.

``aot_graphs(fn, *args)`` runs ``fn`` through AOTAutograd with recording compilers and
returns an :class:`AOTGraphs`: the joint graph, the forward and backward graphs the
partitioner cut from it, and the tensors the forward saves for the backward.

Both are deterministic: Dynamo is reset first, Inductor's FX graph cache is bypassed for
the one compile (so its code generation always runs and is seen, whether or not the cache
is warm; the compiled C++ itself still comes from the cache), C++ is scalar by default
(``simdlen=0``: the same on every CPU), and hashes and paths are scrubbed.

Introduced in course/09_aot_inductor.ipynb.
"""
from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch
from torch import fx

from .._caller_state import process_kept, untouched
from .._lang import only
from .._render import Table, Viewable, esc, table_style
from .._text import one_line_error, quiet
from ..errors import FxCourseError, describe, need_flag
from .capture import eager_error, whose_error

__all__ = ["AOTGraphs", "Extern", "InductorCode", "Kernel", "aot_graphs", "inductor_code"]

_KERNEL_DEF = re.compile(
    r"^(?P<name>\w+) = async_compile\.(?P<kind>\w+)\((?P<head>[^\n]*?)(?:r?''')(?P<src>.*?)'''", re.S | re.M)
_EXTERN = re.compile(r"\b(?:extern_kernels\.(?P<lib>\w+)|torch\.ops\.(?P<ns>\w+)\.(?P<op>\w+)\.(?P<ov>\w+)"
                     r"|(?P<aoti>aoti_torch_cpu_\w+))\(")
_KERNEL_CALL = re.compile(r"\b(?:cpp|triton)_\w+(?:\.run)?\(")
_ORIGIN = re.compile(r"(?:#|//)\s*Topologically Sorted Source Nodes: \[(?P<nodes>[^\]]*)\], Original ATen: \[(?P<aten>[^\]]*)\]")
_HASH = re.compile(r"\b[a-z0-9]{52}\b|\b[0-9a-f]{32,64}\b")
_ABS_PATH = re.compile(r"(?<![\w<])/(?:[\w.\-]+/)+[\w.\-]+")
_PARTITIONERS = ("default", "min_cut")
_STYLE = table_style("fxcourse-inductor", {"kernel": "", "extern": "background:#fff8c5"})


@dataclass(frozen=True)
class Kernel:
    """One generated kernel: ``nodes`` are the post-grad FX nodes fused into it (graph
    order), ``aten`` their ATen ops, ``source`` its C++ (CPU) or Triton (GPU) code."""

    name: str
    nodes: tuple[str, ...]
    aten: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Extern:
    """A call Inductor did not generate code for: ``kind`` is ``"library"`` (an
    ``extern_kernels`` call such as ``mm``) or ``"fallback"`` (an ATen op run as in eager);
    ``nodes``/``aten`` come from the comment Inductor writes above the call."""

    name: str
    kind: str
    nodes: tuple[str, ...]
    aten: tuple[str, ...]


class InductorCode(Viewable):
    """What Inductor generated for one compiled call; see :func:`inductor_code`."""

    def __init__(self, kernels: list[Kernel], externs: list[Extern], wrapper: str, code: list[str]) -> None:
        self.kernels, self.externs, self.wrapper, self.code = kernels, externs, wrapper, code
        #: the post-grad FX graphs Inductor lowered (one per compiled graph), node names as in ``Kernel.nodes``
        self.post_grad: list[fx.Graph] = []

    @property
    def fallbacks(self) -> list[str]:
        """Names of the ATen ops Inductor left to eager PyTorch (``aten.sort.stable`` …)."""
        return [e.name for e in self.externs if e.kind == "fallback"]

    def kernel(self, name: str) -> Kernel:
        """The kernel called ``name``."""
        for k in self.kernels:
            if k.name == name:
                return k
        names = [k.name for k in self.kernels]
        raise FxCourseError(got=f"no kernel {name!r}", accepted=f"one of {names}", fix="pass one of those names",
                            where="InductorCode.kernel", zh=f"没有名为 {name!r} 的 kernel；可选的有 {names}。修复：传入其中一个名字。")

    def _table(self) -> Table:
        kinds = {"kernel": "内核", "library": "库调用", "fallback": "回退"}
        rows = [[k.name, only("kernel", "内核"), ", ".join(k.nodes), ", ".join(k.aten)] for k in self.kernels]
        rows += [[e.name, only(e.kind, kinds.get(e.kind, e.kind)), ", ".join(e.nodes), ", ".join(e.aten)]
                 for e in self.externs]
        classes = ["kernel"] * len(self.kernels) + ["extern"] * len(self.externs)
        caption = only(f"Inductor: {len(self.kernels)} generated kernel(s), "
                       f"{len(self.externs)} extern call(s) ({len(self.fallbacks)} fallback)",
                       f"Inductor：生成了 {len(self.kernels)} 个内核，{len(self.externs)} 个外部调用"
                       f"（其中 {len(self.fallbacks)} 个回退）")
        return Table(["name", "kind", "FX nodes", "ATen ops"], rows, classes, css_class="fxcourse-inductor",
                     caption=caption, labels=[only("name", "名称"), only("kind", "类别"),
                                              only("FX nodes", "FX 节点"), only("ATen ops", "ATen 算子")])

    def to_text(self, width: int | None = None, source: bool = False, wrapper: bool = False) -> str:
        """The table of kernels and extern calls; ``source`` adds each kernel's code,
        ``wrapper`` the wrapper's ``call`` function."""
        parts = [self._table().to_text(width=width)]
        if source:
            parts += [f"\n--- {k.name} ---\n{k.source}" for k in self.kernels]
        if wrapper:
            parts.append(f"\n--- {only('wrapper', '包装代码（wrapper）')} ---\n{self.wrapper}")
        return "\n".join(parts)

    def to_html(self) -> str:
        kernels = "".join(f"<details><summary>{esc(k.name)}</summary><pre>{esc(k.source)}</pre></details>"
                          for k in self.kernels)
        wrapper = (f"<details><summary>{only('wrapper', '包装代码（wrapper）')}</summary>"
                   f"<pre>{esc(self.wrapper)}</pre></details>")
        return (f"<style>{_STYLE}</style>{self._table().to_html()}"
                f'<div class="fxcourse-inductor">{kernels}{wrapper}</div>')

    def __repr__(self) -> str:
        return f"<InductorCode: {len(self.kernels)} kernels, {len(self.externs)} extern calls>"


def inductor_code(fn: Callable[..., Any], *args: Any, simdlen: int | None = 0,
                  options: dict[str, Any] | None = None, dynamic: bool | None = False) -> InductorCode:
    """Compile ``fn`` with Inductor, call it on ``args`` and return what Inductor generated.

    ``simdlen=0`` (the default) asks for scalar C++ so the code is the same on every CPU;
    ``simdlen=None`` leaves Inductor's setting alone (the machine's vector width unless
    changed). Scalar code is for reading: it runs far slower than the vectorised form. ``options`` are Inductor config
    settings for this compile (``{"freezing": True}``, ``{"cpp_wrapper": True}`` …).

    Introduced in course/09_aot_inductor.ipynb.

    >>> import torch
    >>> code = inductor_code(lambda x: torch.relu(x * 2 + 1), torch.randn(4, 8))
    >>> [(k.name, k.nodes) for k in code.kernels]
    [('cpp_fused_add_mul_relu_0', ('mul', 'add', 'relu'))]
    """
    if not callable(fn):
        raise FxCourseError(got=describe(fn), accepted="a function or nn.Module to compile (it needs a function "
                            "or nn.Module)", fix="pass the callable and its example inputs: inductor_code(fn, x)",
                            where="inductor_code", zh=f"收到 {describe(fn)}；需要一个可调用对象（函数或 nn.Module）。"
                            "修复：传入它和示例输入，例如 inductor_code(fn, x)。")
    if options is not None and not isinstance(options, dict):
        raise FxCourseError(got=f"options={describe(options)}", accepted="a dict of Inductor config settings "
                            "(options must be a dict)", fix="pass e.g. options={'freezing': True}", where="inductor_code",
                            zh=f"inductor_code：options={describe(options)} 不可用；options 应是 Inductor 配置的 dict。"
                               "修复：例如传入 options={'freezing': True}。")
    if simdlen is not None and (isinstance(simdlen, bool) or not isinstance(simdlen, int) or simdlen < 0):
        raise FxCourseError(got=f"simdlen={describe(simdlen)}", where="inductor_code",
                            accepted="simdlen=0 (scalar C++, the same on every CPU), a vector width in bits such as "
                                     "256 or 512, or None (Inductor's own setting)",
                            fix="leave simdlen out, or pass simdlen=None to see the vectorised code",
                            zh=f"inductor_code：simdlen={describe(simdlen)} 不可用；需要 0（标量 C++，在每种 CPU 上都一样）、"
                               "以比特计的向量宽度（如 256、512），或 None（沿用 Inductor 自己的设置）。修复：不传 simdlen，"
                               "或传 simdlen=None 查看向量化代码。")
    need_flag(dynamic, "dynamic", "inductor_code", "leave dynamic out for code specialised to these shapes, or pass "
              "dynamic=True", "不传 dynamic（按这些形状生成代码），或传 dynamic=True", none_ok=True)
    import torch._dynamo
    import torch._inductor.config as inductor_config
    from torch._inductor.utils import run_and_get_code

    post_grad: list[fx.Graph] = []

    def record_post_grad(graph: fx.Graph) -> None:
        post_grad.append(graph.__deepcopy__())

    settings: dict[str, Any] = {"fx_graph_cache": False, "post_grad_custom_post_pass": record_post_grad,
                                **(options or {})}
    if simdlen is not None:
        settings["cpp.simdlen"] = simdlen
    stack = contextlib.ExitStack()
    try:
        stack.enter_context(inductor_config.patch(settings))
    except (AttributeError, KeyError, TypeError) as exc:
        raise FxCourseError(got=f"unknown Inductor option in {sorted(options or {})} ({exc})",
                            accepted="names from torch._inductor.config", fix="use e.g. 'freezing' or 'cpp_wrapper'",
                            where="inductor_code", zh=f"inductor_code：{sorted(options or {})} 中有未知的 Inductor 选项。"
                            "修复：使用 torch._inductor.config 中的名字，例如 'freezing'、'cpp_wrapper'。") from None
    torch._dynamo.reset()
    origins: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    try:
        with stack, _recording_kernels(origins), quiet(), process_kept(), untouched(fn, args):
            _, code = run_and_get_code(torch.compile(fn, backend="inductor", dynamic=dynamic), *args)
    except FxCourseError:
        raise
    except Exception as exc:  # the function's own error, Dynamo's or Inductor's: say whose
        raise whose_error(exc, fn, args, {}, "inductor", where="inductor_code") from None
    finally:
        torch._dynamo.reset()
    result = _parse([_clean(c) for c in code], origins)
    result.post_grad = post_grad
    return result


@contextlib.contextmanager
def _recording_kernels(origins: dict[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> Iterator[None]:
    """Record, for each kernel Inductor defines, the FX nodes it fused (torch internals: if
    they moved, nothing is recorded and :func:`_parse` falls back to the kernel names)."""
    targets = []
    with contextlib.suppress(ImportError):
        from torch._inductor.codegen.cpp import CppScheduling
        targets.append(CppScheduling)
    with contextlib.suppress(ImportError):
        from torch._inductor.codegen.simd import SIMDScheduling
        targets.append(SIMDScheduling)
    saved = [(cls, cls.__dict__.get("define_kernel")) for cls in targets]
    for cls, original in saved:
        if original is not None:
            cls.define_kernel = _recorder(original, origins)  # type: ignore[method-assign]
    try:
        yield
    finally:
        for cls, original in saved:
            if original is not None:
                cls.define_kernel = original  # type: ignore[method-assign]


def _recorder(original: Callable[..., Any], origins: dict[str, Any]) -> Callable[..., Any]:
    def define_kernel(self: Any, src_code: str, nodes: Any, *rest: Any, **kw: Any) -> Any:
        name = original(self, src_code, nodes, *rest, **kw)
        with contextlib.suppress(Exception):  # reading internals must never break the compile
            from torch._inductor.virtualized import V
            name = name if isinstance(name, str) else V.graph.wrapper_code.src_to_kernel[src_code]
            origins.setdefault(name, _fused(nodes))
        return name
    return define_kernel


def _fused(nodes: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    found: dict[fx.Node, None] = {}
    for group in nodes:
        members = group.get_nodes() if hasattr(group, "get_nodes") else [group]
        for member in members:
            node = getattr(member, "node", None)
            for origin in getattr(node, "origins", ()) or ():
                found[origin] = None
    if not found:
        return (), ()
    order = {n: i for i, n in enumerate(next(iter(found)).graph.nodes)}
    ordered = sorted(found, key=lambda n: order.get(n, len(order)))
    aten = tuple(dict.fromkeys(str(n.target) for n in ordered if n.op == "call_function"))
    return tuple(n.name for n in ordered if n.op == "call_function"), aten


def _clean(text: str) -> str:
    """Hashes and absolute paths (cache and temporary directories) out of generated code."""
    return _HASH.sub("<hash>", _ABS_PATH.sub("<path>", text))


def _parse(code: list[str], origins: dict[str, Any]) -> InductorCode:
    kernels, externs, wrappers = [], [], []
    for module in code:
        for m in _KERNEL_DEF.finditer(module):
            nodes, aten = origins.get(m.group("name"), ((), ()))
            if not aten:  # fallback: the descriptive kernel name lists the ops
                aten = tuple(m.group("name").split("_")[2:-1])
            kernels.append(Kernel(m.group("name"), nodes, aten, m.group("src").strip("\n")))
        for name, (nodes, aten) in origins.items():  # cpp_wrapper: kernels live in the C++ source
            if name not in {k.name for k in kernels} and re.search(rf"\b{name}\(", module):
                kernels.append(Kernel(name, nodes, aten, _c_function(module, name)))
        call = _call_function(module) or _c_function(module, "inductor_entry_impl")
        if call:
            wrappers.append(call)
            externs += _externs(call)
    return InductorCode(kernels, externs, "\n\n".join(wrappers), code)


def _call_function(module: str) -> str:
    """The wrapper's ``call`` function (a method of ``Runner`` in recent releases)."""
    m = re.search(r"^(?P<indent>[ \t]*)def call\(self, args\):\n(?:(?P=indent)[ \t]+.*\n|[ \t]*\n)*", module, re.M) \
        or re.search(r"^(?P<indent>)def call\(args\):\n(?:[ \t]+.*\n|[ \t]*\n)*", module, re.M)
    if not m:
        return ""
    lines = m.group(0).rstrip().splitlines()
    indent = len(m.group("indent"))
    return "\n".join(line[indent:] for line in lines)


def _c_function(module: str, name: str) -> str:
    """A C++ function's definition: from the line that names it (not a declaration ending in
    ``);``) to the first closing brace at column 0."""
    for m in re.finditer(rf"^[^\n]*\b{name}\(", module, re.M):
        end = module.find("\n}", m.start())
        body = module[m.start(): end + 2] if end >= 0 else ""
        head = body.split("{", 1)[0]
        if body and ");" not in head:
            return body
    return ""


def _externs(call: str) -> list[Extern]:
    """Calls to library kernels and fallback ops, each with the source nodes and ATen ops of
    the comment Inductor wrote before it (a kernel call in between drops the comment)."""
    found, origin = [], None
    for line in call.splitlines():
        stripped = line.strip()
        if stripped.startswith(("#", "//")):
            origin = _ORIGIN.search(stripped) or origin
            continue
        m = _EXTERN.search(stripped)
        if not m:
            if _KERNEL_CALL.search(stripped):
                origin = None
            continue
        nodes = tuple(s.strip() for s in origin.group("nodes").split(",")) if origin else ()
        aten = tuple(s.strip() for s in origin.group("aten").split(",")) if origin else ()
        origin = None
        if m.group("aoti"):  # cpp_wrapper: a C shim; "_out" ones write into a buffer, as extern_kernels do
            found.append(Extern(m.group("aoti"), "library" if m.group("aoti").endswith("_out") else "fallback",
                                nodes, aten))
        elif m.group("lib"):
            found.append(Extern(f"extern_kernels.{m.group('lib')}", "library", nodes, aten))
        elif m.group("ns") != "inductor":
            found.append(Extern(f"{m.group('ns')}.{m.group('op')}.{m.group('ov')}", "fallback", nodes, aten))
    return found


# -- AOTAutograd ------------------------------------------------------------------------------

class AOTGraphs(Viewable):
    """The graphs AOTAutograd made for one call; see :func:`aot_graphs`."""

    def __init__(self, joint: fx.GraphModule | None, forward: fx.GraphModule, backward: fx.GraphModule | None,
                 saved: list[str], partitioner: str) -> None:
        self.joint, self.forward, self.backward = joint, forward, backward
        self.saved, self.partitioner = saved, partitioner

    @staticmethod
    def ops(gm: fx.GraphModule | None) -> list[str]:
        """The ATen ops a graph calls, in order (``aten.mul.Tensor`` …)."""
        if gm is None:
            return []
        return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]

    def to_text(self, width: int | None = None) -> str:
        from .graph_table import graph_table

        cols = ["opcode", "name", "target", "args"]
        saved = ', '.join(self.saved) or '-'
        parts = [only(f"partitioner: {self.partitioner}; forward {len(self.ops(self.forward))} ops, "
                      f"backward {len(self.ops(self.backward))} ops; saved for backward: {saved}",
                      f"划分器（partitioner）：{self.partitioner}；前向 {len(self.ops(self.forward))} 个算子，"
                      f"反向 {len(self.ops(self.backward))} 个算子；为反向保存：{saved}"),
                 only("forward:", "前向："), graph_table(self.forward, columns=cols).to_text(width=width)]
        if self.backward is not None:
            parts += [only("backward:", "反向："), graph_table(self.backward, columns=cols).to_text(width=width)]
        return "\n".join(parts)

    def to_html(self) -> str:
        return f"<pre>{esc(self.to_text())}</pre>"

    def __repr__(self) -> str:
        return f"<AOTGraphs: saved {self.saved}>"


def aot_graphs(fn: Callable[..., Any], *args: Any, partitioner: str = "default",
               decompositions: dict[Any, Callable[..., Any]] | None = None) -> AOTGraphs:
    """Run ``fn(*args)`` through Dynamo and AOTAutograd, call backward on the sum of its
    tensor outputs, and return the joint, forward and backward graphs and the saved tensors.

    ``partitioner`` is ``"default"`` (save what the backward reads) or ``"min_cut"`` (the
    one Inductor uses: recompute cheap ops to save less). With no input requiring grad
    there is one inference graph and no backward.

    Introduced in course/09_aot_inductor.ipynb.

    >>> import torch
    >>> x = torch.randn(3, requires_grad=True)
    >>> aot_graphs(lambda x: torch.sin(x).cos(), x).saved
    ['primals_1', 'sin']
    """
    if not callable(fn):
        raise FxCourseError(got=describe(fn), accepted="a function or nn.Module (aot_graphs needs a function)",
                            fix="pass the callable and its example inputs: aot_graphs(fn, x)", where="aot_graphs",
                            zh=f"收到 {describe(fn)}；需要一个可调用对象。修复：传入它和示例输入，例如 aot_graphs(fn, x)。")
    if not isinstance(partitioner, str) or partitioner not in _PARTITIONERS:
        raise FxCourseError(got=f"partitioner={partitioner!r}", accepted=f"partitioner must be one of "
                            f"{list(_PARTITIONERS)}", fix="pick 'default' or 'min_cut'", where="aot_graphs",
                            zh=f"aot_graphs：partitioner={partitioner!r} 不可用；只能是 'default' 或 'min_cut'。修复：二选一。")
    if decompositions is not None and not isinstance(decompositions, Mapping):
        raise FxCourseError(got=f"decompositions={describe(decompositions)}", where="aot_graphs",
                            accepted="None, or a dict from an op to the function that decomposes it",
                            fix="build one with torch._decomp.get_decompositions([torch.ops.aten.gelu]), or leave it out",
                            zh=f"aot_graphs：decompositions={describe(decompositions)} 不可用；需要 None，或从算子到其分解函数的"
                               "字典。修复：用 torch._decomp.get_decompositions([torch.ops.aten.gelu]) 生成，或不传。")
    import torch._dynamo
    from functorch.compile import make_boxed_func
    from torch._functorch.aot_autograd import aot_module_simplified
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    split = default_partition if partitioner == "default" else min_cut_rematerialization_partition
    seen: dict[str, fx.GraphModule] = {}

    def compiler(which: str) -> Callable[..., Any]:
        def record(gm: fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
            seen.setdefault(which, gm)
            return make_boxed_func(gm.forward)
        return record

    def partition(joint: fx.GraphModule, joint_inputs: Any, **kwargs: Any) -> Any:
        seen.setdefault("joint", fx.GraphModule(joint, joint.graph.__deepcopy__()))
        return split(joint, joint_inputs, **kwargs)

    def backend(gm: fx.GraphModule, example_inputs: list[Any]) -> Any:
        return aot_module_simplified(gm, example_inputs, fw_compiler=compiler("forward"),
                                     bw_compiler=compiler("backward"), partition_fn=partition,
                                     decompositions=decompositions)

    torch._dynamo.reset()
    try:
        with quiet(), process_kept(), untouched(fn, args):
            out = torch.compile(fn, backend=backend, fullgraph=True)(*args)
            tensors = [t for t in (out if isinstance(out, (tuple, list)) else [out])
                       if isinstance(t, torch.Tensor) and t.requires_grad]
            if tensors:
                sum(t.sum() for t in tensors).backward()  # type: ignore[union-attr]
    except FxCourseError:
        raise
    except Exception as exc:  # a graph break, the function's own error, or AOTAutograd's: say which
        raise _aot_failure(exc, fn, args, decompositions is not None) from None
    finally:
        torch._dynamo.reset()
    if "forward" not in seen:
        raise FxCourseError(got=f"{describe(fn)}, from which no graph was captured", accepted="a function that "
                            "computes with tensors", fix="pass a function whose result depends on tensor ops",
                            where="aot_graphs", zh="没有捕获到计算图。修复：传入对张量做计算的函数。")
    backward = seen.get("backward")
    saved = [n.name for n in backward.graph.nodes if n.op == "placeholder"
             and not n.name.startswith("tangents")] if backward is not None else []
    return AOTGraphs(seen.get("joint"), seen["forward"], backward, saved, partitioner)


def _aot_failure(exc: Exception, fn: Any, args: tuple[Any, ...], decomposed: bool) -> FxCourseError:
    """aot_graphs needs one whole graph: a graph break is named as such; other failures say
    whose error they are (the function's own, Dynamo's, or AOTAutograd's)."""
    from torch._dynamo.exc import Unsupported, UserError

    # Dynamo reports the function's own exception as Unsupported under fullgraph: run it eagerly first
    if isinstance(exc, (Unsupported, UserError)) and eager_error(fn, args, {}) is None:
        return FxCourseError(
            got=f"{describe(fn)}, on which Dynamo needs a graph break: {one_line_error(exc, limit=200)}",
            accepted="a function Dynamo captures as one whole graph (aot_graphs compiles with fullgraph=True)",
            fix="remove what breaks the graph (a print, .item() or .tolist(), an `if` on a tensor's value), or "
                "look at the pieces with fxcourse.capture(fn, *args)",
            where="aot_graphs",
            zh=f"aot_graphs：Dynamo 需要在 {describe(fn)} 中产生图中断：{one_line_error(exc, limit=200)}；"
               "aot_graphs 以 fullgraph=True 编译，需要能捕获成一整张图的函数。修复：去掉导致图中断的代码（print、"
               ".item() 或 .tolist()、依赖张量值的 if），或者用 fxcourse.capture(fn, *args) 查看各个片段。")
    name = "AOTAutograd (with your decompositions)" if decomposed else "AOTAutograd"
    return whose_error(exc, fn, args, {}, name, where="aot_graphs")
