"""One switch, FXCOURSE_LANG (or fxcourse.language()), picks English, 中文 or both for every tool."""
from __future__ import annotations

import re

import pytest

from fxcourse import _lang, _toggle
from fxcourse.checks import _TASKS, Wrong, check, hint, task
from fxcourse.errors import FxCourseError

CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(autouse=True)
def _fresh_language(monkeypatch):
    monkeypatch.delenv("FXCOURSE_LANG", raising=False)
    _lang.set_language(None)
    yield
    _lang.set_language(None)


@pytest.fixture
def wrong_task():
    """A task whose checker always finds the same mistake, with word and value details."""

    @task("test.lang", "Count the nodes", "数节点", hints=[("Look at gm.graph.nodes.", "看看 gm.graph.nodes。"),
                                                          ("Lecture 03 §4 counts them.", "第 03 讲 §4 数过它们。")])
    def _checker(answer):
        raise Wrong("the count is off by one.", "计数差了一个。", tried=("a graph with two call nodes", "有两个调用节点的图"),
                    expected="3", got=("the placeholder left out", "漏掉了 placeholder"))

    yield "test.lang"
    _TASKS.pop("test.lang", None)


def test_the_switch_reads_the_environment_and_the_notebook_choice_wins(monkeypatch):
    assert _lang.current() == "both"
    monkeypatch.setenv("FXCOURSE_LANG", "zh_CN")
    assert _lang.current() == "zh"
    monkeypatch.setenv("FXCOURSE_LANG", "nonsense")
    assert _lang.current() == "both"  # nothing hidden; fxcourse doctor names the bad value
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    _toggle.language("en")
    assert _lang.current() == "en" and _lang.pick("a", "甲") == "a"
    _lang.set_language(None)
    assert _lang.current() == "zh"


@pytest.mark.parametrize("lang", ["en", "zh", "both"])
def test_a_wrong_answer_reads_in_one_language(monkeypatch, wrong_task, lang):
    monkeypatch.setenv("FXCOURSE_LANG", lang)
    result = check(wrong_task, lambda gm: 0)
    assert result.status == "wrong"
    text, html = result.to_text(), result.to_html()
    if lang == "en":
        assert "not right yet: the count is off by one." in text
        assert "input tried: a graph with two call nodes" in text and "got: the placeholder left out" in text
        assert not CJK.search(text) and not CJK.search(html)
    elif lang == "zh":
        assert "还不正确：计数差了一个。" in text and "尝试的输入：有两个调用节点的图" in text
        assert "实际得到：漏掉了 placeholder" in text and "期望：3" in text
        for word in ("not right", "input tried", "expected", "got", "the count", "Count the nodes"):
            assert word not in text and word not in html, word
    else:
        assert text.splitlines()[:2] == ["[test.lang] not right yet: the count is off by one.",
                                         "[test.lang] 还不正确：计数差了一个。"]
        assert "  input tried / 尝试的输入: a graph with two call nodes / 有两个调用节点的图" in text
        assert "  expected / 期望: 3" in text
        assert 'lang="en"' in html and 'lang="zh"' in html


def test_a_stub_and_an_exception_follow_the_switch(monkeypatch):
    def stub(gm):
        raise NotImplementedError

    def broken(gm):
        return {}["missing"]

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert check("lab00.1", stub).to_text().startswith("[lab00.1] 尚未完成：")
    raised = check("lab00.1", broken).to_text()
    assert "你的代码抛出了异常" in raised and "your code raised" not in raised
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert not CJK.search(check("lab00.1", stub).to_text())
    assert not CJK.search(check("no.such.task", stub).to_text())


def test_hints_follow_the_switch(monkeypatch, wrong_task):
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert hint(wrong_task, level=2).to_text() == "[test.lang] 提示 2/2\n  第 03 讲 §4 数过它们。"
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    first = hint(wrong_task, level=1)
    assert first.to_text() == "[test.lang] hint 1/2\n  Look at gm.graph.nodes."
    assert not CJK.search(first.to_html())


