"""Shared pieces of the lecture-claim tests (test_lectures_*.py, test_lecture_*.py).

``fresh_dynamo`` is an autouse fixture: import it into a test module and every test there
starts and ends with Dynamo's caches and counters empty and torch's warnings quiet.
``Graphs`` is a backend that keeps each graph it is handed.
"""
from __future__ import annotations

import logging

import pytest
import torch
import torch._dynamo
from torch._dynamo.utils import counters


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    counters.clear()
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
    torch._dynamo.reset()


class Graphs(list):
    """A backend that keeps every graph it is given and runs it as captured."""

    def __call__(self, gm, example_inputs):
        self.append(gm)
        return gm.forward

    def ops(self) -> list[list[str]]:
        return [[getattr(n.target, "__name__", str(n.target)) for n in gm.graph.nodes
                 if n.op in ("call_function", "call_method")] for gm in self]
