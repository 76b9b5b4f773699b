"""Shared pytest fixtures and options for fxcourse's tests."""
from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="rewrite tests/golden/*.txt from the current output instead of comparing",
    )


@pytest.fixture
def golden(request: pytest.FixtureRequest):
    """``golden(name, text)`` compares ``text`` with ``tests/golden/<name>.txt``
    (after :func:`tests.goldens.normalise`); with ``--update-golden`` it rewrites the file."""
    from goldens import check_golden

    update = request.config.getoption("--update-golden")
    return lambda name, text: check_golden(name, text, update=update)
