"""``fxcourse doctor``: is this environment the one the course was tested with?

torch and torchvision are probed in a child process, so a broken install (the classic
``operator torchvision::nms does not exist``) is diagnosed instead of crashing the doctor.
"""
from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from importlib import metadata

from .._lang import ENV, Bilingual, current, normalise, pick, text
from .._pins import TORCH, TORCHVISION

__all__ = ["TESTED", "Finding", "Report", "diagnose", "diagnose_torchvision_error"]

TESTED = {"python": "3.11", "torch": TORCH, "torchvision": TORCHVISION, "depyf": "0.20.0",
          "nbval": "0.11", "jupyterlab": "4.6"}
_REINSTALL_CMD = f"pip install --force-reinstall 'torch=={TORCH},!={TORCH}+cpu' 'torchvision=={TORCHVISION}'"
REINSTALL = (f"{_REINSTALL_CMD}  (or run scripts/setup.sh again)",
             f"{_REINSTALL_CMD}（或重新运行 scripts/setup.sh）")
# Another release installed: the pair alone, without --force-reinstall (which would download
# every dependency again, several GB of NVIDIA libraries among them).
_MOVE_CMD = f"pip install 'torch=={TORCH},!={TORCH}+cpu' 'torchvision=={TORCHVISION}'"
MOVE = (f"{_MOVE_CMD}  (or run scripts/setup.sh again)", f"{_MOVE_CMD}（或重新运行 scripts/setup.sh）")


@dataclass(frozen=True)
class Finding:
    name: str
    ok: bool
    en: str
    zh: str
    fix: Bilingual = ""  # a command alone, or an (English, 中文) pair


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(f.ok for f in self.findings)

    def to_text(self) -> str:
        lang = current()
        lines = ["fxcourse doctor — " + pick("environment check", "环境检查")]
        for f in self.findings:
            mark = "ok  " if f.ok else "FAIL"
            if lang == "both":
                lines.append(f"  {mark} {f.name}: {f.en}")
                lines.append(f"       {' ' * len(f.name)}  {f.zh}")
            else:
                lines.append(f"  {mark} {f.name}: {f.en if lang == 'en' else f.zh}")
            if f.fix:
                lines.append(f"       {pick('fix', '修复', sep=' / ')}{'：' if lang == 'zh' else ': '}{text(f.fix)}")
        problems = sum(not f.ok for f in self.findings)
        verdict = (pick("healthy: everything the course needs is here", "环境正常：课程所需一切就绪")
                   if self.healthy else
                   pick(f"{problems} problem(s) found", f"发现 {problems} 个问题，请按上面的修复方法处理"))
        lines.append(verdict)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def diagnose_torchvision_error(message: str, torch_version: str, torchvision_version: str) -> Finding:
    """Turn torchvision's import error into a finding with the fix.

    >>> f = diagnose_torchvision_error("RuntimeError: operator torchvision::nms does not exist",
    ...                                "2.14.1+cpu", "0.29.1")
    >>> f.ok, "build" in f.en
    (False, True)
    """
    if "torchvision::nms does not exist" in message:
        return Finding(
            "torchvision", False,
            f"torchvision {torchvision_version} does not match torch {torch_version}: its compiled ops "
            "were built against another torch build (for example a CPU-only torch beside the index's "
            "torchvision)",
            f"torchvision {torchvision_version} 与 torch {torch_version} 的构建不匹配：它的编译算子是针对另一个 "
            "torch 构建的（例如仅 CPU 的 torch 配上索引里的 torchvision）",
            REINSTALL,
        )
    first = message.strip().splitlines()[-1] if message.strip() else "unknown error"
    return Finding("torchvision", False, f"import failed: {first}", f"导入失败：{first}", REINSTALL)


def torch_mismatch(installed: str) -> Finding:
    """The finding for a torch release other than the one the course is taught on.

    >>> f = torch_mismatch("2.13.0")
    >>> f.ok, "2.13.0" in f.en, TORCH in f.en, "stored outputs" in f.en
    (False, True, True, True)
    """
    return Finding(
        "torch", False,
        f"{installed} is installed, but the course is taught and tested on torch {TORCH}: its notebooks' "
        "stored outputs, the labs' checkers and the lectures' claims were made on that release, and "
        "another one warns, logs and compiles differently (for example TorchScript's deprecation "
        "warning class and Inductor's generated code)",
        f"已安装 {installed}，而课程是在 torch {TORCH} 上讲授和测试的：笔记本中保存的输出、实验的检查器和讲义中的"
        "结论都来自这个版本，换成别的版本后，警告、日志和编译结果都会不同（例如 TorchScript 弃用警告的类别、"
        "Inductor 生成的代码）",
        MOVE,
    )


