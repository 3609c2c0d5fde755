"""The peers measured here with this project's protocol (test split, both directions, time-aware filter,
realistic ties): one place for the figures the reports, cards and plots set TPAR against."""

from __future__ import annotations

import re
from pathlib import Path

#: TLogic (Liu et al. 2022), its reference code run on this project's machine on ICEWS14 extrapolation test (both
#: directions, time-aware filter, realistic ties), MRR %. The run predates this repository: the figure comes from the
#: project's brief, and no log, configuration or ranks file of it is kept here (docs audit 40)
TLOGIC_MEASURED = 41.16
#: where that figure comes from, in the words every report uses
TLOGIC_SOURCE = ("41.16 measured on this project's machine before this repository began, as the project's brief "
                 "records; its run is not kept here")
#: the baselines' table (`python benchmarks/baselines.py`): every data set it ran, ICEWS18 included
BASELINES = Path(__file__).resolve().parent / "results" / "baselines.md"


def baseline_figures() -> dict[tuple[str, str, str], float]:
    """{(setting, data, method): realistic test MRR %} from the baselines' table; empty where it is missing."""
    out = {}
    for line in BASELINES.read_text().splitlines() if BASELINES.is_file() else []:
        m = re.match(r"\| (\w+)/([\w-]+) \| \w+ \| (\w+) \| \d+ \| ([\d.]+) /", line)
        if m:
            out[(m.group(1), m.group(2), m.group(3))] = float(m.group(4))
    return out
