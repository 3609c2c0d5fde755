"""Errors that carry where bad input came from, so the CLI and the app can show a clear message."""

from __future__ import annotations

from pathlib import Path


class DataError(Exception):
    """Bad input data: names the file, the row (1-based line number, if any) and the problem.

    The CLI prints ``str(error)`` and exits non-zero; the app shows it in the page. Never a traceback.
    """

    def __init__(self, problem: str, file: str | Path | None = None, row: int | None = None) -> None:
        self.problem = problem
        self.file = str(file) if file is not None else None
        self.row = row
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file
            if self.row is not None:
                where += f", row {self.row}"
            where += ": "
        elif self.row is not None:
            where = f"row {self.row}: "
        return where + self.problem