_PROBE = r"""
import json, sys
out = {}
try:
    import torch
    out["torch"] = torch.__version__
except Exception as e:
    out["torch_error"] = f"{type(e).__name__}: {e}"
else:
    try:
        import torchvision
        out["torchvision"] = torchvision.__version__
    except Exception as e:
        out["torchvision_error"] = f"{type(e).__name__}: {e}"
        try:
            from importlib.metadata import version
            out["torchvision_dist"] = version("torchvision")
        except Exception:
            pass
print(json.dumps(out))
"""


# Lecture 10's lowering stack: imported in a child process (torch_mlir imports torch).
LOWERING = {"torch-mlir": ("torch_mlir.fx", "20261001"), "iree-base-compiler": ("iree.compiler", "3.13.0"),
            "iree-base-runtime": ("iree.runtime", "3.13.0"), "ml_dtypes": ("ml_dtypes", None)}
_LOWERING_CMD = ("pip install 'torch-mlir==20261001' 'iree-base-compiler==3.13.0' 'iree-base-runtime==3.13.0' "
                 "ml_dtypes")
LOWERING_FIX = (f"{_LOWERING_CMD}  (after torch; or run scripts/setup.sh again)",
                f"{_LOWERING_CMD}（在 torch 之后安装；或重新运行 scripts/setup.sh）")
_LOWERING_PROBE = r"""
import importlib, json
errors = {}
for dist, module in %r:
    try:
        importlib.import_module(module)
    except Exception as e:
        errors[dist] = f"{type(e).__name__}: {e}".splitlines()[0]
print(json.dumps({"lowering_import_errors": errors}))
"""


def lowering_findings(python: str = sys.executable) -> list[Finding]:
    """One finding per package of lecture 10's lowering stack: installed, tested version, imports."""
    pairs = [(dist, module) for dist, (module, _) in LOWERING.items()]
    errors: dict[str, str] = {}
    try:
        probe = subprocess.run([python, "-c", _LOWERING_PROBE % (pairs,)], capture_output=True, text=True,
                               timeout=300)
        reply = json.loads(probe.stdout.strip().splitlines()[-1])
        errors = reply.get("lowering_import_errors", {})  # absent: not a Python that ran the probe
    except (json.JSONDecodeError, IndexError, OSError, subprocess.TimeoutExpired) as exc:
        errors = {dist: f"the import check did not answer ({type(exc).__name__})" for dist in LOWERING}
    findings = []
    for dist, (_, tested) in LOWERING.items():
        v = _version(dist)
        ok = v is not None and (tested is None or _matches(v, tested)) and dist not in errors
        if v is None:
            en, zh = "not installed (lecture 10 and lab 10 need it)", "未安装（第 10 讲和实验 10 需要它）"
        elif dist in errors:
            en, zh = f"{v} installed, but import failed: {errors[dist]}", f"已安装 {v}，但导入失败：{errors[dist]}"
        else:
            shown = f"tested: {tested}" if tested else "any version"
            en, zh = f"{v} ({shown})", f"{v}（{'已测试：' + tested if tested else '版本不限'}）"
        findings.append(Finding(dist, ok, en, zh, "" if ok else LOWERING_FIX))
    return findings


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _matches(version: str, tested: str) -> bool:
    base = version.split("+")[0]
    return base == tested or base.startswith(tested + ".")


