"""capture() counts every graph break Dynamo takes, even where explain sees none.

Each case is a function or model the lectures do not use. The reference is Dynamo's own
graph-break log (``torch._logging.set_logs(graph_breaks=True)``, what
``TORCH_LOGS=graph_breaks`` prints), read independently of capture.
"""
from __future__ import annotations

import contextlib
import io

import pytest
import torch
import torch._dynamo
from torch import nn

from fxcourse import FxCourseError, capture

from limitations import fake_disagrees
from test_capture import dynamo_logged_breaks


class Doubler(nn.Module):
    def forward(self, x):
        return x * 2


def _noisy_hook(module, inputs, output):
    print("seen", type(module).__name__)  # an unsupported call, and no tensor op before it


def hooked_stack():
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2), Doubler())
    for layer in model:
        layer.register_forward_hook(_noisy_hook)
    return model, (torch.randn(3, 4),)


def _pre_hook(module, inputs):
    print("about to run", type(module).__name__)


def pre_hooked():
    torch.manual_seed(4)
    model = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid())
    model[1].register_forward_pre_hook(_pre_hook)
    return model, (torch.randn(2, 4),)


def log_first(x):
    print("starting")  # the first statement: no graph before it
    return torch.cos(x) + 1


def _announce(x):
    torch._dynamo.graph_break()
    return x.exp()


def calls_helper(x):
    y = _announce(x)  # the break is inside the inlined helper
    return y - 1


def breaks_in_loop(x):
    for i in range(2):
        print("step", i)
        x = x + i
    return x


def _x():
    return (torch.randn(3, generator=torch.Generator().manual_seed(5)),)


