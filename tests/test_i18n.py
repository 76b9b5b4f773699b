"""Bilingual parity, the lecture skeleton, and single-language export."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from fxcourse import FxCourseError
from fxcourse.tooling import i18n
from fxcourse.tooling.cli import main

from commands import into_closed_pipe

REPO = Path(__file__).resolve().parents[1]


def en(text):
    return new_markdown_cell(text, metadata={"tags": ["lang-en"]})


def zh(text):
    return new_markdown_cell(text, metadata={"tags": ["lang-zh"]})


def _lecture(tmp_path, cells, name="00_demo.ipynb"):
    folder = tmp_path / "course"
    folder.mkdir(exist_ok=True)
    path = folder / name
    nbformat.write(new_notebook(cells=cells), path)
    return path


GOOD = [en("# Title"), zh("# 标题"), new_code_cell("1 + 1"), en("## Part\ntext"), zh("## 部分\n正文"),
        en("## Summary"), zh("## 小结"), en("## Exercises"), zh("## 练习")]


def test_good_lecture_has_no_problems(tmp_path):
    assert i18n.check_notebook(_lecture(tmp_path, GOOD)) == []


@pytest.mark.parametrize("cells, message", [
    ([en("# T"), new_code_cell("x"), zh("# 标题")], "English cell has no 中文 twin"),
    ([zh("# 标题"), en("# T")], "中文 cell without an English cell"),
    ([new_markdown_cell("# untagged")], "without exactly one of the tags"),
    ([en("# T\n## A"), zh("# 标题")], "headings differ: English [#, ##] vs 中文 [#]"),
    ([en("# T\n### A"), zh("# 标题\n## A")], "headings differ"),
    ([en("# T"), zh("# 标题"), en("## Exercises"), zh("## 练习")], "must be Summary and Exercises"),
    ([en("Intro"), zh("介绍"), en("## Summary"), zh("## 小结"), en("## Exercises"), zh("## 练习")],
     "level-1 title"),
])
def test_each_problem_is_reported_with_its_cell(tmp_path, cells, message):
    problems = i18n.check_notebook(_lecture(tmp_path, cells))
    assert any(message in str(p) for p in problems), problems
    assert all(str(p).startswith(tmp_path.as_posix()) for p in problems)


def test_skeleton_is_only_required_of_lectures(tmp_path):
    (tmp_path / "labs").mkdir()
    path = tmp_path / "labs" / "lab00.ipynb"
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验")]), path)
    assert i18n.check_notebook(path) == []


def test_headings_ignore_code_fences():
    assert i18n.headings("```python\n# comment\n```\n### Real") == [(3, "Real")]


def test_export_keeps_one_language_with_code_and_outputs(tmp_path):
    path = _lecture(tmp_path, GOOD)
    nb = nbformat.read(path, as_version=4)
    nb.cells[2].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]
    nb.cells[2].execution_count = 1
    nbformat.write(nb, path)
    (out,) = i18n.export([path], "zh", tmp_path / "zh")
    assert out.backup is None
    exported = nbformat.read(out.path, as_version=4)
    assert [c.source for c in exported.cells if c.cell_type == "markdown"] == ["# 标题", "## 部分\n正文", "## 小结", "## 练习"]
    assert exported.cells[0].source == 'import fxcourse; fxcourse.language("zh")'
    assert exported.cells[0].metadata.tags == [i18n.LANGUAGE_TAG] and exported.metadata.fxcourse_language == "zh"
    assert exported.cells[2].outputs[0]["data"]["text/plain"] == "2"  # not executed: outputs kept as they were
    assert i18n.check_notebook(out.path) == []
    with pytest.raises(FxCourseError, match="'fr'"):
        i18n.export([path], "fr", tmp_path / "fr")
    with pytest.raises(FxCourseError, match="overwrite"):
        i18n.export([path], "en", tmp_path)


def test_export_never_loses_an_edited_copy(tmp_path):
    path = _lecture(tmp_path, GOOD)
    out = tmp_path / "build" / "zh"
    (first,) = i18n.export([path], "zh", out)
    assert i18n.export([path], "zh", out)[0].backup is None  # the same content: nothing to keep
    edited = first.path.read_text(encoding="utf-8").replace("正文", "我的笔记")
    first.path.write_text(edited, encoding="utf-8")
    (second,) = i18n.export([path], "zh", out)
    assert second.backup is not None and second.backup.read_text(encoding="utf-8") == edited
    assert second.backup.parent == out / "backups" / "course"
    assert "我的笔记" not in second.path.read_text(encoding="utf-8")
    assert str(second.backup) in str(second)


def test_export_into_the_course_own_folders_is_refused(tmp_path):
    """Writing OUT/labs/<lab> into a course would replace the learner's own lab."""
    course = tmp_path / "course_root"
    (course / "solutions").mkdir(parents=True)
    (course / "labs").mkdir()
    mine = course / "labs" / "lab00_demo.ipynb"
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验"), new_code_cell("answer = 42")]), mine)
    before = mine.read_bytes()
    other = tmp_path / "elsewhere" / "labs"
    other.mkdir(parents=True)
    nbformat.write(new_notebook(cells=[en("# Lab"), zh("# 实验")]), other / "lab00_demo.ipynb")
    with pytest.raises(FxCourseError, match="would overwrite .*lab00_demo.ipynb"):
        i18n.export([other], "zh", course)
    assert mine.read_bytes() == before


