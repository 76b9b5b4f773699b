"""Execute notebooks in place, top to bottom, in a fresh kernel, deterministically.

Authors regenerate stored outputs with ``fxcourse nb run course/00_overview.ipynb``.
The kernel starts in the notebook's folder with ``PYTHONHASHSEED=0``; per-cell timing
metadata is not recorded and consecutive stream outputs are merged (how a kernel chunks
its printed text differs between machines), so re-running an unchanged notebook changes
no bytes that matter. The kernel's channels are encrypted with CurveZMQ when pyzmq
supports it (the kernel then has no plain-TCP warning to print).

Reading is strict: a file that is missing, empty, not UTF-8, not JSON, not a notebook,
unreadable or (for ``run``) read-only, or a notebook naming a kernel that is not installed,
is an :class:`~fxcourse.errors.FxCourseError` that names the file and the reason.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import time
import warnings
from pathlib import Path
from typing import Any, Iterator

import nbformat

from .._lang import ENV, pick
from ..errors import FxCourseError

__all__ = ["BACKUPS", "backup_folder", "check_kernel", "check_writable", "execute", "keep_copy", "merge_streams",
           "notebooks_in", "prepare", "read", "run", "write"]

BACKUPS = "backups"  # in the course folder, beside labs/: JupyterLab's file browser shows it

DETERMINISTIC_ENV = {"PYTHONHASHSEED": "0", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
_REPAIR = ("open it in a text editor and repair it, or restore it from your copy or version control "
           "(git checkout -- FILE)", "用文本编辑器打开并修复它，或从备份/版本库恢复（git checkout -- FILE）")


def _bad_file(path: Path, where: str, en: str, zh: str, fix: tuple[str, str] | None = None,
              accepted: str = "a Jupyter notebook: a UTF-8 JSON file with nbformat and cells") -> FxCourseError:
    fix_en, fix_zh = (f.replace("FILE", str(path)) for f in (fix or _REPAIR))
    error = FxCourseError(got=f"{path}, which {en}", accepted=accepted, fix=fix_en, where=where,
                          zh=f"{where}：{path} {zh}；{fix_zh}。")
    error.reason, error.reason_zh = en, zh  # what is wrong with the file, for callers' own messages
    return error


def read(path: str | Path, *, where: str = "nb", fix: tuple[str, str] | None = None) -> nbformat.NotebookNode:
    """Read the notebook at ``path`` (version 4), or raise one FxCourseError saying why not.

    ``fix`` is an (English, 中文) pair replacing the default advice; ``FILE`` in it becomes
    the path.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "empty.ipynb"
    >>> _ = bad.write_text("")
    >>> read(bad, where="nb run")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fxcourse.errors.FxCourseError: nb run: got .../empty.ipynb, which is empty (0 bytes); ...
    """
    path = Path(path)
    if not path.exists():
        raise _bad_file(path, where, "does not exist", "不存在", ("check the path", "请检查路径"),
                        accepted="the path of an existing .ipynb file")
    if not path.is_file():
        raise _bad_file(path, where, "is not a file (a folder or a special file)",
                        "不是普通文件（可能是文件夹）", ("name the .ipynb file itself", "请给出 .ipynb 文件本身"))
    mode = path.stat().st_mode
    try:
        if not mode & (stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH):
            raise PermissionError("no read permission")
        data = path.read_bytes()
    except OSError as exc:
        raise _bad_file(path, where, f"cannot be read ({exc.strerror or exc})", "无法读取（没有读权限）",
                        (f"give yourself read permission (chmod u+r FILE)", "请给自己读权限（chmod u+r FILE）")) from None
    if not data.strip():
        raise _bad_file(path, where, f"is empty ({len(data)} bytes)", "是空文件", fix)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad_file(path, where, f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                        f"不是 UTF-8 文本（偏移 {exc.start} 处的字节 0x{data[exc.start]:02x}）",
                        fix or ("save it again as UTF-8 (notebooks are UTF-8 JSON)",
                                "请以 UTF-8 编码重新保存（笔记本是 UTF-8 的 JSON）")) from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad_file(path, where, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                        f"不是合法的 JSON（第 {exc.lineno} 行第 {exc.colno} 列：{exc.msg}）", fix) from None
    if not isinstance(raw, dict) or "nbformat" not in raw or not ("cells" in raw or "worksheets" in raw):
        found = (f"an object with keys {', '.join(map(repr, sorted(raw)[:6])) or '(none)'}"
                 if isinstance(raw, dict) else f"a JSON {type(raw).__name__}")
        raise _bad_file(path, where, f"is JSON but not a notebook ({found}; no nbformat and cells)",
                        "是 JSON，但不是笔记本（缺少 nbformat 与 cells）", fix or (
                            "pass a .ipynb notebook saved by Jupyter", "请传入 Jupyter 保存的 .ipynb 笔记本"))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat's missing-cell-id notices: not the learner's to act on
            nb = nbformat.reads(text, as_version=4)
            nbformat.validate(nb)
    except Exception as exc:  # nbformat's ValidationError and conversion errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _bad_file(path, where, f"is not a valid notebook ({first[:160]})",
                        f"不是有效的笔记本（{first[:160]}）", fix) from None
    return nb


def check_writable(path: str | Path, *, where: str = "nb run") -> None:
    """Refuse a read-only file (its permission bits say so, whoever runs us), before any work."""
    path = Path(path)
    mode = path.stat().st_mode
    if not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise _bad_file(path, where, "is read-only (its outputs could not be saved into it)",
                        "是只读文件（无法把输出写回其中）",
                        ("make it writable (chmod u+w FILE) or run a copy of it",
                         "请先使其可写（chmod u+w FILE），或复制一份再运行"),
                        accepted="a notebook you may write")


def check_kernel(nb: nbformat.NotebookNode, path: str | Path, *, where: str = "nb run") -> str:
    """The kernel ``nb`` names (``python3`` when it names none); an error if it is not installed."""
    from jupyter_client.kernelspec import KernelSpecManager

    name = nb.metadata.get("kernelspec", {}).get("name") or "python3"
    installed = sorted(KernelSpecManager().find_kernel_specs())
    if name not in installed:
        raise _bad_file(Path(path), where, f"names the kernel {name!r} (not installed here)",
                        f"指定的内核 {name!r} 没有安装",
                        ("open it in JupyterLab, choose Kernel > Change Kernel > Python 3 and save, "
                         "or install that kernel", "请在 JupyterLab 中选择 Kernel > Change Kernel > Python 3 "
                         "后保存，或安装该内核"),
                        accepted=f"a notebook whose kernel is installed ({', '.join(installed) or 'none'})")
    return name


def merge_streams(outputs: list[Any]) -> list[Any]:
    """Consecutive stream outputs of the same name merged into one (order kept).

    >>> out = [nbformat.v4.new_output("stream", text="a\\n"), nbformat.v4.new_output("stream", text="b\\n"),
    ...        nbformat.v4.new_output("stream", name="stderr", text="!\\n"),
    ...        nbformat.v4.new_output("stream", text="c\\n")]
    >>> [(o.name, o.text) for o in merge_streams(out)]
    [('stdout', 'a\\nb\\n'), ('stderr', '!\\n'), ('stdout', 'c\\n')]
    """
    merged: list[Any] = []
    for output in outputs:
        last = merged[-1] if merged else None
        if (output.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == output.get("name")):
            last["text"] = _text(last["text"]) + _text(output["text"])
        else:
            merged.append(output)
    return merged


def _text(value: str | list[str]) -> str:
    return value if isinstance(value, str) else "".join(value)


def _kernel_manager(kernel: str) -> Any:
    import zmq
    from jupyter_client.manager import KernelManager

    encryption = "auto" if zmq.has("curve") else "disabled"  # auto: when the kernelspec supports it
    return KernelManager(kernel_name=kernel, transport_encryption=encryption)


def _stop(km: Any) -> None:
    try:
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    except Exception:  # a kernel that is already gone needs no stopping
        pass


def execute(nb: nbformat.NotebookNode, cwd: Path, *, name: str = "notebook", timeout: int = 600,
            where: str = "nb run") -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in a fresh kernel started in ``cwd``; return ``nb`` with outputs."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    kernel = check_kernel(nb, name, where=where)
    old = {k: os.environ.get(k) for k in DETERMINISTIC_ENV}
    os.environ.update(DETERMINISTIC_ENV)
    km = _kernel_manager(kernel)
    try:
        client = NotebookClient(
            nb, km=km, timeout=timeout, kernel_name=kernel, record_timing=False,
            resources={"metadata": {"path": str(cwd)}},
        )
        client.execute()
    except CellExecutionError as exc:
        first = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()
        raise FxCourseError(
            got=f"an error while running {name}: {first[-1] if first else type(exc).__name__}",
            accepted="a notebook whose cells all run (deliberate failures tagged raises-exception)",
            fix="run the notebook in JupyterLab, fix the failing cell, or tag it raises-exception",
            where=where, zh=f"{where}：运行 {name} 时某个单元出错；请在 JupyterLab 中运行并修好该单元，"
                               "或给故意出错的单元加上 raises-exception 标签。",
        ) from None
    except (CellTimeoutError, DeadKernelError) as exc:
        what = "a cell ran longer than the time limit" if isinstance(exc, CellTimeoutError) else "the kernel died"
        what_zh = "某个单元超过了时间限制" if isinstance(exc, CellTimeoutError) else "内核崩溃了"
        raise FxCourseError(
            got=f"{what} while running {name}", accepted="a notebook whose cells finish",
            fix="run it in JupyterLab to find the cell", where=where,
            zh=f"{where}：运行 {name} 时{what_zh}；请在 JupyterLab 中运行它，找出是哪个单元。") from None
    finally:
        # nbclient shuts down only a kernel manager it made itself: stop ours, or running many
        # notebooks in one command (labs build, i18n export) keeps every kernel alive till the end.
        _stop(km)
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = merge_streams(cell.outputs)
    return nb


def keep_copy(path: Path, folder: Path, suffix: str | None = None) -> Path:
    """Copy ``path`` into ``folder`` as ``<stem>.<timestamp><suffix>`` (a new name each time:
    an earlier copy is never replaced); return where it went."""
    folder.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix if suffix is None else suffix
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target, n = folder / f"{path.stem}.{stamp}{suffix}", 1
    while target.exists() or target.is_symlink():
        n += 1
        target = folder / f"{path.stem}.{stamp}-{n}{suffix}"
    shutil.copy2(path, target)
    return target


def backup_folder(path: str | Path) -> Path:
    """Where ``write(..., keep=True)`` keeps what it replaces: ``backups/<folder>/`` in the course
    folder holding ``path`` (the nearest folder above it with ``course/`` or ``solutions/``), or
    ``backups/`` beside a notebook that is in no course."""
    path = Path(path).resolve()
    for folder in path.parents:
        if (folder / "course").is_dir() or (folder / "solutions").is_dir():
            return folder / BACKUPS / path.parent.relative_to(folder)
    return path.parent / BACKUPS


def write(nb: nbformat.NotebookNode, path: str | Path, *, keep: bool = False) -> Path | None:
    """Write ``nb`` to ``path`` through a temporary file, so a failed write loses nothing.

    With ``keep``, a file already at ``path`` whose bytes differ from the new ones is first
    copied into :func:`backup_folder`; the copy's path is returned (None when nothing was kept).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.fxcourse-tmp")
    kept = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nbformat.write(nb, tmp)
        if path.exists():
            shutil.copymode(path, tmp)
            if keep and path.read_bytes() != tmp.read_bytes():
                kept = keep_copy(path, backup_folder(path))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return kept


