"""Claims of lectures 00-05 about torch's behaviour, executed on the installed torch.

Each test pins one statement the lectures make (and once made wrongly): if a torch release
changes the behaviour, the test fails and the lecture's prose has to change with it.
No ``from __future__ import annotations`` here: one test compares real and string annotations.
"""
import contextlib
import inspect
import io
import logging
import operator
import os
import re
import subprocess
import sys
import types
import warnings
from collections import Counter
from pathlib import Path

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from torch import fx, nn
from torch._dynamo.utils import counters

from fxcourse import is_torchscript_deprecation, zoo


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


def ops_of(ep) -> list[str]:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


# --- lecture 00: torch.export ---------------------------------------------------------

SEEN: list[str] = []  # a global, as in lecture 00 (export may copy a module's own attributes)


class Probe(nn.Module):
    """Records, in plain Python, the type of what forward receives."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        SEEN.append(type(x).__name__)
        return self.fc(x).relu()


def test_export_default_is_non_strict():
    assert inspect.signature(torch.export.export).parameters["strict"].default is False


def test_non_strict_export_runs_forward_with_fake_tensors_and_no_dynamo():
    probe = Probe()
    SEEN.clear()
    counters.clear()
    ep = torch.export.export(probe, (torch.randn(2, 4),))
    assert SEEN == ["FakeTensor"]
    assert counters["stats"]["calls_captured"] == 0
    assert ops_of(ep) == ["aten.linear.default", "aten.relu.default"]


def test_strict_export_uses_dynamo_and_drops_python_side_effects():
    probe = Probe()
    SEEN.clear()
    counters.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ep = torch.export.export(probe, (torch.randn(2, 4),), strict=True)
    assert counters["stats"]["calls_captured"] > 0
    assert SEEN == []
    assert any("side effects" in str(w.message) for w in caught)
    assert ops_of(ep) == ["aten.linear.default", "aten.relu.default"]


def test_gate_fails_in_symbolic_shapes_non_strict_and_in_dynamo_strict():
    gate, (x,) = zoo.example("gate")
    modules = []
    for strict in (False, True):
        with pytest.raises(Exception) as info, warnings.catch_warnings(), \
                _quiet_stderr():
            warnings.simplefilter("ignore")
            torch.export.export(gate, (x,), strict=strict)
        modules.append(type(info.value).__module__)
    assert modules == ["torch.fx.experimental.symbolic_shapes", "torch._dynamo.exc"]


def _quiet_stderr():
    return contextlib.redirect_stderr(io.StringIO())


def test_exported_program_is_training_ir_until_run_decompositions():
    mlp, (x,) = zoo.example("mlp")
    ep = torch.export.export(mlp, (x,))
    assert ep.dialect == "TRAINING"
    assert "aten.linear.default" in ops_of(ep)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        core = ep.run_decompositions()
    assert core.dialect == "ATEN"
    assert "aten.linear.default" not in ops_of(core)
    assert {"aten.addmm.default", "aten.permute.default"} <= set(ops_of(core))
    with torch.no_grad():
        torch.testing.assert_close(core.module()(x), mlp(x))


# --- lecture 00: where Dynamo's guarantee ends ----------------------------------------

def test_dynamo_does_not_guard_hooks_added_after_compiling():
    assert torch._dynamo.config.skip_nnmodule_hook_guards is True
    torch.manual_seed(0)
    layer = nn.Linear(4, 4)
    x = torch.randn(2, 4)
    compiled = torch.compile(layer, backend="eager")
    compiled(x)
    handle = layer.register_forward_hook(lambda module, args, out: torch.zeros_like(out))
    try:
        assert bool((layer(x) == 0).all())
        assert not bool((compiled(x) == 0).all())
    finally:
        handle.remove()


def test_dynamo_replays_side_effects_after_its_graph():
    calls: list[str] = []

    def pick(x, index):
        calls.append("pick")
        return x.index_select(0, index) * 2

    compiled = torch.compile(pick, backend="eager")
    compiled(torch.ones(3), torch.tensor([0]))
    seen = {}
    for label, fn in (("eager", pick), ("compiled", compiled)):
        calls.clear()
        with pytest.raises(IndexError):
            fn(torch.ones(3), torch.tensor([5]))
        seen[label] = list(calls)
    assert seen == {"eager": ["pick"], "compiled": []}


# --- lecture 05 (and 00): FX specialises silently -------------------------------------

class Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = 2.0
        self.use_residual = True

    def forward(self, x):
        h = self.fc(x) * self.scale
        if self.training:
            h = h + 0.1 * torch.randn(4)
        if self.use_residual:
            h = h + x
        return h


def test_fx_bakes_in_training_branch_attributes_and_constant_tensors_without_warning():
    torch.manual_seed(0)
    model = Noisy()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gm = fx.symbolic_trace(model)
    assert caught == []
    owned = {name for name, _ in model.named_parameters()} | {name for name, _ in model.named_buffers()}
    constants = [n.target for n in gm.graph.nodes if n.op == "get_attr" and n.target not in owned]
    assert constants == ["_tensor_constant0"]
    mul = next(n for n in gm.graph.nodes if n.target is operator.mul)
    assert 2.0 in mul.args
    x = torch.randn(2, 4)
    assert torch.equal(gm(x), gm(x)) and not torch.equal(model(x), model(x))
    model.eval()
    gm.eval()
    assert not torch.allclose(gm(x), model(x))


def test_fx_bakes_in_the_dropout_flag_but_a_leaf_dropout_follows_the_mode():
    class DropoutFn(nn.Module):
        def forward(self, x):
            return F.dropout(x, 0.5, self.training)

    functional = fx.symbolic_trace(DropoutFn().eval())
    assert "training = False" in functional.code
    leaf = fx.symbolic_trace(nn.Sequential(nn.Dropout(0.5)).eval())
    functional.train()
    leaf.train()
    ones = torch.ones(8)
    assert torch.equal(functional(ones), ones)
    assert not torch.equal(leaf(ones), ones)


def test_dynamo_guards_the_attributes_fx_bakes_in():
    torch.manual_seed(0)
    model = Noisy().eval()
    graphs = []
    compiled = torch.compile(model, backend=lambda gm, ex: graphs.append(gm) or gm.forward)
    x = torch.randn(2, 4)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        model.scale, model.use_residual = 3.0, False
        torch.testing.assert_close(compiled(x), model(x))
    assert len(graphs) == 2


def test_fx_traces_sizes_that_depend_on_values():
    def padding_mask(lengths):
        return torch.arange(lengths.max()) < lengths[:, None]

    gm = fx.symbolic_trace(padding_mask)
    for values in ([3, 1, 4], [2, 6], [1]):
        lengths = torch.tensor(values)
        assert torch.equal(gm(lengths), padding_mask(lengths))


# --- lecture 05: what autowrap_functions and autowrap_modules reach -------------------

@pytest.fixture
def autowrap_modules_in_memory():
    sources = {
        "t05_padding": """
