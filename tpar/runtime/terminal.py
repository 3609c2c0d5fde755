"""What the command line writes reaches a terminal as text only: names and notes read from files (a checkpoint's
metadata, a rules file, a data set's lineage) may hold escape sequences that would recolour the terminal, move
its cursor, rewrite the line shown or set its title, and direction overrides that reorder what is displayed.

:func:`printable_output` wraps ``sys.stdout`` and ``sys.stderr`` for the length of one command: every C0/C1
control character but tab, newline and carriage return, and every bidirectional override, is written as a
visible escape (``\\x1b``, ``\\u202e``), cursor movements included. A carriage return stays only as the first
character of a write -- how a progress bar redraws its line -- so text from a file cannot rewrite what is shown.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Iterator, TextIO

#: every control or bidi character but tab and newline, made visible (a carriage return: see :func:`printable`)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with each control and bidirectional-override character (:data:`_UNSAFE`) written as an escape; a
    carriage return that starts ``text`` is kept (a progress bar redrawing its line)."""
    head = "\r" if text.startswith("\r") else ""
    return head + _UNSAFE.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text[len(head):])


class PrintableStream:
    """A text stream that writes through :func:`printable`; everything else (flush, fileno, isatty, encoding
    ...) is the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(printable(text) if isinstance(text, str) else text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


@contextmanager
def printable_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`PrintableStream` within the block, restored after it
    (unless the block replaced them itself, as a silent distributed rank does)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(out), PrintableStream(err)
    wrapped_out, wrapped_err = sys.stdout, sys.stderr
    try:
        yield
    finally:
        if sys.stdout is wrapped_out:
            sys.stdout = out
        if sys.stderr is wrapped_err:
            sys.stderr = err