def test_cli_exit_status(tmp_path, capsys):
    good = _lecture(tmp_path, GOOD)
    assert main(["i18n", "check", str(good)]) == 0
    bad = _lecture(tmp_path, [en("# T")], name="01_bad.ipynb")
    assert main(["i18n", "check", str(bad)]) == 1
    assert "English cell has no 中文 twin" in capsys.readouterr().out


def test_repository_notebooks_are_bilingual():
    problems = i18n.check_paths([REPO / "course", REPO / "labs", REPO / "solutions"], kinds=("parity",))
    assert problems == [], "\n".join(map(str, problems))


def test_repository_notebooks_follow_the_glossary():
    problems = i18n.check_paths([REPO / "course", REPO / "labs", REPO / "solutions"], kinds=("glossary",))
    assert problems == [], "\n".join(map(str, problems))


# -- one language at a time ------------------------------------------------------------------

# the fastest lecture to execute (about 10 s on 2 cores; 00_overview takes several times longer)
FAST_LECTURE = REPO / "course" / "03_fx_tracing_ir.ipynb"


def _outputs(nb):
    return "\n".join(str(o.get("text") or o.get("data", {}).get("text/plain", "")) for c in nb.cells
                     if c.cell_type == "code" for o in c.outputs)


def test_export_executes_a_lecture_in_its_language(tmp_path, capsys):
    out = tmp_path / "zh"
    assert main(["i18n", "export", "--lang", "zh", str(out), str(FAST_LECTURE)]) == 0
    printed = capsys.readouterr().out
    assert f"{out / 'course' / FAST_LECTURE.name} (" in printed  # the seconds it took to execute
    exported = nbformat.read(out / "course" / FAST_LECTURE.name, as_version=4)
    assert exported.metadata.fxcourse_language == "zh"
    assert not [c for c in exported.cells if "lang-en" in c.metadata.get("tags", [])]
    first = exported.cells[0]
    assert first.source == 'import fxcourse; fxcourse.language("zh")' and first.metadata.tags == [i18n.LANGUAGE_TAG]
    assert "fxcourse 语言：只显示中文" in _outputs(exported)
    # executed in 中文: the library's tables speak it; the stored (bilingual) lecture's do not
    source = nbformat.read(FAST_LECTURE, as_version=4)
    assert "fx.GraphModule, 6 nodes" in _outputs(source) and "fx.GraphModule, 6 nodes" not in _outputs(exported)
    assert "fx.GraphModule，6 个节点" in _outputs(exported)
    # the glossary comes along, and the export passes its own check (glossary included)
    assert (out / "course" / "GLOSSARY.md").read_bytes() == (REPO / "course" / "GLOSSARY.md").read_bytes()
    assert main(["i18n", "check", str(out / "course")]) == 0
    assert "1 notebooks, 0 problems" in capsys.readouterr().out


def test_single_language_notebook_is_checked_in_its_language(tmp_path):
    path = _lecture(tmp_path, GOOD)
    (out,) = i18n.export([path], "en", tmp_path / "en")
    assert i18n.check_notebook(out.path) == []
    nb = nbformat.read(out.path, as_version=4)
    nb.cells.insert(2, zh("## 混进来的中文"))  # a mixed notebook is still reported
    nb.cells[-1].source = "## Homework"
    nbformat.write(nb, out.path)
    problems = [str(p) for p in i18n.check_notebook(out.path)]
    assert any("cell 2: markdown cell tagged lang-zh in a notebook whose metadata says it is English only" in p
               for p in problems), problems
    assert any("(lang-en) must be Summary and Exercises, found ['Summary', 'Homework']" in p for p in problems)
    assert all("lang-zh) must be" not in p for p in problems)  # no 中文 skeleton asked of it


