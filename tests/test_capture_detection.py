"""The reported case: torchvision's Faster R-CNN, where capture, compare_capture and
Dynamo's own numbers used to disagree (17, 8 and 11 breaks)."""
from __future__ import annotations

import pytest
import torch

from fxcourse import capture
from test_capture import dynamo_logged_breaks


def _model():
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return torchvision.models.detection.fasterrcnn_mobilenet_v3_large_320_fpn(
        weights=None, weights_backbone=None).eval()


def test_faster_rcnn_breaks_match_dynamos_log_and_repeat():
    images = [torch.rand(3, 160, 160, generator=torch.Generator().manual_seed(1))]
    logged = dynamo_logged_breaks(_model(), (images,))  # a fresh model: its first call
    model = _model()
    first = capture(model, images)
    again = capture(model, images)  # the model caches its pooler scales on a first call;
    assert first.break_count == logged >= 10  # capture puts them back, so it repeats itself
    assert (again.graph_count, again.break_count) == (first.graph_count, first.break_count)
    assert any(b.reason.startswith("Dynamic shape operator") for b in first.breaks)
