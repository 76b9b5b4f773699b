"""fxcourse.check: every outcome, bilingual, never raising."""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from fxcourse import check, zoo
from fxcourse.checks import CheckResult, task_ids


def _stub(*args):
    raise NotImplementedError("replace this line with your code")


def good_count(gm):
    return Counter(node.op for node in gm.graph.nodes)


class WhereGate(zoo.Gate):
    def forward(self, x):
        y = self.linear(x)
        return torch.where(y.sum() > 0, torch.relu(y), -y)


@pytest.mark.parametrize("task_id, answer", [
    ("lab00.1", good_count),
    ("lab00.2", torch.jit.script),
    ("lab00.3", WhereGate),
])
def test_reference_answers_pass(task_id, answer):
    result = check(task_id, answer)
    assert result.status == "passed", result.to_text()
    assert result and result.passed


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


def test_wrong_answer_names_the_mistake_and_shows_expected_vs_got():
    result = check("lab00.1", lambda gm: Counter(str(n.target) for n in gm.graph.nodes))
    assert result.status == "wrong"
    assert "node.target" in result.en and "node.target" in result.zh
    assert result.tried.startswith("symbolic_trace(")
    assert "'placeholder': 1" in result.expected
    assert " at 0x" not in result.to_text()  # addresses are cleaned from shown values


def test_off_by_one_count_is_wrong_with_generic_hint():
    def missing_output(gm):
        return Counter(n.op for n in gm.graph.nodes if n.op != "output")
    result = check("lab00.1", missing_output)
    assert result.status == "wrong" and "output" in result.en


def test_trace_is_caught_as_the_classic_mistake():
    result = check("lab00.2", lambda m: torch.jit.trace(m, torch.randn(2, 4)))
    assert result.status == "wrong" and "only the branch" in result.en


def test_returning_the_eager_model_is_wrong():
    assert check("lab00.2", lambda m: m).status == "wrong"


def test_a_python_if_still_fails_symbolic_trace():
    result = check("lab00.3", zoo.Gate)
    assert result.status == "wrong" and "torch.where" in result.en
    assert result.got.startswith("TraceError")


def test_wrong_branch_logic_is_caught_on_the_unseen_branch():
    class HalfGate(zoo.Gate):
        def forward(self, x):
            return torch.relu(self.linear(x))  # forgets the `-y` branch
    result = check("lab00.3", HalfGate)
    assert result.status == "wrong" and "sum <= 0" in result.tried


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