CASES = {
    "hooked_stack": hooked_stack,
    "pre_hooked": pre_hooked,
    "log_first": lambda: (log_first, _x()),
    "calls_helper": lambda: (calls_helper, _x()),
    "breaks_in_loop": lambda: (breaks_in_loop, _x()),
}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _quiet_capture(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return capture(fn, *args, **kwargs)


@pytest.mark.parametrize("name", sorted(CASES))
def test_break_count_matches_dynamos_own_log(name):
    fn, args = CASES[name]()
    with contextlib.redirect_stdout(io.StringIO()):
        logged = dynamo_logged_breaks(fn, args)
    cap = _quiet_capture(fn, *args)
    assert logged >= 1
    assert cap.break_count == len(cap.breaks) == logged
    assert all(b.location != "?" and b.reason for b in cap.breaks)


def test_explain_misses_breaks_that_capture_reports():
    """The reason for this module: explain lists no reason for a hook's break."""
    model, args = hooked_stack()
    with contextlib.redirect_stdout(io.StringIO()):
        explained = torch._dynamo.explain(model)(*args)
    cap = _quiet_capture(model, *args)
    assert len(explained.break_reasons) < cap.break_count


def test_hook_break_points_at_the_hook():
    model, args = hooked_stack()
    cap = _quiet_capture(model, *args)
    line = _noisy_hook.__code__.co_firstlineno + 1
    assert {b.location for b in cap.breaks} == {f"test_capture_breaks.py:{line}"}
    assert {b.function for b in cap.breaks} == {"_noisy_hook"}
    assert cap.breaks[0].line.startswith('print("seen"')


def test_break_before_any_op_is_reported_with_its_line():
    cap = _quiet_capture(log_first, *_x())
    (brk,) = cap.breaks
    assert brk.location == f"test_capture_breaks.py:{log_first.__code__.co_firstlineno + 1}"
    assert brk.function == "log_first" and brk.line.startswith('print("starting")')
    assert "print" in brk.explanation


def test_break_inside_inlined_helper_names_the_helper():
    cap = _quiet_capture(calls_helper, *_x())
    assert cap.break_count >= 1
    first = cap.breaks[0]
    assert first.function == "_announce" and first.line == "torch._dynamo.graph_break()"
    assert "graph_break()" in first.reason


def test_break_in_loop_says_the_rest_runs_eagerly():
    cap = _quiet_capture(breaks_in_loop, *_x())
    assert cap.break_count == 1 and cap.graph_count == 0
    assert "runs eagerly" in cap.breaks[0].effect
    text = cap.to_text()
    assert "1 graph break" in text and "runs eagerly" in text


def test_later_calls_do_not_change_first_call_breaks():
    cap = _quiet_capture(log_first, *_x())
    with contextlib.redirect_stdout(io.StringIO()):
        cap.call_again(torch.randn(2, 2))
    assert cap.break_count == 1


# -- recompiles -------------------------------------------------------------------------
def scaled(x, n):
    return x * n


def test_one_record_per_recompile_naming_each_failed_guard():
    cap = capture(scaled, torch.ones(2), 2)
    cap.call_again(torch.ones(3), 3)  # one cache entry; both of its guards on x and n fail
    cap.call_again(torch.ones(4, 2), 4)  # two cache entries to check
    assert [r.call for r in cap.recompiles] == [2, 3]
    first, second = cap.recompiles
    assert {f.split(": ", 1)[0] for f in first.failures} == {"0/0"}
    assert any(f.endswith(": n == 2") for f in first.failures), first.failures
    assert any("tensor 'x'" in f for f in first.failures), first.failures
    assert {f.split(": ", 1)[0] for f in second.failures} == {"0/0", "0/1"}
    assert any(f.startswith("0/1: tensor 'x' rank mismatch") for f in second.failures), second.failures
    assert any(f == "0/0: n == 2" for f in second.failures), second.failures
    assert second.reason == "; ".join(f.split(": ", 1)[1] for f in second.failures)
    text = cap.to_text()
    assert text.count("call 3: scaled:") == 1 and "    - 0/0: n == 2" in text


# -- guards -----------------------------------------------------------------------------
def test_grad_mode_request_is_marked_and_global_state_really_checks_it():
    from fxcourse.viewers._dynamo_cache import guard_lines
    from torch._dynamo.eval_frame import _debug_get_cache_entry_list

    cap = capture(scaled, torch.ones(2), 2)
    marked = [g for g in cap.guards if g.startswith("GRAD_MODE")]
    assert marked and "no check of its own" in marked[0]
    assert any(g.startswith("DETERMINISTIC_ALGORITHMS (no check") for g in cap.guards)
    assert "GLOBAL_STATE" in cap.guards
    (entry,) = _debug_get_cache_entry_list(scaled.__code__)
    installed = guard_lines(entry.guard_manager)
    assert any(line.startswith("GLOBAL_STATE") for line in installed)
    assert not any("GRAD_MODE" in line for line in installed)
    with torch.no_grad():  # the global-state guard is what notices grad mode
        cap.call_again(torch.ones(2), 2)
    assert len(cap.recompiles) == 1 and "grad_mode" in cap.recompiles[0].reason.lower()


# -- the caller's objects ---------------------------------------------------------------
class InPlace(nn.Module):
    def forward(self, x):
        x.mul_(3)
        return x + 1


def test_inputs_and_module_state_are_left_as_found():
    torch.manual_seed(6)
    model = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(4, 3)
    x0 = x.clone()
    cap = capture(model, x)
    cap.call_again(x)
    assert model.training and model[1].training
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert torch.equal(x, x0)
    y = torch.ones(2)
    cap = capture(InPlace(), y)
    assert torch.equal(y, torch.ones(2)) and torch.equal(cap.result, torch.full((2,), 4.0))


def test_compiled_module_is_unwrapped_not_compiled_again():
    model = Doubler()
    compiled = torch.compile(model, backend="eager")
    cap = capture(compiled, torch.ones(2))
    assert cap.fn is model and cap.graph_count == 1


# -- whose error it is ------------------------------------------------------------------
def guarded_matmul(x, w):
    try:
        return x @ w
    except RuntimeError:
        return x


def test_try_except_around_a_failing_op_is_one_graph_in_this_version():
    """torch 2.13 failed on this with TorchRuntimeError; 2.14 takes the except branch while tracing."""
    x, w = torch.ones(2, 3), torch.ones(4, 4)
    torch._dynamo.reset()
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    out = torch.compile(guarded_matmul, backend=keep, fullgraph=True)(x, w)
    assert torch.equal(out, x) and len(graphs) == 1
    assert not [n for n in graphs[0].graph.nodes if n.op == "call_function"]  # the except branch: x itself


def test_dynamo_failure_is_called_a_dynamo_limitation():
    x = torch.ones(3)
    torch.testing.assert_close(fake_disagrees(x), x * 3)  # runs fine without torch.compile
    with pytest.raises(FxCourseError, match="Dynamo limitation") as info:
        capture(fake_disagrees, x)
    assert "TorchRuntimeError" in str(info.value) and "runs without torch.compile" in str(info.value)


def _broken_backend(gm, example_inputs):
    raise NotImplementedError("no kernel for this graph")


def test_backend_failure_names_the_backend_and_its_error():
    with pytest.raises(FxCourseError) as info:
        capture(scaled, torch.ones(2), 2, backend=_broken_backend)
    message = str(info.value)
    assert "_broken_backend" in message and "NotImplementedError: no kernel for this graph" in message
    assert "fix or replace backend" in message


def test_frame_with_nothing_to_capture_is_said_to_be_skipped():
    def shape_only(x):
        return x.shape[0] * 2

    cap = capture(shape_only, torch.ones(5))
    assert (cap.graph_count, cap.break_count) == (0, 0)
    assert cap.skip_reason.startswith("Dynamo skipped the frame of") or "no tensor operation" in cap.skip_reason
    assert cap.skip_reason in cap.to_text()


class CachesOnFirstCall(nn.Module):
    """Like torchvision's MultiScaleRoIAlign: a value computed on the first call and kept."""

    def __init__(self):
        super().__init__()
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = float(x.abs().max().item())  # a graph break, on the first call only
        return x / self.scale


def test_attributes_set_during_the_call_are_put_back():
    model = CachesOnFirstCall()
    x = torch.randn(3, generator=torch.Generator().manual_seed(7))
    first = capture(model, x)
    assert model.scale is None  # the learner's model has not been "called"
    second = capture(model, x)
    assert first.break_count == second.break_count >= 1


def _inner(x):
    if x.sum() > 0:  # data-dependent: breaks wherever it is traced
        return x + 1
    return x - 1


def _middle(x):
    return _inner(x * 2) + 1


def _outer(x):
    return _middle(x) * 3


def _two_calls(x):
    a = _inner(x)
    b = _inner(-x)
    return a + b


def test_a_break_met_while_inlining_is_shown_once_and_its_repeats_say_whose_graph_they_split():
    cap = capture(_outer, torch.ones(3))
    # Dynamo really splits three frames here (5 graphs); its log has the same stack three times
    assert cap.graph_count == 5 and len(cap.breaks) == 3 == dynamo_logged_breaks(_outer, (torch.ones(3),))
    first, second, third = cap.breaks
    assert {b.location for b in cap.breaks} == {f"test_capture_breaks.py:{_inner.__code__.co_firstlineno + 1}"}
    assert (first.repeat_of, second.repeat_of, third.repeat_of) == (0, 1, 1)
    assert (first.frame, first.callee) == ("_outer", "_middle")
    assert (second.frame, second.callee) == ("_middle", "_inner")
    assert third.frame == "" and third.function == "_inner"
    text = cap.to_text()
    assert "_outer's graph is split at that call" in text and "return _middle(x) * 3" in text
    assert "the same break as 1, met again in _middle's own frame" in text
    assert "the same break as 1, met again in _inner's own frame: this time it splits _inner's graph\n" in text
    assert text.count("Detected data-dependent branching") == 1  # the reason is not printed three times
    assert "the same break as 1" in cap.to_html()


def test_the_same_line_reached_from_two_call_sites_is_not_a_repeat():
    cap = capture(_two_calls, torch.ones(3))
    assert [b.repeat_of for b in cap.breaks] == [0, 1, 0]  # the second call site is a break of its own


def test_repeats_speak_chinese(monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    text = capture(_outer, torch.ones(3)).to_text()
    assert "与第 1 处是同一个图中断，在 _middle 自己的帧中再次遇到" in text
    assert "Dynamo 在 _outer 中内联对 _middle 的调用时遇到它" in text
    assert "the same break" not in text