import torch.nn.functional as F

def pad_to_multiple(x, k):
    n = x.shape[-1]
    if n % k:
        x = F.pad(x, (0, k - n % k))
    return x
""",
        "t05_callers": """
import t05_padding
from t05_padding import pad_to_multiple

def by_name(x):
    return pad_to_multiple(x, 4).sum(-1)

def by_attribute(x):
    return t05_padding.pad_to_multiple(x, 4).sum(-1)
""",
        "t05_elsewhere": """
from t05_callers import by_name

def calls_by_name(x):
    return by_name(x) * 2
""",
    }
    made = {}
    for name, source in sources.items():
        module = types.ModuleType(name)
        sys.modules[name] = module
        exec(source, module.__dict__)
        made[name] = module
    yield made
    for name in sources:
        sys.modules.pop(name, None)


def _traces(fn, **options) -> bool:
    try:
        tracer = fx.Tracer(**options)
        graph = tracer.trace(fn)
        gm = fx.GraphModule(tracer.root, graph)
    except fx.proxy.TraceError:
        return False
    for width in (5, 8):
        x = torch.randn(2, width)
        torch.testing.assert_close(gm(x), fn(x))
    return True


def test_autowrap_reaches_global_names_of_the_traced_module_only(autowrap_modules_in_memory):
    padding = autowrap_modules_in_memory["t05_padding"]
    callers = autowrap_modules_in_memory["t05_callers"]
    elsewhere = autowrap_modules_in_memory["t05_elsewhere"]
    by_function = {"autowrap_functions": (padding.pad_to_multiple,)}
    by_module = {"autowrap_modules": (padding,)}
    assert _traces(callers.by_name, **by_function) and _traces(callers.by_name, **by_module)
    assert not _traces(callers.by_attribute, **by_function)
    assert _traces(callers.by_attribute, **by_module)
    assert not _traces(elsewhere.calls_by_name, **by_function)
    assert not _traces(elsewhere.calls_by_name, **by_module)


def test_autowrap_modules_defaults_to_math():
    default = inspect.signature(fx.Tracer.__init__).parameters["autowrap_modules"].default
    assert [m.__name__ for m in default] == ["math"]


# --- lecture 03: _torch_Tensor_ comes from string annotations -------------------

def test_string_annotations_become_torch_tensor_underscore_names():
    def annotated(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    def as_strings(x: "torch.Tensor") -> "torch.Tensor":
        return x + 1

    assert "x : torch.Tensor" in fx.symbolic_trace(annotated).code
    string_gm = fx.symbolic_trace(as_strings)
    assert "x : _torch_Tensor_" in string_gm.code
    assert string_gm.forward.__globals__["_torch_Tensor_"] == "torch.Tensor"


def test_zoo_annotations_are_strings_so_zoo_graphs_show_torch_tensor_underscore():
    annotation = inspect.signature(zoo.ClampLinear.forward).parameters["x"].annotation
    model, _ = zoo.example("clamp_linear")
    shown = "_torch_Tensor_" in fx.symbolic_trace(model).code
    assert shown == isinstance(annotation, str)


# --- lecture 03: building a graph by hand ---------------------------------------------

def test_a_graph_built_by_hand_matches_the_traced_one():
    model, (x,) = zoo.example("clamp_linear")
    graph = fx.Graph()
    x_in = graph.placeholder("x")
    added = graph.call_function(operator.add, (x_in, graph.get_attr("param")))
    clamped = graph.call_method("clamp", (graph.call_module("linear", (added,)),), {"min": 0.0, "max": 1.0})
    graph.output(clamped)
    graph.lint()
    by_hand = fx.GraphModule(model, graph)
    traced = fx.symbolic_trace(model)
    assert ([(n.op, n.name, n.target) for n in by_hand.graph.nodes]
            == [(n.op, n.name, n.target) for n in traced.graph.nodes])
    with torch.no_grad():
        torch.testing.assert_close(by_hand(x), model(x))
    with pytest.raises(RuntimeError, match="linear"):
        fx.GraphModule({"param": model.param}, graph)


# --- lectures 01-02: TorchScript ------------------------------------------------------

def _jit_deprecations(call) -> Counter:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return Counter(str(w.message).split("`")[1] for w in caught if is_torchscript_deprecation(w))


def test_the_trace_method_warning_comes_from_trace_module():
    """Lectures 00 and 01: `trace_method` is only a name in a warning's text."""
    mlp, (x,) = zoo.example("mlp")
    assert not hasattr(torch.jit, "trace_method") and hasattr(torch.jit, "trace_module")
    counted = _jit_deprecations(lambda: torch.jit.trace_module(mlp, {"forward": (x,)}, check_trace=False))
    assert counted == {"torch.jit.trace_method": 1}


