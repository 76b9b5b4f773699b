"""The viewers in one language at a time: with FXCOURSE_LANG=zh their headers, notes and
section titles are 中文 and our English words are gone; with FXCOURSE_LANG=en no CJK
character appears. (The default 'both' output is pinned by the goldens and notebooks.)

Each view is rendered anew under each setting: a viewer reads the language when it renders.
Messages that torch itself writes (a TraceError, Dynamo's explanation) stay as torch wrote them.
"""
from __future__ import annotations

import copy
import html
import re

import pytest
import torch

from fxcourse import FxCourseError, bytecode, capture, compare_capture, graph_diff, graph_table, zoo
from fxcourse.viewers.inductor import AOTGraphs, Extern, InductorCode, Kernel
from fxcourse.viewers.lowering import Lowering, Stage
from fxcourse.pictures.plot import bar_plot, cjk_font

_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _views(obj, **kwargs):
    """The text view and the HTML view with tags and entities removed."""
    text = obj.to_text(**kwargs)
    page = html.unescape(re.sub(r"<style>.*?</style>|<[^>]+>", " ", obj.to_html()))
    return text, page


def _headers(page_html: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", page_html)]


def _in_english(monkeypatch, make):
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    for shown in _views(make()):
        assert not _CJK.search(shown), shown


@pytest.fixture
def zh(monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    return monkeypatch


def _fold_gm():
    return torch.fx.symbolic_trace(lambda x: torch.relu(x) + 1)


def test_graph_table_in_one_language(zh):
    model, _ = zoo.example("conv_bn_relu")
    table = graph_table(torch.fx.symbolic_trace(model), columns=["+shape", "+users"], max_rows=3)
    text, page = _views(table)
    assert text.splitlines()[1].split() == ["操作码", "名称", "目标", "位置参数", "关键字参数", "形状", "使用者数"]
    assert "fx.GraphModule，5 个节点" in text and "另有 2 行" in text
    assert _headers(table.to_html())[0] == "操作码" and "省略 2 行" in page
    for word in ("opcode", "kwargs", "users", "nodes", "more rows"):
        assert word not in text and word not in page, word
    assert table.columns[0] == "opcode"  # the names you pass stay English
    _in_english(zh, lambda: graph_table(torch.fx.symbolic_trace(model), max_rows=3))


def test_graph_table_of_torchscript_and_export_in_one_language(zh):
    model, args = zoo.example("conv_bn_relu")
    ts = graph_table(torch.jit.script(model)).to_text()
    assert ts.splitlines()[1].split() == ["节点种类", "输出", "输入", "属性"]
    ep = graph_table(torch.export.export(model, args)).to_text(width=200)
    assert "输入类别" in ep and "模型参数 conv.weight" in ep and "用户输入" in ep
    assert "input_kind" not in ep and "parameter" not in ep
    _in_english(zh, lambda: graph_table(torch.export.export(model, args)))


def test_cjk_cells_stay_aligned(zh):
    model, args = zoo.example("conv_bn_relu")
    lines = graph_table(torch.export.export(model, args)).to_text(width=200).splitlines()[1:]

    def cells(line: str) -> str:  # one character per terminal column: a CJK character takes two
        return "".join(ch + "\0" if _CJK.match(ch) else ch for ch in line)

    starts = [m.start() for m in re.finditer(r"-+", lines[1])]
    assert len(starts) == 6
    header = cells(lines[0])
    assert [header[s] for s in starts] == ["操", "名", "输", "目", "位", "关"]
    for line in lines[2:]:  # every row's cells start under their header, two spaces after the last
        row = cells(line)
        assert all(row[s - 2:s] == "  " for s in starts[1:]), line
    row = cells(lines[2])
    assert [row[s:].split()[0].replace("\0", "") for s in starts[:4]] == [
        "placeholder", "p_conv_weight", "模型参数", "p_conv_weight"]


def test_graph_diff_in_one_language(zh):
    before = _fold_gm()
    after = copy.deepcopy(before)
    next(n for n in after.graph.nodes if n.name == "relu").target = torch.sigmoid
    diff = graph_diff(before, after)
    text, page = _views(diff)
    assert text.startswith("graph_diff: 改了目标 1 个（之前 4 个节点，之后 4 个）")
    assert _headers(diff.to_html())[1:3] == ["名称", "操作码"]
    for word in ("retargeted", "nodes before", "opcode"):
        assert word not in text and word not in page, word
    same = graph_diff(before, before)
    assert same.summary.startswith("没有改动：两个计算图等价") and "same graph object" not in same.summary
    assert diff.changed[0].kind == "retargeted"  # data stays English
    _in_english(zh, lambda: graph_diff(before, after))


def test_graph_diff_marks_added_and_removed_rows_in_the_cell_text():
    before = _fold_gm()
    after = copy.deepcopy(before)
    relu = next(n for n in after.graph.nodes if n.name == "relu")
    with after.graph.inserting_after(relu):
        extra = after.graph.call_function(torch.sigmoid, (relu,))
    relu.replace_all_uses_with(extra, delete_user_cb=lambda user: user is not extra)
    after.recompile()
    page = graph_diff(before, after).to_html()
    assert re.search(r'<tr class="diff-add"><td>\+</td><td>sigmoid</td>', page), page


def test_compare_capture_in_one_language_and_marked_without_colour(zh):
    model, args = zoo.example("gate")
    table = compare_capture(model, *args)
    text, page = _views(table)
    raw = table.to_html()
    assert _headers(raw) == ["捕获方式", "成功", "计算图", "图中断", "算子数", "与 eager 一致"]
    assert "原因：" in text and "提示：分支取决于张量的值：请用 torch.cond 表达" in text
    assert "trace 把一个分支固化进了计算图：在第二个输入上，输出与 eager 不同（输出：索引" in text
    assert "2 个计算图，1 处图中断：数据相关的分支" in text
    assert "<td>✗ 否</td>" in raw and "<td>✓ 是</td>" in raw
    for word in ("why:", "note:", "matches eager", "works", "second input", "the branch depends",
                 "outputs differ", "graph break"):
        assert word not in text and word not in page, word
    assert "TraceError: symbolically traced variables" in text  # torch's own message stays
    assert [row.worked for row in table.rows] == [True, True, False, False, True, False]
    _in_english(zh, lambda: compare_capture(model, *args))


def test_compare_capture_html_marks_status_in_every_language(monkeypatch):
    model, args = zoo.example("gate")
    monkeypatch.delenv("FXCOURSE_LANG", raising=False)
    table = compare_capture(model, *args)
    raw = table.to_html()
    # a failed row says so in its text, not only by its colour
    assert re.search(r'<tr class="failed"><td>torch.fx.symbolic_trace</td><td>✗ no</td>', raw), raw
    assert re.search(r'<tr class="ok"><td>torch.jit.trace</td><td>✓ yes</td>(<td>[^<]*</td>){3}<td>✗ no</td>', raw)
    assert "✓" not in table.to_text() and "✗" not in table.to_text()  # the text view is unchanged


def test_capture_in_one_language(zh):
    model, args = zoo.example("gate")
    cap = capture(model, *args)
    text, page = _views(cap)
    assert text.startswith('capture Gate（后端 "eager"）：2 个计算图，1 处图中断，3 个算子')
    assert "图中断：" in text and "数据相关的分支：Python 的 if 或 while 取决于张量的值" in text
    assert "计算图 0\n" in text and "算子数：call_function 节点" in text
    assert _headers(cap.to_html()) == ["计算图", "第几次调用", "算子数", "算子", "结束于"]
    assert "个守卫请求" in page and "本身不做检查：由 GLOBAL_STATE 守卫负责" in page
    for word in ("graph breaks:", "ends with", "op names", "guard requests", "covered by", "Data-dependent branching:"):
        assert word not in text and word not in page, word
    assert cap.graphs[0].ended_by == "graph break"  # data stays English
    _in_english(zh, lambda: capture(model, *args))


def test_capture_recompiles_in_one_language(zh):
    def scale(x, n):
        return x * n

    cap = capture(scale, torch.ones(2), 2)
    cap.call_again(torch.ones(2), 3)
    text, page = _views(cap)
    assert "重新编译：" in text and "第 2 次调用：scale：" in text and "重新编译：" in page
    assert "recompilations:" not in text and "call 2" not in page


def test_bytecode_in_one_language(zh):
    torch._dynamo.reset()
    model, args = zoo.example("gate")
    torch.compile(model, backend="eager")(*args)
    view = bytecode(model)
    text, page = _views(view)
    assert "的字节码：1 个缓存条目；2 个恢复函数" in text
    assert "== Gate.forward：源码 ==" in text and "== Gate.forward，缓存条目 0：变换后的字节码 ==" in text
    assert "恢复函数 " in page and "个守卫" in page and "depyf 反编译结果" in page
    for word in ("cache entry", "resume function", "transformed bytecode", "decompiled by depyf", ": guards"):
        assert word not in text and word not in page, word
    assert view.sections[1].left_title == "decompiled by depyf"  # data stays English
    _in_english(zh, lambda: bytecode(model))
    torch._dynamo.reset()


def test_uncompiled_bytecode_in_one_language(zh):
    def f(x):
        return x + 1

    torch._dynamo.reset()
    assert "还没有编译" in bytecode(f).to_text() and "not compiled" not in bytecode(f).to_text()


def _inductor_view() -> InductorCode:
    kernel = Kernel("cpp_fused_add_0", ("add",), ("aten.add.Tensor",), "void kernel() {}")
    return InductorCode([kernel], [Extern("extern_kernels.mm", "library", ("mm",), ("aten.mm",)),
                                   Extern("aten.sort", "fallback", ("sort",), ("aten.sort.stable",))],
                        "def call(args): ...", [])


def test_inductor_view_in_one_language(zh):
    view = _inductor_view()
    text, page = _views(view)
    assert text.startswith("Inductor：生成了 1 个内核，2 个外部调用（其中 1 个回退）")
    assert _headers(view.to_html()) == ["名称", "类别", "FX 节点", "ATen 算子"]
    assert "库调用" in text and "包装代码（wrapper）" in page
    for word in ("generated kernel", "extern call", "FX nodes", "ATen ops", "library", "fallback"):
        assert word not in text and word not in page, word
    _in_english(zh, _inductor_view)


def test_aot_graphs_view_in_one_language(zh):
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) * 2)
    view = AOTGraphs(None, gm, gm, ["relu"], "default")
    text, page = _views(view)
    assert "划分器（partitioner）：default；前向 2 个算子" in text and "\n反向：\n" in text
    assert "saved for backward" not in page and "forward:" not in text
    _in_english(zh, lambda: AOTGraphs(None, gm, gm, ["relu"], "default"))


