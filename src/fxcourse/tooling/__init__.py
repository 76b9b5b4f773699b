"""Tooling: what runs the course rather than what a lesson shows.

The ``fxcourse`` command (``cli``) and what it calls: ``doctor``, ``labs`` (build, check and
reset labs from solutions), ``i18n`` (bilingual checks and one-language copies), ``nbrun``
(execute notebooks deterministically; hashes and kernel language shared by labs and i18n),
``slides``, ``grading``, ``progress``, ``glossary``, and ``trytorch`` (a pytest plugin that
measures a torch release before the course moves to it). The top floor: it may import every
other folder, and nothing below imports it; see ``src/fxcourse/README.md``.
"""