def prepare(path: str | Path) -> nbformat.NotebookNode:
    """Everything ``run`` checks before it starts a kernel: the notebook, read and checked."""
    path = Path(path)
    if path.suffix != ".ipynb":
        raise FxCourseError(got=str(path), accepted="the path of an existing .ipynb file",
                            fix="check the path, e.g. fxcourse nb run course/00_overview.ipynb",
                            where="nb run", zh=f"nb run：{path} 不是 .ipynb 文件；请检查路径，"
                                               "例如 fxcourse nb run course/00_overview.ipynb。")
    nb = read(path, where="nb run")
    check_writable(path)
    check_kernel(nb, path)
    return nb


def run(path: str | Path, *, timeout: int = 600) -> tuple[float, Path | None]:
    """Execute the notebook at ``path`` in place; return the seconds it took and where the
    version it replaced was kept (None when the bytes did not change)."""
    path = Path(path)
    nb = prepare(path)
    start = time.perf_counter()
    execute(nb, path.parent.resolve(), name=str(path), timeout=timeout)
    seconds = time.perf_counter() - start
    return seconds, write(nb, path, keep=True)


def source_hash(nb: nbformat.NotebookNode) -> str:
    """Hash of the cells' kinds and sources (not outputs): what a learner would edit."""
    digest = hashlib.sha256()
    for cell in nb.cells:
        digest.update(cell.cell_type.encode() + b"\0" + cell.source.encode() + b"\1")
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def kernel_language(lang: str | None) -> Iterator[None]:
    """``FXCOURSE_LANG`` set to ``lang`` (None: left as it is) while kernels start, so what a
    notebook's code prints follows it."""
    if lang is None:
        yield
        return
    old = os.environ.get(ENV)
    os.environ[ENV] = lang
    try:
        yield
    except FxCourseError as exc:  # worded while the variable was set: word it again for the reader
        _restore(old)
        if isinstance(getattr(exc, "en", None), str) and isinstance(getattr(exc, "zh", None), str):
            exc.args = (pick(exc.en, exc.zh),)
        raise
    finally:
        _restore(old)


def _restore(old: str | None) -> None:
    if old is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = old


def notebooks_in(paths: list[str | Path], where: str = "i18n") -> list[Path]:
    """The notebooks named by ``paths`` (files or folders; checkpoints skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(q for q in p.glob("*.ipynb"))
        elif p.suffix == ".ipynb" and p.is_file():
            out.append(p)
        else:
            raise FxCourseError(got=str(p), accepted="a .ipynb file or a folder holding notebooks",
                                fix="check the path", where=where,
                                zh=f"{where}：{p} 既不是 .ipynb 文件，也不是存放笔记本的文件夹；请检查路径。")
    return out
