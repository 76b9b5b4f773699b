"""graph_table: every accepted kind renders, bad input says how to fix it, output is stable."""
from __future__ import annotations

import operator
import subprocess
import sys
import timeit
import types
import warnings

import pytest
import torch
from hypothesis import given, settings, strategies as st
from torch import fx
from torch.fx.experimental.proxy_tensor import make_fx

from fxcourse import FxCourseError, graph_table, zoo  # the function, not the module
from fxcourse.viewers import _node_text
from fxcourse._render import Table
from fxcourse.viewers._torchscript_rows import attribute_text
from fxcourse import GraphTable

FX_ZOO = ["mlp", "clamp_linear", "wrapped_split", "conv_bn_relu"]


def traced(name: str) -> fx.GraphModule:
    model, _ = zoo.example(name)
    return fx.symbolic_trace(model)


def jit(kind: str, name: str = "gate") -> torch.jit.ScriptModule:
    model, args = zoo.example(name)
    with warnings.catch_warnings():  # jit.trace/script are deprecated; trace warns on `if`
        warnings.simplefilter("ignore")
        return torch.jit.script(model) if kind == "script" else torch.jit.trace(model, args)


@pytest.fixture(scope="module")
def exported() -> torch.export.ExportedProgram:
    model, args = zoo.example("conv_bn_relu")
    return torch.export.export(model, args)


