"""Checkers of lab01 (TorchScript trace): references pass, stubs are not implemented, classic mistakes are named."""
from __future__ import annotations

import io
import warnings
from collections import Counter

import pytest
import torch
from torch import nn

from fxcourse import check
from fxcourse.labs import STUB

from checking import expect_wrong

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::torch.jit.TracerWarning")


def _stub(*args):
    raise NotImplementedError(STUB.split('"')[1])


# -- reference answers (the solutions notebook's) -------------------------------------------
def aten_op_counts(traced):
    return dict(Counter(n.kind() for n in traced.inlined_graph.nodes() if n.kind().startswith("aten::")))


def trace_safely(model, inputs):
    try:
        return torch.jit.trace(model, inputs[0], check_inputs=inputs)
    except torch.jit.TracingCheckError:
        return None


class TraceableRunningMean(nn.Module):
    def forward(self, x):
        counts = torch.arange(1, x.shape[0] + 1, dtype=x.dtype, device=x.device)
        return x.cumsum(0) / counts.view(-1, *([1] * (x.dim() - 1)))


def roundtrip(model, example_inputs):
    buffer = io.BytesIO()
    torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
    buffer.seek(0)
    return torch.jit.load(buffer)


REFERENCES = {"lab01.1": aten_op_counts, "lab01.2": trace_safely, "lab01.3": TraceableRunningMean,
              "lab01.4": roundtrip}


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_reference_answer_passes(task_id):
    result = check(task_id, REFERENCES[task_id])
    assert result.status == "passed", result.to_text()


class _StubRunningMean(nn.Module):
    def forward(self, x):
        raise NotImplementedError(STUB.split('"')[1])


@pytest.mark.parametrize("task_id", sorted(REFERENCES))
def test_stub_is_not_implemented(task_id):
    result = check(task_id, _StubRunningMean if task_id == "lab01.3" else _stub)
    assert result.status == "not_implemented", result.to_text()


# -- lab01.1 ---------------------------------------------------------------------------------
def test_top_level_graph_is_told_to_inline():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind() for n in t.graph.nodes()
                                                      if n.kind().startswith("aten::"))))
    assert "inlined_graph" in result.en and "inlined_graph" in result.zh


def test_counting_prim_nodes_is_named():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind() for n in t.inlined_graph.nodes())))
    assert "'aten::'" in result.en


def test_kind_without_namespace_is_named():
    result = expect_wrong("lab01.1", lambda t: dict(Counter(n.kind().split("::")[1] for n in t.inlined_graph.nodes()
                                                      if n.kind().startswith("aten::"))))
    assert "full kind string" in result.en


# -- lab01.2 ---------------------------------------------------------------------------------
def test_always_none_isexpect_wrong():
    assert "no control flow" in expect_wrong("lab01.2", lambda m, inputs: None).en


def test_none_on_any_tracer_warning_is_too_strict():
    def on_warning(model, inputs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            traced = trace_safely(model, inputs)
        if any(issubclass(w.category, torch.jit.TracerWarning) for w in caught):
            return None
        return traced

    result = expect_wrong("lab01.2", on_warning)
    assert "TracerWarning" in result.en and result.got == "None"


def test_forgetting_check_inputs_is_named():
    result = expect_wrong("lab01.2", lambda m, inputs: torch.jit.trace(m, inputs[0]))
    assert "check_inputs=inputs" in result.en and "inputs[2]" in result.en


def test_comparing_outputs_only_is_caught_by_the_abs_model():
    def by_outputs(model, inputs):
        traced = torch.jit.trace(model, inputs[0], check_trace=False)
        for args in inputs:
            try:
                same = torch.allclose(traced(*args), model(*args))
            except RuntimeError:
                same = False
            if not same:
                return None
        return traced

    result = expect_wrong("lab01.2", by_outputs)
    assert "aten::neg" in result.en and "compares the graphs" in result.en


def test_uncaught_tracing_check_error_is_named():
    result = expect_wrong("lab01.2", lambda m, inputs: torch.jit.trace(m, inputs[0], check_inputs=inputs))
    assert "TracingCheckError" in result.en and result.got.startswith("TracingCheckError")


def test_returning_the_model_isexpect_wrong():
    assert "not the model" in expect_wrong("lab01.2", lambda m, inputs: m).en


# -- lab01.3 ---------------------------------------------------------------------------------
class LoopMean(nn.Module):
    def forward(self, x):
        total = torch.zeros_like(x[0])
        out = []
        for t in range(x.shape[0]):
            total = total + x[t]
            out.append(total / (t + 1))
        return torch.stack(out)


class LenMean(nn.Module):
    def forward(self, x):
        return x.cumsum(0) / torch.arange(1, len(x) + 1, dtype=x.dtype).unsqueeze(1)


class OffByOneMean(nn.Module):
    def forward(self, x):
        return x.cumsum(0) / torch.arange(1, x.shape[0] + 1, dtype=x.dtype).clamp(min=2).unsqueeze(1)


def test_python_loop_is_named_as_unrolled():
    result = expect_wrong("lab01.3", LoopMean)
    assert "unrolled" in result.en and "(5, 4)" in result.tried


def test_len_is_named_as_baked_in():
    result = expect_wrong("lab01.3", LenMean)
    assert "baked in" in result.en and "x.shape[0]" in result.en


def test_wrong_eager_math_is_caught_before_tracing():
    result = expect_wrong("lab01.3", OffByOneMean)
    assert "eager mode" in result.en


# -- lab01.4 ---------------------------------------------------------------------------------
def test_returning_the_model_is_not_a_loaded_module():
    assert "torch.jit.load" in expect_wrong("lab01.4", lambda m, ex: m).en


def test_returning_the_trace_itself_is_named():
    result = expect_wrong("lab01.4", lambda m, ex: torch.jit.trace(m, ex))
    assert "shares its tensors" in result.en


def test_saving_the_nn_module_is_told_to_trace_first():
    def save_module(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(model, buffer)
        buffer.seek(0)
        return torch.jit.load(buffer)

    result = expect_wrong("lab01.4", save_module)
    assert "trace the model first" in result.en and "save_to_buffer" in result.got


def test_forgetting_seek_is_named():
    def no_seek(model, example_inputs):
        buffer = io.BytesIO()
        torch.jit.save(torch.jit.trace(model, example_inputs), buffer)
        return torch.jit.load(buffer)

    assert "seek(0)" in expect_wrong("lab01.4", no_seek).en
