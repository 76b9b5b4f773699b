"""An error nobody foresaw reaches the command line as one line in the reader's language, never as
a traceback; `--debug` or FXCOURSE_DEBUG=1 shows the traceback for a report."""
from __future__ import annotations

import pytest

from fxcourse.tooling import cli


def _broken(args):
    raise KeyError("a key the tools did not expect")


@pytest.fixture
def broken(monkeypatch):
    monkeypatch.setattr(cli, "_run", _broken)
    monkeypatch.delenv(cli.DEBUG, raising=False)


def test_an_unexpected_error_is_one_line_with_the_way_to_report_it(broken, capsys, monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "en")
    assert cli.main(["doctor"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "unexpected error in `fxcourse doctor`: KeyError: 'a key the tools did not expect'" in err
    assert "fxcourse --debug" in err and cli.DEBUG in err


def test_the_line_is_in_chinese_for_a_chinese_reader(broken, capsys, monkeypatch):
    monkeypatch.setenv("FXCOURSE_LANG", "zh")
    assert cli.main(["labs", "check"]) == 3
    err = capsys.readouterr().err
    assert "`fxcourse labs check` 出现意外错误" in err and "unexpected" not in err


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_debug_shows_the_traceback(broken, monkeypatch, how):
    argv = ["doctor"]
    if how == "flag":
        argv = ["--debug", *argv]
    else:
        monkeypatch.setenv(cli.DEBUG, "1")
    with pytest.raises(KeyError):
        cli.main(argv)


def test_foreseen_errors_keep_their_own_exit_code(monkeypatch, capsys):
    def refused(args):
        raise cli.FxCourseError(got="x", accepted="y", fix="z", zh="收到 x；需要 y。修复：z。")
    monkeypatch.setattr(cli, "_run", refused)
    assert cli.main(["doctor"]) == 2
    assert "got x; expected y" in capsys.readouterr().err
