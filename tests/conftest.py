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


#: The slowest test files and notebooks, in seconds on 2 cores with a cold compile cache (a whole run's
#: per-file sums). pytest-xdist hands out whole files (``--dist loadscope``); in collection order
#: (``--no-loadscope-reorder``) the longest go first, so no worker is left running one of them alone at
#: the end. Only the order changes: every test still runs, in its file's own order.
_SLOW_FIRST = {
    "tests/test_checks_lab13.py": 554, "course/13_capstone.ipynb": 359, "tests/test_bundle.py": 232,
    "tests/test_lectures_11_12.py": 187, "tests/test_checks_lab06.py": 141, "tests/test_browser.py": 118,
    "tests/test_lecture_06.py": 96, "tests/test_workshop.py": 91, "course/12_saving_compiled.ipynb": 91,
    "tests/test_checks_lab08.py": 88, "tests/test_checks_lab07.py": 87, "tests/test_lecture_09.py": 73,
    "tests/test_checks_lab09.py": 70, "course/09_aot_inductor.ipynb": 69, "tests/test_checks_lab11.py": 67,
    "tests/test_checks_lab10.py": 66, "course/11_custom_ops.ipynb": 63, "tests/test_book.py": 54,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest files first (see ``_SLOW_FIRST``); a stable sort, so each file keeps its order."""
    items.sort(key=lambda item: -_SLOW_FIRST.get(item.nodeid.split("::", 1)[0], 0))
