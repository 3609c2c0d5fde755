"""Keeping a long scoring or training process's memory bounded.

glibc's ``malloc`` serves blocks above its *mmap threshold* with fresh mappings that go back to the system
when freed, and smaller ones from its heap. The threshold is dynamic: each time a mapped block is freed it
rises to that block's size (up to 32 MiB on 64-bit). A scoring pass allocates and frees one (B, E) score matrix
after another -- 64 x 23,033 float64 = 11.8 MB per batch on ICEWS18 -- so after the first few they all come from
the heap, which fragments and does not shrink: ``tpar evaluate`` of a two-model composite on the whole ICEWS18
test split (99,090 questions) grew to 24 GB and was killed by the kernel at 43% (2026-11-27). Setting the
threshold explicitly turns the adjustment off; with 8 MiB, measured on 5,000 ICEWS18 test questions (one thread):
peak memory 0.73 GB instead of 3.7 GB, for 15% more time (fresh mappings are zeroed by the kernel). Blocks below
8 MiB -- every score matrix of ICEWS14-sized data -- are served as before.

A value the user gives in ``MALLOC_MMAP_THRESHOLD_`` or ``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=…`` (glibc
reads both at start-up) is left alone."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

#: ``mallopt``'s parameter number for the mmap threshold (glibc's malloc.h)
M_MMAP_THRESHOLD = -3
#: blocks of this size or more are mapped and returned to the system when freed
MMAP_THRESHOLD_BYTES = 8 * 2 ** 20

_applied: bool | None = None


def bound_heap_growth(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix glibc's mmap threshold at ``threshold`` bytes for this process (once); True when it is in force
    (set now or before, or by the user's environment), False where there is no glibc
    (macOS, Windows, musl) -- there nothing changes."""
    global _applied
    if _applied is not None:
        return _applied
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or "mmap_threshold" in os.environ.get("GLIBC_TUNABLES", ""):
        _applied = True
        return True
    _applied = False
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _applied = bool(libc.mallopt(M_MMAP_THRESHOLD, int(threshold)))
        except (OSError, AttributeError):  # no glibc here (musl has no mallopt): nothing to tune
            _applied = False
    return _applied
