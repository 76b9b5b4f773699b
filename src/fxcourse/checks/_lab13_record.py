"""Record the rows lab13.3's checker builds its tables from: real ``compare_capture`` rows of
small models, each doing one thing real models do (a print, ``.item()``, a softmax without
``dim``, a data-dependent branch, no ops at all, integer inputs, many ops, many breaks …).

The checker gives these rows times of its own, so an answer that reads anything but the
speed-up (a reason's words, a warning, a graph count) meets a row that carries it and wins.
Run ``python -m fxcourse.checks._lab13_record`` after a torch upgrade to record them again;
``tests/test_checks_lab13.py`` says when the recording no longer matches what torch does.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

#: where the recording lives, beside the checker
RECORDED = Path(__file__).with_name("lab13_rows.json")
#: paths recorded (the compiled ones take minutes; their rows stay the checker's own)
RECORDED_PATHS = ["torch.jit.trace", "torch.jit.script", "torch.fx.symbolic_trace", "dynamo fullgraph=True",
                  "dynamo fullgraph=False", "torch.export.export"]


class Printing(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        print(end="")
        return h.relu()


class ItemScale(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / (x.abs().max().item() + 1.0)


class SoftmaxNoDim(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softmax(x)  # noqa: the implicit dim warns on every path


class Same(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class Lookup(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.e = nn.Embedding(10, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.e(ids).sum(1)


class SixPrints(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * 1.5
        print(end="")
        x = x * 1.5
        print(end="")
        x = x * 1.5
        print(end="")
        x = x * 1.5
        print(end="")
        x = x * 1.5
        print(end="")
        x = x * 1.5
        print(end="")
        return x + 1


class PrintInALoop(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(6):  # a break inside a loop: Dynamo gives up on the frame (0 graphs, 1 break)
            x = x * 1.5
            print(end="")
        return x + 1


class ManyOps(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for k in range(25):
            x = torch.sin(x) * (1.0 + k / 100)
        return x


class ShapeIf(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 1:
            return x.relu()
        return x


class AlwaysBranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.abs()
        if h.sum() > -1.0:  # always taken: the trace matches, Dynamo still breaks
            return h * 2
        return h


class NumpyUnique(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.sort(x.detach().numpy(), axis=1)) + x * 0


class Tuple3(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return x + 1, x * 2, x.t()


class Warny(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = int(x.shape[0])
        s = float(x.sum())
        m = bool(x.max() > -100.0)
        return x * n + s * 0 + (1.0 if m else 0.0) + x.tolist()[0][0] * 0


class FourIfs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # each always taken, so the trace matches; Dynamo breaks at each
        if (x * x).sum() >= -1.0:
            x = x + 0.5
        if (x * x).sum() >= -2.0:
            x = x * 1.5
        if (x * x).sum() >= -3.0:
            x = x - 0.25
        if (x * x).sum() >= -4.0:
            x = x.relu()
        return x


class ManyWarnings(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = float(np.abs(x.detach().numpy()).max())
        h = x.abs()
        if h.sum() > -1.0:
            h = h * 2
        return F.softmax(h) * s  # noqa: the implicit dim warns


MODELS = {"Printing": (Printing, lambda: torch.randn(3, 4)), "ItemScale": (ItemScale, lambda: torch.randn(3, 4)),
          "SoftmaxNoDim": (SoftmaxNoDim, lambda: torch.randn(3, 4)), "Same": (Same, lambda: torch.randn(2, 3)),
          "Lookup": (Lookup, lambda: torch.randint(0, 10, (2, 5))), "SixPrints": (SixPrints, lambda: torch.randn(3)),
          "PrintInALoop": (PrintInALoop, lambda: torch.randn(3)),
          "ManyOps": (ManyOps, lambda: torch.randn(8)), "ShapeIf": (ShapeIf, lambda: torch.randn(3, 4)),
          "AlwaysBranch": (AlwaysBranch, lambda: torch.randn(3, 4)),
          "NumpyUnique": (NumpyUnique, lambda: torch.randn(3, 4)), "Tuple3": (Tuple3, lambda: torch.randn(3, 4)),
          "Warny": (Warny, lambda: torch.randn(3, 4)), "FourIfs": (FourIfs, lambda: torch.randn(3, 4)),
          "ManyWarnings": (ManyWarnings, lambda: torch.randn(3, 4))}


def record() -> list[dict[str, Any]]:
    """Every row of every model that worked and matched eager, with its fields in English and 中文
    (``seconds``, the capture time, is this machine's and differs from run to run)."""
    from .._lang import set_language
    from ..viewers.compare import compare_capture

    rows: list[dict[str, Any]] = []
    for name, (cls, example) in MODELS.items():
        torch.manual_seed(0)
        model, x = cls().eval(), example()
        tables = {}
        for lang in ("en", "zh"):
            set_language(lang)
            try:
                with torch.no_grad():
                    tables[lang] = compare_capture(model, x, paths=RECORDED_PATHS)
            finally:
                set_language(None)
        for en, zh in zip(tables["en"].rows, tables["zh"].rows):
            if en.worked and en.matches:
                rows.append({"model": name, "method": en.method, "reason": [en.reason, zh.reason],
                             "note": [en.note, zh.note],
                             # logged records depend on what ran before in the process (Dynamo logs some once)
                             # and on the logging level a harness set: they are left out
                             "warnings": [w for w in en.warnings if not w.startswith("log ")], "graphs": en.graphs,
                             "ops": en.ops, "breaks": en.breaks, "seconds": round(en.seconds, 4),
                             "second": [tables["en"].second, tables["zh"].second]})
    return rows


def drifted(rows: list[dict[str, Any]]) -> list[str]:
    """Where freshly recorded rows differ from the stored ones (capture times aside)."""
    stored = json.loads(RECORDED.read_text(encoding="utf-8"))
    key = lambda row: (row["model"], row["method"])  # noqa: E731
    old, new = ({key(r): {k: v for k, v in r.items() if k != "seconds"} for r in rs} for rs in (stored, rows))
    return [f"{m} / {p}: " + ("new" if (m, p) not in old else "gone" if (m, p) not in new else
                              ", ".join(k for k in new[m, p] if new[m, p][k] != old[m, p].get(k)))
            for m, p in sorted(set(old) | set(new)) if old.get((m, p)) != new.get((m, p))]


def main(argv: list[str] | None = None) -> int:
    """Record and write the rows; with ``--check``, only say where they drifted (exit 1 if they did)."""
    args = sys.argv[1:] if argv is None else argv
    rows = record()
    if "--check" in args:
        drift = drifted(rows)
        print("\n".join(drift) if drift else f"{len(rows)} rows of {len(MODELS)} models as recorded")
        return 1 if drift else 0
    RECORDED.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows)} rows of {len(MODELS)} models written to {RECORDED.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
