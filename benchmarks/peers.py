"""The peers measured here with this project's protocol (test split, both directions, time-aware filter,
realistic ties): one place for the figures the reports, cards and plots set TPAR against."""

from __future__ import annotations

import json
from pathlib import Path

#: TLogic (Liu et al. 2022), its reference code run here on ICEWS14 extrapolation test (relaxed), MRR %
TLOGIC_MEASURED = 41.16
BASELINES = Path(__file__).resolve().parent / "results" / "baselines"


def baseline_mrr(setting: str, data: str, method: str = "recurrency") -> float | None:
    """Test MRR % of a baseline (`python benchmarks/baselines.py`), or None where it was not measured."""
    path = BASELINES / f"{setting}_{data}_{method}.json"
    if not path.is_file():
        return None
    return 100 * json.loads(path.read_text())["realistic"]["mrr"]
