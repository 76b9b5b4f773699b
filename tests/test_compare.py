"""compare_capture(): six capture systems on the zoo, as data, text and HTML."""
from __future__ import annotations

import dataclasses

import pytest
import torch
import torch._dynamo

from fxcourse import FxCourseError, zoo
from fxcourse.compare import METHODS, Attempt, Comparison, compare_capture


@pytest.fixture(scope="module")
def gate() -> Comparison:
    model, args = zoo.example("gate")
    return compare_capture(model, *args)


def test_default_second_input_sends_gate_down_the_other_branch():
    model, args = zoo.example("gate")
    assert (model.linear(args[0]).sum() > 0) != (model.linear(-args[0]).sum() > 0)


def test_gate_rows_tell_the_lecture_story(gate):
    assert [r.method for r in gate.rows] == list(METHODS)
    trace, script, fx, full, dyn, export = gate.rows
    assert trace.worked and trace.matches is False
    assert trace.reason == "the trace baked in one branch: outputs differ from eager on the second input"
    assert trace.note.startswith("TracerWarning: Converting a tensor to a Python boolean")
    assert script.worked and script.matches is True
    assert not fx.worked and fx.reason.startswith("TraceError: symbolically traced variables cannot be used")
    assert "control flow" in fx.reason
    assert not full.worked and full.reason == "Unsupported: Data-dependent branching"
    assert dyn.worked and dyn.matches is True and dyn.graphs == 2
    assert dyn.reason.startswith("1 graph break: Data-dependent branching") and "zoo.py:49" in dyn.reason
    assert not export.worked and "data-dependent" in export.reason and "torch.cond" in export.note
    assert all(r.seconds > 0 for r in gate.rows)
    assert all("\n" not in r.reason and "0x" not in r.reason for r in gate.rows)


def test_warnings_are_recorded_not_printed(capfd):
    model, args = zoo.example("gate")
    table = compare_capture(model, *args)
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""
    assert any(w.startswith("DeprecationWarning") for w in table["torch.jit.trace"].warnings)
    assert any(w.startswith("TracerWarning") for w in table["torch.jit.trace"].warnings)


def test_rows_are_plain_dataclasses(gate):
    row = gate["torch.jit.script"]
    assert isinstance(row, Attempt) and dataclasses.is_dataclass(row)
    assert set(dataclasses.asdict(row)) >= {"method", "worked", "reason", "graphs", "ops", "matches",
                                            "seconds", "note", "warnings"}
    with pytest.raises(FxCourseError, match="one of torch.jit.trace"):
        gate["torch.jit.freeze"]


def test_timings_only_when_asked(gate):
    assert "seconds" not in gate.to_text() and "seconds" in gate.to_text(timings=True)
    assert "seconds" not in gate.to_html() and "seconds" in gate.to_html(timings=True)


def test_text_html_and_golden(gate, golden):
    assert str(gate) == gate.to_text() and gate._repr_html_() == gate.to_html()
    odd = Comparison("M<1>", "x", "given", [Attempt("torch.jit.trace", False, "<built-in function add> & co",
                                                    note="a 'quote'")])
    html = odd.to_html()
    assert "M&lt;1&gt;" in html and "&lt;built-in function add&gt; &amp; co" in html
    assert "<built-in" not in html and "a &#x27;quote&#x27;" in html
    golden("compare_gate", gate.to_text())


def test_golden_mlp_everything_works(golden):
    model, args = zoo.example("mlp")
    table = compare_capture(model, *args)
    assert all(r.worked and r.matches for r in table.rows)
    golden("compare_mlp", table.to_text())


def test_item_break_trace_bakes_a_constant():
    model, args = zoo.example("item_break")
    table = compare_capture(model, *args)
    assert table["torch.jit.trace"].reason.startswith("the trace baked in a value from the example input")
    assert table["dynamo fullgraph=False"].graphs == 2


def test_plain_function_and_given_second_input():
    def f(x):
        return torch.relu(x) + 1
    table = compare_capture(f, torch.randn(3), second_args=(torch.randn(3),))
    assert all(r.worked and r.matches for r in table.rows), [r.reason for r in table.rows]
    assert "second input: given" in table.to_text()
    assert torch._dynamo.eval_frame._debug_get_cache_entry_list(f.__code__) == []  # reset after


class Boom(torch.nn.Module):
    def forward(self, x):
        raise ValueError("boom: bad input")


@pytest.mark.parametrize("bad, match", [(None, "got None"), (42, "got int 42")])
def test_rejects_non_callables(bad, match):
    with pytest.raises(FxCourseError, match=match):
        compare_capture(bad, torch.ones(1))


def test_rejects_bad_second_args():
    model, args = zoo.example("mlp")
    with pytest.raises(FxCourseError, match="second_args=int 5"):
        compare_capture(model, *args, second_args=5)


def test_model_error_carries_original_type_and_message():
    with pytest.raises(FxCourseError, match="ValueError: boom: bad input"):
        compare_capture(Boom(), torch.ones(1))
