"""Where a model runs: ``auto`` (CUDA when available), ``cpu`` or ``cuda``."""

from __future__ import annotations

import torch

from tpar.errors import DataError


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    d = torch.device(device)
    if d.type == "cuda" and not torch.cuda.is_available():
        raise DataError("CUDA was requested but no GPU is available (use --device cpu or auto)")
    return d
