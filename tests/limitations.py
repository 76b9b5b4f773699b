"""A function that runs without torch.compile and that Dynamo fails on, shared by the tests of
``capture`` and ``compare_capture`` (a custom op can be registered once per process).

Its custom op's fake kernel disagrees with the real one about the output's shape, so Dynamo's
fake-tensor propagation raises ``TorchRuntimeError`` while eager runs. (The older example, a
``try``/``except RuntimeError`` around a failing matmul, compiles with ``fullgraph=True`` since
torch 2.14: Dynamo takes the ``except`` branch while tracing.)
"""
from __future__ import annotations

import torch


@torch.library.custom_op("fxcourse_tests::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _twice_fake(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(x.shape[0] + 1)  # wrong on purpose: one element too many


def fake_disagrees(x: torch.Tensor) -> torch.Tensor:
    return twice(x) + x
