"""Teaching views of a trained model: its learned relative time encoding (Eqs. 2-3) as curves."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tpar.model.network import TPAR


@dataclass
class TimeEncodingCurves:
    """The learned relative time encoding (Eqs. 2-3) evaluated on integer Δt, for plotting.

    ``periodic`` / ``linear``: (len(dt), k) values of the k selected dimensions: the periodic
    dimensions with the shortest learned periods, and the linear dimensions with the steepest slopes."""

    dt: list[int]
    periodic: list[list[float]]
    periodic_dims: list[int]
    periods: list[float]          # 2π/|ω_p| of each selected periodic dimension, in time steps
    linear: list[list[float]]
    linear_dims: list[int]
    slopes: list[float]           # ω_np of each selected linear dimension


def time_encoding_curves(model: TPAR, span: int, k: int = 4) -> TimeEncodingCurves:
    """Evaluate ``model.time_encoding`` on Δt = -span..span (on the CPU, no gradients)."""
    te = model.time_encoding
    with torch.no_grad():
        dts = torch.arange(-span, span + 1, device=te.omega_p.device)
        per, lin = te.periodic(dts).cpu(), te.linear(dts).cpu()
        w_p, w_np = te.omega_p.detach().cpu(), te.omega_np.detach().cpu()
    pd_ = torch.argsort(w_p.abs(), descending=True)[:k].tolist()
    ld = torch.argsort(w_np.abs(), descending=True)[:k].tolist()
    return TimeEncodingCurves(dt=dts.cpu().tolist(), periodic=per[:, pd_].tolist(), periodic_dims=pd_,
                              periods=[float(2 * np.pi / max(abs(float(w_p[i])), 1e-9)) for i in pd_],
                              linear=lin[:, ld].tolist(), linear_dims=ld, slopes=[float(w_np[i]) for i in ld])
