"""Run a fragile step in a child process first, so that a crash takes only the child.

``torch.jit.trace`` can crash the whole interpreter (a segmentation fault, exit 139) on
code it was never meant to see, e.g. a ``try``/``except`` around a matmul that raises
while tracing. In a notebook that would kill the learner's kernel. :func:`crash_of`
runs the step in a forked child with its output discarded and reports how the child
died; the caller then runs the step for real only when the child survived.
"""
from __future__ import annotations

import faulthandler
import io
import os
import signal
import sys
import time
import warnings
from typing import Any, Callable

from .._lang import only

__all__ = ["crash_of"]

TIMEOUT_S = 300.0


def crash_of(step: Callable[[], Any], timeout: float = TIMEOUT_S) -> str:
    """"" when ``step()`` returns or raises normally in a child process; otherwise one
    line saying how the child died (a signal, or no answer within ``timeout`` seconds).

    Where ``os.fork`` does not exist (Windows), the step is not pre-checked ("").

    >>> crash_of(lambda: 1 + 1)
    ''
    >>> crash_of(lambda: os.kill(os.getpid(), signal.SIGSEGV))
    'crashed the process (SIGSEGV)'
    """
    if not hasattr(os, "fork"):
        return ""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: silent, one thread, never returns to the caller's code
        status = 0
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            faulthandler.disable()  # it writes to its own copy of stderr (pytest, IPython enable it)
            sys.stdout = sys.stderr = io.StringIO()
            warnings.simplefilter("ignore")
            import torch

            torch.set_num_threads(1)
            step()
        except BaseException:  # a Python error is not a crash: the real run reports it
            status = 1
        os._exit(status)
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return only(f"did not finish within {timeout:.0f} s in a child process",
                        f"在子进程中 {timeout:.0f} 秒内没有结束")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return only(f"crashed the process ({name})", f"让进程崩溃了（{name}）")
    return ""
