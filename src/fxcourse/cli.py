"""The ``fxcourse`` command: doctor, labs, i18n, nb."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .errors import FxCourseError

DEFAULT_NOTEBOOK_DIRS = ["course", "labs", "solutions"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fxcourse", description="Tools for the fxcourse notebooks / 课程工具")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="check the environment against the tested matrix / 检查环境")

    labs = sub.add_parser("labs", help="build, check or reset labs / 生成、检查或重置练习")
    labs_sub = labs.add_subparsers(dest="action", required=True)
    b = labs_sub.add_parser("build", help="write labs/ from solutions/ (edited labs are backed up)")
    b.add_argument("names", nargs="*", help="labs to build (default: all)")
    b.add_argument("--force", action="store_true", help="rebuild even when up to date")
    labs_sub.add_parser("check", help="fail when labs/ is out of date with solutions/")
    r = labs_sub.add_parser("reset", help="restore a pristine lab, backing up your edited copy")
    r.add_argument("name")

    i18n = sub.add_parser("i18n", help="bilingual parity check and single-language export / 双语检查与导出")
    i18n_sub = i18n.add_subparsers(dest="action", required=True)
    c = i18n_sub.add_parser("check")
    c.add_argument("paths", nargs="*", default=DEFAULT_NOTEBOOK_DIRS)
    e = i18n_sub.add_parser("export")
    e.add_argument("--lang", required=True, choices=["en", "zh"])
    e.add_argument("out")
    e.add_argument("paths", nargs="*", default=["course", "labs"])

    nb = sub.add_parser("nb", help="notebook utilities / 笔记本工具")
    nb_sub = nb.add_subparsers(dest="action", required=True)
    run = nb_sub.add_parser("run", help="execute notebooks in place, top to bottom, in a fresh kernel")
    run.add_argument("paths", nargs="+")
    return p


def _run(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        from .doctor import diagnose

        report = diagnose()
        print(report.to_text())
        return 0 if report.healthy else 1
    if args.command == "labs":
        from . import labs

        if args.action == "build":
            for report in labs.build(".", args.names, force=args.force):
                print(report)
            return 0
        if args.action == "check":
            problems = labs.out_of_date(".")
            for line in problems:
                print(line)
            if problems:
                print("run `fxcourse labs build` / 请运行 `fxcourse labs build`")
                return 1
            print("labs/ is up to date / labs/ 与 solutions/ 一致")
            return 0
        print(labs.reset(args.name, "."))
        return 0
    if args.command == "i18n":
        from . import i18n

        if args.action == "check":
            problems = i18n.check_paths(args.paths)
            for problem in problems:
                print(problem)
            count = len(i18n.notebooks_in(args.paths))
            print(f"{count} notebooks, {len(problems)} problems / {count} 个笔记本，{len(problems)} 个问题")
            return 1 if problems else 0
        for path in i18n.export(args.paths, args.lang, args.out):
            print(path)
        return 0
    from . import i18n, nbrun

    for path in i18n.notebooks_in(args.paths):
        print(f"{path}: {nbrun.run(path):.1f} s", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except FxCourseError as exc:
        print(f"fxcourse: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
