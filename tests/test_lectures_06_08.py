"""Claims of lectures 06-08 about torch's behaviour, executed on the installed torch.

Each test pins one statement the lectures make (several were once made wrongly): if a torch
release changes the behaviour, the test fails and the lecture's prose has to change with it.
The functions here are not the lectures' own, so a pass is not a copy of a notebook output.
"""
import contextlib
import inspect
import io
import logging
import zlib

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
from torch._dynamo.utils import counters

from fxcourse import torch_logs


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


class Graphs(list):
    """A backend that keeps every graph it is given and runs it as captured."""

    def __call__(self, gm, example_inputs):
        self.append(gm)
        return gm.forward

    def ops(self) -> list[list[str]]:
        return [[getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes
                 if n.op in ("call_function", "call_method")] for gm in self]


@contextlib.contextmanager
def graph_break_records():
    """Dynamo's graph-break log (TORCH_LOGS=graph_breaks), collected instead of printed."""
    logging.disable(logging.NOTSET)
    try:
        with torch_logs(graph_breaks=True) as records:
            yield records
    finally:
        logging.disable(logging.WARNING)
    records[:] = [r for r in records if r.name.endswith("__graph_breaks")]


def graph_breaks_counted() -> int:
    return sum(counters["graph_break"].values())


# --- lecture 06: the cache ---------------------------------------------------------------

def test_cache_entries_are_listed_most_recently_used_first():
    def cube(x):
        return x * x * x

    compiled = torch.compile(cube, backend="eager", dynamic=False)

    def order():
        return [str(e.compile_id) for e in _debug_get_cache_entry_list(cube.__code__)]

    for dtype in (torch.float32, torch.float64, torch.int64):
        compiled(torch.ones(2, dtype=dtype))
    assert order() == ["0/2", "0/1", "0/0"]
    compiled(torch.ones(2, dtype=torch.float64))  # a hit on the middle entry
    assert order() == ["0/1", "0/2", "0/0"]


# --- lecture 07: what explain misses, and the log that does not ----------------------------

def _unsupported_first(x):
    zlib.adler32(b"first")               # a C function, before any tensor operation
    return x + 1


def _break_in_hook(module, args, output):
    torch._dynamo.graph_break()


@pytest.mark.filterwarnings("ignore:Dynamo does not know how to trace")
@pytest.mark.parametrize("case", ["first statement", "submodule hooks"])
def test_explain_lists_no_reason_for_breaks_before_any_tensor_op(case):
    if case == "first statement":
        fn, expected = _unsupported_first, 1
    else:
        fn = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
        for layer in fn:
            layer.register_forward_hook(_break_in_hook)
        expected = 2                      # the hook's own frame breaks once, then runs from its cache
    x = torch.randn(3, 2)
    explained = torch._dynamo.explain(fn)(x)
    assert explained.break_reasons == []
    torch._dynamo.reset()
    counters.clear()
    with graph_break_records() as records:
        torch.compile(fn, backend="eager")(x)
    assert len(records) == expected == graph_breaks_counted()


def test_an_opaque_generator_breaks_and_a_local_one_does_not():
    def local_generator(x):
        return sum(t * 2 for t in [x, x + 1])

    def outside_generator(x, it):
        return x * next(it)

    x = torch.ones(2)
    torch.compile(local_generator, backend="eager")(x)
    assert graph_breaks_counted() == 0
    torch.compile(outside_generator, backend="eager")(x, iter((t for t in [2.0])))
    assert graph_breaks_counted() == 1


def test_global_state_guard_covers_grad_mode_and_deterministic_algorithms():
    from torch._dynamo.guards import GuardBuilder

    for method in (GuardBuilder.GRAD_MODE, GuardBuilder.DETERMINISTIC_ALGORITHMS):
        body = [line.strip() for line in inspect.getsource(method).splitlines()
                if line.strip() and not line.strip().startswith(("@", "def "))]
        assert body[0].startswith("pass")
    reasons = []
    compiled = torch.compile(lambda x: x.cos(), backend="eager")
    x = torch.ones(2)
    compiled(x)
    torch._dynamo.reset()
    compiled = torch._dynamo.optimize("eager", guard_fail_fn=lambda f: reasons.append(f.reason))(
        lambda x: x.cos())
    compiled(x)
    with torch.no_grad():
        compiled(x)
    assert any("GLOBAL_STATE changed: grad_mode" in r for r in reasons)


OFFSET = 0  # a global int: each new value is a recompile


def _add_offset(x):
    return x + OFFSET


def test_after_the_recompile_limit_old_entries_still_run():
    global OFFSET
    ran = []

    def backend(gm, example_inputs):
        def run(*args):
            ran.append(OFFSET)            # a compiled graph ran for this value
            return gm.forward(*args)
        return run

    compiled = torch.compile(_add_offset, backend=backend)
    try:
        with torch._dynamo.config.patch(recompile_limit=2):
            for OFFSET in range(4):      # 0 and 1 compile; 2 and 3 hit the limit
                compiled(torch.ones(1))
            assert ran == [0, 1]
            ran.clear()
            for OFFSET in (0, 3, 1):
                torch.testing.assert_close(compiled(torch.ones(1)), torch.ones(1) + OFFSET)
            assert ran == [0, 1]         # old entries ran compiled code, 3 ran eagerly
        assert len(_debug_get_cache_entry_list(_add_offset.__code__)) == 2
    finally:
        OFFSET = 0


