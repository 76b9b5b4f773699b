"""capture(): agreement with torch._dynamo.explain, breaks, guards, recompiles, rendering."""
from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch._dynamo

from fxcourse import FxCourseError, zoo
from fxcourse import Capture, capture


def print_break(x):
    x = x + 1
    print("hi")
    return x * 2


def tensor_if(x):
    if x.mean() > 0:
        return torch.sin(x)
    return torch.cos(x) - 1


def two_breaks(x):
    x = torch.relu(x)
    torch._dynamo.graph_break()
    x = x * 2
    print("again")
    return x - 1


def no_tensors(a, b):
    return a * b + 1


def dynamo_logged_breaks(fn, args):
    """How many graph breaks Dynamo's own log reports (TORCH_LOGS=graph_breaks) for fn(*args).

    Only records of the graph_breaks artifact count: Dynamo also logs ordinary warnings
    that start with "Graph break" (e.g. the hint about capture_scalar_outputs before an
    .item() break), which are not breaks of their own.
    """
    messages = []

    class Listen(logging.Handler):
        def emit(self, record):
            if record.name.endswith(".__graph_breaks"):  # the artifact, not ordinary warnings
                messages.append(record.getMessage())

    torch._dynamo.reset()
    torch._dynamo.utils.reset_graph_break_dup_checker()
    listen = Listen()
    torch._logging.set_logs(graph_breaks=True)
    logging.getLogger("torch._dynamo").addHandler(listen)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            torch.compile(fn, backend="eager")(*args)
    finally:
        logging.getLogger("torch._dynamo").removeHandler(listen)
        torch._logging.set_logs()
        torch._dynamo.reset()
    return sum(1 for m in messages if m.startswith("Graph break"))


def _case(name):
    if name in zoo.names():
        return zoo.example(name)
    x = torch.randn(2, 3, generator=torch.Generator().manual_seed(0))
    return {"print_break": (print_break, (x,)), "tensor_if": (tensor_if, (x,)),
            "two_breaks": (two_breaks, (x,)), "no_tensors": (no_tensors, (3, 4))}[name]


GATE_IF = f"zoo.py:{zoo.Gate.forward.__code__.co_firstlineno + 2}"  # the data-dependent if
CASES = ["mlp", "gate", "item_break", "wrapped_split", "conv_bn_relu",
         "print_break", "tensor_if", "two_breaks", "no_tensors"]


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", CASES)
def test_counts_agree_with_explain_and_dynamos_log(name):
    fn, args = _case(name)
    want = torch._dynamo.explain(fn)(*args)
    logged = dynamo_logged_breaks(fn, args)
    cap = capture(fn, *args)
    assert cap.graph_count == want.graph_count
    assert cap.op_count == want.op_count
    assert cap.break_count == len(cap.breaks) == logged


def test_gate_counts_are_the_lectures_numbers():
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    assert (cap.graph_count, cap.break_count, cap.op_count) == (2, 1, 3)


def test_break_points_at_user_line():
    cap = capture(print_break, torch.ones(3))
    (brk,) = cap.breaks
    line = print_break.__code__.co_firstlineno + 2
    assert brk.location == f"test_capture.py:{line}"
    assert brk.line == 'print("hi")' and brk.function == "print_break"
    assert "print" in brk.explanation


def test_gate_break_is_data_dependent_and_result_is_real():
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    assert cap.breaks[0].reason.startswith("Data-dependent branching")
    assert cap.breaks[0].location == GATE_IF
    torch.testing.assert_close(cap.result, model(*args))
    assert [g.index for g in cap.graphs] == [0, 1]
    assert "linear" in cap.graphs[0].code and "relu" in cap.graphs[1].ops
    assert cap.graphs[0].example_inputs and isinstance(cap.graphs[0].gm, torch.fx.GraphModule)
    assert "L['x']: TENSOR_MATCH" in cap.guards


def test_call_again_records_recompile_reason():
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    again = cap.call_again(torch.randn(3, 4))
    assert again is cap and tuple(cap.result.shape) == (3, 4)
    reasons = [r.reason for r in cap.recompiles]
    assert any("size mismatch at index 0. expected 2, actual 3" in r for r in reasons), reasons
    assert {r.call for r in cap.recompiles} == {2}
    assert cap.graph_count == 2 and len(cap.graphs) > 2  # the first call's numbers stay put
    assert "recompilations:" in cap.to_text() and "call 2: forward" in cap.to_text()


