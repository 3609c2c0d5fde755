"""Shared test material: tiny generated worlds, a small random-weight model, the sample world and its
shipped checkpoint. Test modules import these helpers from here (``from helpers import ...``) and
the fixtures of ``conftest.py`` by name -- never from each other or from conftest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.data.timeaxis import TimeAxis
from tpar.data.vocab import Vocabulary
from tpar.model.config import ModelConfig
from tpar.model.network import TPAR

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_WORLD = ROOT / "sample_data" / "world" / "chronological"
SAMPLE_CHECKPOINT = ROOT / "checkpoints" / "sample-world-unified.tpar"

#: relations and entities of :func:`small_kg`
R, E = 3, 14


def make_kg(train, valid=(), test=(), num_entities=None, num_relations=None, name="toy") -> TemporalKG:
    """A TemporalKG from lists of (s, r, o, t) tuples; entity i is named 'e{i}', relation j 'r{j}'."""
    arrs = {k: np.array(v, dtype=np.int64).reshape(-1, 4) for k, v in (("train", train), ("valid", valid), ("test", test))}
    allf = np.concatenate(list(arrs.values()))
    ne = num_entities or int(allf[:, [0, 2]].max()) + 1
    nr = num_relations or int(allf[:, 1].max()) + 1
    return TemporalKG(name=name, entities=Vocabulary(tuple(f"e{i}" for i in range(ne))),
                      relations=Vocabulary(tuple(f"r{j}" for j in range(nr))), time_axis=TimeAxis("step"),
                      splits={k: v for k, v in arrs.items()})


def random_facts(rng: np.random.Generator, n: int, ne: int, nr: int, nt: int) -> np.ndarray:
    f = np.stack([rng.integers(0, ne, n), rng.integers(0, nr, n), rng.integers(0, ne, n), rng.integers(0, nt, n)], 1)
    return np.unique(f, axis=0)


def small_kg(seed: int = 0, dup_test_in_train: bool = False) -> TemporalKG:
    """160 random facts over E entities, R relations and 12 steps, split by time 120/20/20."""
    rng = np.random.default_rng(seed)
    f = random_facts(rng, 160, ne=E, nr=R, nt=12)
    f = f[np.argsort(f[:, 3], kind="stable")]
    train, valid, test = f[:120], f[120:140], f[140:]
    if dup_test_in_train:  # a test fact that also sits in train must still stay hidden from its query
        train = np.concatenate([train, test[:3]])
    return make_kg(train, valid, test, num_entities=E, num_relations=R)


def small_model(activation: str = "tanh", chronological: bool = False, seed: int = 0, gate: bool = False) -> TPAR:
    """A float64 L=3, d=6 model for :func:`small_kg` with perturbed weights (non-trivial attention);
    ``gate``: with the GRU-style gate between steps."""
    torch.manual_seed(seed)
    m = TPAR(ModelConfig(dim=6, attn_dim=3, num_layers=3, dropout=0.0, activation=activation,
                         chronological=chronological, num_relations=R, time_span=12, gate=gate)).double()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return m.eval()


def tiny_world_csv(days: int = 60, extra: str = "") -> str:
    """An upload CSV: six people who meet and call each other daily in a ring, ``days`` days of 2024."""
    rows = ["subject,relation,object,time"]
    people = [f"P{i}" for i in range(6)]
    for day in range(days):
        a, b = people[day % 6], people[(day + 1) % 6]
        date = f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}"
        rows += [f"{a},meets,{b},{date}", f"{b},calls,{a},{date}"]
    return "\n".join(rows) + "\n" + extra


def rewrite_checkpoint(dst: Path, edit_meta=None, edit_payload=None, src: Path = SAMPLE_CHECKPOINT) -> Path:
    """The sample checkpoint with its metadata edited and digested again (as a careful tamperer
    would: the sha256 matches, so only the values' own checks can catch it), written to ``dst``."""
    import json

    from tpar.model import checkpoint as ckmod

    payload = torch.load(src, weights_only=True)
    meta = json.loads(payload["meta"])
    if edit_meta:
        edit_meta(meta)
    if edit_payload:
        edit_payload(payload)
    meta["sha256"] = ckmod.content_digest(meta, payload["weights"])
    payload["meta"] = json.dumps(meta)
    torch.save(payload, dst)
    return dst


def write_renamed_world(out: Path) -> Path:
    """The sample world in ``out`` with its relations spelled otherwise ('Provide aid to' ->
    'PROVIDE_AID_TO') and 6 train facts of a relation no model knows."""
    import csv

    out.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        rows = list(csv.DictReader((SAMPLE_WORLD / f"{split}.csv").open(encoding="utf-8")))
        for r in rows:
            r["relation"] = r["relation"].upper().replace(" ", "_")
        if split == "train":
            rows += [dict(rows[i], relation="Invented relation") for i in range(6)]
        with (out / f"{split}.csv").open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return out


def a_calibration(setting: str, seed: int) -> dict:
    """The sample checkpoint's stored calibration relabelled for ``setting`` and marked with ``seed``, recording no
    data it was fitted on (read as fitted on the model's own data, whatever the test's data is)."""
    from tpar.model.checkpoint import Checkpoint

    cal = dict(Checkpoint.load(SAMPLE_CHECKPOINT).extra["calibration"]["extrapolation"])
    cal.pop("data_fingerprint", None)
    return {**cal, "setting": setting, "seed": seed}


def perturbed_sample_checkpoint(dst: Path, seed: int = 1, scale: float = 0.05) -> Path:
    """The sample world's model with seeded noise on its weights (another model of the same data, as a second
    training would give), its calibration and test figures dropped (they were the original's), written to ``dst``."""
    from tpar.model.checkpoint import Checkpoint

    ck = Checkpoint.load(SAMPLE_CHECKPOINT)
    g = torch.Generator().manual_seed(seed)
    ck.weights = {k: v + scale * torch.randn(v.shape, generator=g, dtype=v.dtype) if v.is_floating_point() else v
                  for k, v in ck.weights.items()}
    ck.extra.pop("calibration", None)
    ck.metrics = {}
    ck.save(dst)
    return dst


def build_sample_composite(folder: Path, name: str = "sample-composite.tpar", valid_queries: int = 300) -> Path:
    """A small composite of the sample world's model and a perturbed copy of it with the history prior, chosen and
    calibrated on a seeded subset of the sample world's valid questions (a few seconds), written to ``folder``."""
    from tpar.data.loading import load_dataset
    from tpar.model.checkpoint import Checkpoint
    from tpar.model.ensemble import build_composite

    folder.mkdir(parents=True, exist_ok=True)
    other = perturbed_sample_checkpoint(folder / "sample-perturbed.member")
    kg = load_dataset(SAMPLE_WORLD)
    ck, _ = build_composite(kg, [Checkpoint.load(SAMPLE_CHECKPOINT), Checkpoint.load(other)],
                            ["sample-world-unified.tpar", "sample-perturbed.member"], "extrapolation",
                            valid_queries=valid_queries, prior_queries=valid_queries,
                            calibration_queries=valid_queries)
    out = folder / name
    ck.save(out)
    return out



APP = ROOT / "app" / "streamlit_app.py"


def open_app(params: dict, timeout: int = 120, monkeypatch=None, tmp_path: Path | None = None):
    """An AppTest of the explorer with ``params`` in its URL; with ``monkeypatch`` and ``tmp_path`` also no benchmark
    data sets, the app's folder importable and its cached data sets and models forgotten (a fresh app)."""
    from streamlit.testing.v1 import AppTest

    if monkeypatch is not None:
        monkeypatch.setenv("TPAR_DATA_DIR", str(tmp_path / "no-benchmarks-here"))
        monkeypatch.syspath_prepend(str(APP.parent))
        import explorer

        explorer.datasets.clear()
        explorer.checkpoints.clear()
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for k, v in params.items():
        at.query_params[k] = v
    return at
