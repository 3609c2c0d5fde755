"""Teaching views of a trained model: its learned relative time encoding (Eqs. 2-3) as curves."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from tpar.model.network import TPAR


@dataclass
class TimeEncodingCurves:
    """The learned relative time encoding (Eqs. 2-3) evaluated on integer Δt, for plotting.

    ``periodic`` / ``linear``: (len(dt), k) values of the k selected dimensions. Periodic dimensions:
    for each period of interest (e.g. 7 and 30 days) the dimension whose learned period 2π/|ω_p| is
    nearest to it (``highlight`` names them), then other dimensions whose periods show as waves over
    the plotted range (longer than 4 steps, shorter than the range). Linear: the steepest slopes."""

    dt: list[int]
    periodic: list[list[float]]
    periodic_dims: list[int]
    periods: list[float]          # 2π/|ω_p| of each selected periodic dimension, in time steps
    linear: list[list[float]]
    linear_dims: list[int]
    slopes: list[float]           # ω_np of each selected linear dimension
    highlight: dict[int, float] = field(default_factory=dict)  # periodic dim -> the period of interest it is nearest to


def time_encoding_curves(model: TPAR, span: int = 60, k: int = 4,
                         periods_of_interest: tuple[float, ...] = (7.0, 30.0)) -> TimeEncodingCurves:
    """Evaluate ``model.time_encoding`` on Δt = -span..span (on the CPU, no gradients);
    ``periods_of_interest`` in time steps (7 and 30 for daily data)."""
    te = model.time_encoding
    with torch.no_grad():
        dts = torch.arange(-span, span + 1, device=te.omega_p.device)
        per, lin = te.periodic(dts).cpu(), te.linear(dts).cpu()
        w_p, w_np = te.omega_p.detach().cpu(), te.omega_np.detach().cpu()
    periods = (2 * np.pi / w_p.abs().clamp_min(1e-9)).numpy()
    chosen: list[int] = []
    highlight: dict[int, float] = {}
    for target in periods_of_interest:
        order = np.argsort(np.abs(np.log(periods / target)))  # nearest on a log scale
        best = next(int(i) for i in order if int(i) not in chosen)
        chosen.append(best)
        highlight[best] = float(target)
    visible = [int(i) for i in np.argsort(periods) if 4 < periods[i] < 2 * span and int(i) not in chosen]
    step = max(1, len(visible) // max(1, k - len(chosen)))
    chosen += visible[::step][: max(0, k - len(chosen))]
    ld = torch.argsort(w_np.abs(), descending=True)[:k].tolist()
    return TimeEncodingCurves(dt=dts.cpu().tolist(), periodic=per[:, chosen].tolist(), periodic_dims=chosen,
                              periods=[float(periods[i]) for i in chosen], linear=lin[:, ld].tolist(),
                              linear_dims=ld, slopes=[float(w_np[i]) for i in ld], highlight=highlight)
