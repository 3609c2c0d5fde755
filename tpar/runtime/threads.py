"""How many CPU threads a process of this package computes with.

torch's CPU kernels run on OpenMP threads that spin at every barrier. When a process asks for more
threads than the machine has idle cores, one of them is descheduled and every barrier waits for it:
measured here, exact training with 2 threads on 2 cores while one other process was busy ran at 780 ms
per question against 41 ms with one thread (19x). A process that takes only the cores that are free
slows in proportion to the load instead.

:func:`choose_threads` is the one policy: an explicit request wins; otherwise the cores this process
may run on, minus the other runnable work the load average shows, at least one. Training jobs (CLI
and the app's worker), evaluation and ``tpar bench`` call it before their first torch operation.
"""

from __future__ import annotations

import os

#: a user's pin, read when no explicit number is passed (like OMP_NUM_THREADS, which torch also reads)
THREADS_ENV = "TPAR_THREADS"


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def busy_cores(own_threads: int = 0) -> float:
    """Cores other work keeps busy: the 1-minute load average (runnable processes, this one's running
    threads included) minus ``own_threads``; 0 where the system does not report a load."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0
    return max(0.0, load - own_threads)


def choose_threads(requested: int | None = None, *, own_threads: int = 0) -> int:
    """Threads to compute with: ``requested`` when > 0, else ``$TPAR_THREADS`` or ``$OMP_NUM_THREADS``
    when set, else the
    available cores minus those other work keeps busy (rounded to the nearest whole core), at least 1.

    ``own_threads``: threads of this process already counted in the load (a process that has been
    computing for a while); 0 for a process that is just starting."""
    if requested and requested > 0:
        return int(requested)
    for name in (THREADS_ENV, "OMP_NUM_THREADS"):  # a pin in the environment counts as a request
        env = os.environ.get(name, "").strip()
        if env.isdigit() and int(env) > 0:
            return int(env)
    cores = available_cores()
    return max(1, min(cores, round(cores - busy_cores(own_threads))))


def apply_threads(requested: int | None = None) -> int:
    """:func:`choose_threads` applied to torch (intra-op threads) for this process; the number used."""
    import torch

    n = choose_threads(requested)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
