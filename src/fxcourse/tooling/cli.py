"""The ``fxcourse`` command: doctor, labs, i18n, slides, nb.

Every failure a learner can cause ends in one line on stderr and a non-zero exit status (2 for
a wrong argument or file, 1 for a check that found problems), never a traceback. Help, errors
and reports speak the reader's language (``FXCOURSE_LANG=en|zh|both``, default both).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import NoReturn

from .._lang import pick
from .._text import one_line_error
from ..errors import FxCourseError

#: Set to 1 to see the traceback of an unexpected error (as ``fxcourse --debug ...``).
DEBUG = "FXCOURSE_DEBUG"

DEFAULT_NOTEBOOK_DIRS = ["course", "labs", "solutions"]

# argparse's own messages (Python 3.10-3.13), each with its 中文 twin
_ARGPARSE_ZH = [
    (r"the following arguments are required: (.*)", "缺少必需的参数：{0}"),
    (r"argument (\S+): invalid choice: (.*?) \(choose from (.*)\)", "参数 {0} 的值 {1} 无效，可选：{2}"),
    (r"argument (\S+): expected one argument", "参数 {0} 需要一个值"),
    (r"unrecognized arguments: (.*)", "无法识别的参数：{0}"),
    (r"argument (\S+): ignored explicit argument (.*)", "参数 {0} 不接受值 {1}"),
    (r"ambiguous option: (\S+) could match (.*)", "选项 {0} 有歧义，可能是：{1}"),
]


def _zh(message: str) -> str:
    """The 中文 twin of one of argparse's error messages.

    >>> _zh("the following arguments are required: out")
    '缺少必需的参数：out'
    """
    for pattern, template in _ARGPARSE_ZH:
        m = re.fullmatch(pattern, message)
        if m:
            return template.format(*m.groups())
    return "命令行参数有误"


class _Parser(argparse.ArgumentParser):
    """argparse with the course's bilingual error line (English / 中文)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: " + pick(f"error: {message}", f"错误：{_zh(message)}") + "\n"
                     + pick(f"run `{self.prog} --help` for help", f"运行 `{self.prog} --help` 查看帮助") + "\n")

    def format_usage(self) -> str:
        return _localise_headings(super().format_usage())

    def format_help(self) -> str:
        return _localise_headings(super().format_help())


# argparse's own headings, in 中文 when the reader reads only 中文
_HEADINGS_ZH = [("usage: ", "用法："), ("positional arguments:", "位置参数："), ("options:", "选项："),
                ("show this help message and exit", "显示帮助并退出")]


def _localise_headings(text: str) -> str:
    """argparse's headings in the reader's language (unchanged unless FXCOURSE_LANG=zh)."""
    from .._lang import current

    if current() == "zh":
        for en, zh in _HEADINGS_ZH:
            text = text.replace(en, zh)
    return text


def _one_language(text: str | None) -> str | None:
    """A help text written "English / 中文" in the reader's language.

    >>> import os; os.environ["FXCOURSE_LANG"] = "zh"
    >>> _one_language("fail when labs/ is out of date with solutions/ / labs/ 过期时报错")
    'labs/ 过期时报错'
    >>> os.environ["FXCOURSE_LANG"] = "en"; _one_language("check English/中文 cell pairs / 检查中英文单元是否成对")
    'check English/中文 cell pairs'
    >>> del os.environ["FXCOURSE_LANG"]
    """
    if not text or " / " not in text:
        return text
    en, zh = text.rsplit(" / ", 1)
    if not re.search(r"[\u4e00-\u9fff]", zh):
        return text
    return pick(en, zh)


