"""How a training run stops early: a callback's cancel, or SIGINT / SIGTERM at a step boundary."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TrainingCancelled(Exception):
    """Raised inside :func:`tpar.training.trainer.train` when a callback asks to stop; the resume file is kept."""


class TrainingInterrupted(TrainingCancelled):
    """Raised inside :func:`tpar.training.trainer.train` after SIGINT / SIGTERM, once the step in progress
    has finished and a resume snapshot of that point is written."""


@contextmanager
def deferred_signals() -> Iterator[list[int]]:
    """While training, SIGINT (Ctrl-C) and SIGTERM only set a flag (the list gets the signal number),
    so the loop can finish its step and write a resume snapshot before it stops -- nothing computed is
    lost and the parameters are never caught half-updated. Only in the main thread (signals go there)."""
    received: list[int] = []
    old = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
