"""fxcourse.check: every outcome, bilingual, never raising."""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from fxcourse import check, hint, zoo
from fxcourse._lang import text
from fxcourse.checks import CheckResult, task_ids

from checking import expect_one_language, expect_passed, expect_wrong, solution


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def good_count(gm):
    return Counter(node.op for node in gm.graph.nodes)


@pytest.mark.parametrize("task_id", ["lab00.1", "lab00.2", "lab00.3"])
def test_stub_is_not_implemented(task_id):
    answer = _stub
    if task_id == "lab00.3":
        class StubGate(zoo.Gate):
            def forward(self, x):
                raise NotImplementedError
        answer = StubGate
    result = check(task_id, answer)
    assert result.status == "not_implemented"
    assert not result
    assert "尚未完成" in result.to_text() and "not yet implemented" in result.to_text()


def test_learner_exception_is_reported_concisely_not_raised():
    def broken(gm):
        return {}["missing"]
    result = check("lab00.1", broken)
    assert result.status == "raised"
    assert result.en.startswith("KeyError: 'missing' (in broken, line")
    assert "Traceback" not in result.to_text()


def test_unknown_task_lists_known_ids_without_raising():
    result = check("lab99.1", good_count)
    assert result.status == "unknown_task" and "lab00.1" in result.en


def test_html_is_escaped_bilingual_and_deterministic():
    a = check("lab00.1", lambda gm: "<b>not a dict</b>")
    b = check("lab00.1", lambda gm: "<b>not a dict</b>")
    html = a.to_html()
    assert html == b.to_html()
    assert 'class="fxcourse-check fxcourse-check-wrong"' in html
    assert 'lang="zh"' in html and 'lang="en"' in html
    assert "<b>not a dict</b>" not in html or "&lt;" in html


def test_text_plain_in_ipython_is_the_feedback():
    result = check("lab00.1", _stub)
    lines = []

    class Printer:
        def text(self, value):
            lines.append(value)

    result._repr_pretty_(Printer(), False)
    assert lines == [result.to_text()]
    assert isinstance(result, CheckResult)


def test_task_ids_cover_lab00():
    assert {"lab00.1", "lab00.2", "lab00.3"} <= set(task_ids())


# -- lab00 ------------------------------------------------------------------------------------------
# Each wrong answer is one a learner really writes; the checker must reject it and name the mistake
# in both languages. The references come from solutions/lab00_warmup.ipynb.


def test_lab00_1_reference_and_other_right_forms_pass():
    expect_passed("lab00.1", solution("lab00", "count_by_opcode"))
    expect_passed("lab00.1", good_count)  # a Counter is a dict

    def all_six_listed(gm):
        counts = dict.fromkeys(["placeholder", "get_attr", "call_function", "call_method", "call_module", "output"], 0)
        for node in gm.graph.nodes:
            counts[node.op] += 1
        return counts

    expect_passed("lab00.1", all_six_listed)


def test_lab00_1_counting_targets_is_named():
    result = expect_wrong("lab00.1", lambda gm: Counter(str(n.target) for n in gm.graph.nodes))
    assert "node targets or names" in result.en and "target 或名字" in result.zh
    assert text(result.tried).startswith("symbolic_trace(")
    assert " at 0x" not in result.to_text()  # addresses are cleaned from shown values


def test_lab00_1_counting_node_names_is_named():
    result = expect_wrong("lab00.1", lambda gm: dict(Counter(n.name for n in gm.graph.nodes)))
    assert "node targets or names" in result.en and "opcode" in result.zh


def test_lab00_1_leaving_out_placeholder_and_output_is_named():
    def missing_ends(gm):
        return dict(Counter(n.op for n in gm.graph.nodes if n.op not in ("placeholder", "output")))

    result = expect_wrong("lab00.1", missing_ends)
    assert "are nodes too" in result.en and "也是节点" in result.zh


def test_lab00_1_recording_each_opcode_once_is_named():
    result = expect_wrong("lab00.1", lambda gm: {n.op: 1 for n in gm.graph.nodes})
    assert "every count is 1" in result.en and "每个计数都是 1" in result.zh


def test_lab00_1_counting_modules_is_named():
    result = expect_wrong("lab00.1", lambda gm: dict(Counter(type(m).__name__ for m in gm.modules())))
    assert "submodules" in result.en and "子模块" in result.zh


