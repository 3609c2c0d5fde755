"""Getting a long-running process (the app) ready: the fast C++ kernel is built, or loaded from
the kernel cache, in the background while the torch kernel answers (``tpar.model.kernels``)."""

from __future__ import annotations

from tpar.model import kernels


def start_warmup(wait_seconds: float = 3.0) -> bool:
    """Start preparing the C++ kernel in the background and wait up to ``wait_seconds`` (a cached
    build loads in about a second); whether it is still being built afterwards."""
    if kernels.build_in_background():
        kernels.wait_for_kernel(wait_seconds)
    return kernels.kernel_building()


def warming_up() -> bool:
    """Whether the C++ kernel is still being built (answers meanwhile come from the torch kernel)."""
    return kernels.kernel_building()