def test_errors_follow_the_switch(monkeypatch):
    def make():
        return str(FxCourseError(got="int 3", accepted="a module", fix="pass the model", where="zoo",
                                 zh="zoo：收到 int 3；需要一个模块。请传入模型。"))

    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert make() == "zoo: got int 3; expected a module. Fix: pass the model."
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert make() == "zoo：收到 int 3；需要一个模块。请传入模型。"
    monkeypatch.setenv("FXCOURSE_LANG", "both")
    assert make() == "zoo: got int 3; expected a module. Fix: pass the model. / zoo：收到 int 3；需要一个模块。请传入模型。"


def test_the_command_line_speaks_one_language(monkeypatch, capsys):
    from fxcourse.tooling.cli import main

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    with pytest.raises(SystemExit) as stop:
        main(["labs", "resett"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "错误：参数 action 的值 'resett' 无效" in err and "查看帮助" in err
    assert "error:" not in err and "for help" not in err
    with pytest.raises(SystemExit):
        main(["i18n", "--help"])
    out = capsys.readouterr().out
    assert "用法：" in out and "单语言版本" in out
    assert "bilingual parity" not in out and "show this help" not in out and "选项：" in out
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "check the environment" in out and not CJK.search(out)


def test_the_toggle_hides_the_other_language_in_jupyterlab():
    zh = _toggle.language("zh")
    assert _lang.current() == "zh"
    rules = dict(re.findall(r"cell-tag-lang-(en|zh)\S* \{ display: (\w+)", zh._repr_html_()))
    assert rules == {"en": "none", "zh": "revert"}
    rules = dict(re.findall(r"cell-tag-lang-(en|zh)\S* \{ display: (\w+)", _toggle.language("both")._repr_html_()))
    assert rules == {"en": "revert", "zh": "revert"}
    with pytest.raises(FxCourseError) as error:
        _toggle.language("klingon")
    assert "'klingon'" in str(error.value) and _lang.current() == "both"  # a bad value changes nothing


def test_values_are_described_in_the_readers_language(monkeypatch):
    """A probed answer's expected value and difference: English in en and both, 中文 in zh."""
    import torch

    from fxcourse.checks._probe import Probe, run_probes

    def attempt():
        run_probes(lambda x: x * 3, lambda x: x + 1, [Probe(("a row of ones", "一行 1"), (torch.ones(3),))])

    with pytest.raises(Wrong) as caught:
        attempt()
    wrong = caught.value
    assert wrong.expected == "tensor of shape (3,), torch.float32" and wrong.got.startswith("result: at index (0,)")
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert _lang.text(wrong.expected).startswith("形状为") and _lang.text(wrong.got).startswith("结果：")
    monkeypatch.setenv("FXCOURSE_LANG", "both")
    assert _lang.text(wrong.got) == wrong.got  # no repetition in both languages


def test_where_the_learners_code_raised_reads_in_chinese(monkeypatch):
    """"(in f, line N)" is worded for a 中文 reader; the exception and its message stay Python's."""
    def broken(gm):
        def inner():
            return {}["missing"]
        return inner()

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    result = check("lab00.1", broken)
    text = result.to_text()
    line = broken.__code__.co_firstlineno + 2
    assert f"KeyError: 'missing'（位于 inner，第 {line} 行）。" in text, text
    assert "(in " not in text and ", line " not in text and "line" not in result.zh
    assert f"KeyError: 'missing' (in inner, line {line})." in result.en


def test_an_unprintable_exception_is_described_in_chinese(monkeypatch):
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    def broken(gm):
        raise Unprintable

    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    result = check("lab00.1", broken)
    assert "Unprintable（其报错信息无法显示）" in result.zh and "could not be shown" not in result.zh
    assert "Unprintable (its message could not be shown)" in result.en


# -- hints cite lecture sections by their 中文 headings ---------------------------------------

_CITED = [
    # 第 09 讲第 4 节“划分器：前向图保存了什么” / （…） / 「…」
    re.compile(r"第 (\d\d) 讲第 (\d+) 节[“（「]([^”）」]+)[”）」]"),
    # 第 00 讲第「3 · torch.fx.symbolic_trace」节
    re.compile(r"第 (\d\d) 讲第[「“](\d+) · ([^」”]+)[」”]节"),
    # course/12_saving_compiled.ipynb 第“4 · torch.export.save 与 load”节
    re.compile(r"course/(\d\d)_\w+\.ipynb 第[「“](\d+) · ([^」”]+)[」”]节"),
]


def _zh_sections(lecture):
    """{section number: 中文 heading text} of the lecture's level-2 numbered sections."""
    import nbformat

    from pathlib import Path

    (path,) = sorted((Path(__file__).resolve().parents[1] / "course").glob(f"{lecture}_*.ipynb"))
    found = {}
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown" and "lang-zh" in cell.metadata.get("tags", []):
            for m in re.finditer(r"^##\s+(\d+) · (.+?)\s*$", cell.source, re.M):
                found[m.group(1)] = m.group(2).replace("`", "")
    return found


def _cited_sections():
    from fxcourse.checks import task_ids

    task_ids()  # load every lab's tasks
    for task_id, spec in sorted(_TASKS.items()):
        for level, (_, zh) in enumerate(spec.hints, 1):
            for pattern in _CITED:
                for m in pattern.finditer(zh):
                    yield task_id, level, m.group(1), m.group(2), m.group(3)


def test_hints_cite_lecture_sections_and_some_cite_a_title():
    assert len({(t, lvl) for t, lvl, *_ in _cited_sections()}) >= 6


@pytest.mark.parametrize("lab", [f"lab{n:02d}" for n in range(13)])
def test_every_chinese_hint_cites_a_section_title_that_is_a_chinese_heading_of_the_lecture(lab):
    """A 中文 hint that names a section names it by the lecture's own 中文 heading (no English
    title in a 中文 hint), under the right number."""
    problems = []
    for task_id, level, lecture, number, title in _cited_sections():
        if not task_id.startswith(lab + "."):
            continue
        title = title.replace("`", "").strip()
        headings = _zh_sections(lecture)
        if headings.get(number) != title and not (title in headings.get(number, "") and len(title) > 6):
            problems.append(f"{task_id} hint {level}: 第 {lecture} 讲第 {number} 节 “{title}”; the lecture's 中文 "
                            f"heading {number} is “{headings.get(number)}”")
    assert problems == [], "\n".join(problems)


def test_no_chinese_hint_cites_a_section_by_an_english_title():
    english = re.compile(r"第 \d\d 讲第 \d+ 节\s*[（(“「'\"]\s*`?[A-Za-z][A-Za-z ,:.`'-]+[）)”」'\"]")
    bad = [f"{task_id} hint {level}: {zh}" for task_id, spec in sorted(_TASKS.items())
           for level, (_, zh) in enumerate(spec.hints, 1) if english.search(zh)]
    assert bad == [], "\n".join(bad)


# -- values and differences described in the reader's language --------------------------------

def test_a_value_a_checker_describes_reads_in_chinese(monkeypatch):
    """A checker that passes ``got=describe(value)`` or ``got=differs(...)`` as they are (no
    中文 twin of its own) still shows them in 中文 to a 中文-only reader; English and both stay."""
    from fxcourse.checks._probe import describe, differs

    @task("test.values", "Values", "数值")
    def _checker(answer):
        raise Wrong("wrong value.", "数值不对。", expected=describe({"a": 1}), got=differs(answer, [1, 2, 3]))

    try:
        monkeypatch.setenv("FXCOURSE_LANG", "zh")
        shown = check("test.values", [1, 2]).to_text()
        assert "期望：键为 ['a'] 的 dict" in shown and "实际得到：结果：2 项，期望 3 项" in shown, shown
        assert "items" not in shown and "expected" not in shown and "dict with keys" not in shown, shown
        monkeypatch.setenv("FXCOURSE_LANG", "both")
        shown = check("test.values", [1, 2]).to_text()
        assert "期望: dict with keys ['a']" in shown and "实际得到: result: 2 items, expected 3" in shown, shown
        assert "项" not in shown
    finally:
        _TASKS.pop("test.values", None)


def test_a_real_checker_describes_a_wrong_type_in_chinese(monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    shown = check("lab00.3", [1, 2]).to_text()
    assert "含 2 项的 list" in shown and "list of 2 items" not in shown, shown
    shown = check("lab00.3", {"a": 1}).to_text()
    assert "键为 ['a'] 的 dict" in shown and "dict with keys" not in shown, shown
