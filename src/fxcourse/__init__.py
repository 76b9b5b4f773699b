"""fxcourse: helpers for a course on how PyTorch turns Python into graphs.

Heavy dependencies (torch, depyf, matplotlib, torch-mlir) are imported only when a name
that needs them is first used, so ``import fxcourse`` and ``fxcourse doctor`` stay fast
and keep working in a broken environment.

>>> import fxcourse
>>> fxcourse.FxCourseError.__name__
'FxCourseError'
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

from .errors import FxCourseError, refuses_bad_calls

__version__ = "0.1.0"

# public name -> module that defines it. The modules live one floor down (viewers/, pictures/,
# tooling/: see src/fxcourse/README.md) or have private names, so that importing one never
# replaces the function of the same name on the package.
_LAZY = {
    "graph_table": "viewers.graph_table",
    "GraphTable": "viewers.graph_table",
    "graph_diff": "viewers.graph_diff",
    "GraphDiff": "viewers.graph_diff",
    "bytecode": "viewers.bytecode",
    "Bytecode": "viewers.bytecode",
    "capture": "viewers.capture",
    "lowering": "viewers.lowering",
    "Lowering": "viewers.lowering",
    "Capture": "viewers.capture",
    "draw": "pictures.draw",
    "Drawing": "pictures.draw",
    "inductor_code": "viewers.inductor",
    "InductorCode": "viewers.inductor",
    "aot_graphs": "viewers.inductor",
    "AOTGraphs": "viewers.inductor",
    "bar_plot": "pictures.plot",
    "Plot": "pictures.plot",
    "compare_capture": "viewers.compare",
    "Comparison": "viewers.compare",
    "check": "checks",
    "CheckResult": "checks",
    "hint": "checks",
    "language": "_toggle",
    "pick": "_toggle",
    "progress": "tooling.progress",
    "Progress": "tooling.progress",
    "torch_logs": "_text",
    "no_torchscript_warning": "_text",
    "is_torchscript_deprecation": "_text",
    "zoo": None,  # a module
}

__all__ = ["FxCourseError", "__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'fxcourse' has no attribute {name!r}")
    module_name = _LAZY[name]
    if module_name is None:
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(f".{module_name}", __name__), name)
        if inspect.isfunction(value):  # a misspelt keyword or a missing argument: a FxCourseError, not a TypeError
            value = refuses_bad_calls(value)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
