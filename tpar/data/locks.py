"""Exclusive reservations of a name on disk (a data set being saved, a checkpoint being trained), so
two processes never write the same place at once: a lock file created with O_EXCL (atomic on one
file system) holding the owner's pid and its start time (:func:`process_token`); a lock whose process is gone
is stale and taken over -- also when its pid now belongs to another process (pids are reused, in a container
from 1 up: hostile audit 39 #6). The start time comes from /proc (Linux); where there is none (macOS, Windows) a
token is the pid alone and a reused pid still counts as the owner (the message then names the lock to remove)."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tpar.errors import DataError


#: a lock file holds one process token: anything longer or other is a user's file under that name, never deleted
MAX_LOCK_BYTES = 32


def proc_stat(pid: int) -> tuple[str, str | None] | None:
    """(state, start time) of process ``pid`` from /proc/<pid>/stat: its state letter ("Z": a zombie) and when it
    started (clock ticks since boot, field 22); None where /proc does not show it (no such process, or a system
    without /proc: macOS, Windows)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if not fields:
        return None
    return fields[0], (fields[19] if len(fields) > 19 and fields[19].isdigit() else None)


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (:func:`proc_stat`), None where unknown."""
    got = proc_stat(pid)
    return got[1] if got else None


def process_token(pid: int | None = None) -> str:
    """What names a process for good: "<pid>:<start time>" (a pid alone where the start time is unknown); this
    process's by default."""
    pid = os.getpid() if pid is None else pid
    start = _start_time(pid)
    return f"{pid}:{start}" if start else str(pid)


def parse_token(text: str) -> tuple[int, str | None] | None:
    """(pid, start time or None) of a :func:`process_token`'s text, None when it is not one."""
    pid, _, start = text.strip().partition(":")
    if not pid.isdigit() or (start and not start.isdigit()) or len(pid) > 12:
        return None
    return int(pid), (start or None)


def token_alive(token: tuple[int, str | None]) -> bool:
    """Whether the process a token names still runs: its pid exists and, where the token records it, started
    when the token says (else the pid was reused by another process)."""
    pid, start = token
    if not pid_alive(pid):
        return False
    if start is None:
        return True
    now = _start_time(pid)
    return now is None or now == start


def _owner(lock: Path) -> tuple[int, str | None] | None:
    """The process token in ``lock``; None when the file is gone (released meanwhile). A file that is not a lock
    of ours (not a regular file, longer than a token, not a token: a user's file that happens to bear the name)
    raises :class:`DataError`: taking it over as stale would delete it."""
    import stat

    try:
        st = os.lstat(lock)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LOCK_BYTES:
            raise ValueError
        token = parse_token(lock.read_text())
        if token is None:
            raise ValueError
        return token
    except FileNotFoundError:
        return None
    except (OSError, ValueError, UnicodeDecodeError):
        raise DataError("exists and is not a tpar lock file (one process id and start time): it is left as it is; move it, or "
                        "choose another output name", file=lock) from None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # none, or no pid at all
        return False
    except PermissionError:
        return True
    return True


def lock_path(path: str | Path) -> Path:
    """The lock file that reserves ``path`` (``x.tpar`` -> ``x.tpar.lock``): one name for every writer
    of a file (training, calibration), so they exclude each other."""
    path = Path(path)
    return path.with_name(path.name + ".lock")


def acquire(lock: str | Path, what: str, wait: float = 0.0) -> Path:
    """Create ``lock`` exclusively, holding this process's pid, or raise :class:`DataError` naming
    ``what`` and the owner -- after waiting up to ``wait`` seconds for the owner to release it (a short
    read-modify-write waits its turn; a long job is refused at once). The file appears with its
    content in one step (a hard link of a written temporary file), so no one ever reads a half-written
    lock; a lock whose process is gone is stale and taken over (two takers of one stale lock at the
    same instant is the one race left). Threads of one process exclude each other too: the holder's
    pid is then this process's own, which counts as alive."""
    lock = Path(lock)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        tmp = lock.with_name(f"{lock.name}.{os.getpid()}.{id(lock)}.{time.monotonic_ns()}.tmp")
        tmp.write_text(process_token())
    except OSError as e:
        raise DataError(f"{what}: cannot reserve it here ({e.strerror or e})", file=lock.parent) from None
    deadline = time.monotonic() + max(0.0, wait)
    try:
        tries = 0
        while True:
            try:
                os.link(tmp, lock)
                return lock
            except FileExistsError:
                owner = _owner(lock)
                if owner is None:  # released between our attempt and the read: try again
                    tries += 1
                    if tries > 1000:
                        raise DataError(f"{what}: could not reserve {lock.name}", file=lock.parent) from None
                    continue
                if token_alive(owner):
                    if time.monotonic() < deadline:
                        time.sleep(0.05)
                        continue
                    raise DataError(f"{what} is in use by another process (pid {owner[0]}); try again when it has "
                                    f"finished (if no tpar process is at work there, remove this lock file)",
                                    file=lock) from None
                lock.unlink(missing_ok=True)  # stale: its process died without releasing it
    finally:
        tmp.unlink(missing_ok=True)


def release(lock: str | Path) -> None:
    """Remove ``lock`` if this process holds it."""
    lock = Path(lock)
    try:
        if lock.read_text().strip() == process_token():
            lock.unlink()
    except OSError:
        pass


@contextmanager
def exclusive(lock: str | Path, what: str, wait: float = 0.0) -> Iterator[Path]:
    """``with exclusive(path, "data set 'x'"):`` -- :func:`acquire` for the block, released after."""
    path = acquire(lock, what, wait)
    try:
        yield path
    finally:
        release(path)