def test_lab00_1_get_attr_and_call_method_are_probed():
    """Graphs of the hidden probes hold all six opcodes, so an answer that knows only some fails."""
    known = ("placeholder", "call_module", "call_function", "output")

    def only_four(gm):
        return dict(Counter(n.op for n in gm.graph.nodes if n.op in known))

    result = expect_wrong("lab00.1", only_four)
    assert text(result.tried) != "symbolic_trace(zoo.mlp)"  # the MLP alone has only these four
    assert "a count is off" in result.en and "有计数不对" in result.zh


def test_lab00_1_not_a_dict():
    result = expect_wrong("lab00.1", lambda gm: [n.op for n in gm.graph.nodes])
    assert "return a dict" in result.en and "dict" in result.zh


def test_lab00_2_reference_passes():
    expect_passed("lab00.2", solution("lab00", "capture_gate"))


def test_lab00_2_compile_of_the_forward_passes():
    expect_passed("lab00.2", lambda m: torch.compile(m.forward))


def test_lab00_2_compile_of_the_module_with_any_backend_passes():
    expect_passed("lab00.2", lambda m: torch.compile(m, backend="aot_eager"))
    expect_passed("lab00.2", lambda m: torch.compile(m, backend="eager"))
    expect_passed("lab00.2", lambda m: torch.jit.script(m).forward)


def test_lab00_2_trace_is_named():
    result = expect_wrong("lab00.2", lambda m: torch.jit.trace(m, torch.randn(2, m.linear.in_features)))
    assert "only the branch" in result.en and "只记录" in result.zh


def test_lab00_2_the_eager_model_or_its_forward_is_not_a_capture():
    result = expect_wrong("lab00.2", lambda m: m.forward)
    assert "eager model" in result.en and "eager 模型本身" in result.zh
    assert "eager model" in expect_wrong("lab00.2", lambda m: m).en


def test_lab00_2_wrapping_the_model_in_a_function_is_not_a_capture():
    result = expect_wrong("lab00.2", lambda m: (lambda x: m(x)))
    assert "capture API" in result.en and "捕获 API" in result.zh


def test_lab00_2_fullgraph_is_named():
    result = expect_wrong("lab00.2", lambda m: torch.compile(m, fullgraph=True, backend="eager"))
    assert "fullgraph=True" in result.en and "图中断" in result.zh


def test_lab00_2_export_is_named():
    result = expect_wrong("lab00.2", lambda m: torch.export.export(m, (torch.randn(2, m.linear.in_features),)))
    assert "torch.export" in result.en and "torch.export" in result.zh


def test_lab00_2_symbolic_trace_is_named():
    result = expect_wrong("lab00.2", torch.fx.symbolic_trace)
    assert "symbolic_trace" in result.en and "symbolic_trace" in result.zh
    assert result.got.startswith("TraceError")


def test_lab00_2_capturing_a_new_model_instead_of_the_given_one_is_wrong():
    result = expect_wrong("lab00.2", lambda m: torch.jit.script(zoo.Gate(m.linear.in_features)))
    assert "the model you were given" in result.en and "传给你的那个模型" in result.zh


def test_lab00_3_reference_passes():
    expect_passed("lab00.3", solution("lab00", "TraceableGate"))


def test_lab00_3_arithmetic_select_fails_where_y_holds_inf():
    # right on finite inputs, but 0 * inf is NaN where Gate returns inf (the lab text says edges are probed)
    class MaskGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            keep = (y.sum() > 0).to(y.dtype)
            return keep * torch.relu(y) + (1 - keep) * -y

    result = expect_wrong("lab00.3", MaskGate)
    assert "0 · inf" in result.en and "0 · inf 变成 NaN" in result.zh


def test_lab00_3_gating_on_the_input_is_named():
    class InputGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(x.sum() > 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", InputGate)
    assert "sum of x" in result.en and "x 之和" in result.zh


def test_lab00_3_gating_per_row_is_named():
    class RowGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y.sum(-1, keepdim=True) > 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", RowGate)
    assert "row by row" in result.en and "按行" in result.zh


def test_lab00_3_greater_or_equal_is_caught_at_zero():
    class AtLeastGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y.sum() >= 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", AtLeastGate)
    assert "exactly 0" in result.en and "恰好为 0" in result.zh


def test_lab00_3_swapped_branches_are_named():
    class SwappedGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y.sum() > 0, -y, torch.relu(y))

    result = expect_wrong("lab00.3", SwappedGate)
    assert "swapped" in result.en and "对调" in result.zh


