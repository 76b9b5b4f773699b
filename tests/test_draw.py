"""draw(): pictures of graphs, captures and diffs, on graphs the lectures do not use.

Checks the dot source (what is marked how) and the SVG (escaped, parseable, the same bytes
in two processes), the collapse of large graphs, and the message when `dot` is missing.
"""
from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest
import torch
from torch import fx, nn

from fxcourse import FxCourseError, capture, draw, graph_diff
from fxcourse.tooling.doctor import diagnose

SVG_NS = "{http://www.w3.org/2000/svg}"


def _labels(dot_source: str) -> dict[str, str]:
    """node id -> label text, from the dot source ``draw`` writes."""
    found = re.findall(r'^\s*"((?:[^"\\]|\\.)*)" \[label="((?:[^"\\]|\\.)*)"(.*)\]$', dot_source, re.M)
    return {node: label.replace("\\n", "\n") for node, label, _ in found}


def _attrs(dot_source: str, node: str) -> str:
    line = next(l for l in dot_source.splitlines() if l.strip().startswith(f'"{node}" [label='))
    return line


def _svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)  # also proves the SVG is well-formed XML
    return [t.text or "" for t in root.iter(f"{SVG_NS}text")]


# -- determinism and escaping -------------------------------------------------------------

_SCRIPT = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    import torch
    from torch import nn
    from fxcourse import draw

    class Pair(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 5)
            self.b = nn.Linear(5, 2)
        def forward(self, x):
            return self.b(torch.tanh(self.a(x))) * 2

    def branchy(x):
        if x.mean() > 0:
            return x.exp()
        return -x

    torch.manual_seed(0)
    ep = torch.export.export(Pair(), (torch.randn(4, 3),))
    scripted = torch.jit.script(branchy)
    for obj in (ep, scripted, torch.fx.symbolic_trace(Pair())):
        sys.stdout.write(draw(obj).to_svg())
        sys.stdout.write("\\n=====\\n")
