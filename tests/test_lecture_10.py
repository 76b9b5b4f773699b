"""Claims of lecture 10 (torch.export, torch-mlir, IREE) executed on the installed versions.

Each test pins one statement the lecture makes (several were once made wrongly): if torch,
torch-mlir or IREE changes the behaviour, the test fails and the lecture's prose has to change
with it. The models here are not the lecture's own, so a pass is not a copy of a notebook output.
"""
import ctypes
import io
import logging
import os
import pickle
import re
import warnings
import zipfile

import pytest
import torch
from torch import nn
from torch.export import Dim
from torch.utils._sympy.numbers import int_oo

warnings.filterwarnings("ignore", category=FutureWarning)  # torch-mlir's import of pytree


@pytest.fixture(autouse=True)
def quiet():
    torch._dynamo.reset()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 5)
        self.b = nn.Linear(5, 2)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def op_counts(program) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in program.graph.nodes:
        if n.op == "call_function":
            counts[str(n.target)] = counts.get(str(n.target), 0) + 1
    return counts


def placeholders(graph) -> list[str]:
    return [n.name for n in graph.find_nodes(op="placeholder")]


# §1 ------------------------------------------------------------------------------------------

def test_dynamo_graph_takes_weights_as_placeholders_too_in_first_use_order():
    model, x = TwoLayers(), torch.randn(4, 3)
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch.compile(model, backend=keep)(x)
    dynamo = placeholders(graphs[0].graph)
    exported = placeholders(torch.export.export(model, (x,)).graph)
    assert len(dynamo) == len(exported) == 5
    # Dynamo: named after the source, x between a's and b's weights (order of first use)
    assert dynamo[2] == "l_x_" and "a_parameters_weight" in dynamo[0]
    # export: every parameter lifted first, named p_..., user input last
    assert exported == ["p_a_weight", "p_a_bias", "p_b_weight", "p_b_bias", "x"]


# §3 ------------------------------------------------------------------------------------------

