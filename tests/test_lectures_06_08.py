"""Claims of lectures 06-08 about torch's behaviour, executed on the installed torch.

Each test pins one statement the lectures make (several were once made wrongly): if a torch
release changes the behaviour, the test fails and the lecture's prose has to change with it.
The functions here are not the lectures' own, so a pass is not a copy of a notebook output.
"""
import contextlib
import dataclasses
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

from lecture_claims import Graphs, fresh_dynamo  # noqa: F401 (fresh_dynamo is an autouse fixture)


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


class Own(nn.Module):
    """A top-level module of the user's own class (not a torch.nn container)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc(x)


def test_a_late_hook_on_a_user_module_is_honoured():
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


# --- lecture 07: claims corrected in the second pass ----------------------------------------

def test_numpy_is_traced_but_np_unique_breaks_the_graph():
    np = pytest.importorskip("numpy")

    def traced(x):
        return torch.from_numpy(np.abs(np.fft.fft(x.numpy()))) + 1

    def unique(x):
        return torch.from_numpy(np.unique((x * 3).numpy())) - 1

    x = torch.tensor([2.0, 1.0, 2.0])
    graphs = Graphs()
    torch.compile(traced, backend=graphs)(x)
    assert len(graphs) == 1 and graph_breaks_counted() == 0
    graphs = Graphs()
    torch._dynamo.reset()
    torch.testing.assert_close(torch.compile(unique, backend=graphs)(x), unique(x))
    assert len(graphs) == 2
    assert [r.splitlines()[0] for r in counters["graph_break"]] == ["Dynamic shape operator"]


def test_branching_on_an_unbacked_size_breaks_the_graph_and_fails_only_under_fullgraph():
    def branch(x):
        if x.shape[0] > 3:
            return x * 2
        return x / 2

    def marked():
        t = torch.randn(5, 2)
        torch._dynamo.decorators.mark_unbacked(t, 0)
        return t

    graphs = Graphs()
    compiled = torch.compile(branch, backend=graphs)
    with graph_break_records() as records:
        for inp in (marked(), torch.randn(1, 2), torch.randn(0, 2)):
            torch.testing.assert_close(compiled(inp), branch(inp))
    assert [r.getMessage().splitlines()[1] for r in records] == [
        "Graph Break Reason: Data-dependent branching"]
    assert graphs.ops()[0][-1] == "gt" and len(graphs) >= 3   # condition graph + branches
    torch._dynamo.reset()
    with pytest.raises(torch._dynamo.exc.UserError,
                       match="Could not guard on data-dependent expression u0 > 3"):
        torch.compile(branch, backend="eager", fullgraph=True)(marked())


def _hook_one(module, args, output):
    torch._dynamo.graph_break()


def _hook_two(module, args, output):
    torch._dynamo.graph_break()


def _hook_three(module, args, output):
    torch._dynamo.graph_break()


def _make_hook():
    def hook(module, args, output):
        torch._dynamo.graph_break()
    return hook


@pytest.mark.parametrize("hooks, expected", [((_hook_one,) * 3, 2),
                                             ((_hook_one, _hook_two, _hook_three), 4),
                                             ((_make_hook(), _make_hook(), _make_hook()), 2)])
def test_breaking_hooks_log_one_break_per_code_object_plus_the_outer_frame(hooks, expected):
    seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2))
    for layer, hook in zip(seq, hooks):
        layer.register_forward_hook(hook)
    with graph_break_records() as records:
        torch.compile(seq, backend="eager")(torch.randn(3, 2))
    assert len(records) == expected == graph_breaks_counted()


@pytest.mark.parametrize("mark", [torch._dynamo.mark_dynamic,
                                  torch._dynamo.decorators.mark_unbacked])
def test_mark_dynamic_after_the_first_call_recompiles_as_dynamic(mark):
    graphs = Graphs()
    compiled = torch.compile(lambda x: x.cos() * 2, backend=graphs)
    t = torch.randn(6, 2)
    compiled(t)
    mark(t, 0)
    compiled(t)
    compiled(torch.randn(9, 2))
    shapes = [[tuple(n.meta["example_value"].shape) for n in gm.graph.nodes
               if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.Tensor)]
              for gm in graphs]
    assert len(graphs) == 2
    assert shapes[0] == [(6, 2)]
    assert isinstance(shapes[1][0][0], torch.SymInt)


def _compiled_sizes(make, sizes=(3, 6, 12), dynamic=None, **options):
    graphs = Graphs()
    torch._dynamo.reset()
    with torch._dynamo.config.patch(**options):
        compiled = torch.compile(lambda x: x.exp(), backend=graphs, dynamic=dynamic)
        for n in sizes:
            compiled(make(n))
    return [[tuple(isinstance(d, torch.SymInt) for d in n.meta["example_value"].shape)
             for n in gm.graph.nodes
             if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.Tensor)][0]
            for gm in graphs]


def test_mark_static_and_the_two_dynamic_shape_options():
    def plain(n):
        return torch.ones(n, 2)

    def static(n):
        t = torch.ones(n, 2)
        torch._dynamo.mark_static(t, 0)
        return t

    assert _compiled_sizes(plain) == [(False, False), (True, False)]
    assert _compiled_sizes(static) == [(False, False)] * 3
    assert _compiled_sizes(static, dynamic=True) == [(False, True)] * 3
    assert _compiled_sizes(plain, automatic_dynamic_shapes=False) == [(False, False)] * 3
    assert _compiled_sizes(plain, assume_static_by_default=False) == [(True, True)]
    assert torch._dynamo.config.automatic_dynamic_shapes is True
    assert torch._dynamo.config.assume_static_by_default is True


def test_cache_size_limit_is_an_alias_and_the_other_recompile_limits():
    global OFFSET
    assert torch._dynamo.config.accumulated_recompile_limit == 256
    assert torch._dynamo.config.fail_on_recompile_limit_hit is False
    with torch._dynamo.config.patch(cache_size_limit=3):
        assert torch._dynamo.config.recompile_limit == 3
    with torch._dynamo.config.patch(recompile_limit=5):
        assert torch._dynamo.config.cache_size_limit == 5
    graphs = Graphs()
    compiled = torch.compile(_add_offset, backend=graphs)
    try:
        with torch._dynamo.config.patch(accumulated_recompile_limit=2):
            for OFFSET in range(4):
                torch.testing.assert_close(compiled(torch.ones(1)), torch.ones(1) + OFFSET)
        assert len(graphs) == 2
        torch._dynamo.reset()
        with torch._dynamo.config.patch(recompile_limit=2, fail_on_recompile_limit_hit=True):
            with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):
                for OFFSET in range(4):
                    compiled(torch.ones(1))
            assert OFFSET == 2
    finally:
        OFFSET = 0


# --- lecture 07: claims corrected in the third pass -----------------------------------------

def test_numpy_functions_torch_numpy_lacks_break_the_graph():
    np = pytest.importorskip("numpy")

    def interp(x):
        return torch.from_numpy(np.interp((x * 2).numpy(), [0.0, 1.0], [0.0, 2.0])) + 1

    x = torch.tensor([0.25, 0.5])
    graphs = Graphs()
    torch.testing.assert_close(torch.compile(interp, backend=graphs)(x), interp(x))
    assert len(graphs) == 2
    assert [r.splitlines()[0] for r in counters["graph_break"]] == [
        "attempted to trace numpy function unsupported by PyTorch"]
    assert not hasattr(torch._numpy, "interp")


@pytest.mark.parametrize("op", ["unique", "nonzero"])
def test_data_dependent_numpy_is_one_graph_with_capture_option_or_fullgraph(op):
    np = pytest.importorskip("numpy")
    fns = {"unique": lambda a: np.unique(a), "nonzero": lambda a: np.nonzero(a > 0)[0]}

    def fn(x):
        return torch.from_numpy(fns[op]((x * 2).numpy())) + 1

    x = torch.tensor([2.0, -1.0, 2.0, 3.0])
    assert torch._dynamo.config.capture_dynamic_output_shape_ops is False
    for options, fullgraph, one_graph in (({}, False, False),
                                          ({"capture_dynamic_output_shape_ops": True}, False, True),
                                          ({}, True, True)):   # fullgraph captures it by itself
        torch._dynamo.reset()
        counters.clear()
        graphs = Graphs()
        with torch._dynamo.config.patch(**options):
            out = torch.compile(fn, backend=graphs, fullgraph=fullgraph)(x)
        torch.testing.assert_close(out, fn(x))
        assert (len(graphs) == 1) == one_graph, (options, fullgraph)
        assert (graph_breaks_counted() == 0) == one_graph


def test_a_breaking_hook_makes_the_outer_frame_give_up_at_its_call_into_the_model():
    seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 2))
    for layer in seq:
        layer.register_forward_hook(_hook_one)
    graphs = Graphs()
    with graph_break_records() as records:
        torch.compile(seq, backend=graphs)(torch.randn(3, 2))
    first = records[0].getMessage()
    # the outermost frame is torch.compile's wrapper `inner`; it broke at `fn(*args, **kwargs)`
    assert "CALL_FUNCTION_EX" in first.splitlines()[1]
    assert 'external_utils.py", line' in first and ", in inner" in first
    # no graph from it: one graph per layer's own forward
    assert graphs.ops() == [["linear"], ["tanh"], ["linear"]]


def test_mark_dynamic_is_not_checked_for_sizes_zero_and_one():
    for rows in (1, 0):
        t = torch.randn(rows, 3)
        torch._dynamo.mark_dynamic(t, 0)
        graphs = Graphs()
        torch._dynamo.reset()
        torch.compile(lambda a: a.reshape(rows, 3) * 2, backend=graphs)(t)
        (shape,) = [tuple(n.meta["example_value"].shape) for n in graphs[0].graph.nodes
                    if n.op == "placeholder"]
        assert shape == (rows, 3)
    torch._dynamo.reset()
    t = torch.randn(2, 3)
    torch._dynamo.mark_dynamic(t, 0)
    with pytest.raises(Exception, match="Constraints violated"):
        torch.compile(lambda a: a.reshape(2, 3) * 2, backend="eager")(t)


def test_dynamic_false_sets_no_automatic_dynamic_and_static_by_default():
    def plain(n):
        return torch.ones(n, 2)

    static = [(False, False)] * 3
    assert _compiled_sizes(plain, dynamic=False) == static
    assert _compiled_sizes(plain, dynamic=False, assume_static_by_default=False) == static
    seen = {}

    def probe(x):
        seen["automatic"] = torch._dynamo.config.automatic_dynamic_shapes
        seen["static"] = torch._dynamo.config.assume_static_by_default
        return x

    with torch._dynamo.config.patch(assume_static_by_default=False):
        torch.compile(probe, backend="eager", dynamic=False)(torch.ones(2))
    assert seen == {"automatic": False, "static": True}


def test_a_data_dependent_branch_is_counted_as_unimplemented_not_graph_break():
    def branch(x):
        if x.shape[0] > 2:
            return x + 1
        return x - 1

    t = torch.randn(4, 3)
    torch._dynamo.decorators.mark_unbacked(t, 0)
    with graph_break_records() as records:
        torch.compile(branch, backend="eager")(t)
    assert len(records) == 1
    assert graph_breaks_counted() == 0
    assert [r.splitlines()[0] for r in counters["unimplemented"]] == [
        "Data-dependent branching"]


# --- lecture 08: claims corrected in the second pass ----------------------------------------

def _raising(exc):
    def backend(gm, example_inputs):
        raise exc
    return backend


def test_which_backend_exceptions_are_wrapped():
    from torch._dynamo.exc import BackendCompilerFailed, SkipFrame
    from torch._subclasses.fake_tensor import DynamicOutputShapeException

    def fn(x):
        return x.tanh() - 1

    @torch.compiler.allow_in_graph
    def tripled(y):
        return y * 3

    def with_allowed(x):
        return tripled(x.tanh()) - 1

    x = torch.ones(3)
    fake_error = DynamicOutputShapeException(torch.ops.aten.nonzero.default)
    with pytest.raises(BackendCompilerFailed):
        torch.compile(fn, backend=_raising(KeyError("k")))(x)
    torch._dynamo.reset()
    with pytest.raises(IndexError):
        torch.compile(fn, backend=_raising(IndexError("i")))(x)
    for exc in (SkipFrame("s"), fake_error):
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(fn, backend=_raising(exc))(x), fn(x))
    torch._dynamo.reset()
    with pytest.raises(BackendCompilerFailed) as info:
        torch.compile(with_allowed, backend=_raising(fake_error))(x)
    assert isinstance(info.value.inner_exception, DynamicOutputShapeException)


def test_a_hook_on_a_top_level_user_module_runs_outside_the_compiled_forward():
    own = Own()
    own.register_forward_hook(lambda m, args, out: out + 100)
    graphs = Graphs()
    x = torch.randn(4, 2)
    torch.testing.assert_close(torch.compile(own, backend=graphs)(x), own(x))
    assert graphs.ops()[0] == ["linear"]          # the hook's add is not in the graph


def test_eager_then_compile_runs_the_first_call_eagerly():
    graphs = Graphs()
    compiled = torch.compile(lambda x: x.sin() + 1, backend=graphs)
    with torch.compiler.set_stance("eager_then_compile"):
        compiled(torch.ones(4))
        assert len(graphs) == 0
        compiled(torch.ones(8))
        assert len(graphs) == 1
    dims = [n.meta["example_value"].shape[0] for n in graphs[0].graph.nodes
            if n.op == "placeholder" and isinstance(n.meta["example_value"], torch.Tensor)]
    assert isinstance(dims[0], torch.SymInt)      # the size that changed is dynamic at once


def test_skip_guard_eval_unsafe_runs_a_stale_entry():
    global OFFSET
    compiled = torch.compile(_add_offset, backend="eager")
    try:
        compiled(torch.zeros(1))
        OFFSET = 7
        with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
            assert compiled(torch.zeros(1)).item() == 0      # the guard on OFFSET was skipped
        assert compiled(torch.zeros(1)).item() == 7
    finally:
        OFFSET = 0


@dataclasses.dataclass
class _Pair:
    a: torch.Tensor
    b: torch.Tensor


def test_nonstrict_trace_takes_a_pytree_dataclass_and_allow_in_graph_does_not():
    import torch.utils._pytree as pytree
    if _Pair not in pytree.SUPPORTED_NODES:
        pytree.register_dataclass(_Pair)
    allowed = torch.compiler.allow_in_graph(lambda p: p.a - p.b)
    nonstrict = torch.compiler.nonstrict_trace(lambda p: p.a - p.b)
    with pytest.raises(torch._dynamo.exc.Unsupported):
        torch.compile(lambda x: allowed(_Pair(x, x * x)), backend="eager",
                      fullgraph=True)(torch.ones(2))
    torch._dynamo.reset()
    graphs = Graphs()
    x = torch.full((2,), 3.0)
    out = torch.compile(lambda x: nonstrict(_Pair(x, x * x)) + 1, backend=graphs,
                        fullgraph=True)(x)
    torch.testing.assert_close(out, x - x * x + 1)
    assert len(graphs) == 1 and "sub" not in graphs.ops()[0]   # the body is not traced


def test_disable_recursive_false_compiles_what_the_function_calls():
    def callee(y):
        return y.cos() * 4

    ops = {}
    for recursive in (True, False):
        skipped = torch.compiler.disable(lambda y: callee(y) - 3, recursive=recursive)
        graphs = Graphs()
        torch._dynamo.reset()
        torch.compile(lambda x: skipped(x + 1) / 2, backend=graphs)(torch.ones(2))
        ops[recursive] = graphs.ops()
    assert ops[True] == [["add"], ["truediv"]]
    assert ops[False] == [["add"], ["cos", "mul"], ["truediv"]]


def test_eager_then_compile_remembers_the_first_call_across_reset():
    def seen(x):
        return x.cos() - 2

    graphs = Graphs()
    with torch.compiler.set_stance("eager_then_compile"):
        torch.compile(seen, backend=graphs)(torch.ones(4))
        assert len(graphs) == 0
        torch._dynamo.reset()
        torch.compile(seen, backend=graphs)(torch.ones(4))
    assert len(graphs) == 1                       # no second eager call after the reset