""")


def test_svg_is_the_same_bytes_in_two_processes(tmp_path):
    script = tmp_path / "pictures.py"  # a file: torch.jit.script reads the function's source
    script.write_text(_SCRIPT, encoding="utf-8")
    env = dict(os.environ, PYTHONHASHSEED="0")
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True,
                           env=env).stdout for _ in range(2)]
    assert runs[0] == runs[1]
    pictures = runs[0].split("\n=====\n")[:-1]
    assert len(pictures) == 3
    for svg in pictures:
        assert svg.startswith("<svg") and "<!--" not in svg and ' id="' not in svg
        assert "0x" not in svg and "<?xml" not in svg
        _svg_texts(svg)


def test_labels_are_escaped_in_dot_and_svg():
    graph = fx.Graph()
    x = graph.placeholder("x")
    odd = graph.call_method("<built-in function add>", (x,))
    quoted = graph.call_method('say "hi" \\ bye', (odd,))
    graph.output(quoted)
    d = draw(graph)
    source = d.to_text()
    assert r'call_method say \"hi\" \\ bye' in source  # dot string escapes
    svg = d.to_svg()
    assert "&lt;built" in svg and "<built" not in svg  # dot also writes - as &#45;
    texts = _svg_texts(svg)
    assert "call_method <built-in function add>" in texts
    assert 'call_method say "hi" \\ bye' in texts
    assert d._repr_svg_() == svg and d.to_html().startswith('<div class="fxcourse-drawing"><svg')
    assert repr(d) == "<Drawing of fx.Graph: 4 nodes, 3 edges>"


def test_labels_follow_the_table_columns_with_shapes_when_known():
    class Scale(nn.Module):
        def forward(self, x):
            return torch.relu(x).sum(dim=1)

    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(Scale())(torch.randn(2, 3))
    labels = _labels(draw(gm).to_text())
    relu = next(v for v in labels.values() if "relu" in v.split("\n")[1])
    assert relu.split("\n")[1:] == ["call_function torch.ops.aten.relu.default", "[2, 3] float32"]
    no_shapes = _labels(draw(gm, shapes=False).to_text())
    assert all("float32" not in v for v in no_shapes.values())
    # one legend per picture, listing only the kinds drawn
    source = draw(gm).to_text()
    assert source.count("<b>legend</b>") == 1
    assert ">placeholder<" in source and ">call_module<" not in source


# -- the IRs ------------------------------------------------------------------------------

def test_torchscript_blocks_are_nested_clusters():
    def clipped_sum(x, n: int):
        total = torch.zeros_like(x)
        for i in range(n):
            if bool(x.max() > 1):
                total = total + x.clamp(max=1.0)
            else:
                total = total + x
        return total

    source = draw(torch.jit.script(clipped_sum)).to_text()
    clusters = re.findall(r"subgraph cluster_\d+ \{\n\s*label=\"([^\"]+)\"", source)
    assert clusters == ["prim::Loop", "block0 (body)", "prim::If", "block0 (then)", "block1 (else)"]
    # the If sits inside the loop body: its cluster opens before the body's closes
    body = source.index('label="block0 (body)"')
    assert body < source.index('label="prim::If"')
    assert "next iteration" in source and "prim::If result" in source and "aten::clamp" in source


def test_exported_program_colours_inputs_by_kind():
    class WithBuffer(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            self.register_buffer("offset", torch.ones(3))

        def forward(self, x):
            return self.lin(x) + self.offset

    ep = torch.export.export(WithBuffer(), (torch.randn(2, 3),))
    source = draw(ep).to_text()
    labels = _labels(source)
    assert labels["p_lin_weight"].split("\n")[1] == "placeholder: parameter lin.weight"
    assert labels["b_offset"].split("\n")[1] == "placeholder: buffer offset"
    assert labels["x"].split("\n")[1] == "placeholder: user input"
    fills = {n: re.search(r'fillcolor="([^"]+)"', _attrs(source, n)).group(1)
             for n in ("p_lin_weight", "b_offset", "x")}
    assert len(set(fills.values())) == 3
    for kind in ("parameter", "buffer", "user input"):
        assert f">{kind}<" in source


# -- capture: graphs as clusters, breaks between them -------------------------------------

def _stepper(x):
    a = torch.sin(x) * 3
    torch._dynamo.graph_break()
    b = torch.cos(a)
    if b.sum() < 100:  # a data-dependent branch: the second break
        b = b + 1
    return b.abs()


def test_capture_draws_each_graph_as_a_cluster_and_labels_each_break():
    cap = capture(_stepper, torch.randn(3))
    assert cap.break_count == 2 and cap.graph_count == 3
    source = draw(cap).to_text()
    clusters = re.findall(r'label="(graph \d+ \(ends with [^)]+\))"', source)
    assert clusters == ["graph 0 (ends with graph break)", "graph 1 (ends with graph break)",
                        "graph 2 (ends with return)"]
    labels = _labels(source)
    breaks = [v for k, v in labels.items() if k.startswith("break")]
    assert len(breaks) == 2
    for label, brk in zip(breaks, cap.breaks):
        assert label.startswith(f"graph break {cap.breaks.index(brk) + 1}")
        assert brk.location in label and brk.line.split("#")[0].strip()[:30] in label
        assert brk.reason.split()[0] in label
    assert "torch._dynamo.graph_break()" in breaks[0] and "if b.sum() < 100" in breaks[1]
    # the picture reads in order: graph 0, break 1, graph 1, break 2, graph 2
    order = [source.index(s) for s in ('label="graph 0', '"break1"', 'label="graph 1', '"break3"',
                                        'label="graph 2')]
    assert order == sorted(order)
    chain = re.findall(r'"([^"]+)" -> "([^"]+)" \[color="#c0392b"', source)
    assert [head for _, head in chain] == ["break1", "g1_l_a_", "break3", "g2_l_b_"]
    assert "捕获到 3 张图、2 处图中断" in source


def test_capture_without_breaks_is_one_cluster():
    cap = capture(lambda x: torch.relu(x) * 2, torch.randn(4))
    source = draw(cap).to_text()
    assert source.count("subgraph cluster_") == 1 and '"break' not in source
    assert "1 graph, 0 graph breaks" in source


# -- graph_diff: added, removed, rewired --------------------------------------------------

def test_diff_marks_added_removed_retargeted_and_rewired():
    def f(x, y):
        return torch.tanh(x) - torch.exp(y)

    before = fx.symbolic_trace(f)
    after = copy.deepcopy(before)
    nodes = {n.name: n for n in after.graph.nodes}
    nodes["tanh"].target = torch.sigmoid                       # retargeted
    with after.graph.inserting_before(nodes["sub"]):
        clipped = after.graph.call_function(torch.clamp, (nodes["y"],), {"min": 0.0})  # added
    nodes["sub"].args = (nodes["tanh"], clipped)                 # rewired: exp no longer used
    after.graph.erase_node(nodes["exp"])                         # removed
    after.recompile()

    diff = graph_diff(before, after)
    source = draw(diff).to_text()
    labels = _labels(source)
    assert labels["clamp"].startswith("+ added")
    assert labels["removed:exp"].startswith("− removed")
    assert labels["tanh"].startswith("~ retargeted") and "was: call_function torch.tanh" in labels["tanh"]
    assert labels["sub"].startswith("~ rewired")
    assert 'color="#1a7f37"' in _attrs(source, "clamp") and "dashed" in _attrs(source, "removed:exp")
    edges = dict(((t, h), a) for t, h, a in re.findall(r'"([^"]+)" -> "([^"]+)"(?: \[(.*)\])?$', source, re.M))
    assert "#1a7f37" in edges["clamp", "sub"] and "#1a7f37" in edges["y", "clamp"]   # added edges
    assert "dashed" in edges["removed:exp", "sub"] and "#cf222e" in edges["y", "removed:exp"]  # removed
    assert edges["tanh", "sub"] == "" and edges["x", "tanh"] == ""                    # unchanged
    for kind in ("added", "removed", "changed", "rewired"):
        assert f">{kind}<" in source
    _svg_texts(draw(diff).to_svg())


def test_rewired_edge_between_kept_nodes_is_orange():
    before = fx.symbolic_trace(lambda x: torch.relu(x) + torch.neg(x))
    after = copy.deepcopy(before)
    nodes = {n.name: n for n in after.graph.nodes}
    nodes["add"].args = (nodes["relu"], nodes["x"])  # x itself, not neg(x)
    after.graph.erase_node(nodes["neg"])
    after.recompile()
    source = draw(graph_diff(before, after)).to_text()
    assert re.search(r'"x" -> "add" \[color="#bc4c00" penwidth=2 label="rewired"', source)
    assert '"relu" -> "add"\n' in source  # kept edge, plain
    assert '"removed:neg" -> "add" [color="#cf222e" style="dashed"]' in source


# -- large graphs ------------------------------------------------------------------------

class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        for _ in range(4):
            y = torch.relu(y) + x
        return y


def test_a_500_node_graph_collapses_by_module_and_focus_opens_one():
    model = nn.Sequential(*[_Block() for _ in range(56)])
    gm = fx.symbolic_trace(model)
    assert len(gm.graph.nodes) >= 500
    d = draw(gm)
    assert d.nodes == 58 and "collapsed into 58 boxes" in d.note and "focus=" in d.note
    labels = _labels(d.to_text())
    assert labels["module:3"] == "3\n_Block\n9 nodes"
    one = draw(gm, focus="3")
    # its 9 nodes, the one node outside feeding it, the 5 nodes of block 4 using its result
    assert one.nodes == 9 + 1 + 5 and one.note.startswith("9 of 506 nodes: module 3")
    assert "_3_lin" in _labels(one.to_text()) and "_4_lin" in _labels(one.to_text())
    every = draw(gm, max_nodes=None)
    assert every.nodes == len(gm.graph.nodes) and not every.note
    with pytest.raises(FxCourseError, match="focus='nope'.*a module path of this graph: 0, 1, 10"):
        draw(gm, focus="nope")


def test_a_large_graph_without_modules_says_how_to_see_the_rest():
    graph = fx.Graph()
    value = graph.placeholder("x")
    for _ in range(400):
        value = graph.call_function(torch.sin, (value,))
    graph.output(value)
    d = draw(graph)
    assert d.nodes == 300 and "max_nodes=None" in d.note and "… 103 more nodes" in d.to_text()


# -- errors -------------------------------------------------------------------------------

def test_dot_missing_is_a_bilingual_error_with_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FxCourseError) as info:
        draw(fx.symbolic_trace(lambda x: x + 1))
    message = str(info.value)
    assert "no Graphviz `dot` program on PATH" in message and "apt-get install graphviz" in message
    assert "conda install -c conda-forge graphviz" in message and "请安装 Graphviz" in message
    (finding,) = [f for f in diagnose(python=sys.executable).findings if f.name == "graphviz"]
    fix = finding.fix if isinstance(finding.fix, str) else " ".join(finding.fix)  # a str or an (en, zh) pair
    assert not finding.ok and "apt-get install graphviz" in fix and "未找到 `dot`" in finding.zh


def test_bad_inputs_are_explained():
    with pytest.raises(FxCourseError, match="an nn.Module, not a graph"):
        draw(nn.Linear(2, 2))
    with pytest.raises(FxCourseError, match="max_nodes=0"):
        draw(fx.symbolic_trace(lambda x: x), max_nodes=0)
    with pytest.raises(FxCourseError, match="focus=3"):
        draw(fx.symbolic_trace(lambda x: x), focus=3)


def test_exported_program_inputs_keep_their_colours_and_legend_in_chinese(monkeypatch):
    """In zh the labels say 模型参数 / 用户输入, and the colours and legend still follow the kind
    (a 中文 label once made every input 'other input')."""
    class Small(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x)

    ep = torch.export.export(Small(), (torch.randn(2, 3),))
    fills = {}
    for lang in ("en", "zh"):
        monkeypatch.setenv("FXCOURSE_LANG", lang)
        source = draw(ep).to_text()
        fills[lang] = {n: re.search(r'fillcolor="([^"]+)"', _attrs(source, n)).group(1)
                       for n in ("p_lin_weight", "x")}
        if lang == "zh":
            assert _labels(source)["p_lin_weight"].split("\n")[1] == "placeholder: 模型参数 lin.weight"
            assert ">参数<" in source and ">用户输入<" in source and ">其他输入<" not in source
            assert "输入：其他类型" not in source and ">parameter<" not in source
    assert fills["zh"] == fills["en"] and len(set(fills["en"].values())) == 2


def test_a_large_exported_program_groups_its_weights_with_their_module():
    model = nn.Sequential(*[_Block() for _ in range(40)])
    ep = torch.export.export(model, (torch.randn(2, 4),))
    assert len(ep.graph.nodes) >= 300
    d = draw(ep)
    labels = _labels(d.to_text())
    # each block's weight and bias inputs are inside its box, not 80 loose placeholders
    assert labels["module:7"] == "7\n_Block\n11 nodes"
    assert [k for k in labels if not k.startswith("module:")] == ["input", "output"]  # Sequential calls it input
    one = _labels(draw(ep, focus="7").to_text())
    assert one["p_7_lin_weight"].split("\n")[1] == "placeholder: parameter 7.lin.weight"


def test_a_recompiled_graph_is_drawn_with_its_reason():
    def f(x):
        return torch.sin(x) * 2

    cap = capture(f, torch.randn(3))
    cap.call_again(torch.randn(3, 4))  # another rank: the guard fails, Dynamo compiles again
    source = draw(cap).to_text()
    assert re.search(r'label="graph 1 \(ends with return\)\\nrecompiled on call 2: tensor \'x\' rank', source)


def test_the_legend_follows_the_readers_language(monkeypatch):
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    zh = draw(gm).to_text()
    assert "<b>图例</b>" in zh and "调用普通函数（torch.relu、operator.add）" in zh and "legend" not in zh
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    en = draw(gm).to_text()
    assert "<b>legend</b>" in en and "calls a free function" in en and "图例" not in en
    monkeypatch.setenv("FXCOURSE_LANG", "both")  # one legend, English, as the tables are
    assert "<b>legend</b>" in draw(gm).to_text()