def test_same_input_again_does_not_recompile():
    model, args = zoo.example("mlp")
    cap = capture(model, *args).call_again(*args)
    assert cap.recompiles == [] and len(cap.graphs) == 1


def test_transformed_code_lists_cache_entries_and_resume_functions():
    cap = capture(print_break, torch.ones(2))
    names = [name for name, _ in cap.transformed_code]
    assert names[0] == "print_break" and any(n.startswith("torch_dynamo_resume_in") for n in names)


def test_accepts_compiled_wrapper_and_kwargs():
    def f(x, *, scale):
        return x * scale
    cap = capture(torch.compile(f, backend="eager"), torch.ones(2), scale=3.0)
    assert cap.graph_count == 1 and torch.equal(cap.result, torch.full((2,), 3.0))


def test_dynamo_logs_do_not_reach_stderr(capfd):
    model, args = zoo.example("item_break")
    cap = capture(model, *args)
    assert capfd.readouterr().err == ""  # Dynamo's "Graph break from Tensor.item()" warning
    assert isinstance(cap.notes, list)  # ...is recorded here (the first time it is logged)


def test_text_and_html(golden):
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    text, html = cap.to_text(), cap.to_html()
    assert str(cap) == text and cap._repr_html_() == html
    assert "sum_1 &gt; 0" in html and "sum_1 > 0" not in html
    assert "0x" not in text and not re.search(r"/\S*\.py", text)
    golden("capture_gate", text)


def test_golden_item_break(golden):
    model, args = zoo.example("item_break")
    golden("capture_item_break", capture(model, *args).to_text())


class Boom(torch.nn.Module):
    def forward(self, x):
        raise ValueError("boom: bad input")


@pytest.mark.parametrize("bad, match", [(None, "got None"), (42, "got int 42")])
def test_rejects_non_callables(bad, match):
    with pytest.raises(FxCourseError, match=match):
        capture(bad, torch.ones(1))


def test_forward_error_carries_original_type_and_message():
    with pytest.raises(FxCourseError, match="ValueError: boom: bad input") as info:
        capture(Boom(), torch.ones(1))
    assert isinstance(info.value.__cause__, ValueError)


def test_rejects_bad_backend_and_dynamic():
    with pytest.raises(FxCourseError, match="backend"):
        capture(print_break, torch.ones(1), backend="no-such-backend")
    with pytest.raises(FxCourseError, match="dynamic"):
        capture(print_break, torch.ones(1), dynamic="yes")


_SCRIPT = textwrap.dedent("""
    import torch
    from fxcourse import zoo
    from fxcourse import bytecode
    from fxcourse import capture
    from fxcourse.viewers.compare import compare_capture
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    cap.call_again(torch.randn(3, 4, generator=torch.Generator().manual_seed(7)))
    view = bytecode(model)
    table = compare_capture(model, *args)
    for part in (cap.to_text(), cap.to_html(), view.to_text(), view.to_html(),
                 table.to_text(), table.to_html()):
        print(part)
        print("\\x00")
""")


def test_rendering_is_identical_in_a_fresh_process():
    """The same views, rendered here and in a new interpreter, are byte-identical."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    from fxcourse import bytecode
    from fxcourse.viewers.compare import compare_capture

    torch.manual_seed(1234)  # a different global RNG state than the child's: nothing below may depend on it
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    cap.call_again(torch.randn(3, 4, generator=torch.Generator().manual_seed(7)))
    view = bytecode(model)
    table = compare_capture(model, *args)
    here = "".join(f"{part}\n\x00\n" for part in (cap.to_text(), cap.to_html(), view.to_text(),
                                                  view.to_html(), table.to_text(), table.to_html()))
    assert done.stdout == here
    assert isinstance(cap, Capture)


def test_capture_keeps_the_callers_dynamic_marks():
    def scale(x):
        return x * 2

    x = torch.randn(4, 3)
    torch._dynamo.mark_dynamic(x, 0)
    cap = capture(scale, x)
    (shape,) = [n.meta["example_value"].shape for n in cap.graphs[0].gm.graph.nodes
                if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.Tensor)]
    assert str(shape[0]).startswith("s") and shape[1] == 3, shape
    assert cap.graph_count == 1 and not cap.recompiles


def test_recompile_reason_keeps_a_float_guard_whole_and_once():
    def times(x, s):
        return x * s

    cap = capture(times, torch.randn(2), 0.5289567708969116)
    cap.call_again(torch.randn(2), 0.25)
    (record,) = cap.recompiles
    assert record.failures == ["0/0: s == 0.5289567708969116"]