def test_dim_auto_with_a_batch_1_example_gives_a_static_batch_of_1():
    model = TwoLayers()
    ep = torch.export.export(model, (torch.randn(1, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert ep.range_constraints == {}
    with pytest.raises(AssertionError, match=r"Guard failed: x\.size\(\)\[0\] == 1"):
        ep.module()(torch.randn(3, 3))
    ep2 = torch.export.export(model, (torch.randn(2, 3),), dynamic_shapes={"x": {0: Dim.AUTO}})
    (vr,) = ep2.range_constraints.values()
    assert vr.lower == 2
    ep2.module()(torch.randn(3, 3))


def test_dim_with_batch_1_example_is_a_constraint_error():
    with pytest.raises(torch._dynamo.exc.UserError, match=r"specialized it to be a constant \(1\)"):
        torch.export.export(TwoLayers(), (torch.randn(1, 3),), dynamic_shapes={"x": {0: Dim("b")}})


def test_module_guards_check_sizes_ranges_and_structure_but_not_dtype():
    ep = torch.export.export(TwoLayers(), (torch.randn(4, 3),),
                             dynamic_shapes={"x": {0: Dim("b", min=2, max=64)}})
    run = ep.module()
    with pytest.raises(AssertionError, match=r"Guard failed: x\.size\(\)\[0\] <= 64"):
        run(torch.randn(65, 3))
    with pytest.raises(AssertionError, match=r"Guard failed: x\.size\(\)\[1\] == 3"):
        run(torch.randn(4, 5))
    with pytest.raises(ValueError, match="input tree spec"):
        run(torch.randn(4, 3), torch.randn(4, 3))
    # dtype is no guard: the float64 input reaches the matmul and fails there
    with pytest.raises(RuntimeError, match="same dtype"):
        run(torch.randn(4, 3, dtype=torch.float64))
    # a lower bound of 2 is not checked at run time (only min > 2 is)
    assert run(torch.randn(1, 3)).shape == (1, 2)
    ep3 = torch.export.export(TwoLayers(), (torch.randn(4, 3),),
                              dynamic_shapes={"x": {0: Dim("b", min=3)}})
    with pytest.raises(AssertionError, match=r"x\.size\(\)\[0\] >= 3"):
        ep3.module()(torch.randn(2, 3))


def test_check_guards_false_pre_hook_checks_ranks_static_sizes_and_ranges():
    ep = torch.export.export(TwoLayers(), (torch.randn(4, 3),),
                             dynamic_shapes={"x": {0: Dim("b", min=2, max=64)}})
    loose = ep.module(check_guards=False)
    assert not hasattr(loose, "_guards_fn") and hasattr(ep.module(), "_guards_fn")
    assert len(loose._forward_pre_hooks) >= 1
    with pytest.raises(RuntimeError, match="to be <= 64"):
        loose(torch.randn(65, 3))
    with pytest.raises(RuntimeError, match=r"shape\[1\] to be equal to 3, but got 5"):
        loose(torch.randn(4, 5))  # the static size is checked too
    with pytest.raises(RuntimeError, match="Unexpected number of dimensions"):
        loose(torch.randn(4, 3, 1))
    with pytest.raises(RuntimeError, match="same dtype"):  # dtypes are not
        loose(torch.randn(4, 3, dtype=torch.float64))


def test_derived_dim_is_guarded_by_ep_module():
    class Halves(nn.Module):
        def forward(self, x, y):
            return x.reshape(-1, 2, 5).sum(1) - y

    n = Dim("n")
    ep = torch.export.export(Halves(), (torch.randn(6, 5), torch.randn(3, 5)),
                             dynamic_shapes={"x": {0: 2 * n}, "y": {0: n}})
    (sym,) = [s for s in ep.range_constraints if s.is_symbol]
    assert set(ep.range_constraints) == {sym, 2 * sym}  # the derived Dim is 2*n
    assert ep.module()(torch.randn(14, 5), torch.randn(7, 5)).shape == (7, 5)
    with pytest.raises(AssertionError, match=r"x\.size\(\)\[0\] // 2 == y\.size\(\)\[0\]"):
        ep.module()(torch.randn(14, 5), torch.randn(6, 5))


def test_torch_check_bounds_an_unbacked_size_and_asserts_at_run_time():
    class First(nn.Module):
        def __init__(self, checked):
            super().__init__()
            self.checked = checked

        def forward(self, x, k):
            m = k.item()
            if self.checked:
                torch._check(m >= 0)
                torch._check(m <= x.shape[0])
            return x[:m] + 1

    def asserted(program):
        nodes = program.graph.find_nodes(op="call_function",
                                         target=torch.ops.aten._assert_scalar.default)
        return [n.args[1].split("expression ")[1].split(" on node")[0] for n in nodes]

    x = torch.randn(5, 2)
    loose = torch.export.export(First(False), (x, torch.tensor(1)))
    # without torch._check the asserts bound the clipped slice length u1, not k
    assert asserted(loose) == ["u1 >= 0", "u1 <= 5"]
    u0 = next(s for s in loose.range_constraints if str(s) == "u0")
    vr = loose.range_constraints[u0]
    assert (vr.lower, vr.upper) == (-int_oo, int_oo)  # no bounds without torch._check
    assert loose.module()(x, torch.tensor(8)).shape == (5, 2)  # sliced like Python: clipped
    tight = torch.export.export(First(True), (x, torch.tensor(1)))
    u0 = next(s for s in tight.range_constraints if str(s) == "u0")
    vr = tight.range_constraints[u0]
    assert (vr.lower, vr.upper) == (0, 5)
    assert asserted(tight) == ["u0 >= 0", "u0 <= 5"]
    with pytest.raises(RuntimeError, match="Runtime assertion failed"):
        tight.module()(x, torch.tensor(8))


# §4 ------------------------------------------------------------------------------------------

def test_some_non_core_ops_survive_run_decompositions():
    class Mixed(nn.Module):
        def forward(self, x, s):
            return (torch.cumprod(x, 1), torch.searchsorted(s, x),
                    torch.linalg.inv_ex(x)[0], torch.erfinv(x.sigmoid()))

    ep = torch.export.export(Mixed(), (torch.randn(2, 2), torch.arange(3.0))).run_decompositions()
    left = {str(n.target) for n in ep.graph.nodes
            if isinstance(n.target, torch._ops.OpOverload) and torch.Tag.core not in n.target.tags}
    assert left == {"aten.cumprod.default", "aten.searchsorted.Tensor",
                    "aten.linalg_inv_ex.default", "aten.erfinv.default"}


def test_training_ir_is_in_place_and_inference_ir_is_functional():
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(3)

        def forward(self, x):
            return self.bn(x).relu_()

    train = torch.export.export(Norm().train(), (torch.randn(4, 3),))
    kinds = [s.kind.name for s in train.graph_signature.output_specs]
    assert kinds == ["USER_OUTPUT"]
    assert {"aten.batch_norm.default", "aten.relu_.default", "aten.add_.Tensor"} <= set(op_counts(train))
    infer = train.run_decompositions()
    ops = op_counts(infer)
    assert "aten._native_batch_norm_legit_functional.default" in ops and "aten.relu.default" in ops
    assert not any(op.split(".")[1].endswith("_") for op in ops if op.startswith("aten."))
    kinds = [s.kind.name for s in infer.graph_signature.output_specs]
    assert kinds == ["BUFFER_MUTATION"] * 3 + ["USER_OUTPUT"]


def test_default_decompositions_table_can_be_edited():
    from torch._decomp import get_decompositions
    from torch.export import default_decompositions

    block = nn.Sequential(nn.Linear(3, 4), nn.GELU()).eval()
    x = torch.randn(2, 3)
    ep = torch.export.export(block, (x,))
    assert set(op_counts(ep.run_decompositions())) == {"aten.permute.default",
                                                       "aten.addmm.default", "aten.gelu.default"}
    table = default_decompositions()
    assert torch.ops.aten.linear.default in table
    assert torch.ops.aten.gelu.default not in table
    del table[torch.ops.aten.linear.default]
    assert "aten.linear.default" in op_counts(ep.run_decompositions(table))
    table = default_decompositions()
    gelu = torch.ops.aten.gelu.default
    table[gelu] = get_decompositions([gelu])[gelu]
    done = ep.run_decompositions(table)
    assert "aten.gelu.default" not in op_counts(done) and "aten.erf.default" in op_counts(done)
    torch.testing.assert_close(done.module()(x), block(x))


def test_default_decompositions_length_depends_on_imports_but_not_its_aten_part():
    import json
    import subprocess
    import sys

    code = (
        "import torch\n"
        "from torch.export import default_decompositions\n"
        "def counts():\n"
        "    t = default_decompositions()\n"
        "    return len(t), sum(op.namespace == 'aten' for op in t), "
        "'c10d_functional' in {op.namespace for op in t}\n"
        "before = counts()\n"
        "import torch._inductor\n"
        "import json\n"
        "print(json.dumps([before, counts()]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    before, after = json.loads(out.strip().splitlines()[-1])  # [all, aten, c10d] each
    assert after[0] > before[0]  # the whole table grew with the import
    assert after[1] == before[1]  # its aten entries did not
    assert not before[2] and after[2]  # the new entries are c10d_functional ops
    # every non-aten entry is a CompositeImplicitAutograd op of another namespace
    from torch.export import default_decompositions
    others = [op for op in default_decompositions() if op.namespace != "aten"]
    assert others and all(torch._C._dispatch_has_kernel_for_dispatch_key(
        op.name(), "CompositeImplicitAutograd") for op in others)


# §6 ------------------------------------------------------------------------------------------

class _SetsVariable:
    """A harmless payload: unpickling it sets one environment variable in this process."""

    CODE = ("(__import__('os').environ.__setitem__('FXCOURSE_TEST_PT2', 'ran'),"
            " ((__import__('torch').zeros(2, 3),), {}))[1]")

    def __reduce__(self):
        return (eval, (self.CODE,))


def test_pt2_holds_a_pickle_and_load_runs_a_planted_payload(tmp_path):
    ep = torch.export.export(TwoLayers(), (torch.randn(2, 3),))
    torch.export.save(ep, tmp_path / "m.pt2")
    with zipfile.ZipFile(tmp_path / "m.pt2") as archive:
        (entry,) = [n for n in archive.namelist() if n.endswith("data/sample_inputs/model.pt")]
        original = archive.read(entry)
    # the genuine entry is a torch.save file that loads under weights_only=True
    args, kwargs = torch.load(io.BytesIO(original), weights_only=True)
    assert kwargs == {} and args[0].shape == (2, 3)
    planted = io.BytesIO()
    torch.save(_SetsVariable(), planted)
    with pytest.raises(Exception):
        torch.load(io.BytesIO(planted.getvalue()), weights_only=True)
    with zipfile.ZipFile(tmp_path / "m.pt2") as good, \
            zipfile.ZipFile(tmp_path / "bad.pt2", "w") as bad:
        for info in good.infolist():
            bad.writestr(info, planted.getvalue() if info.filename == entry else good.read(info))
    os.environ.pop("FXCOURSE_TEST_PT2", None)
    try:
        loaded = torch.export.load(tmp_path / "bad.pt2")  # falls back to weights_only=False
        assert os.environ.get("FXCOURSE_TEST_PT2") == "ran"
    finally:
        os.environ.pop("FXCOURSE_TEST_PT2", None)
    x = torch.randn(2, 3)
    torch.testing.assert_close(loaded.module()(x), ep.module()(x))


def _copy_pt2(src, dst, entry_suffix, edit):
    with zipfile.ZipFile(src) as good, zipfile.ZipFile(dst, "w") as bad:
        for info in good.infolist():
            data = good.read(info)
            bad.writestr(info, edit(data) if info.filename.endswith(entry_suffix) else data)


def test_forced_weights_only_load_refuses_the_pickle_payload_of_a_pt2(tmp_path, monkeypatch):
    ep = torch.export.export(TwoLayers(), (torch.randn(2, 3),))
    torch.export.save(ep, tmp_path / "m.pt2")
    planted = io.BytesIO()
    torch.save(_SetsVariable(), planted)
    _copy_pt2(tmp_path / "m.pt2", tmp_path / "bad.pt2", "data/sample_inputs/model.pt",
              lambda data: planted.getvalue())
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")  # read by torch.load at each call
    monkeypatch.delenv("FXCOURSE_TEST_PT2", raising=False)
    with pytest.raises(pickle.UnpicklingError):
        torch.export.load(tmp_path / "bad.pt2")
    assert os.environ.get("FXCOURSE_TEST_PT2") is None


def test_pt2_json_size_expression_runs_code_even_with_forced_weights_only(tmp_path, monkeypatch):
    ep = torch.export.export(TwoLayers(), (torch.randn(4, 3),), dynamic_shapes={"x": {0: Dim("b")}})
    torch.export.save(ep, tmp_path / "m.pt2")
    code = b"__import__('os').environ.__setitem__('FXCOURSE_TEST_JSON', 'ran') or "
    edits = []

    def plant(data):
        assert b'"expr_str": "' in data  # a dynamic size is stored as sympy text
        edits.append(1)
        return data.replace(b'"expr_str": "', b'"expr_str": "' + code, 1)

    _copy_pt2(tmp_path / "m.pt2", tmp_path / "bad.pt2", "models/model.json", plant)
    assert edits == [1]  # no pickle entry was touched
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    monkeypatch.delenv("FXCOURSE_TEST_JSON", raising=False)
    loaded = torch.export.load(tmp_path / "bad.pt2")  # sympy.sympify evaluates the text
    assert os.environ.get("FXCOURSE_TEST_JSON") == "ran"
    x = torch.randn(6, 3)
    torch.testing.assert_close(loaded.module()(x), ep.module()(x))


# §7 ------------------------------------------------------------------------------------------

def test_torch_mlir_aten_stage_linear_is_permute_mm_two_muls_add():
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    ep = torch.export.export(TwoLayers(), (torch.randn(2, 3),),
                             dynamic_shapes={"x": {0: Dim("b")}})
    assert op_counts(ep.run_decompositions(get_decomposition_table())) == {
        "aten.permute.default": 2, "aten.mm.default": 2, "aten.mul.Tensor": 4,
        "aten.add.Tensor": 2, "aten.relu.default": 1}


def test_torch_mlir_table_decomposes_core_ops_and_drops_some_core_decompositions():
    from torch._decomp import core_aten_decompositions
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    mlir, core = get_decomposition_table(), core_aten_decompositions()
    for op in (torch.ops.aten.addmm.default, torch.ops.aten._log_softmax.default,
               torch.ops.aten.native_layer_norm.default):
        assert torch.Tag.core in op.tags and op in mlir and op not in core
    dropped = {str(op.overloadpacket) for op in core.keys() - mlir.keys()
               if op.namespace == "aten"}  # other namespaces depend on the imports so far
    assert {"aten.roll", "aten.eye", "aten.rms_norm", "aten.fft_fft"} <= dropped
    assert len(dropped) == 36

    class Norm(nn.Module):
        def forward(self, x):
            return torch.rms_norm(x, [4])

    ep = torch.export.export(Norm(), (torch.randn(2, 4),))
    assert "aten.rms_norm.default" in op_counts(ep.run_decompositions(get_decomposition_table()))


def test_torch_stage_decomposes_roll_rms_norm_eye_but_keeps_isclose_and_vector_norm():
    from fxcourse import lowering

    class Five(nn.Module):
        def forward(self, x):
            return (torch.roll(x, 2, 1), torch.rms_norm(x, [4]), x + torch.eye(4),
                    torch.isclose(x, x * 2), torch.linalg.vector_norm(x))

    low = lowering(Five(), torch.randn(4, 4), stages=("torch",))
    names = ("roll", "rms_norm", "eye", "isclose", "linalg_vector_norm")

    def whole(stage):
        ops = low.stage(stage).histogram()
        return {n for n in names if re.search(rf"aten\.{n}\b", ops)}

    assert whole("aten") == set(names)  # torch-mlir's table leaves all five whole
    assert whole("torch") == {"isclose", "linalg_vector_norm"}


# §9 ------------------------------------------------------------------------------------------

def test_torch_mlir_ships_an_execution_engine_that_runs_jitted_code():
    from torch_mlir import ir, passmanager
    from torch_mlir.execution_engine import ExecutionEngine

    src = """
    func.func @twice_plus(%a: f32, %b: f32) -> f32 attributes {llvm.emit_c_interface} {
      %c = arith.addf %a, %a : f32
      %d = arith.addf %c, %b : f32
      return %d : f32
    }"""
    with ir.Context():
        module = ir.Module.parse(src)
        passmanager.PassManager.parse(
            "builtin.module(convert-arith-to-llvm,convert-func-to-llvm,"
            "reconcile-unrealized-casts)").run(module.operation)
        engine = ExecutionEngine(module)
        a, b, out = ctypes.c_float(1.5), ctypes.c_float(0.25), ctypes.c_float()
        engine.invoke("twice_plus", ctypes.pointer(a), ctypes.pointer(b), ctypes.pointer(out))
    assert out.value == 3.25


# The lecture's own words (issue 28) ------------------------------------------------------------

NOTEBOOK = os.path.join(os.path.dirname(__file__), os.pardir, "course", "10_export_mlir.ipynb")
_CODE_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.]*(?:\(\))?=?")


def _printed_words(source: str) -> list[str]:
    """English words in the string literals a cell hands to print() itself (directly, inside an
    f-string or a ``+``), outside fxcourse.pick(): what a 中文 reader would read untranslated."""
    import ast

    found = []

    def visit(node):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "pick":
            return  # the reader's language
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.extend(m.group(0) for m in _CODE_WORD.finditer(node.value))
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                visit(part.value if isinstance(part, ast.FormattedValue) else part)
        elif isinstance(node, ast.BinOp):
            visit(node.left), visit(node.right)

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            for arg in node.args:
                visit(arg)
    return found


def test_lecture_prints_say_words_only_through_pick():
    import keyword

    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    assert any("pick(" in s for s in sources)
    english = {}
    for cell, source in zip((c for c in nb.cells if c.cell_type == "code"), sources):
        for word in _printed_words(source):
            # code: a name=value pair, a dotted or snake_case name, a digit, True/False/None
            if word.endswith("=") or re.search(r"[._0-9]", word) or keyword.iskeyword(word):
                continue
            english.setdefault(cell.get("id"), []).append(word)
    assert english == {}, f"words printed without fxcourse.pick: {english}"
