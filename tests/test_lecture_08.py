"""Claims of lecture 08 (backends and graph intervention), executed on the installed torch.

Each test pins one statement the lecture makes after its third review (the earlier ones are
in test_lectures_06_08.py): if a torch release changes the behaviour, the test fails and the
lecture's prose has to change with it. The functions here are not the lecture's own, so a
pass is not a copy of a notebook output.
"""
import contextlib
import io

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.utils import counters

from fxcourse import torch_logs

from lecture_claims import Graphs, fresh_dynamo  # noqa: F401 (fresh_dynamo is an autouse fixture)


def _raising(exc):
    def backend(gm, example_inputs):
        raise exc
    return backend


class _Own(nn.Module):
    """A top-level module of our own class (its forward is not torch.nn's)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.act = nn.Tanh()

    def forward(self, x):
        return self.act(self.fc(x))


# --- eager_then_compile: where the first calls are remembered ------------------------------

def test_eager_then_compile_keys_the_first_two_calls_by_file_and_first_line():
    from torch._dynamo import eval_frame

    one, other = (lambda x: x.exp()), (lambda x: x.neg())   # two code objects, one line
    assert one.__code__ is not other.__code__
    graphs = Graphs()
    with torch.compiler.set_stance("eager_then_compile"):
        torch.compile(one, backend=graphs)(torch.ones(2))
        assert len(graphs) == 0                   # one's first call ran eagerly
        torch.compile(other, backend=graphs)(torch.ones(2))
        assert len(graphs) == 1                   # other's first call counted as the second

        def sizes(x):
            return x.sqrt() + 1

        compiled = torch.compile(sizes, backend=graphs)
        for n in (2, 3, 4, 5):
            compiled(torch.ones(n))
    code = sizes.__code__
    kept = eval_frame._EXAMPLE_INPUTS[code.co_filename + str(code.co_firstlineno)]
    assert len(kept) == 2                         # only the first two calls are kept
    torch._dynamo.reset()
    assert len(eval_frame._EXAMPLE_INPUTS[code.co_filename + str(code.co_firstlineno)]) == 2


# --- skip_guard_eval_unsafe: which guards still run -----------------------------------------

_OFFSET = 0


def _add_offset(x):
    return x + _OFFSET


def test_skip_guard_eval_unsafe_checks_tensor_guards_and_guards_that_failed_before():
    global _OFFSET
    graphs = Graphs()
    compiled = torch.compile(_add_offset, backend=graphs)
    needs_a_compile = "Recompilation triggered with skip_guard_eval_unsafe stance"
    try:
        compiled(torch.zeros(1))
        with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
            for other in (torch.zeros(1, dtype=torch.float64), torch.zeros(3)):
                with pytest.raises(RuntimeError, match=needs_a_compile):
                    compiled(other)               # tensor guards still run: no recompile
            _OFFSET = 5
            assert compiled(torch.zeros(1)).item() == 0   # the OFFSET guard never failed
        assert compiled(torch.zeros(1)).item() == 5       # default stance: recompiled
        assert len(graphs) == 2
        with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
            for _OFFSET in (0, 5):
                assert compiled(torch.zeros(1)).item() == _OFFSET   # now OFFSET is checked
            _OFFSET = 7
            with pytest.raises(RuntimeError, match=needs_a_compile):
                compiled(torch.zeros(1))
        assert len(graphs) == 2
    finally:
        _OFFSET = 0


# --- hooks on the top-level module ----------------------------------------------------------

def _compile_with_print_hook(model, x):
    model.register_forward_hook(lambda m, args, out: print("hook ran"))
    graphs = Graphs()
    printed = io.StringIO()
    with torch_logs(), contextlib.redirect_stdout(printed):
        out = torch.compile(model, backend=graphs)(x)
    return graphs, sum(counters["graph_break"].values()), printed.getvalue(), out


@pytest.mark.parametrize("make, ops, breaks", [
    (lambda: nn.Sequential(nn.Linear(3, 3), nn.Tanh()), [["linear", "tanh"]], 2),
    (_Own, [["linear", "tanh"]], 1)])
def test_a_print_hook_on_the_top_level_module_leaves_its_ops_in_one_graph(make, ops, breaks):
    torch.manual_seed(0)
    model, x = make(), torch.randn(2, 3)
    graphs, counted, printed, out = _compile_with_print_hook(model, x)
    assert graphs.ops() == ops                    # the model's ops: one graph
    assert counted == breaks                      # yet Dynamo counts breaks at the print
    assert printed == "hook ran\n"                # the hook ran, eagerly
    with contextlib.redirect_stdout(io.StringIO()):
        torch.testing.assert_close(out, model(x))
        torch._dynamo.reset()
        explained = torch._dynamo.explain(model)(x)
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)


def test_only_a_top_level_module_of_your_own_class_runs_its_hook_outside_the_graph():
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    found = {}
    for label, model in (("sequential", nn.Sequential(nn.Linear(3, 3), nn.Tanh())),
                         ("own", _Own())):
        model.register_forward_hook(lambda m, args, out: out + 100)
        graphs = Graphs()
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(model, backend=graphs)(x), model(x))
        found[label] = graphs.ops()
    assert found["sequential"] == [["linear", "tanh", "add"]]   # traced into the graph
    assert found["own"] == [["linear", "tanh"], ["add"]]        # a frame of its own


# --- which backend exceptions are not wrapped -----------------------------------------------

def test_shorten_traceback_errors_come_back_unwrapped():
    from torch._dynamo.exc import BackendCompilerFailed, ShortenTraceback
    from torch._inductor.exc import GPUTooOldForTriton, TritonMissing

    assert issubclass(BackendCompilerFailed, ShortenTraceback)
    assert issubclass(TritonMissing, ShortenTraceback)
    assert issubclass(GPUTooOldForTriton, ShortenTraceback)
    x = torch.ones(3)
    with pytest.raises(TritonMissing):
        torch.compile(lambda x: x.exp() * 2, backend=_raising(TritonMissing(None)))(x)
    torch._dynamo.reset()
    failed = BackendCompilerFailed(print, KeyError("k"), None)
    with pytest.raises(BackendCompilerFailed) as info:
        torch.compile(lambda x: x.exp() * 3, backend=_raising(failed))(x)
    assert info.value is failed and isinstance(info.value.inner_exception, KeyError)


def test_a_restart_signal_from_a_backend_restarts_the_analysis():
    from torch._dynamo.exc import TensorifyScalarRestartAnalysis

    calls = []

    def restart_once(gm, example_inputs):
        calls.append(gm)
        if len(calls) == 1:
            raise TensorifyScalarRestartAnalysis()
        return gm.forward

    x = torch.ones(3)
    torch.testing.assert_close(torch.compile(lambda x: x.exp() - 4, backend=restart_once)(x),
                               x.exp() - 4)
    assert len(calls) == 2                        # not BackendCompilerFailed: traced again


def test_a_fake_tensor_error_with_a_nonstrict_trace_call_is_backend_compiler_failed():
    from torch._dynamo.exc import BackendCompilerFailed
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    fake_error = DynamicOutputShapeException(torch.ops.aten.nonzero.default)
    opaque = torch.compiler.nonstrict_trace(lambda y: y * 5)
    x = torch.ones(3)
    with pytest.raises(BackendCompilerFailed) as info:
        torch.compile(lambda x: opaque(x.exp()) + 1, backend=_raising(fake_error))(x)
    assert info.value.inner_exception is fake_error
    torch._dynamo.reset()
    plain = torch.compile(lambda x: (x.exp() * 5) + 1, backend=_raising(fake_error))
    with torch_logs():
        torch.testing.assert_close(plain(x), x.exp() * 5 + 1)   # without it: eager
