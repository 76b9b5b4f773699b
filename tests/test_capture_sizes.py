"""Default views of a real model stay under about 100 KB; full=True still shows everything.

torchvision's efficientnet_b0 is the case that was reported: 4,494 guard requests made
capture's HTML 1.07 MB and bytecode's 1.3 MB.
"""
from __future__ import annotations

import pytest
import torch
import torch._dynamo

from fxcourse import bytecode, capture

LIMIT = 100_000  # bytes


@pytest.fixture(scope="module")
def efficientnet():
    torchvision = pytest.importorskip("torchvision")
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torchvision.models.efficientnet_b0(weights=None).eval()
    cap = capture(model, torch.randn(1, 3, 64, 64))
    yield model, cap
    torch._dynamo.reset()


def test_capture_views_are_folded_by_default(efficientnet):
    _, cap = efficientnet
    assert len(cap.guards) > 1000  # the case is still a big one
    html, text = cap.to_html(), cap.to_text()
    assert len(html.encode()) < LIMIT and len(text.encode()) < LIMIT
    assert "more lines (to_text(full=True) or to_html(full=True) shows all)" in html
    full = cap.to_html(full=True)
    assert len(full.encode()) > 5 * len(html.encode())
    assert all(g.replace("'", "&#x27;") in full for g in cap.guards[-5:])
    assert cap.graphs[0].code.strip().splitlines()[-1] in cap.to_text(full=True)


def test_bytecode_views_are_folded_by_default(efficientnet):
    model, _ = efficientnet
    view = bytecode(model)
    html, text = view.to_html(), view.to_text()
    assert len(html.encode()) < LIMIT and len(text.encode()) < LIMIT
    guards = view.sections[1].guards
    assert len(guards) > 1000 and f"guards ({len(guards)}: " in text
    assert "TENSOR_MATCH" in text.split(f"guards ({len(guards)}: ", 1)[1].splitlines()[0]
    full = view.to_text(full=True)
    assert guards[-1] in full and guards[-1] not in text