def test_reorderable_print_inside_an_inlined_function_is_dropped():
    def inner(y):
        print("inner")
        return y - 1

    def top(x):
        print("top")
        return inner(x * 3)

    graphs = Graphs()
    out = io.StringIO()
    with torch._dynamo.config.patch(reorderable_logging_functions={print}), \
            contextlib.redirect_stdout(out):
        result = torch.compile(top, backend=graphs)(torch.ones(2))
    torch.testing.assert_close(result, torch.full((2,), 2.0))
    assert len(graphs) == 1
    assert out.getvalue().split() == ["top"]


def test_the_four_decorators_for_a_c_function():
    @torch.compiler.assume_constant_result
    def length():
        return len(zlib.compress(b"aaaa"))

    def constant(x):
        return x + length()

    graphs = Graphs()
    torch.compile(constant, backend=graphs, fullgraph=True)(torch.ones(2))
    assert graphs.ops() == [["add"]]

    @torch.compiler.disable
    def opaque(y):
        return y + zlib.adler32(b"x")

    def with_disabled(x):
        return opaque(x * 2) - 1

    graphs = Graphs()
    torch._dynamo.reset()
    torch.compile(with_disabled, backend=graphs)(torch.ones(2))
    assert graphs.ops() == [["mul"], ["sub"]]

    def allowed(y):
        return y + zlib.adler32(b"x")

    torch.compiler.allow_in_graph(allowed)
    graphs = Graphs()
    torch._dynamo.reset()
    torch.compile(lambda x: allowed(x * 2), backend=graphs, fullgraph=True)(torch.ones(2))
    assert graphs.ops() == [["mul", "allowed"]]


def test_mark_dynamic_is_a_promise_and_maybe_mark_dynamic_a_hint():
    def pinned(x):
        return x.reshape(2, 3)

    strict = torch.randn(2, 3)
    torch._dynamo.mark_dynamic(strict, 0)
    with pytest.raises(Exception, match="Constraints violated"):
        torch.compile(pinned, backend="eager")(strict)
    torch._dynamo.reset()
    hint = torch.randn(2, 3)
    torch._dynamo.maybe_mark_dynamic(hint, 0)
    torch.compile(pinned, backend="eager")(hint)


def test_mark_unbacked_serves_sizes_zero_and_one():
    graphs = Graphs()
    first = torch.randn(5, 2)
    torch._dynamo.decorators.mark_unbacked(first, 0)
    compiled = torch.compile(lambda x: x * 2, backend=graphs)
    for inp in (first, torch.randn(1, 2), torch.randn(0, 2)):
        compiled(inp)
    assert len(graphs) == 1


# --- lecture 08: top-level hooks and steering ------------------------------------------------

def test_hooks_on_a_compiled_sequential_are_traced_and_late_ones_ignored():
    torch.manual_seed(0)
    seq = nn.Sequential(nn.Linear(2, 2))
    seq.register_forward_hook(lambda m, args, out: out * 3)
    graphs = Graphs()
    x = torch.randn(4, 2)
    torch.testing.assert_close(torch.compile(seq, backend=graphs)(x), seq(x))
    assert "hook_result = " in graphs[0].code

    torch._dynamo.reset()
    late = nn.Sequential(nn.Linear(2, 2))
    compiled = torch.compile(late, backend="eager")
    compiled(x)
    late.register_forward_hook(lambda m, args, out: out * 0)
    assert bool((late(x) == 0).all())
    assert not bool((compiled(x) == 0).all())     # ignored by the compiled module


def test_a_late_hook_on_a_user_module_is_honoured():
    class Own(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x)

    own = Own()
    compiled = torch.compile(own, backend="eager")
    x = torch.randn(4, 2)
    compiled(x)
    own.register_forward_hook(lambda m, args, out: out * 0)
    assert bool((compiled(x) == 0).all())


def test_set_stance():
    graphs = Graphs()
    compiled = torch.compile(lambda x: x - 2, backend=graphs)
    with torch.compiler.set_stance("force_eager"):
        compiled(torch.ones(2))
    assert len(graphs) == 0
    compiled(torch.ones(2))
    with torch.compiler.set_stance("fail_on_recompile"):
        compiled(torch.ones(2))
        with pytest.raises(RuntimeError, match="fail_on_recompile"):
            compiled(torch.ones(2, dtype=torch.float64))
    with torch.compiler.set_stance("eager_on_recompile"):
        compiled(torch.ones(2, dtype=torch.float64))
    assert len(graphs) == 1


def test_error_on_graph_break_can_be_switched_off_inside():
    @torch._dynamo.error_on_graph_break(False)
    def tolerated(y):
        torch._dynamo.graph_break()
        return y

    def region(x):
        return tolerated(x + 1) * 2

    def everywhere(x):
        torch._dynamo.graph_break()
        return x * 2

    with torch._dynamo.error_on_graph_break(True):
        torch.compile(region, backend="eager")(torch.ones(2))
        torch._dynamo.reset()
        with pytest.raises(torch._dynamo.exc.Unsupported):
            torch.compile(everywhere, backend="eager")(torch.ones(2))


@pytest.mark.parametrize("nested, expected", [(False, [["mul"], ["exp"], ["neg"], ["sub"]]),
                                              (True, [["mul", "exp"], ["neg", "sub"]])])
def test_nested_graph_breaks(nested, expected):
    def middle(y):
        z = y.exp()
        torch._dynamo.graph_break()
        return z.neg()

    def caller(x):
        return middle(x * 2) - 1

    graphs = Graphs()
    with torch._dynamo.config.patch(nested_graph_breaks=nested):
        torch.testing.assert_close(torch.compile(caller, backend=graphs)(torch.ones(2)), caller(torch.ones(2)))
    assert graphs.ops() == expected