def loop(x: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = x * 2
    return x


# -- each accepted kind ---------------------------------------------------------------------

@pytest.mark.parametrize("name", FX_ZOO)
def test_zoo_graph_modules_match_golden(name, golden):
    gm = traced(name)
    table = graph_table(gm)
    assert len(table) == len(gm.graph.nodes)
    assert [r[1] for r in table.rows] == [n.name for n in gm.graph.nodes]
    golden(f"graph_table_{name}", table.to_text(width=120))


def test_fx_graph_has_the_same_rows_as_its_module():
    gm = traced("clamp_linear")
    assert graph_table(gm.graph).rows == graph_table(gm).rows
    assert repr(graph_table(gm.graph)) == "<GraphTable of fx.Graph: 6 rows × 5 columns>"


def test_script_shows_the_if_blocks_nested(golden):
    table = graph_table(jit("script"))
    kinds = [r[0] for r in table.rows]
    assert kinds[0] == "prim::Param" and kinds[-1] == "prim::Return"
    assert {"prim::If", "block0", "block1", "aten::relu", "aten::neg"} <= set(kinds)
    text = table.to_text(width=120)
    assert "\n  block0" in text and "\n    aten::relu" in text
    golden("graph_table_gate_script", text)


def test_trace_bakes_in_one_branch(golden):
    table = graph_table(jit("trace"))
    kinds = [r[0] for r in table.rows]
    assert "prim::If" not in kinds and "aten::relu" in kinds
    golden("graph_table_gate_trace", table.to_text(width=120))


def test_script_function_and_raw_graph_show_the_loop():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = torch.jit.script(loop)
    table = graph_table(fn, columns="+types,+source")
    rows = {r[0]: r for r in table.rows}
    assert rows["prim::Loop"][5].startswith("test_graph_table.py:")
    assert rows["block0"][4] == "int, Tensor"  # the loop counter and the carried x
    assert graph_table(fn.graph).rows == graph_table(fn).rows
    assert graph_table(fn.graph).source == "TorchScript graph"


def test_exported_program_says_what_each_input_is(exported, golden):
    table = graph_table(exported)
    assert table.columns[2] == "input_kind"
    kinds = {r[1]: r[2] for r in table.rows}
    assert kinds["p_conv_weight"] == "parameter conv.weight"
    assert kinds["b_bn_running_mean"] == "buffer bn.running_mean"
    assert kinds["x"] == "user input"
    assert kinds["relu"] == ""
    golden("graph_table_conv_bn_relu_export", table.to_text(width=160))


def test_source_column_is_file_and_line_only(exported):
    table = graph_table(exported, columns=["name", "source"])
    sources = dict(table.rows)
    assert sources["conv2d"].startswith("zoo.py:")
    assert "return torch.relu(self.bn(self.conv(x)))" in sources["conv2d"]
    assert sources["x"] == ""
    assert not any("/" in s.split(" ")[0] for s in sources.values())


def test_object_with_gm_is_a_captured_graph():
    gm = traced("mlp")
    table = graph_table(types.SimpleNamespace(gm=gm))
    assert table.rows == graph_table(gm).rows
    assert table.source == "SimpleNamespace.gm"


def test_make_fx_values_give_shape_and_dtype(golden):
    def f(x, y):
        a = x + y
        return a.split(1, dim=0), a.sum(dim=0), x.shape[1] * 2

    gm = make_fx(f, tracing_mode="symbolic")(torch.randn(3, 4), torch.randn(3, 4))
    table = graph_table(gm, columns=["+shape", "+dtype", "+users"])
    by_name = {r[1]: r for r in table.rows}
    assert by_name["add"][5:] == ("[3, s96]", "float32", "2")
    assert by_name["split"][5].startswith("([1, s96], ")
    assert by_name["mul"][6] == "SymInt(2*s96)"
    golden("graph_table_make_fx_symbolic", table.to_text(width=140))


def test_tensor_meta_from_shape_prop_is_used():
    gm = traced("mlp")
    torch.fx.passes.shape_prop.ShapeProp(gm).propagate(torch.randn(2, 4))
    rows = graph_table(gm, columns="name shape dtype").rows
    assert rows[1] == ("fc1", "[2, 8]", "float32")


# -- columns --------------------------------------------------------------------------------

def test_columns_add_with_plus_and_replace_without():
    gm = traced("mlp")
    assert graph_table(gm, columns=["+users"]).columns[-1] == "users"
    assert graph_table(gm, columns=["name", "users"]).columns == ("name", "users")
    assert graph_table(gm, columns="name, users").columns == ("name", "users")


@pytest.mark.parametrize("columns, match", [
    (["shapes"], r"column 'shapes'.*opcode, name, target, args, kwargs, shape"),
    (["+types"], r"column 'types'"),  # a TorchScript column asked of an fx graph
    (["+shape", "name"], r"all names prefixed with '\+' or none"),
    ([], r"no columns"),
])
def test_bad_columns_name_the_column_and_list_the_accepted(columns, match):
    with pytest.raises(FxCourseError, match=match):
        graph_table(traced("mlp"), columns=columns)


def test_input_kind_is_only_for_exported_programs():
    with pytest.raises(FxCourseError, match="column 'input_kind'"):
        graph_table(traced("mlp"), columns=["input_kind"])


# -- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("obj, match", [
    (None, r"got None; expected a torch\.fx\.GraphModule.*Fix: pass a traced graph"),
    (loop, r"got function loop.*symbolic_trace\(fn\)"),
    (zoo.MLP(), r"got MLP \(an nn.Module, not a graph\).*torch\.fx\.symbolic_trace\(m\)"),
    ("graph():", r"got str 'graph\(\):'.*not its printed text"),
    (42, r"got int 42"),
    (types.SimpleNamespace(gm="x"), r"its \.gm is str 'x'"),
])
def test_bad_input_says_what_was_passed_and_the_fix(obj, match):
    with pytest.raises(FxCourseError, match=match):
        graph_table(obj)


# -- the result object ----------------------------------------------------------------------

def test_result_object_conventions():
    table = graph_table(traced("clamp_linear"))
    assert isinstance(table, GraphTable) and len(table) == 6
    assert str(table) == table.to_text()
    assert table._repr_html_() == table.to_html()
    assert repr(table) == "<GraphTable of fx.GraphModule: 6 rows × 5 columns>"
    assert table.rows[4] == ("call_method", "clamp", "clamp", "(linear,)", "{'min': 0.0, 'max': 1.0}")


