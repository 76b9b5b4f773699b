"""The checker engine: check() never escapes and leaves the learner's process as it found it;
differs() compares whole results; run_probes names known mistakes; hint() climbs a ladder."""
from __future__ import annotations

import dataclasses
import random
import re
import time

import pytest
import torch

from fxcourse import check, hint
from fxcourse import checks
from fxcourse.checks import Wrong, _TASKS, task
from fxcourse.checks._probe import Mistake, Probe, differs, run_probes


def _reference(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * 2


def _probes() -> list[Probe]:
    gen = torch.Generator().manual_seed(5)
    return [Probe("x of shape (3,) with both signs", (torch.tensor([-1.0, 0.0, 2.0]),)),
            Probe("x of shape (2, 4)", (torch.randn(2, 4, generator=gen),))]


@pytest.fixture
def engine_task():
    """A task registered for these tests only: answer(x) must equal relu(x) * 2."""

    @task("engine.t", "relu doubled", "relu 加倍", hints=[("nudge", "提示一"), ("concept, lecture 00", "概念")])
    def _checker(answer):
        run_probes(answer, _reference, _probes(), what="double_relu", mistakes=[
            Mistake("forgot relu", lambda got, want, p: torch.equal(got, p.args[0] * 2),
                    "negative inputs must become 0 first.", "负数输入要先变成 0。"),
        ])

    yield "engine.t"
    _TASKS.pop("engine.t", None)
    checks._HINTS_GIVEN.pop("engine.t", None)


def test_right_answer_passes(engine_task):
    assert check(engine_task, lambda x: x.clamp(min=0) + x.clamp(min=0)).status == "passed"


def test_named_mistake_is_reported_with_input_expected_and_got(engine_task):
    result = check(engine_task, lambda x: x * 2)
    assert result.status == "wrong"
    assert result.en == "negative inputs must become 0 first." and result.zh == "负数输入要先变成 0。"
    assert result.tried == "x of shape (3,) with both signs"
    assert "index (0,)" in result.got and "expected 0" in result.got


def test_whole_result_is_compared_dtype_and_type(engine_task):
    wrong_dtype = check(engine_task, lambda x: (torch.relu(x) * 2).double())
    assert wrong_dtype.status == "wrong" and "dtype torch.float64" in wrong_dtype.got
    as_list = check(engine_task, lambda x: [torch.relu(x) * 2])
    assert as_list.status == "wrong" and "list" in as_list.got


def test_answer_writing_into_its_input_is_wrong(engine_task):
    def in_place(x):
        return x.relu_().mul_(2)

    result = check(engine_task, in_place)
    assert result.status == "wrong" and "in place" in result.en and "原地" in result.zh


def test_state_is_restored_whatever_the_answer_did(engine_task):
    random.seed(1)
    torch.manual_seed(1)
    before = (torch.get_rng_state().clone(), random.getstate())

    def vandal(x):
        torch.set_default_dtype(torch.float64)
        torch.set_grad_enabled(False)
        torch.use_deterministic_algorithms(True)
        torch.manual_seed(999)
        random.seed(999)
        return torch.relu(x.float()) * 2

    result = check(engine_task, vandal)
    assert torch.get_default_dtype() == torch.float32
    assert torch.is_grad_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    assert torch.equal(torch.get_rng_state(), before[0]) and random.getstate() == before[1]
    assert result.status in {"passed", "wrong"}


def test_checking_a_stub_does_not_move_the_random_numbers(engine_task):
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)

    def stub(x):
        raise NotImplementedError("replace this line with your code")

    assert check(engine_task, stub).status == "not_implemented"
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize("exc, says", [
    (SystemExit(3), "exit()"),
    (GeneratorExit(), "GeneratorExit"),
    (type("Odd", (BaseException,), {})("odd"), "Odd: odd"),
])
def test_base_exceptions_are_reported_not_raised(engine_task, exc, says):
    def answer(x):
        raise exc

    result = check(engine_task, answer)
    assert result.status == "raised" and says in result.en


def test_keyboard_interrupt_still_stops_the_cell(engine_task):
    def answer(x):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check(engine_task, answer)


def test_exception_whose_message_cannot_be_printed(engine_task):
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    def answer(x):
        raise Unprintable()

    result = check(engine_task, answer)
    assert result.status == "raised" and "could not be shown" in result.en
    assert result.to_text() and result.to_html()


def test_not_implemented_from_torch_is_not_a_stub(engine_task):
    def answer(x):
        return torch.nn.Module()(x)  # Module.forward is not implemented: raised inside torch

    result = check(engine_task, answer)
    assert result.status == "raised" and "NotImplementedError" in result.en