def test_lab00_3_one_branch_only_is_named():
    class HalfGate(zoo.Gate):
        def forward(self, x):
            return torch.relu(self.linear(x))  # forgets the `-y` branch

    result = expect_wrong("lab00.3", HalfGate)
    assert "same branch whatever the input" in result.en and "同一个分支" in result.zh
    assert "sum of y <= 0" in text(result.tried)


def test_lab00_3_a_python_if_still_fails_symbolic_trace():
    result = expect_wrong("lab00.3", zoo.Gate)
    assert "Python `if`" in result.en and "Python `if`" in result.zh
    assert result.got.startswith("TraceError")


def test_lab00_3_new_parameters_are_named():
    class WiderGate(zoo.Gate):
        def __init__(self):
            super().__init__()
            self.extra = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = self.linear(x)
            return torch.where(y.sum() > 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", WiderGate)
    assert "self.linear" in result.en and "self.linear" in result.zh


def test_lab00_hints_climb_from_a_nudge_to_the_lecture():
    for task_id in ("lab00.1", "lab00.2", "lab00.3"):
        steps = [hint(task_id, level) for level in range(1, hint(task_id, 1).count + 1)]
        assert 2 <= len(steps) <= 3
        assert "course/" in steps[-1].en and "course/" in steps[-1].zh
        assert all("torch.where(" not in s.en and "torch.jit.script(" not in s.en for s in steps)


def test_lab00_1_editing_the_graph_while_counting_is_wrong():
    def erase_output(gm):
        counts = Counter(n.op for n in gm.graph.nodes)
        gm.graph.erase_node([n for n in gm.graph.nodes if n.op == "output"][0])
        return dict(counts)

    result = expect_wrong("lab00.1", erase_output)
    assert "changed the graph it was given" in result.en and "修改了传给它的计算图" in result.zh


def test_lab00_1_float_counts_are_named():
    result = expect_wrong("lab00.1", lambda gm: {k: float(v) for k, v in Counter(n.op for n in gm.graph.nodes).items()})
    assert "not a Python int" in result.en and "不是 Python int" in result.zh


def test_lab00_1_counting_users_is_not_called_counting_modules():
    result = expect_wrong("lab00.1", lambda gm: {n.op: len(n.users) for n in gm.graph.nodes})
    assert "submodules" not in result.en and "a count is off" in result.en and "有计数不对" in result.zh


def test_lab00_3_deciding_per_element_is_named():
    class ElementGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y > 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", ElementGate)
    assert "entry by entry" in result.en and "逐个元素" in result.zh


def test_lab00_3_a_first_row_decision_is_not_called_one_branch():
    class FirstRowGate(zoo.Gate):
        def forward(self, x):
            y = self.linear(x)
            return torch.where(y[0].sum() > 0, torch.relu(y), -y)

    result = expect_wrong("lab00.3", FirstRowGate)
    assert "same branch whatever the input" not in result.en and "同一个分支" not in result.zh
    assert "another result than Gate" in result.en and "结果不同" in result.zh


# -- one language at a time ----------------------------------------------------------------------
def _erase_output(gm):
    counts = Counter(n.op for n in gm.graph.nodes)
    gm.graph.erase_node([n for n in gm.graph.nodes if n.op == "output"][0])
    return dict(counts)


class _HalfGate(zoo.Gate):
    def forward(self, x):
        return torch.relu(self.linear(x))


_ONE_WRONG_ANSWER = {
    "lab00.1": _erase_output,
    "lab00.2": lambda m: torch.jit.trace(m, torch.randn(2, m.linear.in_features)),
    "lab00.3": _HalfGate,
}


def test_every_lab00_task_has_a_wrong_answer_read_in_one_language():
    assert sorted(_ONE_WRONG_ANSWER) == [t for t in task_ids() if t.startswith("lab00.")]


@pytest.mark.parametrize("task_id", sorted(_ONE_WRONG_ANSWER))
def test_lab00_feedback_reads_in_one_language(task_id, monkeypatch):
    expect_one_language(task_id, _ONE_WRONG_ANSWER[task_id], monkeypatch)
