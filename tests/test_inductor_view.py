"""inductor_code and aot_graphs: what they find, that they render the same bytes every run, and
that bad input gets an FxCourseError."""
from __future__ import annotations

import contextlib
import re

import pytest
import torch

import fxcourse
from fxcourse import FxCourseError, aot_graphs, inductor_code
from fxcourse.viewers import inductor as _inductor


def _mixed(x, w):
    y = torch.relu(x * 2 + 1)
    return (y / y.sum(dim=1, keepdim=True)) @ w, torch.sort(x, dim=1).values


@pytest.fixture(scope="module")
def mixed():
    gen = torch.Generator().manual_seed(0)
    args = torch.randn(8, 16, generator=gen), torch.randn(16, 4, generator=gen)
    return inductor_code(_mixed, *args), args


def test_public_names_are_lazy():
    assert {"inductor_code", "InductorCode", "aot_graphs", "AOTGraphs"} <= set(fxcourse.__all__)


def test_kernels_fused_nodes_and_externs(mixed):
    code, _ = mixed
    assert [k.name for k in code.kernels] == ["cpp_fused_add_div_mul_relu_sum_0"]
    assert code.kernels[0].nodes == ("mul", "add", "relu", "sum_1", "div")
    assert "aten.sum.dim_IntList" in code.kernels[0].aten
    assert [(e.name, e.kind) for e in code.externs] == [("aten.sort.stable", "fallback"),
                                                         ("extern_kernels.mm", "library")]
    assert code.fallbacks == ["aten.sort.stable"]
    assert code.wrapper.startswith("def call(") and "cpp_fused_add_div_mul_relu_sum_0(" in code.wrapper
    assert [n.name for n in code.post_grad[0].nodes if n.op == "call_function"][-1] == "mm"


def test_scalar_code_is_stable_and_scrubbed(mixed):
    code, args = mixed
    again = inductor_code(_mixed, *args)
    assert again.to_text(width=120, source=True, wrapper=True) == code.to_text(width=120, source=True, wrapper=True)
    assert again.to_html() == code.to_html()
    text = "\n".join(code.code)
    assert "at::vec" not in code.kernels[0].source  # simdlen=0: scalar
    assert not re.search(r"/tmp/|0x[0-9a-f]{8}", text)


def test_html_is_escaped(mixed):
    html = mixed[0].to_html()
    assert "#include &lt;torch/csrc/inductor/cpp_prefix.h&gt;" in html


def test_kernel_lookup(mixed):
    code, _ = mixed
    assert code.kernel("cpp_fused_add_div_mul_relu_sum_0") is code.kernels[0]
    with pytest.raises(FxCourseError, match="no kernel"):
        code.kernel("nope")


def test_without_the_internal_hook_kernels_still_show(monkeypatch):
    monkeypatch.setattr(_inductor, "_recording_kernels", lambda origins: contextlib.nullcontext())
    code = inductor_code(lambda x: torch.relu(x * 2 + 1), torch.randn(4, 8))
    assert [(k.name, k.nodes, k.aten) for k in code.kernels] == [("cpp_fused_add_mul_relu_0", (), ("add", "mul", "relu"))]


def test_options_change_the_code():
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU()).eval()
    x = torch.randn(3, 6)
    with torch.no_grad():
        plain = inductor_code(mlp, x)
        frozen = inductor_code(mlp, x, options={"freezing": True})
    assert "_frozen_param" not in plain.wrapper and "_frozen_param" in frozen.wrapper
    cpp = inductor_code(lambda x: torch.relu(x) + 1, x, options={"cpp_wrapper": True})
    assert "inductor_entry_impl" in cpp.wrapper and "def call" not in cpp.wrapper
    assert len(cpp.kernels) == 1 and cpp.kernels[0].source.startswith('extern "C"')


@pytest.mark.parametrize("fn, options, match", [
    (None, None, "needs a function or nn.Module"),
    (torch.relu, "freezing", "options must be a dict"),
    (torch.relu, {"no_such_option": 1}, "unknown Inductor option"),
])
def test_bad_input(fn, options, match):
    with pytest.raises(FxCourseError, match=match):
        inductor_code(fn, torch.randn(3), options=options)


def test_aot_graphs_partitioners():
    x = torch.randn(5, requires_grad=True)
    default = aot_graphs(lambda x: torch.sin(x).cos(), x)
    min_cut = aot_graphs(lambda x: torch.sin(x).cos(), x, partitioner="min_cut")
    assert default.saved == ["primals_1", "sin"] and min_cut.saved == ["primals_1"]
    assert min_cut.ops(min_cut.backward).count("aten.sin.default") >= 1  # recomputed
    assert "tangents_1" in [n.name for n in default.joint.graph.nodes]
    assert default.to_text(width=100).startswith("partitioner: default; forward 2 ops")


def test_aot_graphs_inference_has_no_backward():
    graphs = aot_graphs(lambda x: x.exp() + 1, torch.randn(3))
    assert graphs.backward is None and graphs.saved == [] and graphs.joint is None


def test_aot_graphs_bad_input():
    with pytest.raises(FxCourseError, match="partitioner must be one of"):
        aot_graphs(torch.sin, torch.randn(2), partitioner="greedy")
    with pytest.raises(FxCourseError, match="needs a function"):
        aot_graphs(3, torch.randn(2))