def test_answer_that_hangs_is_stopped_as_too_slow(engine_task, monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT_S", 0.5)

    def forever(x):
        while True:
            try:
                time.sleep(0.05)
            except Exception:  # an answer's own except Exception must not swallow the stop
                pass

    start = time.perf_counter()
    result = check(engine_task, forever)
    assert result.status == "too_slow" and "0.5 s" in result.en and "0.5 秒" in result.zh
    assert time.perf_counter() - start < 5


def test_printed_output_is_captured_and_capped(engine_task):
    def chatty(x):
        print("x" * 10_000)
        return torch.relu(x) * 2

    result = check(engine_task, chatty)
    assert result.status == "passed"
    assert len(result.printed) < 2200 and "more characters not shown" in result.printed
    assert "your code printed" in result.to_text() and "fxcourse-check-printed" in result.to_html()


@pytest.mark.parametrize("task_id", [["lab00.1"], None, 3, {"a": 1}, "lab99.9"])
def test_unknown_or_unhashable_task_ids(task_id):
    result = check(task_id, lambda x: x)
    assert result.status == "unknown_task" and "lab00.1" in result.en


def test_hint_ladder_climbs_and_stays_on_the_last_step(engine_task):
    first, second, third = hint(engine_task), hint(engine_task), hint(engine_task)
    assert (first.level, second.level, third.level) == (1, 2, 2)
    assert first.en == "nudge" and second.zh == "概念"
    assert "hint 1/2" in first.to_text() and "提示 1/2" in first.to_text()
    assert hint(engine_task, level=1).en == "nudge"


@pytest.mark.parametrize("level", [0, 3, "1", True, -1])
def test_hint_with_a_bad_level_says_what_is_accepted(engine_task, level):
    result = hint(engine_task, level=level)
    assert result.level == 0 and "1 to 2" in result.en


def test_hint_for_an_unknown_task():
    assert "not a task id" in hint("lab99.1").en


@dataclasses.dataclass
class _Out:
    logits: torch.Tensor
    label: str


@pytest.mark.parametrize("got, want, says", [
    (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0]), "NaN"),
    (torch.ones(2, 3), torch.ones(3, 2), "shape (2, 3)"),
    (torch.ones(2, dtype=torch.int64), torch.ones(2), "dtype torch.int64"),
    (torch.tensor([1, 2]), torch.tensor([1, 3]), "index (1,)"),
    ((1, 2), [1, 2], "a tuple, expected a list"),
    ({"a": torch.ones(1)}, {"a": torch.ones(1), "b": torch.ones(1)}, "keys"),
    ({"a": torch.ones(1)}, {"a": torch.zeros(1)}, "result['a']"),
    ([torch.ones(1)], [torch.ones(1), torch.ones(1)], "1 items, expected 2"),
    (1, 1.0, "an int (1), expected a float"),
    (True, 1, "True, expected 1"),
    (None, torch.ones(1), "None"),
    (_Out(torch.ones(1), "a"), _Out(torch.ones(1), "b"), "result.label"),
    (float("nan"), 1.0, "nan"),
])
def test_differs_names_where_and_how(got, want, says):
    diff = differs(got, want)
    assert diff is not None and says in diff, diff


@pytest.mark.parametrize("value", [
    torch.tensor([1.0, float("nan"), float("inf")]), [torch.ones(2), (1, "a")], {"k": 2.5}, 3, "s", None,
    _Out(torch.zeros(2), "x"), float("nan"),
])
def test_differs_accepts_an_equal_result(value):
    assert differs(value, value) is None


def test_wrong_carries_both_languages():
    w = Wrong("en text", "中文", tried="t", expected="e", got="g")
    assert (w.en, w.zh, w.tried, w.expected, w.got) == ("en text", "中文", "t", "e", "g")


def _cites_a_lecture(en: str, zh: str) -> bool:
    """Both languages name a lecture: "lecture 04" / "course/04_…" and "第 04 讲" / "course/04_…"."""
    return (re.search(r"[Ll]ecture (course/)?\d\d|course/\d\d_", en) is not None
            and re.search(r"第 \d\d 讲|course/\d\d_", zh) is not None)


@pytest.mark.parametrize("task_id", [t for t in checks.task_ids() if t.startswith("lab")])
def test_every_lab_task_has_a_bilingual_hint_ladder_that_names_a_lecture(task_id):
    """One rule for every task, present and future: 2-3 steps, each in both languages and
    different from the others, and one step (in both languages) names the lecture that teaches it."""
    count = hint(task_id, level=1).count
    steps = [hint(task_id, level=k) for k in range(1, count + 1)]
    assert 2 <= count <= 3
    assert all(s.en and s.zh and s.level == k for k, s in enumerate(steps, 1))
    assert len({s.en for s in steps}) == count and len({s.zh for s in steps}) == count
    assert any(_cites_a_lecture(s.en, s.zh) for s in steps), [s.en for s in steps]


def test_an_infinity_is_named_not_reported_as_a_zero_difference():
    import torch

    from fxcourse._values import differs

    assert differs(torch.tensor([1.0, float("inf")]), torch.tensor([1.0, 0.14])) == (
        "result: at index (1,) got inf, expected 0.14 (an infinity where a finite number was expected, or the reverse)")
    assert "（该是有限数的地方出现了无穷大，或反过来）" in differs(
        torch.tensor([float("-inf")]), torch.tensor([2.0]), lang="zh", where="结果", expected="期望")
    assert differs(torch.tensor([1.5, 2.0]), torch.tensor([1.0, 2.0])).endswith("(max abs difference 0.5)")


@pytest.mark.parametrize("message", ["the shape is wrong.", "the shape is wrong", "形状不对。"])
def test_raised_message_reads_as_one_sentence(engine_task, message):
    # the learner's place goes inside the sentence, and no full stop is doubled in either language
    def answer(x):
        raise ValueError(message)

    result = check(engine_task, answer)
    assert result.status == "raised"
    core = message.removesuffix(".").removesuffix("。")
    assert f"ValueError: {core} (in answer, line " in result.en, result.en
    assert f"ValueError: {core}（位于 answer，第 " in result.zh, result.zh
    for text in (result.en, result.zh):
        assert ".." not in text and "。。" not in text and "。（" not in text and ".)." not in text and "）。。" not in text


def test_course_error_message_is_not_given_a_second_full_stop(engine_task):
    from fxcourse.errors import FxCourseError

    def answer(x):
        raise FxCourseError(got="3", accepted="a str", fix="pass a name", zh="收到 3；需要 str。修复：传入一个名字。")

    result = check(engine_task, answer)
    assert result.status == "raised"
    assert "Fix: pass a name (in answer, line " in result.en, result.en
    assert "修复：传入一个名字（位于 answer，第 " in result.zh, result.zh
    assert ".." not in result.en and "。。" not in result.zh