def diagnose(python: str = sys.executable) -> Report:
    """Check the tested matrix, the torch/torchvision pair, a C++ compiler, Graphviz's
    ``dot`` and a CJK font (for pictures and plots), depyf and nbval."""
    report = Report()
    add = report.findings.append
    py = platform.python_version()
    supported = (3, 10) <= sys.version_info[:2] <= (3, 13)  # pyproject's requires-python
    add(Finding("python", supported, f"{py} (tested: {TESTED['python']})", f"{py}（已测试：{TESTED['python']}）",
                "" if supported else ("use Python 3.11 (3.10–3.13 are supported)",
                                      "请使用 Python 3.11（支持 3.10–3.13）")))
    probe = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=300)
    try:
        found = json.loads(probe.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        found = {"torch_error": (probe.stderr.strip().splitlines() or ["no output"])[-1]}
    tv_dist = found.get("torchvision_dist", "?")
    if "torch_error" in found:
        add(Finding("torch", False, f"import failed: {found['torch_error']}",
                    f"导入失败：{found['torch_error']}", REINSTALL))
    else:
        tv = found["torch"]
        ok = _matches(tv, TESTED["torch"])
        if ok:
            add(Finding("torch", True, f"{tv} (tested: {TESTED['torch']})", f"{tv}（已测试：{TESTED['torch']}）"))
        else:
            add(torch_mismatch(tv))
        if "torchvision_error" in found:
            finding = diagnose_torchvision_error(found["torchvision_error"], tv, tv_dist)
            if not ok:  # torch itself is another release: moving the pair fixes both
                finding = Finding(finding.name, False, finding.en, finding.zh, MOVE)
            add(finding)
        else:
            tvv = found["torchvision"]
            ok = _matches(tvv, TESTED["torchvision"])
            add(Finding("torchvision", ok, f"{tvv} (tested: {TESTED['torchvision']})",
                        f"{tvv}（已测试：{TESTED['torchvision']}）", "" if ok else MOVE))
    compiler = next((c for c in ("g++", "c++", "clang++") if shutil.which(c)), None)
    add(Finding("C++ compiler", compiler is not None,
                f"{compiler} found (Inductor's CPU backend compiles C++)" if compiler else
                "none found; torch.compile's default backend (Inductor) needs one on CPU",
                f"找到 {compiler}（Inductor 的 CPU 后端需要编译 C++）" if compiler else
                "未找到；torch.compile 默认后端 Inductor 在 CPU 上需要 C++ 编译器",
                "" if compiler else ("install g++ (Debian/Ubuntu: apt-get install g++)",
                                     "安装 g++（Debian/Ubuntu：apt-get install g++）")))
    add(_graphviz_finding())
    add(_cjk_font_finding())
    for dist in ("depyf", "nbval", "jupyterlab"):
        v = _version(dist)
        ok = v is not None and _matches(v, TESTED[dist])
        add(Finding(dist, ok, f"{v} (tested: {TESTED[dist]})" if v else "not installed",
                    f"{v}（已测试：{TESTED[dist]}）" if v else "未安装",
                    "" if ok else ("run scripts/setup.sh (or pip install -e .)",
                                   "运行 scripts/setup.sh（或 pip install -e .）")))
    report.findings.extend(lowering_findings(python))
    add(_language_finding())
    return report


def _graphviz_finding() -> Finding:
    """``dot`` draws every picture of the course (``fxcourse.draw``)."""
    from ..pictures.draw import dot_missing_message

    dot = shutil.which("dot")
    version = ""
    if dot is not None:
        try:
            run = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=30)
            version = (run.stderr or run.stdout).strip().splitlines()[0] if run.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError, IndexError):
            version = ""
    if version:
        return Finding("graphviz", True, f"{version} (draws the course's pictures)",
                       f"{version}（用于绘制课程中的计算图）")
    en, zh = dot_missing_message()
    what = "`dot` found but it does not run" if dot else "`dot` not found"
    what_zh = "找到 `dot` 但无法运行" if dot else "未找到 `dot`"
    return Finding("graphviz", False, f"{what}: fxcourse.draw cannot render pictures",
                   f"{what_zh}：fxcourse.draw 无法绘图。", (en, zh))


def _cjk_font_finding() -> Finding:
    """A CJK font lets plots show their 中文 labels (fontconfig lists it)."""
    fc_list = shutil.which("fc-list")
    fonts = ""
    if fc_list is not None:
        try:
            fonts = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True,
                                   timeout=60).stdout
        except (OSError, subprocess.SubprocessError):
            fonts = ""
    families = sorted({line.split(",")[0].strip() for line in fonts.splitlines() if line.strip()})
    if families:
        return Finding("CJK font", True, f"{families[0]} (plots show Chinese labels)",
                       f"{families[0]}（图表可显示中文标签）")
    return Finding("CJK font", False, "no Chinese font found: plots show their English labels only",
                   "未找到中文字体：图表只显示英文标签",
                   ("install a CJK font: Debian/Ubuntu `sudo apt-get install fonts-noto-cjk` "
                    "(or run scripts/setup.sh again)",
                    "安装中文字体：Debian/Ubuntu 上运行 `sudo apt-get install fonts-noto-cjk`"
                    "（或重新运行 scripts/setup.sh）"))


def _language_finding() -> Finding:
    """The reader's language (``FXCOURSE_LANG``) and what one-language reading needs in
    JupyterLab: cell tags as CSS classes, and the 中文 interface."""
    import os

    raw = os.environ.get(ENV)
    chosen = normalise(raw)
    missing = [d for d in ("jupyterlab-celltagsclasses", "jupyterlab-language-pack-zh-CN") if _version(d) is None]
    if chosen is None:
        return Finding("language", False, f"{ENV}={raw!r} is not a language the course knows; reading both",
                       f"{ENV}={raw!r} 不是课程支持的语言；按中英文对照显示",
                       (f"set {ENV} to en, zh or both", f"把 {ENV} 设为 en、zh 或 both"))
    names = {"en": ("English only", "只显示英文"), "zh": ("Chinese only", "只显示中文"),
             "both": ("English and Chinese", "中英文对照")}
    en, zh = names[chosen]
    if missing:
        return Finding("language", False, f"{en}; JupyterLab cannot show one language: {', '.join(missing)} missing",
                       f"{zh}；JupyterLab 无法只显示一种语言：缺少 {', '.join(missing)}",
                       ("run scripts/setup.sh again", "重新运行 scripts/setup.sh"))
    return Finding("language", True, f"{en} ({ENV}; `bash scripts/course.sh --lang zh` reads Chinese only)",
                   f"{zh}（{ENV}；`bash scripts/course.sh --lang en` 只显示英文）")
