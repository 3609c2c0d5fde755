"""TPAR Explorer front end. It calls the `tpar` API only and holds no model logic.

Until the model and the embedded sample world land, this page shows the data sets that the
`tpar` data layer can read here and their statistics.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from tpar.errors import DataError
from tpar.readers import find_data_dir, load_dataset

st.set_page_config(page_title="TPAR Explorer", layout="wide")


@st.cache_resource(show_spinner="Loading data set…")
def _load(path: str):
    return load_dataset(path)


def _datasets() -> dict[str, Path]:
    found: dict[str, Path] = {}
    root = Path(__file__).resolve().parent.parent
    sample = root / "sample_data"
    for p in sorted(sample.glob("*/*")) if sample.is_dir() else []:  # e.g. sample_data/world/chronological
        if p.is_dir() and (p / "train.csv").is_file():
            found[f"sample: {p.parent.name}/{p.name}"] = p
    data_dir = find_data_dir()
    if data_dir is not None:
        for p in sorted(data_dir.glob("*/*")):
            if p.is_dir():
                found[f"benchmark: {p.parent.name}/{p.name}"] = p
    return found


st.title("TPAR Explorer")
st.caption("Temporal-path reasoning over temporal knowledge graphs (Chen et al., ACL 2024): "
           "interpolation and extrapolation with one model.")

datasets = _datasets()
if not datasets:
    st.info("No data set found yet. The embedded sample world is not part of this version; benchmark "
            "data sets appear when `$TPAR_DATA_DIR` or `../shared/datasets` exists.")
    st.stop()

choice = st.selectbox("Data set", list(datasets))
try:
    kg = _load(str(datasets[choice]))
except DataError as e:
    st.error(f"Cannot read this data set: {e}")
    st.stop()

stats = kg.stats()
c1, c2, c3 = st.columns(3)
c1.metric("Entities", f"{stats['num_entities']:,}")
c2.metric("Relations", f"{stats['num_relations']:,}")
c3.metric("Time unit", kg.time_axis.granularity)
st.caption(f"Time axis: {stats['time_axis']}")
rows = [{"split": s, **{k: (" .. ".join(v) if isinstance(v, list) else v) for k, v in info.items()}}
        for s, info in stats["splits"].items()]
st.dataframe(pd.DataFrame(rows), hide_index=True)
for s in stats["missing_splits"]:
    st.warning(f"The {s} split is not available for this data set.")
for note in stats["notes"]:
    st.caption(note)
st.caption(f"Fingerprint {stats['fingerprint'][:16]}")
