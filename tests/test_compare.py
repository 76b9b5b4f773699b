"""compare_capture(): six capture systems on the zoo, as data, text and HTML."""
from __future__ import annotations

import contextlib
import dataclasses
import io

import pytest
import torch
import torch._dynamo
from torch import nn

from fxcourse import FxCourseError, is_torchscript_deprecation, zoo
from fxcourse.viewers.compare import METHODS, Attempt, Comparison, compare_capture

from limitations import fake_disagrees


GATE_IF = f"zoo.py:{zoo.Gate.forward.__code__.co_firstlineno + 2}"  # the data-dependent if


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
    assert trace.reason.startswith("the trace baked in one branch: outputs differ from eager on the second input "
                                   "(output: at index (0, ")
    assert trace.note.startswith("TracerWarning: Converting a tensor to a Python boolean")
    assert script.worked and script.matches is True
    assert not fx.worked and fx.reason.startswith("TraceError: symbolically traced variables cannot be used")
    assert "control flow" in fx.reason
    assert not full.worked and full.reason == "Unsupported: Data-dependent branching"
    assert dyn.worked and dyn.matches is True and (dyn.graphs, dyn.breaks) == (2, 1)
    assert dyn.reason.startswith("2 graphs, 1 graph break: Data-dependent branching") and GATE_IF in dyn.reason
    assert not export.worked and "data-dependent" in export.reason and "torch.cond" in export.note
    assert all(r.seconds > 0 for r in gate.rows)
    assert all("\n" not in r.reason and "0x" not in r.reason for r in gate.rows)


def test_warnings_are_recorded_not_printed(capfd):
    model, args = zoo.example("gate")
    table = compare_capture(model, *args)
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""
    assert any(is_torchscript_deprecation(w.partition(": ")[2]) for w in table["torch.jit.trace"].warnings)
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


# -- counts, skips, Dynamo's own failures -------------------------------------------------
def two_breaks(x):
    x = torch.sin(x)
    torch._dynamo.graph_break()
    x = x * 3
    torch._dynamo.graph_break()
    return x + 1


def prints_in_loop(x):
    for i in range(2):
        print("step", i)
        x = x + i
    return x


def shape_only(x):
    return x.shape[0] * 2


@pytest.mark.parametrize("fn", [two_breaks, prints_in_loop, shape_only], ids=lambda f: f.__name__)
def test_dynamo_row_agrees_with_capture_and_says_its_counts(fn):
    from fxcourse import capture

    x = torch.randn(3, generator=torch.Generator().manual_seed(8))
    with contextlib.redirect_stdout(io.StringIO()):
        table = compare_capture(fn, x)
        cap = capture(fn, x)
    row = table["dynamo fullgraph=False"]
    assert (row.graphs, row.breaks) == (cap.graph_count, cap.break_count)
    if cap.graph_count != 1 or cap.break_count:
        assert "one graph" not in row.reason and "no graph breaks" not in row.reason
    if cap.break_count:
        assert row.reason.startswith(f"{cap.graph_count} graph") and f"{cap.break_count} graph break" in row.reason


def test_two_breaks_reason_counts_both():
    table = compare_capture(two_breaks, torch.ones(3))
    row = table["dynamo fullgraph=False"]
    assert (row.graphs, row.breaks) == (3, 2)
    assert row.reason.startswith("3 graphs, 2 graph breaks; the first: Call to `torch._dynamo.graph_break()`")


def test_skipped_frame_is_said_to_be_skipped():
    row = compare_capture(shape_only, torch.ones(4))["dynamo fullgraph=False"]
    assert (row.graphs, row.breaks) == (0, 0) and row.worked
    assert "skipped the frame of shape_only" in row.reason or "no tensor operation" in row.reason


def guarded_matmul(x, w):
    try:
        return x @ w
    except RuntimeError:
        return x


def test_a_trace_crash_is_contained():
    x, w = torch.ones(2, 3), torch.ones(4, 4)
    table = compare_capture(guarded_matmul, x, w)  # jit.trace segfaults on this in-process
    trace = table["torch.jit.trace"]
    assert not trace.worked and "crashed the process" in trace.reason
    assert table["dynamo fullgraph=True"].worked and table["dynamo fullgraph=True"].matches  # since 2.14
    assert "torch.cond" not in table.to_text()


def test_dynamo_failure_is_a_limitation():
    table = compare_capture(fake_disagrees, torch.ones(3))
    for method in ("dynamo fullgraph=True", "dynamo fullgraph=False"):
        row = table[method]
        assert not row.worked and row.reason.startswith("a Dynamo limitation"), row.reason
        assert "TorchRuntimeError" in row.reason
    assert table["torch.fx.symbolic_trace"].worked and table["torch.fx.symbolic_trace"].matches


