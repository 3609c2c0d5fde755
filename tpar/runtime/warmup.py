"""Getting a long-running process (the app) ready: the fast C++ kernel is built, or loaded from
the kernel cache, in the background while the torch kernel answers (``tpar.model.kernel_build``)."""

from __future__ import annotations

from tpar.model import kernel_build
from tpar.model.kernels import default_kernel


def start_warmup(wait_seconds: float = 3.0) -> bool:
    """Start preparing the C++ kernel in the background (unless ``TPAR_KERNEL=torch``) and wait up to
    ``wait_seconds`` (a cached build loads in about a second); whether it is still being built afterwards."""
    if default_kernel() != "torch" and kernel_build.build_in_background():
        kernel_build.wait_for_kernel(wait_seconds)
    return kernel_build.kernel_building()


def warming_up() -> bool:
    """Whether the C++ kernel is still being built (answers meanwhile come from the torch kernel)."""
    return kernel_build.kernel_building()
