"""depyf behind one function: decompile a code object, or say in one line why not.

depyf 0.20 cannot decompile every code object Dynamo writes under Python 3.11, and when
it struggles it may warn, log or write to stderr. :func:`decompile` keeps all of that out
of the notebook and turns a failure into a reason the viewer can show next to ``dis``.
"""
from __future__ import annotations

import contextlib
import io
import re
import types

from .._lang import only
from .._text import one_line_error, quiet

__all__ = ["decompile"]


def decompile(code: types.CodeType) -> tuple[str | None, str | None]:
    """``(source, None)`` when depyf decompiles ``code``, else ``(None, reason)``.

    >>> def f(x):
    ...     return x + 1
    >>> source, reason = decompile(f.__code__)
    >>> print(source.strip())
    def f(x):
        return x + 1
    >>> reason is None
    True
    """
    try:
        with quiet(stderr=True), contextlib.redirect_stdout(io.StringIO()):
            import depyf

            source = depyf.decompile(code)
    except Exception as exc:  # depyf raises many types; one line says which
        return None, only(f"depyf could not decompile this code ({_reason(exc)})",
                          f"depyf 无法反编译这段代码（{_reason(exc)}）")
    if not isinstance(source, str) or not source.strip():
        return None, only("depyf returned no source", "depyf 没有返回源码")
    return source.rstrip() + "\n", None


_INSTRUCTION = re.compile(r"Instruction\(opcode=\d+, opname='(\w+)'.*?offset=(\d+).*?\)")


def _reason(exc: BaseException) -> str:
    """``DecompilationError: Failed to decompile instruction SWAP at offset 488 in forward``.

    >>> _reason(RuntimeError("RuntimeError: Instruction(opcode=99, opname='SWAP', arg=2, offset=488, x=1) in f"))
    'RuntimeError: SWAP at offset 488 in f'
    """
    text = one_line_error(exc, limit=400)
    name = type(exc).__name__
    text = text.replace(f"{name}: {name}: ", f"{name}: ", 1)  # depyf repeats its type name
    text = _INSTRUCTION.sub(r"\1 at offset \2", text)
    return text if len(text) <= 160 else text[:159] + "…"
