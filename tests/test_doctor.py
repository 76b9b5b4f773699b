"""fxcourse doctor: a healthy report here, the torchvision mismatch diagnosed with its fix."""
from __future__ import annotations

import json
import os
import stat
import sys

from fxcourse._pins import TORCH, TORCHVISION
from fxcourse.tooling.cli import main
from fxcourse.tooling.doctor import diagnose, diagnose_torchvision_error


def test_this_environment_is_healthy(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "healthy" in out and "环境正常" in out
    assert f"torch: {TORCH}" in out and f"torchvision: {TORCHVISION}" in out


def _fake_python(tmp_path, payload: dict):
    """An executable that answers the doctor's probe as a broken install would."""
    path = tmp_path / "python"
    path.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(payload))})\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_torchvision_nms_mismatch_is_diagnosed_with_the_fix(tmp_path):
    fake = _fake_python(tmp_path, {
        "torch": f"{TORCH}+cpu",
        "torchvision_error": "RuntimeError: operator torchvision::nms does not exist"})
    report = diagnose(python=fake)
    assert not report.healthy
    (tv,) = [f for f in report.findings if f.name == "torchvision"]
    assert not tv.ok and f"does not match torch {TORCH}+cpu" in tv.en and "不匹配" in tv.zh
    assert f"!={TORCH}+cpu" in tv.fix[0] and f"!={TORCH}+cpu" in tv.fix[1]
    text = report.to_text()
    assert "FAIL torchvision" in text and "fix / 修复" in text and "problem(s) found" in text


def test_broken_torch_and_wrong_version_are_problems(tmp_path):
    report = diagnose(python=_fake_python(tmp_path, {"torch_error": "ImportError: libtorch.so missing"}))
    assert [f.name for f in report.findings if not f.ok] == ["torch"]
    report = diagnose(python=_fake_python(tmp_path, {"torch": "2.9.1", "torchvision": "0.24.1"}))
    assert {f.name for f in report.findings if not f.ok} == {"torch", "torchvision"}
    for f in report.findings:  # another release: install the pair, do not download everything again
        if f.name in ("torch", "torchvision"):
            assert "--force-reinstall" not in f.fix[0] and f"torchvision=={TORCHVISION}" in f.fix[0]


def test_the_previous_release_is_explained_not_just_refused(tmp_path):
    """A learner still on the course's previous pair (torch 2.13.0) is told what differs and how to move."""
    report = diagnose(python=_fake_python(tmp_path, {"torch": "2.13.0", "torchvision": "0.28.0"}))
    (torch_finding,) = [f for f in report.findings if f.name == "torch"]
    assert not torch_finding.ok
    assert "2.13.0 is installed" in torch_finding.en and f"taught and tested on torch {TORCH}" in torch_finding.en
    assert "stored outputs" in torch_finding.en and f"torch {TORCH}" in torch_finding.zh
    assert f"torch=={TORCH}" in torch_finding.fix[0] and f"torchvision=={TORCHVISION}" in torch_finding.fix[1]
    assert "--force-reinstall" not in torch_finding.fix[0]  # a new version alone, not every dependency again
    # the classic nms error beside an old torch: moving the pair fixes both, no forced reinstall
    report = diagnose(python=_fake_python(tmp_path, {
        "torch": "2.13.0+cpu", "torchvision_error": "RuntimeError: operator torchvision::nms does not exist"}))
    (tv,) = [f for f in report.findings if f.name == "torchvision"]
    assert not tv.ok and "does not match" in tv.en and "--force-reinstall" not in tv.fix[0]


def test_missing_compiler_is_a_problem(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no g++ / c++ / clang++ here
    report = diagnose(python=_fake_python(tmp_path, {"torch": TORCH, "torchvision": TORCHVISION}))
    (cxx,) = [f for f in report.findings if f.name == "C++ compiler"]
    assert not cxx.ok and "apt-get install g++" in cxx.fix[0] and "安装 g++" in cxx.fix[1]


def test_other_torchvision_errors_keep_their_message():
    f = diagnose_torchvision_error("ImportError: no module named 'PIL'", TORCH, TORCHVISION)
    assert not f.ok and "no module named 'PIL'" in f.en


def test_graphviz_and_a_cjk_font_are_found_here():
    report = diagnose(python=sys.executable)
    found = {f.name: f for f in report.findings}
    assert found["graphviz"].ok and "graphviz version" in found["graphviz"].en
    assert found["CJK font"].ok and "CJK" in found["CJK font"].en


def test_missing_dot_and_fonts_say_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no fc-list here
    report = diagnose(python=_fake_python(tmp_path, {"torch": TORCH, "torchvision": TORCHVISION}))
    found = {f.name: f for f in report.findings}
    en_fix, zh_fix = found["graphviz"].fix
    assert not found["graphviz"].ok and "apt-get install graphviz" in en_fix
    assert "conda install -c conda-forge graphviz" in en_fix and "请安装 Graphviz" in zh_fix
    assert "未找到 `dot`" in found["graphviz"].zh
    en_fix, zh_fix = found["CJK font"].fix
    assert not found["CJK font"].ok and "fonts-noto-cjk" in en_fix and "fonts-noto-cjk" in zh_fix
    assert "中文字体" in found["CJK font"].zh
    assert "FAIL graphviz" in report.to_text()


def test_report_speaks_the_chosen_language(tmp_path, monkeypatch):
    """FXCOURSE_LANG=en gives no 中文 at all, zh no English words of ours (fix lines included)."""
    import re

    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no fc-list, no compiler: fix lines appear
    report = diagnose(python=_fake_python(tmp_path, {"torch": TORCH, "torchvision": TORCHVISION}))
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    english = report.to_text()
    assert "fix: install Graphviz" in english and not re.search(r"[\u4e00-\u9fff]", english)
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    chinese = report.to_text()
    assert "修复：请安装 Graphviz" in chinese and "环境检查" in chinese
    for word in ("fix", "not found", "tested", "problem", "healthy", "(or run"):
        assert word not in chinese, word
    monkeypatch.setenv("FXCOURSE_LANG", "both")
    both = report.to_text()
    assert "fix / 修复: install Graphviz" in both and " / 请安装 Graphviz" in both


def test_an_unknown_language_is_named(monkeypatch):
    from fxcourse.tooling.doctor import _language_finding

    monkeypatch.setenv("FXCOURSE_LANG", "klingon")
    finding = _language_finding()
    assert not finding.ok and "'klingon'" in finding.en and "en, zh or both" in finding.fix[0]
    monkeypatch.setenv("FXCOURSE_LANG", "zh_CN")
    assert _language_finding().ok
