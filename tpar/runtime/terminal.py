"""What the command line writes reaches a terminal as text only: names and notes read from files (a checkpoint's
metadata, a rules file, a data set's lineage) may hold escape sequences that would recolour the terminal, move
its cursor, rewrite the line shown or set its title, and direction overrides that reorder what is displayed.

:func:`printable_output` wraps ``sys.stdout`` and ``sys.stderr`` for the length of one command: every C0/C1
control character but tab, newline and carriage return, and every bidirectional override, is written as a
visible escape (``\\x1b``, ``\\u202e``). The carriage return stays (progress bars redraw their line with it), as
does tqdm's own cursor-up sequence for its bars.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from typing import Iterator, TextIO

#: tqdm's cursor-up (ESC [ A), kept; any other control or bidi character, made visible
_UNSAFE = re.compile("(\x1b\\[A)|([\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069])")


def printable(text: str) -> str:
    """``text`` with each control and bidirectional-override character (:data:`_UNSAFE`) written as an escape."""
    return _UNSAFE.sub(lambda m: m.group(1) or m.group(2).encode("unicode_escape").decode("ascii"), text)


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