def test_torchscript_deprecation_is_a_future_warning_in_this_version():
    """Lectures 00 and 01 say which category the warning has; the helpers do not depend on it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.jit.script(zoo.example("mlp")[0])
    deprecation = [w for w in caught if is_torchscript_deprecation(w)]
    assert [w.category for w in deprecation] == [FutureWarning]
    assert str(deprecation[0].message).startswith("`torch.jit.script` is deprecated")


def test_torchscript_docstrings_mark_it_deprecated_since_2_5():
    for fn in (torch.jit.freeze, torch.jit.optimize_for_inference, torch.jit.fork, torch.jit.ignore):
        assert re.search(r"\.\. deprecated:: 2\.5\b", fn.__doc__), fn.__name__


def test_trace_warning_counts_per_call_match_lecture_01():
    mlp, (x,) = zoo.example("mlp")

    def f(a, b):
        return 2 * a + b

    args = (torch.rand(3), torch.rand(3))
    assert _jit_deprecations(lambda: torch.jit.trace(f, args)) == {"torch.jit.trace": 2}
    assert _jit_deprecations(lambda: torch.jit.trace(f, args, check_trace=False)) == {"torch.jit.trace": 1}
    assert _jit_deprecations(lambda: torch.jit.trace(mlp, (x,))) == {"torch.jit.trace": 1, "torch.jit.trace_method": 2}



def test_torchscript_warnings_are_raised_every_call_but_shown_once_per_place_by_default():
    """Lecture 01: every call warns; Python's default filters show it once per place in torch,
    until the warning filters change (`deprecations` in the lecture records with "always")."""
    def f(a):
        return a * 2

    def three_traces():
        for _ in range(3):
            torch.jit.trace(f, (torch.ones(1),), check_trace=False)

    assert _jit_deprecations(three_traces) == {"torch.jit.trace": 3}
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        three_traces()
        shown_before_change = [w for w in caught if is_torchscript_deprecation(w)]
        warnings.filterwarnings("default", message="an unrelated filter")  # the filters change
        three_traces()
    shown = [w for w in caught if is_torchscript_deprecation(w)]
    assert len(shown_before_change) == 1
    assert shown_before_change[0].filename.replace("\\", "/").endswith("torch/jit/_trace.py")
    assert len(shown) == 2  # shown again once after the change

def test_scripted_function_inside_a_trace_keeps_its_branch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @torch.jit.script
        def clip_or_negate(y):
            if bool(y.sum() > 0):
                return y.clamp(max=1.0)
            return -y

        def outer(x):
            return clip_or_negate(x) * 2

        traced = torch.jit.trace(outer, (torch.ones(2, 4),))
    assert any(n.kind() == "prim::CallFunction" for n in traced.graph.nodes())
    for x in (torch.ones(2, 4), -torch.ones(2, 4)):
        torch.testing.assert_close(traced(x), outer(x))


def test_traced_module_inside_a_scripted_one_keeps_its_baked_branch():
    class Branchy(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x.relu()
            return -x

    class Repeat(nn.Module):
        def __init__(self, inner: nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x, steps: int):
            for _ in range(steps):
                x = self.inner(x)
            return x

    x = -torch.ones(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(Repeat(torch.jit.trace(Branchy(), (x,))))
    eager = Repeat(Branchy())
    torch.testing.assert_close(scripted(x, 1), eager(x, 1))
    assert not torch.allclose(scripted(x, 2), eager(x, 2))


def _kinds(graph) -> Counter:
    found: Counter = Counter()

    def walk(block):
        for node in block.nodes():
            found[node.kind()] += 1
            for inner in node.blocks():
                walk(inner)

    walk(graph)
    return found


def test_freeze_folds_batch_norm_and_removes_getattr():
    model, (x,) = zoo.example("conv_bn_relu")
    zoo.pretend_trained(model)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scripted = torch.jit.script(model)
        frozen = torch.jit.freeze(torch.jit.script(model))
    before, after = _kinds(scripted.inlined_graph), _kinds(frozen.graph)
    assert before["aten::batch_norm"] == 1 and before["prim::GetAttr"] > 0
    assert after["aten::batch_norm"] == 0 and after["prim::GetAttr"] == 0
    with torch.no_grad():
        torch.testing.assert_close(frozen(x), model(x), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="optimize_for_inference rewrites to MKL-DNN")
def test_optimize_for_inference_rewrites_convolutions_to_mkldnn():
    model, (x,) = zoo.example("conv_bn_relu")
    zoo.pretend_trained(model)
    model.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optimized = torch.jit.optimize_for_inference(torch.jit.script(model))
    kinds = _kinds(optimized.graph)
    assert kinds["prim::mkldnn_convolution"] == 1 and kinds["aten::to_mkldnn"] == 1
    with torch.no_grad():
        torch.testing.assert_close(optimized(x), model(x), rtol=1e-4, atol=1e-4)


# --- lecture 01, section 11: which torch.jit entry points warn at run time ---------------

def _jit_warning_categories(call) -> dict[str, str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return {str(w.message).split("`")[1]: w.category.__name__ for w in caught if is_torchscript_deprecation(w)}


def _scripted_eval_mlp():
    mlp, (x,) = zoo.example("mlp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.jit.script(mlp).eval(), torch.jit.trace(mlp, (x,)), x


def test_freeze_optimize_for_inference_fork_and_wait_warn_as_future_warnings():
    scripted, _, _ = _scripted_eval_mlp()

    def add(a, b):
        return a + b

    assert _jit_warning_categories(lambda: torch.jit.freeze(scripted)) == {"torch.jit.freeze": "FutureWarning"}
    assert _jit_warning_categories(lambda: torch.jit.optimize_for_inference(scripted)) == {
        "torch.jit.optimize_for_inference": "FutureWarning", "torch.jit.freeze": "FutureWarning"}
    fork_wait = lambda: torch.jit.wait(torch.jit.fork(add, torch.ones(2), torch.ones(2)))  # noqa: E731
    assert _jit_warning_categories(fork_wait) == {"torch.jit.fork": "FutureWarning", "torch.jit.wait": "FutureWarning"}


def test_set_fusion_strategy_warns_with_a_deprecation_warning_located_in_torch():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = torch.jit.set_fusion_strategy([("STATIC", 2)])
    try:
        (warning,) = [w for w in caught if is_torchscript_deprecation(w)]
        assert warning.category is DeprecationWarning
        assert warning.filename.replace("\\", "/").endswith("torch/jit/_fuser.py")
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.jit.set_fusion_strategy(old)


def test_set_fusion_strategy_warning_is_hidden_by_default_even_from_main():
    program = ("import torch\ntorch.jit.set_fusion_strategy([('STATIC', 2)])\n"
               "torch.jit.trace(lambda x: x * 2, torch.ones(1), check_trace=False)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    assert "set_fusion_strategy` is deprecated" not in run.stderr
    assert "`torch.jit.trace` is deprecated" in run.stderr  # a FutureWarning is shown by default


def test_torch_jit_helpers_and_calls_of_compiled_code_do_not_warn():
    scripted, traced, x = _scripted_eval_mlp()

    def plain(v):
        return v + 1

    calls = {
        "is_scripting": torch.jit.is_scripting,
        "is_tracing": torch.jit.is_tracing,
        "ignore": lambda: torch.jit.ignore(plain),
        "unused": lambda: torch.jit.unused(plain),
        "export": lambda: torch.jit.export(plain),
        "annotate": lambda: torch.jit.annotate(int, 3),
        "isinstance": lambda: torch.jit.isinstance([1], list[int]),
        "CompilationUnit": lambda: torch.jit.CompilationUnit("def g(x):\n    return x * 2\n"),
        "scripted call": lambda: scripted(x),
        "traced call": lambda: traced(x),
    }
    assert {name: _jit_warning_categories(call) for name, call in calls.items()} == {name: {} for name in calls}


def test_the_torchscript_deprecation_warning_is_raised_in_twelve_places():
    source = "".join(p.read_text() for p in Path(torch.jit.__file__).parent.glob("*.py"))
    names = re.findall(r"\"`(torch\.jit\.\w+)` is deprecated", source)
    assert sorted(names) == sorted({
        "torch.jit.script", "torch.jit.script_method", "torch.jit.trace", "torch.jit.trace_method",
        "torch.jit.freeze", "torch.jit.optimize_for_inference", "torch.jit.fork", "torch.jit.wait",
        "torch.jit.save", "torch.jit.load", "torch.jit.interface", "torch.jit.set_fusion_strategy"})


# --- lecture 02, section 11: freeze needs eval mode; preserved_attrs ---------------------

class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.scale = 2.0

    def forward(self, x):
        return self.fc(x) * self.scale

    @torch.jit.export
    def set_scale(self, scale: float):
        self.scale = scale


def _quiet_jit(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_freeze_raises_on_a_module_in_train_mode():
    scripted = _quiet_jit(torch.jit.script, _Scaled())
    assert scripted.training
    with pytest.raises(RuntimeError, match="only implemented for modules in eval mode"):
        _quiet_jit(torch.jit.freeze, scripted)
    scripted.eval()
    _quiet_jit(torch.jit.freeze, scripted)


def test_freeze_checks_only_the_training_flag_of_the_module_it_is_given():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).eval()
    model[1].train()  # a submodule left in train mode is not checked
    frozen = _quiet_jit(torch.jit.freeze, _quiet_jit(torch.jit.script, model))
    kinds = [n.kind() for n in frozen.graph.nodes()]
    assert "aten::add_" in kinds  # the batch norm still counts its batches: it was not folded


def test_freeze_keeps_only_forward_and_folds_attributes_by_default():
    scripted = _quiet_jit(torch.jit.script, _Scaled()).eval()
    frozen = _quiet_jit(torch.jit.freeze, scripted)
    assert not any(hasattr(frozen, name) for name in ("fc", "scale", "set_scale"))
    assert frozen.code.strip().splitlines()[-1].strip() == "return torch.mul(_0, 2.)"


def test_preserved_attrs_keeps_attributes_and_methods_and_what_the_methods_modify():
    scripted = _quiet_jit(torch.jit.script, _Scaled()).eval()
    x = torch.ones(1, 2)
    keep_scale = _quiet_jit(torch.jit.freeze, scripted, preserved_attrs=["scale"])
    assert hasattr(keep_scale, "scale") and not hasattr(keep_scale, "set_scale")
    keep_scale.scale = 3.0
    torch.testing.assert_close(keep_scale(x), scripted.fc(x).detach() * 3.0)
    keep_method = _quiet_jit(torch.jit.freeze, scripted, preserved_attrs=["set_scale"])
    assert hasattr(keep_method, "set_scale") and hasattr(keep_method, "scale")
    keep_method.set_scale(10.0)
    torch.testing.assert_close(keep_method(x), scripted.fc(x).detach() * 10.0)
    assert scripted.scale == 2.0  # freezing works on a copy


class _Counting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.fc(x)


def test_freeze_keeps_an_attribute_that_forward_modifies():
    """Lecture 02: not every attribute is folded; one that forward modifies stays an attribute."""
    frozen = _quiet_jit(torch.jit.freeze, _quiet_jit(torch.jit.script, _Counting()).eval())
    assert hasattr(frozen, "calls") and not hasattr(frozen, "fc")
    frozen(torch.ones(1, 2))
    frozen(torch.ones(1, 2))
    assert frozen.calls == 2
    assert "any attribute that is modified within a preserved method will be preserved" in " ".join(
        torch.jit.freeze.__doc__.split())