# -- matches eager: the whole structure ---------------------------------------------------
class AsList(torch.nn.Module):
    def forward(self, x):
        if torch.jit.is_scripting():  # the scripted module answers with a tuple
            return (x * 2, x + 1)
        return [x * 2, x + 1]


@dataclasses.dataclass
class Pair:
    low: torch.Tensor
    high: torch.Tensor


class AsDataclass(torch.nn.Module):
    def forward(self, x):
        return Pair(x.clamp(max=0), x.clamp(min=0))


def test_difference_compares_structure():
    from fxcourse.viewers._compare_check import difference

    x = torch.ones(2)
    assert difference((x, x), [x, x]) == "output: a tuple, eager gives a list"
    assert difference({"a": x}, {"b": x}) == "output: keys ['a'], eager gives ['b']"
    assert difference(Pair(x, x), Pair(x, -x)).startswith("output.high: at index (0,) got 1, eager gives -1")
    assert difference(Pair(x, x), Pair(x, x)) == ""
    assert difference([x, 3], [x, 4]) == "output[1]: 3, eager gives 4"
    assert difference(torch.tensor([float("nan")]), torch.tensor([1.0])).startswith("output: NaN")


def test_list_output_matches_only_as_a_list():
    table = compare_capture(AsList(), torch.randn(3))
    script = table["torch.jit.script"]
    assert script.worked and script.matches is False
    assert script.reason == "outputs differ from eager on the example input (output: a tuple, eager gives a list)"
    assert table["dynamo fullgraph=False"].matches is True and table["torch.jit.trace"].matches is True


def test_dataclass_output_is_compared_field_by_field():
    table = compare_capture(AsDataclass(), torch.randn(4))
    row = table["dynamo fullgraph=False"]
    assert row.matches is True, row.reason
    assert not any("running it failed" in r.reason for r in table.rows if r.matches is None and r.worked)


def sum_parts(parts, scale):
    return parts[0] * scale["w"] + parts[1]


def test_second_input_flips_tensors_inside_containers_and_says_so():
    parts = [torch.ones(2), torch.full((2,), 2.0)]
    scale = {"w": torch.full((2,), 3.0)}
    table = compare_capture(sum_parts, parts, scale)
    assert "3 floating-point tensors sign-flipped" in table.second
    assert torch.equal(parts[0], torch.ones(2)) and torch.equal(scale["w"], torch.full((2,), 3.0))
    table = compare_capture(lambda n: torch.arange(n), 3)
    assert "holds no floating-point tensor" in table.second


def doubled_rows(x):
    return torch.stack([row * 2 for row in x])


def test_no_cond_hint_without_a_branch():
    table = compare_capture(doubled_rows, torch.randn(3, 2))
    assert "torch.cond" not in table.to_text()


# -- the caller's objects ------------------------------------------------------------------
class ScaleInPlace(torch.nn.Module):
    def forward(self, x):
        x.mul_(2)
        return x


def test_inputs_and_module_state_are_left_as_found():
    torch.manual_seed(9)
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3)).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(4, 3)
    x0 = x.clone()
    compare_capture(model, x)
    assert model.training and all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    assert torch.equal(x, x0)
    y = torch.ones(2)
    table = compare_capture(ScaleInPlace(), y)
    assert torch.equal(y, torch.ones(2))
    assert table["dynamo fullgraph=False"].matches is True


def test_compiled_model_is_unwrapped():
    model, args = zoo.example("mlp")
    table = compare_capture(torch.compile(model, backend="eager"), *args)
    assert table.name == "MLP" and all(r.worked for r in table.rows)


def test_a_row_that_fails_when_timed_is_left_untimed_and_says_why():
    """A model with no ops: fullgraph=False skips its frame after Dynamo's reset, and the fullgraph=True
    wrapper captured before then finds no compiled frame when called again. The table still comes back."""
    class Same(nn.Module):
        def forward(self, x):
            return x

    with torch.no_grad():
        table = compare_capture(Same(), torch.randn(2, 3), paths=["dynamo fullgraph=True", "dynamo fullgraph=False"],
                                latency=True)
    full, split = table["dynamo fullgraph=True"], table["dynamo fullgraph=False"]
    assert full.worked and full.matches and full.latency is None and table.speedup(full.method) is None
    assert "not timed: running it again failed: RuntimeError" in full.reason, full.reason
    assert split.latency is not None and split.graphs == 0