def _localise(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Every help and description of ``parser`` and its sub-commands in the reader's language."""
    parser.description = _one_language(parser.description)
    for action in parser._actions:
        action.help = _one_language(action.help)
        for choice in getattr(action, "_choices_actions", []):
            choice.help = _one_language(choice.help)
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                _localise(sub)
    return parser


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="fxcourse", description="Tools for the fxcourse notebooks / 课程工具")
    p.add_argument("--debug", action="store_true",
                   help=f"show the whole traceback of an unexpected error (or set {DEBUG}=1) / "
                        f"出现意外错误时显示完整的回溯（或设置 {DEBUG}=1）")
    sub = p.add_subparsers(dest="command", required=True, metavar="{doctor,labs,progress,grading,i18n,slides,nb}")
    sub.add_parser("doctor", help="check the environment against the tested matrix / 检查环境")

    labs = sub.add_parser("labs", help="build, check or reset labs / 生成、检查或重置实验",
                          description="Run from the course folder or any folder inside it / "
                                      "在课程目录或其子目录中运行")
    labs_sub = labs.add_subparsers(dest="action", required=True)
    b = labs_sub.add_parser("build", help="write labs/ from solutions/ (edited labs are backed up to backups/) "
                                          "/ 从 solutions/ 生成 labs/（改过的实验先备份到 backups/）")
    b.add_argument("names", nargs="*", help="labs to build (default: all) / 要生成的实验（默认全部）")
    b.add_argument("--force", action="store_true", help="rebuild even when up to date / 即使已是最新也重新生成")
    labs_sub.add_parser("check", help="fail when labs/ is out of date with solutions/ / labs/ 过期时报错")
    r = labs_sub.add_parser("reset", help="restore a pristine lab, backing up your copy to backups/ "
                                          "/ 恢复原始实验，你的版本先备份到 backups/")
    r.add_argument("name", help="the lab, e.g. lab00 / 实验名，例如 lab00")

    i18n = sub.add_parser("i18n", help="bilingual parity check and single-language export / 双语检查与导出")
    i18n_sub = i18n.add_subparsers(dest="action", required=True)
    c = i18n_sub.add_parser("check", help="check English/中文 cell pairs / 检查中英文单元是否成对")
    c.add_argument("paths", nargs="*", default=[],
                   help="notebooks or folders (default: course labs solutions) / 笔记本或文件夹（默认 course labs solutions）")
    c.add_argument("--only", choices=["parity", "glossary"], help="one kind of problem: English/中文 pairs and "
                   "skeleton, or the glossary (course/GLOSSARY.md) / 只查一类问题：中英文成对与结构，或术语表")
    e = i18n_sub.add_parser("export", help="write single-language copies into OUT / 把单语言版本写到 OUT")
    e.add_argument("--lang", required=True, choices=["en", "zh"], help="the language kept / 保留的语言")
    e.add_argument("out", help="output folder, e.g. build/zh / 输出文件夹，例如 build/zh")
    e.add_argument("paths", nargs="*", default=[],
                   help="notebooks or folders (default: course labs solutions) / 笔记本或文件夹（默认 course labs solutions）")
    e.add_argument("--no-execute", action="store_true", help="copy stored outputs instead of running each "
                   "notebook in that language (fast) / 不重新运行，直接保留已有输出（更快）")

    pr = sub.add_parser("progress", help="which lab tasks pass, read from your saved lab notebooks "
                                         "/ 实验中哪些题目已通过（读取你保存的实验笔记本）")
    pr.add_argument("where", nargs="?", default=".", help="the course or its labs/ folder (default: here) "
                    "/ 课程目录或其中的 labs/（默认当前目录）")
    pr.add_argument("--lab", help="only this lab, e.g. lab03 / 只看某个实验，例如 lab03")

    g = sub.add_parser("grading", help="write the labs as an nbgrader course into OUT "
                                       "/ 把实验写成 nbgrader 课程目录（OUT）")
    g.add_argument("out", help="a folder outside the course, e.g. ../fxcourse-grading / 课程之外的文件夹")
    g.add_argument("labs", nargs="*", help="labs to include (default: all), e.g. lab00 lab03 / 要包含的实验（默认全部）")

    sl = sub.add_parser("slides", help="RISE slideshow metadata for the lectures / 讲义的 RISE 幻灯片元数据")
    sl_sub = sl.add_subparsers(dest="action", required=True)
    for action, text in (("mark", "write each cell's slide type (outputs untouched) / 写入每个单元格的幻灯片类型（不改输出）"),
                         ("check", "fail when a notebook's slide metadata is out of date / 幻灯片元数据过期时报错")):
        sl_sub.add_parser(action, help=text).add_argument(
            "paths", nargs="*", default=["course"], help="notebooks or folders (default: course) / 笔记本或文件夹（默认 course）")

    nb = sub.add_parser("nb", help="notebook utilities / 笔记本工具")
    nb_sub = nb.add_subparsers(dest="action", required=True)
    run = nb_sub.add_parser("run", help="execute notebooks in place, top to bottom, in a fresh kernel "
                                        "/ 在新内核中从头执行笔记本并原地保存")
    run.add_argument("paths", nargs="+", help="notebooks or folders / 笔记本或文件夹")
    return _localise(p)


def _labs(args: argparse.Namespace) -> int:
    from . import labs

    bundle = labs.find_bundle(Path.cwd()) if args.action == "check" else None
    if bundle is not None:  # a learners' bundle: no solutions/ to compare with, so check what it holds
        problems, summary = labs.bundle_problems(bundle)
        for line in problems:
            print(line)
        print(summary if not problems else pick(f"{len(problems)} problems in the bundle in {bundle}",
                                                f"{bundle} 中的课程包有 {len(problems)} 个问题"))
        return 1 if problems else 0
    root = labs.find_root(Path.cwd())
    if args.action == "build":
        for report in labs.build(root, args.names, force=args.force):
            _say(report)  # a closed pipe does not stop a build half-way
        return 0
    if args.action == "check":
        problems = labs.out_of_date(root)
        for line in problems:
            print(line)
        if problems:
            print(pick("run `fxcourse labs build`", "请运行 `fxcourse labs build`"))
            return 1
        print(pick(f"labs/ is up to date in {root}", f"{root} 中的 labs/ 与 solutions/ 一致"))
        return 0
    print(labs.reset(args.name, root))
    return 0


