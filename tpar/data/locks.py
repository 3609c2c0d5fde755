"""Exclusive reservations of a name on disk (a data set being saved, a checkpoint being trained), so
two processes never write the same place at once: a lock file created with O_EXCL (atomic on one
file system) holding the owner's pid; a lock whose process is gone is stale and taken over."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tpar.errors import DataError


def _owner(lock: Path) -> int | None:
    """The pid in ``lock``; None when the file is gone (released meanwhile); 0 when unreadable."""
    try:
        return int(lock.read_text().strip() or "0")
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return 0


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def acquire(lock: str | Path, what: str) -> Path:
    """Create ``lock`` exclusively, holding this process's pid, or raise :class:`DataError` naming
    ``what`` and the owner. The file appears with its content in one step (a hard link of a written
    temporary file), so no one ever reads a half-written lock; a lock whose process is gone is stale
    and taken over (two takers of one stale lock at the same instant is the one race left)."""
    lock = Path(lock)
    lock.parent.mkdir(parents=True, exist_ok=True)
    tmp = lock.with_name(f"{lock.name}.{os.getpid()}.{id(lock)}.tmp")
    tmp.write_text(str(os.getpid()))
    try:
        for _ in range(20):
            try:
                os.link(tmp, lock)
                return lock
            except FileExistsError:
                owner = _owner(lock)
                if owner is None:  # released between our attempt and the read: try again
                    continue
                if pid_alive(owner):
                    raise DataError(f"{what} is in use by another process (pid {owner}); try again when it "
                                    f"has finished", file=lock.parent) from None
                lock.unlink(missing_ok=True)  # stale: its process died without releasing it
        raise DataError(f"{what}: could not reserve {lock.name}", file=lock.parent)
    finally:
        tmp.unlink(missing_ok=True)


def release(lock: str | Path) -> None:
    """Remove ``lock`` if this process holds it."""
    lock = Path(lock)
    try:
        if lock.read_text().strip() == str(os.getpid()):
            lock.unlink()
    except OSError:
        pass


@contextmanager
def exclusive(lock: str | Path, what: str) -> Iterator[Path]:
    """``with exclusive(path, "data set 'x'"):`` -- :func:`acquire` for the block, released after."""
    path = acquire(lock, what)
    try:
        yield path
    finally:
        release(path)
