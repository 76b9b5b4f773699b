"""The torch pair the course is taught and tested on: the one place that names it.

scripts/setup.sh, scripts/wheelhouse.sh and ``fxcourse doctor`` read these two lines; the
files that cannot read Python (pyproject.toml, environment.yml, binder/, the README, the book)
carry the same numbers, and tests/test_pins.py fails when any of them disagrees. To move the
course to another release, try it first with ``bash scripts/try-torch.sh VERSION``.
"""
TORCH = "2.14.1"
TORCHVISION = "0.29.1"