def test_export_again_into_the_same_folder(tmp_path):
    """OUT holds labs/ and solutions/ after the first export; writing it again is allowed (it is
    an export, not a course's own folders), and the same content makes no backup."""
    course = tmp_path / "c"
    for folder in ("course", "labs", "solutions"):
        (course / folder).mkdir(parents=True)
        nbformat.write(new_notebook(cells=GOOD), course / folder / "lab00_demo.ipynb")
    paths = [course / f for f in ("course", "labs", "solutions")]
    first = i18n.export(paths, "zh", tmp_path / "zh")
    again = i18n.export(paths, "zh", tmp_path / "zh")
    assert [e.path for e in first] == [e.path for e in again] and all(e.backup is None for e in again)
    nbformat.write(new_notebook(cells=GOOD), tmp_path / "zh" / "labs" / "lab00_demo.ipynb")  # bilingual again
    with pytest.raises(FxCourseError, match="would overwrite"):
        i18n.export(paths, "zh", tmp_path / "zh")


def test_messages_follow_the_language(tmp_path, monkeypatch, capsys):
    bad = _lecture(tmp_path, [en("# T")], name="01_bad.ipynb")
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert main(["i18n", "check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "第 0 个单元: 英文单元后面没有紧挨着的中文单元" in out and "1 个笔记本，" in out
    assert "English cell" not in out and "notebooks" not in out
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert main(["i18n", "check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "cell 0: English cell has no 中文 twin right after it" in out and "1 notebooks, " in out
    assert "个笔记本" not in out


# -- the glossary ----------------------------------------------------------------------------

GLOSSARY = """# Glossary

| English | 中文 | avoid | note |
|---|---|---|---|
| graph break; graph breaks | 图中断 | 断图; 图断裂 | gloss at first use |
| pass; passes | pass | 变换; 遍 | a compiler pass |
| transform; transforms; transformation | 变换 | 转换器 | |
| kernel; kernels | 内核 | 算子; 核函数 | |
| operator; op; ops | 算子 | 操作符 | |
| guard; guards | 守卫 | 保护条件 | |
| fake tensor; FakeTensor; fake tensors | 伪张量 | 假张量 | |
| batch; batches | 批; 批次 | | |
| batch size; batch sizes | 批大小 | 批量大小 | |
| batch norm; BatchNorm | 批归一化; batch norm | | a layer's name may stay in English |
| fall back; falls back; fallback | 回退 | 后备 | |
| fallback kernel; fallback kernels | 后备内核 | 回退内核 | |
| MLIR operation; MLIR operations; MLIR op; MLIR ops | MLIR 操作 | 算子 | |
| unbacked | `unbacked` | 无后备 | |
"""


def _glossary_lecture(tmp_path, english, chinese):
    (tmp_path / "course").mkdir(exist_ok=True)
    (tmp_path / "course" / "GLOSSARY.md").write_text(GLOSSARY, encoding="utf-8")
    return _lecture(tmp_path, [en("# T"), zh("# 标题"), en(english), zh(chinese), *GOOD[5:]])


@pytest.mark.parametrize("english, chinese, avoided", [
    ("A DCE pass removes dead code.", "DCE 变换删除死代码。", "变换"),
    ("The three passes of the lecture.", "讲义中的三个遍。", "遍"),
    ("Each graph break splits the function.", "每个断图都会拆分函数。", "断图"),
    ("Inductor writes one kernel.", "Inductor 生成一个算子。", "算子"),
])
def test_glossary_flags_a_word_to_avoid(tmp_path, english, chinese, avoided):
    path = _glossary_lecture(tmp_path, english, chinese)
    (problem,) = i18n.check_glossary(path)
    assert problem.kind == "glossary" and problem.cell == 3
    assert f"中文 uses '{avoided}'" in problem.message and "write '" in problem.message
    assert i18n.check_notebook(path, kinds=("parity",)) == []  # a kind of its own


@pytest.mark.parametrize("english, chinese", [
    ("A DCE pass removes dead code.", "DCE pass 删除死代码。"),  # the right term
    ("We pass the input to the model, then run it again.", "我们把输入传给模型，再运行一遍变换。"),  # the verb
    ("A transform (a *pass*) edits the graph.", "一个变换（pass）编辑计算图。"),  # English says transform
    ("Each graph break splits the function.", "每个图中断（graph break，社区也常说“断图”）都会拆分函数。"),
    ("Walk the nodes of the graph.", "遍历计算图的节点；这里没有断图。"),  # the English has no such term
    ("Inductor writes one kernel per op.", "Inductor 为每个算子生成一个内核。"),  # 算子 is right for op
    ("The `pass` statement and a forward pass.", "`pass` 语句与一次前向变换。"),  # code and another sense
])
def test_glossary_accepts_the_right_term(tmp_path, english, chinese):
    assert i18n.check_glossary(_glossary_lecture(tmp_path, english, chinese)) == []


def test_glossary_check_runs_alone_from_the_command_line(tmp_path, capsys):
    path = _glossary_lecture(tmp_path, "A DCE pass removes dead code.", "DCE 变换删除死代码。")
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(en("unpaired"))
    nbformat.write(nb, path)
    assert main(["i18n", "check", "--only", "glossary", str(path)]) == 1
    out = capsys.readouterr().out
    assert "中文 uses '变换' where the English says 'pass'; write 'pass'" in out and "twin" not in out
    assert main(["i18n", "check", "--only", "parity", str(path)]) == 1
    out = capsys.readouterr().out
    assert "English cell has no 中文 twin" in out and "变换" not in out
    assert main(["i18n", "check", str(path)]) == 1
    assert "1 notebooks, 2 problems" in capsys.readouterr().out


def test_an_error_while_a_kernel_runs_in_zh_is_worded_for_the_reader(monkeypatch):
    monkeypatch.delenv("FXCOURSE_LANG", raising=False)
    with pytest.raises(FxCourseError) as caught:
        with i18n.kernel_language("zh"):
            raise FxCourseError(got="x", accepted="y", fix="z", zh="中文")
    assert str(caught.value) == "got x; expected y. Fix: z. / 中文"
    assert "FXCOURSE_LANG" not in __import__("os").environ


def test_an_export_in_one_language_also_completes_when_its_reader_goes_away(tmp_path):
    out = tmp_path / "en"
    stderr = into_closed_pipe("i18n", "export", "--lang", "en", "--no-execute", str(out), "labs")
    assert "Traceback" not in stderr and "Broken pipe" not in stderr, stderr
    assert len(list((out / "labs").glob("*.ipynb"))) == len(list((REPO / "labs").glob("*.ipynb")))


def test_no_line_break_between_two_chinese_characters_in_prose():
    """Markdown renders a line break inside a paragraph as a space: between two 中文 characters
    that space is a visible gap, so a 中文 paragraph stays on one source line."""
    import json
    import re

    cjk = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
    soft = re.compile(rf"{cjk}\n(?![\n#>|*\-\d`])[ \t]*{cjk}")
    found = []
    for folder in ("course", "labs", "solutions"):
        for path in sorted((REPO / folder).glob("*.ipynb")):
            for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
                if cell["cell_type"] == "markdown":
                    found += [f"{folder}/{path.name} cell {i}: {m.group(0)!r}" for m in soft.finditer("".join(cell["source"]))]
    assert not found, f"{len(found)} breaks, e.g. " + "; ".join(found[:5])


# -- a glossary term left in English inside 中文 prose ---------------------------------------

def _english_problems(tmp_path, chinese, english="Some text."):
    return [p for p in i18n.check_glossary(_glossary_lecture(tmp_path, english, chinese))]


@pytest.mark.parametrize("chinese, word, write", [
    ("这个 batch 的大小是 4。", "batch", "批 / 批次"),
    ("每次调用都要检查 guards，再运行。", "guards", "守卫"),
    ("Inductor 在这里 falls back 到 ATen。", "falls back", "回退"),
    ("导出时 batch size 是静态的。", "batch size", "批大小"),  # the longer term, not "batch"
    ("用batch做实验。", "batch", "批 / 批次"),  # no spaces around it
    ("**fake tensor** 没有数据。", "fake tensor", "伪张量"),
])
def test_glossary_flags_a_term_written_in_english_in_chinese_prose(tmp_path, chinese, word, write):
    (problem,) = _english_problems(tmp_path, chinese)
    assert problem.kind == "glossary" and problem.cell == 3
    assert f"writes the term '{word}' in English" in problem.message and f"write '{write}'" in problem.message
    assert f"中文正文直接写了英文术语“{word}”" in problem.message


def test_glossary_english_in_chinese_needs_no_english_twin(tmp_path):
    """The 中文 cell alone is enough: the English twin may say something else entirely."""
    assert len(_english_problems(tmp_path, "这个 batch 的大小是 4。", english="Nothing about it.")) == 1


def test_glossary_english_in_chinese_allows_code_spans(tmp_path):
    assert _english_problems(tmp_path, "参数 `batch` 与 `guard` 都是代码。") == []


def test_glossary_english_in_chinese_allows_code_blocks(tmp_path):
    assert _english_problems(tmp_path, "看下面：\n\n```python\nbatch = guards[0]\n```\n\n就这样。") == []


def test_glossary_english_in_chinese_allows_identifiers_and_api_names(tmp_path):
    text = "用 register_fake 注册，得到 FakeTensor；torch.cond 与 guard.py 和 check_guard 都是名字。"
    assert _english_problems(tmp_path, text) == []


def test_glossary_english_in_chinese_allows_a_gloss_after_the_chinese_term(tmp_path):
    text = "守卫（guard）检查输入；伪张量（fake tensor）没有数据；**批大小**（batch size）可以变化。"
    assert _english_problems(tmp_path, text) == []


def test_glossary_english_in_chinese_allows_a_gloss_later_in_the_same_clause(tmp_path):
    assert _english_problems(tmp_path, "它在守卫不一致*（guard mismatch）时重新编译。") == []


def test_glossary_english_in_chinese_flags_a_gloss_after_another_term(tmp_path):
    """A parenthesis after some other word is no gloss of this term."""
    (problem,) = _english_problems(tmp_path, "这些张量（batch）一起处理。")
    assert "'batch'" in problem.message


def test_glossary_english_in_chinese_allows_link_targets_and_urls(tmp_path):
    text = "见[文档](https://pytorch.org/docs/guards/batch.html)与 https://example.org/fake-tensor/guard 。"
    assert _english_problems(tmp_path, text) == []


def test_glossary_english_in_chinese_allows_words_inside_a_longer_identifier(tmp_path):
    assert _english_problems(tmp_path, "batch_size、guard_fn、my-batch-loader 与 BatchNorm2d 都是名字。") == []


def test_glossary_english_in_chinese_allows_a_quoted_english_message(tmp_path):
    text = "报错是 *Dynamo failed to run the guards* ，也就是“guard failure: batch”。"
    assert _english_problems(tmp_path, text) == []


def test_glossary_english_in_chinese_allows_a_form_the_glossary_keeps_in_english(tmp_path):
    assert _english_problems(tmp_path, "把 batch norm 折叠进卷积；这是 unbacked 符号。") == []


def test_glossary_longer_term_wins_for_the_avoid_column(tmp_path):
    """"MLIR ops" is not also an "op": 算子 for MLIR operations is flagged; "fallback kernel" is
    not also a "fallback": 后备 inside 后备内核 is the right term."""
    (problem,) = i18n.check_glossary(_glossary_lecture(tmp_path, "MLIR ops live in dialects.", "MLIR 算子属于方言。"))
    assert "中文 uses '算子'" in problem.message and "'MLIR 操作'" in problem.message
    ok = _glossary_lecture(tmp_path, "Inductor falls back to the ATen op; the dispatcher's fallback kernel records it.",
                           "Inductor 回退到 ATen 算子；分发器的后备内核记录它。")
    assert i18n.check_glossary(ok) == []


def test_glossary_fallback_two_meanings():
    """"falls back" (Inductor calling ATen) is 回退: 后备 for it is flagged; the dispatcher's
    "Tracer fallback" is a fallback kernel, 后备内核, which is never taken for the avoided 后备."""
    from fxcourse.tooling import glossary

    terms = glossary.parse(GLOSSARY)
    (found,) = glossary.findings("Inductor falls back to ATen here.", "Inductor 在这里后备到 ATen。", terms)
    assert found.avoided == "后备" and found.term.chinese == "回退"
    assert glossary.findings("The Tracer fallback records the op.", "Tracer 后备内核记录这个算子。", terms) == []