def _slides(args: argparse.Namespace) -> int:
    from . import slides

    if args.action == "mark":
        changed = slides.mark_paths(args.paths)
        kept = slides.marked_backups()
        for path in changed:
            print(_with_copy(path, kept.get(path)))
        print(pick(f"{len(changed)} notebooks marked", f"已标记 {len(changed)} 个笔记本"))
        return 0
    problems = slides.check_paths(args.paths)
    for problem in problems:
        print(problem)
    if problems:
        print(pick("run `fxcourse slides mark`", "请运行 `fxcourse slides mark`"))
        return 1
    print(pick("slide metadata is up to date", "幻灯片元数据是最新的"))
    return 0


def _run(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        from .doctor import diagnose

        report = diagnose()
        print(report.to_text())
        return 0 if report.healthy else 1
    if args.command == "labs":
        return _labs(args)
    if args.command == "grading":
        from .grading import export_course

        export_course(args.out, args.labs, report=_say)  # each line as it is written
        print(pick(f"next: cd {args.out} && nbgrader generate_assignment LAB", f"下一步：cd {args.out} && "
                   "nbgrader generate_assignment LAB"))
        return 0
    if args.command == "progress":
        from .progress import progress

        print(progress(args.where, lab=args.lab).to_text())
        return 0
    if args.command == "slides":
        return _slides(args)
    from . import i18n, nbrun

    if args.command == "i18n":
        # No paths: the course's notebook folders that are here (a learners' bundle has no solutions/).
        args.paths = args.paths or [d for d in DEFAULT_NOTEBOOK_DIRS if Path(d).is_dir()] or DEFAULT_NOTEBOOK_DIRS
        if args.action == "check":
            if not i18n.notebooks_in(args.paths):
                raise FxCourseError(got=f"{', '.join(args.paths)}, which holds no notebooks", where="i18n check",
                                    accepted="a .ipynb file or a folder holding .ipynb files",
                                    fix="check the path, e.g. fxcourse i18n check course/",
                                    zh=f"i18n check：{', '.join(args.paths)} 中没有笔记本，无可检查；请检查路径。")
            problems = i18n.check_paths(args.paths, kinds=(args.only,) if args.only else i18n.KINDS)
            for problem in problems:
                print(problem)
            count = len(i18n.notebooks_in(args.paths))
            print(pick(f"{count} notebooks, {len(problems)} problems", f"{count} 个笔记本，{len(problems)} 个问题"))
            return 1 if problems else 0
        for exported in i18n.export_iter(args.paths, args.lang, args.out, execute=not args.no_execute):
            _say(exported)
        return 0
    paths = i18n.notebooks_in(args.paths, where="nb run")
    if not paths:
        raise FxCourseError(got=f"{', '.join(args.paths)}, which holds no notebooks", where="nb run",
                            accepted="a .ipynb file or a folder holding .ipynb files",
                            fix="check the path, e.g. fxcourse nb run course/00_overview.ipynb",
                            zh=f"nb run：{', '.join(args.paths)} 中没有笔记本；请检查路径。")
    for path in paths:  # every notebook checked before the first one runs
        nbrun.prepare(path)
    for path in paths:
        seconds, kept = nbrun.run(path)
        _say(_with_copy(f"{path}: {seconds:.1f} s", kept))  # a number: the same in every language
    return 0


def _with_copy(line: object, kept: Path | None) -> str:
    """``line``, and where the version a command replaced was kept, if it kept one."""
    if kept is None:
        return str(line)
    where = os.path.relpath(kept) if not os.path.relpath(kept).startswith("..") else str(kept)
    return f"{line}" + pick(f" (the version it replaced is in {where})", f"（被替换的版本保存在 {where}）")


def _say(line: object) -> None:
    """Print a line now; when the reader has gone away (`| head -1`), go on without printing."""
    try:
        print(line, flush=True)
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # later prints, and the interpreter's final flush, go nowhere


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except FxCourseError as exc:
        print(f"fxcourse: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`fxcourse labs check | head -1`): stop quietly
        _quiet_stdout()
        return 1
    except OSError as exc:  # a disk or permission problem while writing
        name = f" {exc.filename}" if exc.filename else ""
        print("fxcourse: " + pick(f"could not write or read{name}: {exc.strerror or exc}",
                                  f"无法读写{name}：{exc.strerror or exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fxcourse: " + pick("interrupted", "已中断"), file=sys.stderr)
        return 130
    except Exception as exc:  # a bug of ours, or a case nobody foresaw: one line, not a traceback
        import os

        if args.debug or os.environ.get(DEBUG, "") not in ("", "0"):
            raise
        command = " ".join(["fxcourse", *(sys.argv[1:] if argv is None else argv)])
        print("fxcourse: " + pick(
            f"unexpected error in `{command}`: {one_line_error(exc)}. The course tools should have said in "
            f"words what went wrong: run it again with `fxcourse --debug ...` (or {DEBUG}=1) and report the "
            "traceback with the course's issues.",
            f"`{command}` 出现意外错误：{one_line_error(exc)}。课程工具本应用文字说明出了什么问题：请用 "
            f"`fxcourse --debug ...`（或设置 {DEBUG}=1）重新运行，并把回溯报告给课程的问题列表。"), file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