def test_text_fits_the_width_and_marks_cuts():
    table = graph_table(traced("wrapped_split"))
    text = table.to_text(width=50)
    assert max(len(line) for line in text.splitlines()) <= 50
    assert "…" in text


def test_html_is_coloured_by_opcode_and_escaped():
    class Odd:
        def __repr__(self) -> str:
            return "<built-in function add>"

    g = fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.add, (x, Odd()), {"tag": "<b>"}))
    html = graph_table(g).to_html()
    assert "&lt;built-in function add&gt;" in html and "<built-in" not in html
    assert "&#x27;&lt;b&gt;&#x27;" in html and "<b>" not in html.replace("<b>fx.Graph", "")
    assert '<tr class="op-call_function">' in html and "<style>" in html
    assert "0x" not in html


def test_builtin_targets_read_as_dotted_names():
    cells = [r[2] for r in graph_table(traced("clamp_linear")).rows]
    assert "operator.add" in cells
    assert not any("built-in" in c or "0x" in c for c in cells)


def test_target_names_fall_back_when_torch_cannot_name_them(monkeypatch):
    monkeypatch.setattr(_node_text, "_get_qualified_name", lambda: None)
    g = fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(torch.relu, (x,))
    g.output(g.call_function(operator.mul, (y, 2)))
    assert [r[2] for r in graph_table(g).rows] == ["x", "torch.relu", "operator.mul", "output"]


def test_torchscript_attribute_read_failure_degrades():
    class Broken:
        def kindOf(self, name):
            return "zz"

    assert attribute_text(Broken(), "value") == "<zz>"


def chain(n: int) -> fx.Graph:
    g = fx.Graph()
    last = x = g.placeholder("x")
    for i in range(n - 2):
        last = g.call_function(torch.add, (last, x)) if i % 2 else g.call_method("relu", (last,))
    g.output(last)
    return g


def test_large_graphs_fold_in_html_and_render_fast():
    big = graph_table(chain(2_000))
    html = big.to_html()
    assert "1800 more rows not shown: graph_table(..., max_rows=None) shows every row" in html
    assert html.count("<tr") == 200 + 1 + 1  # only the shown rows are sent, plus header and fold rows
    assert "add_998" in html and "relu_999" not in html and "<details>" not in html
    text = big.to_text(width=200)
    assert len(text.splitlines()) == 3 + 200 + 1 and "\n… 1800 more rows …\n" in text
    assert "… 1980 more rows …" in big.to_text(width=100, max_rows=20)
    huge = chain(10_000)
    seconds = min(timeit.repeat(lambda: graph_table(huge).to_text(width=120), number=1, repeat=3))
    assert seconds < 1.0


def test_every_row_on_request():
    """max_rows=None (documented in graph_table's docstring) shows all rows, in both views."""
    every = graph_table(chain(1_501), max_rows=None)
    assert every.to_html().count("<tr class=") == 1_501
    assert len(every.to_text(width=200).splitlines()) == 1_501 + 3
    folded = graph_table(chain(1_501))
    assert folded.to_html(max_rows=None).count("<tr class=") == 1_501  # one call can ask too
    assert folded.to_html(max_rows=10).count("<tr class=") == 10 + 1


def test_default_output_of_a_1501_node_graph_stays_small():
    """What a notebook stores for a displayed table: text/plain plus text/html."""
    from IPython.core.formatters import PlainTextFormatter

    table = graph_table(chain(1_501), columns="+users")
    size = len(PlainTextFormatter()(table).encode()) + len(table._repr_html_().encode())
    assert size < 50_000, size  # 258 KB before the fold left rows out
    every = graph_table(chain(1_501), columns="+users", max_rows=None)
    assert len(every._repr_html_().encode()) > 150_000  # so the fold is what keeps it small