def _lowering() -> Lowering:
    return Lowering([Stage("aten", {"aten.relu.default": 1}, ("tensor<2xf32>",), ("tensor<2xf32>",), "")])


def test_lowering_view_in_one_language(zh):
    text, page = _views(_lowering())
    assert text.splitlines()[0].split() == ["阶段", "方言", "操作个数", "操作直方图", "输入", "输出"]
    assert "dialects" not in page and "histogram" not in page
    _in_english(zh, _lowering)


def test_bar_plot_labels_follow_the_language(zh):
    plot = bar_plot({"eager": 12.0, ("compiled", "编译后"): 3.0}, title=("time", "时间"), unit="µs")
    text = plot.to_text()
    if cjk_font() is None:  # no glyphs: English labels and a 中文 note on how to get them
        assert text.startswith("time\n") and "未找到中文字体" in text and "no CJK font" not in text
    else:
        assert text.startswith("时间\n") and "编译后" in text and "compiled" not in text
    zh.setenv("FXCOURSE_LANG", "en")
    text = bar_plot({("compiled", "编译后"): 3.0}, title=("time", "时间")).to_text()
    assert not _CJK.search(text) and text.startswith("time")


@pytest.mark.parametrize("call", [
    lambda: graph_diff(_fold_gm(), _fold_gm(), context=-1),
    lambda: graph_diff(torch.jit.script(torch.nn.ReLU()), _fold_gm()),
    lambda: graph_table("graph(%x): ..."),
    lambda: compare_capture(None),
    lambda: compare_capture(torch.relu, torch.ones(1), second_args=3),
    lambda: compare_capture(lambda x: x.foo(), torch.ones(1)),
    lambda: compare_capture(torch.relu, torch.ones(1))["jit"],
    lambda: capture(3),
    lambda: capture(torch.relu, torch.ones(1), dynamic="yes"),
    lambda: capture(torch.relu, torch.ones(1), backend="no-such-backend"),
    lambda: capture(lambda x: x.foo(), torch.ones(1)),
    lambda: bytecode(3),
    lambda: zoo.example("no-such-model"),
], ids=["diff-context", "diff-torchscript", "table-text", "compare-none", "compare-second",
        "compare-eager", "compare-index", "capture-none", "capture-dynamic", "capture-backend",
        "capture-eager", "bytecode", "zoo"])
def test_errors_carry_a_chinese_message(call, zh):
    with pytest.raises(FxCourseError) as info:
        call()
    err = info.value
    assert _CJK.search(err.zh) and "输入不被接受" not in err.zh, err.zh  # a real message, not the fallback
    assert _CJK.search(str(err)) and "Fix:" not in str(err)
    zh.setenv("FXCOURSE_LANG", "en")
    assert not _CJK.search(err.en)


def test_capture_drawing_in_one_language(zh):
    from fxcourse import draw

    model, args = zoo.example("gate")
    drawing = draw(capture(model, *args))
    source = drawing.to_text()
    assert "计算图 0（结束于图中断）" in source and "图中断 1" in source and "Gate：捕获到 2 张图、1 处图中断" in source
    assert repr(drawing).startswith("<Drawing：capture Gate，")
    for word in ("ends with", "graph break 1", "capture of", "nodes,"):
        assert word not in source and word not in repr(drawing), word
    zh.setenv("FXCOURSE_LANG", "en")
    drawing = draw(capture(model, *args))
    assert not _CJK.search(drawing.to_text()) and not _CJK.search(repr(drawing))
