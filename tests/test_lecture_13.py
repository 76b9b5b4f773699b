"""The claims of course/13_capstone.ipynb that its own outputs do not pin down, re-run on the
installed torch with small models the lecture does not use (each would fail if torch changed
the behaviour the lecture explains its numbers with).

- §4: Dynamo's graph calls operations directly: no ``call_module`` node survives, which is why
  the ``dynamo`` path saves the Python of ``nn.Module.__call__`` per submodule.
- §4: without freezing, Inductor's wrapper copies convolution weights into channels-last at
  every call and computes batch norm in generated kernels; with ``freezing=True`` (inference)
  no copy is made per call, no kernel computes batch norm, and the convolutions become oneDNN
  calls with the pointwise work fused in.
- §3: the IREE column counts every operation of the linalg-on-tensors module; the model's work
  is its ``linalg.matmul`` and ``linalg.generic`` ops, and each linalg op carries a scalar body
  (a matmul's is one ``arith.mulf`` and one ``arith.addf`` and its ``linalg.yield``).
- §6: the MLIR route refuses ``torch.cond`` (torch-mlir's importer has no ``cond``), while the
  exported program itself holds a ``cond`` node, taking the predicate and the two branches as
  subgraphs read with ``get_attr``; ``lowering`` names the stage and the op.
"""
from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from fxcourse import FxCourseError, capture, compare_capture, inductor_code, lowering

# a channels-last 4-d buffer whose first size is not 1: a weight laid out again
_COPY = re.compile(r"empty_strided_cpu\(\((\d+), \d+, \d+, \d+\), \(\d+, 1, ")


class _Residual(nn.Module):
    """conv → BN → relu → conv → BN, plus the input, then relu: one ResNet basic block."""

    def __init__(self) -> None:
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)
        self.c2, self.b2 = nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


class _Branch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        return torch.cond(y.mean() > 0, torch.sin, torch.cos, (y,))


def _block() -> tuple[nn.Module, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = _Residual().eval()
    return model, torch.randn(1, 16, 16, 16, generator=gen)


def test_dynamo_graph_has_no_module_calls() -> None:
    model, x = _block()
    cap = capture(model, x)
    ops = {n.op for g in cap.graphs for n in g.gm.graph.nodes}
    assert "call_module" not in ops and "call_function" in ops
    fx_ops = {n.op for n in torch.fx.symbolic_trace(model).graph.nodes}
    assert "call_module" in fx_ops  # symbolic_trace keeps the submodules: its row pays for them


@pytest.mark.parametrize("freezing", [False, True])
def test_freezing_removes_per_call_weight_copies_and_batch_norm_kernels(freezing: bool) -> None:
    import torch._inductor.config as inductor_config

    model, x = _block()
    with inductor_config.patch(freezing=freezing), torch.no_grad():
        code = inductor_code(model, x)
    copies = [m for m in _COPY.finditer(code.wrapper) if m.group(1) != "1"]
    norm = [k.name for k in code.kernels if "aten.rsqrt.default" in k.aten]
    externs = {e.name for e in code.externs}
    if freezing:
        assert copies == [] and norm == []
        assert externs and all(name.startswith("mkldnn._convolution_pointwise") for name in externs)
    else:
        assert copies and norm
        assert externs == {"extern_kernels.convolution"}


def test_mlir_route_refuses_cond_that_export_keeps() -> None:
    model = _Branch().eval()
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    ep = torch.export.export(model, (x,))
    assert "cond" in [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    row = compare_capture(model, x, paths=["torch.export.export", "export + IREE"])
    assert row["torch.export.export"].matches is True
    iree = row["export + IREE"]
    assert not iree.worked
    assert "NotImplementedError" in iree.reason and "'cond'" in iree.reason


class _TwoLayers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(5, 7), nn.Linear(7, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.tanh(self.a(x)))


def test_the_iree_count_is_every_op_of_the_linalg_module() -> None:
    model, x = _TwoLayers().eval(), torch.randn(3, 5, generator=torch.Generator().manual_seed(2))
    ops = lowering(model, x, stages=("linalg-on-tensors",)).stage("linalg-on-tensors").ops
    row = compare_capture(model, x, paths=["export + IREE"])["export + IREE"]
    assert row.worked and row.ops == sum(ops.values())
    assert ops["linalg.matmul"] == 2 and ops["linalg.generic"] == 3  # bias, tanh, bias
    linalg = sum(n for op, n in ops.items() if op.startswith("linalg.") and op != "linalg.yield")
    assert ops["linalg.yield"] == linalg  # one scalar body per linalg op
    assert ops["arith.mulf"] >= ops["linalg.matmul"] and ops["arith.addf"] >= ops["linalg.matmul"] + 2


def test_the_exported_cond_takes_two_subgraphs_and_lowering_names_it() -> None:
    model = _Branch().eval()
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(1))
    graph = torch.export.export(model, (x,)).graph
    cond = next(n for n in graph.nodes if str(n.target) == "cond")
    predicate, true_fn, false_fn, operands = cond.args
    assert [true_fn.op, false_fn.op] == ["get_attr", "get_attr"]
    assert predicate.op == "call_function" and "gt" in str(predicate.target)
    with pytest.raises(FxCourseError) as raised:
        lowering(model, x, stages=("linalg-on-tensors",))
    assert raised.value.where == "lowering, stage linalg-on-tensors"
    assert "Higher-order operation 'cond'" in raised.value.got
