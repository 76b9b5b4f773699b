"""A small course for the command tests: one lab source (lab98) and, when ``built``, its generated
lab, not executed. Shared by the bad-input tests and the bad-input matrix."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
SOLUTION = "def add_one(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION\n"


def small_course(root: Path, *, built: bool = True) -> Path:
    """Write the course under ``root`` (created) and return ``root``."""
    from fxcourse.tooling import labs

    (root / "solutions").mkdir(parents=True)
    nb = new_notebook(cells=[new_markdown_cell("# Lab 98", metadata={"tags": ["lang-en"]}),
                             new_markdown_cell("# 实验 98", metadata={"tags": ["lang-zh"]}),
                             new_code_cell(SOLUTION), new_code_cell("print('checked')")],
                      metadata={"kernelspec": KERNELSPEC})
    nbformat.write(nb, root / "solutions" / "lab98_demo.ipynb")
    if built:
        labs.build(root, execute=False)
    return root