@pytest.mark.parametrize("bad", [-1, -5, 0, "3", 2.5, True, [3]])
def test_max_rows_must_be_a_positive_whole_number_or_none(bad):
    g = chain(30)
    with pytest.raises(FxCourseError, match=r"graph_table: got max_rows=.*1 or more, or None.* / graph_table："):
        graph_table(g, max_rows=bad)
    with pytest.raises(FxCourseError, match="max_rows="):
        graph_table(g).to_text(max_rows=bad)
    with pytest.raises(FxCourseError, match="max_rows="):
        graph_table(g).to_html(max_rows=bad)


_SCRIPT = """
import copy, warnings
warnings.simplefilter("ignore")
import torch
from torch.fx.experimental.proxy_tensor import make_fx
import fxcourse
from fxcourse import zoo
graph_diff = fxcourse.graph_diff  # loading graph_diff first must not hide the graph_table function
graph_table = fxcourse.graph_table
assert callable(graph_table) and callable(graph_diff)
m, a = zoo.example("clamp_linear")
gm = torch.fx.symbolic_trace(m)
after = copy.deepcopy(gm)
next(n for n in after.graph.nodes if n.op == "call_function").target = torch.mul
parts = [graph_table(gm, columns="+users"), graph_table(torch.export.export(m, a)),
         graph_table(torch.jit.script(zoo.example("gate")[0])),
         graph_table(make_fx(lambda x: x.sum(0), tracing_mode="symbolic")(a[0]), columns="+shape"),
         graph_diff(gm, after)]
print("".join(p.to_text(width=120) + p.to_html() for p in parts))
"""


def test_same_bytes_in_two_fresh_processes():
    runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, check=True)
            for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    assert b"0x" not in runs[0].stdout and len(runs[0].stdout) > 1000


# -- properties -----------------------------------------------------------------------------

_STEPS = st.lists(st.tuples(st.sampled_from(["add", "mul", "sub", "relu", "sum", "attr", "mod"]),
                            st.integers(0, 50), st.integers(0, 50)), min_size=0, max_size=25)


def random_graph(n_inputs: int, steps: list[tuple[str, int, int]]) -> fx.Graph:
    """A graph from drawn steps; each step reads earlier values by (wrapped) index."""
    g = fx.Graph()
    values = [g.placeholder(f"x{i}") for i in range(n_inputs)]
    functions = {"add": torch.add, "mul": torch.mul, "sub": operator.sub}
    for kind, i, j in steps:
        a, b = values[i % len(values)], values[j % len(values)]
        if kind in functions:
            values.append(g.call_function(functions[kind], (a, b)))
        elif kind in ("relu", "sum"):
            values.append(g.call_method(kind, (a,), {"dim": 0} if kind == "sum" else {}))
        elif kind == "attr":
            values.append(g.get_attr(f"w{i}"))
        else:
            values.append(g.call_module(f"layer{i % 3}", (a,)))
    g.output(tuple(values[-2:]))
    return g


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 3), _STEPS)
def test_random_graphs_render_one_row_per_node(n_inputs, steps):
    g = random_graph(n_inputs, steps)
    table = graph_table(g, columns="+users")
    assert len(table) == len(g.nodes)
    text = table.to_text(width=100)
    assert len(text.splitlines()) == len(g.nodes) + 3  # caption, header, rule
    assert table.to_html().count("<tr class=") == len(g.nodes)


def test_tables_built_directly_still_render():
    t = Table(["a"], [["x"]], caption="c")
    assert t.to_text(width=20) == "c\na\n-\nx"


def test_shape_column_reads_dynamo_example_values():
    """Dynamo stores what it knows in node.meta['example_value'], not 'val'."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    torch.compile(lambda x: torch.relu(x) + 1, backend=backend)(torch.randn(2, 3))
    torch._dynamo.reset()
    table = graph_table(graphs[0], columns=["name", "shape", "dtype"])
    assert ("relu", "[2, 3]", "float32") in table.rows
