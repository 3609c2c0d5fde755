"""The paper's analyses as functions over any data set (the commands in ``run.py`` call them on the
benchmarks; the smoke test on a tiny generated world).

* :func:`path_length` — Table 7 / Fig. "path length": test MRR for L = 1..5;
* :func:`chronological` — Table 8: relaxed (the paper's TPAR) vs strict non-increasing link times;
* :func:`sparsity` — Fig. "sparsity": 20..100% of the training facts (seeded), TPAR vs the frequency
  and recurrency baselines;
* :func:`pipeline` — Tables 3 and 5 (Appendix "pipeline"): a share r of the training facts is known;
  the others, subject or object masked, are completed by an interpolation model trained on the known
  ones (its evidence is the known training facts only: neither valid, test nor the masked facts
  themselves; valid only selects the completer and fits recurrency's parameters); the completed facts (marked inferred) join the known ones as the background and
  training data of a forecasting model, evaluated on the standard extrapolation test set. TPAR→TPAR
  vs TPAR alone, recurrency→recurrency vs recurrency alone.

Every model is trained under the same :class:`Budget` (stated in the results), selected on valid
(never test), and tested on the whole test split (both directions, time-aware filter, realistic
ties) unless the budget says otherwise. Each finished unit writes a JSON row; a rerun skips it, and
an interrupted training resumes from its resume file.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from tpar.data.kg import TemporalKG
from tpar.evaluation.baselines import FrequencyBaseline, fit_recurrency
from tpar.evaluation.protocol import evaluate
from tpar.model.checkpoint import Checkpoint
from tpar.model.config import ModelConfig, RunConfig, TrainConfig
from tpar.model.ranker import ModelRanker
from tpar.training.snapshots import resume_path
from tpar.training.trainer import train
from tpar.reasoning.completion import add_inferred, complete, masked_rows


@dataclass(frozen=True)
class Budget:
    """What one model of an experiment may cost. ``test_queries`` 0: the whole test split."""

    name: str
    dim: int = 32
    layers: int = 3
    train_questions: int = 30000
    valid_queries: int = 1000
    test_queries: int = 0
    lr: float = 2e-3
    batch_size: int = 10
    activation: str = "tanh"
    dropout: float = 0.2
    #: propagation per setting (benchmarks/results/propagation.md): near-exact accuracy at a third of the cost
    propagation: dict = field(default_factory=lambda: {"extrapolation": {"history_window": 120, "top_k": 128},
                                                       "interpolation": {"history_window": 30, "top_k": 128}})
    recurrency_fit_queries: int = 2000
    seed: int = 0

    def describe(self) -> str:
        prop = "; ".join(f"{s}: " + (", ".join(f"{k}={v}" for k, v in p.items()) or "exact")
                         for s, p in self.propagation.items())
        return (f"L={self.layers} (unless varied), d={self.dim}, {self.activation}, lr {self.lr}, batches of "
                f"{self.batch_size}, {self.train_questions:,} training questions (one pass), selection on "
                f"{self.valid_queries:,} seeded valid queries, test on "
                + (f"{self.test_queries:,} seeded test queries" if self.test_queries else "the whole test split")
                + f"; propagation {prop}; the recurrency baseline's λ and α fitted on {self.recurrency_fit_queries:,} "
                "seeded valid queries (the table above and `benchmarks/results/baselines.md` fit it on up to 20,000, "
                "so its figures here can differ from theirs"
                + (", e.g. ICEWS14 extrapolation 36.77 against 37.58" if self.name == "cpu" else "")
                + f"); seed {self.seed}")


BUDGETS = {
    "cpu": Budget("cpu"),
    "tiny": Budget("tiny", dim=4, layers=2, train_questions=40, valid_queries=20, test_queries=40, lr=1e-2,
                   propagation={"extrapolation": {}, "interpolation": {}}, recurrency_fit_queries=40),
}


#: (results root, models root): checkpoints of units under the results root are written under the models
#: root instead (run.py: benchmarks/results/paper -> runs/paper, so results stay small); None: beside the JSON
MODELS: tuple[Path, Path] | None = None


def model_path(out: Path) -> Path:
    if MODELS is not None:
        try:
            return (MODELS[1] / out.relative_to(MODELS[0])).with_suffix(".tpar")
        except ValueError:
            pass
    return out.with_suffix(".tpar")


def _metrics(res) -> dict:
    m = res.metrics("realistic")
    return {"mrr": round(100 * m.mrr, 2), "h1": round(100 * m.hits[1], 2), "h3": round(100 * m.hits[3], 2),
            "h10": round(100 * m.hits[10], 2), "test_queries": int(m.count)}


def _cached(path: Path, make, budget: Budget | None = None, fingerprint: str | None = None) -> dict:
    """The row stored at ``path``, or ``make()``'s, stored. A row of another budget, or of other data
    (``fingerprint``: e.g. a pipeline whose completions were made again), is made again."""
    if path.is_file():
        row = json.loads(path.read_text())
        if (budget is None or row.get("budget") == asdict(budget)) and \
                (fingerprint is None or row.get("fingerprint") == fingerprint):
            return row
    row = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    row["machine"] = {"platform": platform.platform(), "torch": torch.__version__, "threads": torch.get_num_threads()}
    path.write_text(json.dumps(row, indent=2))
    return row


def tpar_run(kg: TemporalKG, setting: str, budget: Budget, out: Path, *, layers: int | None = None,
             chronological: bool = False, test: bool = True) -> dict:
    """Train one TPAR model under ``budget`` (resumable), select on valid, test (unless ``test`` is
    False: the pipeline's completer has no test split of its own); a result row."""
    def make() -> dict:
        model = ModelConfig(dim=budget.dim, attn_dim=5, num_layers=layers or budget.layers, dropout=budget.dropout,
                            activation=budget.activation, chronological=chronological,
                            **budget.propagation.get(setting if setting != "unified" else "extrapolation", {}))
        cfg = TrainConfig(setting=setting, lr=budget.lr, batch_size=budget.batch_size,
                          micro_batch=budget.batch_size, epochs=1, patience=1,
                          max_train_queries=budget.train_questions, max_valid_queries=budget.valid_queries,
                          checkpoint_every=300.0, seed=budget.seed, calibrate=False)
        ckpt_path = model_path(out)
        t0 = time.perf_counter()
        res = train(kg, RunConfig(model, cfg), ckpt_path, resume=resume_path(ckpt_path).is_file(), progress=False)
        if res.stopped in ("interrupted", "cancelled"):
            raise SystemExit(f"{out.name}: {res.stopped}; rerun the same command to resume")
        ck = Checkpoint.load(ckpt_path)
        metrics = _metrics(evaluate(kg, ModelRanker(ck.build_model("cpu"), "cpu"), setting, "test",
                                    max_queries=budget.test_queries, seed=budget.seed, progress=False)) if test else {}
        return {"method": "TPAR", "setting": setting, "data": kg.name,
                "fingerprint": kg.fingerprint, "layers": model.num_layers, "chronological": chronological,
                "train_facts": int(len(kg.facts("train"))), "train_seconds": round(res.seconds, 1),
                "wall_seconds": round(time.perf_counter() - t0, 1),
                "valid_mrr": round(100 * max(h.get("valid_mrr", 0.0) for h in res.history), 2),
                "budget": asdict(budget), "config": RunConfig(model, cfg).to_dict(), **metrics}
    return _cached(out.with_suffix(".json"), make, budget, kg.fingerprint)


def baseline_run(kg: TemporalKG, setting: str, method: str, budget: Budget, out: Path) -> dict:
    """Frequency, or recurrency with (λ, α) fitted on valid; tested like the models."""
    def make() -> dict:
        t0 = time.perf_counter()
        ranker = FrequencyBaseline() if method == "frequency" else fit_recurrency(
            kg, setting, split="valid", max_queries=budget.recurrency_fit_queries)
        test = evaluate(kg, ranker, setting, "test", max_queries=budget.test_queries, seed=budget.seed, progress=False)
        return {"method": method, "setting": setting, "data": kg.name, "fingerprint": kg.fingerprint,
                "train_facts": int(len(kg.facts("train"))), "wall_seconds": round(time.perf_counter() - t0, 1),
                "budget": asdict(budget), **_metrics(test)}
    return _cached(out.with_suffix(".json"), make, budget, kg.fingerprint)


def subset_train(kg: TemporalKG, fraction: float, seed: int) -> tuple[TemporalKG, np.ndarray]:
    """``kg`` with a seeded ``fraction`` of its training facts (valid and test unchanged), and the
    training facts left out."""
    f = kg.facts("train")
    keep = np.zeros(len(f), dtype=bool)
    keep[np.random.default_rng(seed).permutation(len(f))[: int(round(fraction * len(f)))]] = True
    splits = dict(kg.splits)
    splits["train"] = f[keep]
    part = replace(kg, splits=splits, name=f"{kg.name}@{round(100 * fraction)}%",
                   notes=list(kg.notes) + [f"{100 * fraction:g}% of the training facts (seed {seed})"])
    return part, f[~keep]


# -- the experiments ------------------------------------------------------------------------------------
def path_length(data: dict[str, tuple[TemporalKG, str]], budget: Budget, out: Path,
                layers: tuple[int, ...] = (1, 2, 3, 4, 5)) -> list[dict]:
    """Test MRR for each maximum path length L, per data set ``{label: (kg, setting)}``."""
    rows = []
    for label, (kg, setting) in data.items():
        for L in layers:
            row = tpar_run(kg, setting, budget, out / "path_length" / f"{label}-L{L}", layers=L)
            rows.append({**row, "experiment": "path_length", "data": label, "data_name": row["data"]})
    return rows


def chronological(kg: TemporalKG, budget: Budget, out: Path, label: str = "ICEWS14") -> list[dict]:
    """Relaxed (any link time before t_q) vs strict (non-increasing along the path) on extrapolation,
    with the recurrency baseline as context."""
    rows = []
    for strict in (False, True):
        row = tpar_run(kg, "extrapolation", budget, out / "chronological" / f"{label}-{'strict' if strict else 'relaxed'}",
                       chronological=strict)
        rows.append({**row, "experiment": "chronological", "data": label, "order": "strict" if strict else "relaxed"})
    row = baseline_run(kg, "extrapolation", "recurrency", budget, out / "chronological" / f"{label}-recurrency")
    rows.append({**row, "experiment": "chronological", "data": label, "order": "–"})
    return rows


def sparsity(data: dict[str, tuple[TemporalKG, str]], budget: Budget, out: Path,
             fractions: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)) -> list[dict]:
    """TPAR, frequency and recurrency trained on a seeded share of the training facts."""
    rows = []
    for label, (kg, setting) in data.items():
        for fr in fractions:
            part, _ = subset_train(kg, fr, budget.seed)
            key = out / "sparsity" / f"{label}-{setting}-{round(100 * fr)}"
            for method in ("TPAR", "frequency", "recurrency"):
                row = (tpar_run(part, setting, budget, key.with_name(key.name + "-tpar")) if method == "TPAR" else
                       baseline_run(part, setting, method, budget, key.with_name(f"{key.name}-{method}")))
                rows.append({**row, "experiment": "sparsity", "data": label, "fraction": fr})
    return rows


def mask_facts(facts: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Per fact, which entity is masked: (facts, masked_is_subject (bool)), seeded 50/50."""
    return facts, np.random.default_rng(seed + 1).random(len(facts)) < 0.5


def pipeline(kg: TemporalKG, budget: Budget, out: Path, known: tuple[float, ...] = (0.6, 0.7, 0.8),
             label: str = "ICEWS14", min_probability: float = 0.0) -> list[dict]:
    """Settings A/B/C: complete the masked share of the training facts, then forecast; each method
    with and without completion. Also the completions' own top-1 accuracy. ``min_probability`` > 0:
    only TPAR's proposals at least that probable (raw softmax: the budget's models are not
    calibrated) join the forecaster's data (result files ``…-tpar-pipeline-p<100·p>``)."""
    rows = []
    for r in known:
        part, hidden = subset_train(kg, r, budget.seed)        # the known facts; the others are hidden
        hidden, subject_masked = mask_facts(hidden, budget.seed)
        queries = masked_rows(kg, hidden, subject_masked)
        truth = np.where(subject_masked, hidden[:, 0], hidden[:, 2])
        # the completer's evidence: the known *training* facts only (valid and test lie in the future, the
        # masked facts are what it completes); valid still selects the interpolation model and fits recurrency
        past = replace(part, splits={"train": part.facts("train"), "valid": part.facts("valid")})
        past_known = replace(part, splits={"train": part.facts("train")})
        key = out / "pipeline" / f"{label}-{round(100 * r)}"
        for method in ("TPAR", "recurrency") if not min_probability else ("TPAR",):
            alone = (tpar_run(part, "extrapolation", budget, key.with_name(key.name + "-tpar-alone")) if method == "TPAR"
                     else baseline_run(part, "extrapolation", "recurrency", budget, key.with_name(key.name + "-rec-alone")))
            done_file = key.with_name(f"{key.name}-{method.lower()}-completion.json")
            # the proposals themselves (one per hidden fact) are kept with the models, the summary with the results
            proposals = model_path(done_file).with_suffix(".proposals.npz")
            if not proposals.is_file():
                done_file.unlink(missing_ok=True)

            def completion() -> dict:
                t0 = time.perf_counter()
                if method == "TPAR":
                    interp_key = key.with_name(key.name + "-tpar-interpolation")
                    if not model_path(interp_key).is_file():  # its row without its model (a fresh checkout): retrain
                        interp_key.with_suffix(".json").unlink(missing_ok=True)
                    interp = tpar_run(past, "interpolation", budget, interp_key, test=False)
                    ck = Checkpoint.load(model_path(interp_key))
                    ranker = ModelRanker(ck.build_model("cpu"), "cpu")
                else:
                    interp = {}
                    ranker = fit_recurrency(past, "interpolation", split="valid", max_queries=budget.recurrency_fit_queries)
                comps = complete(past_known, ranker, queries, setting="interpolation")
                got = np.array([-1 if c.entity is None else kg.entities.id(c.entity) for c in comps])
                proposals.parent.mkdir(parents=True, exist_ok=True)
                np.savez_compressed(proposals, entities=got, probabilities=np.array(
                    [np.nan if c.probability is None else c.probability for c in comps], dtype=np.float64))
                return {"budget": asdict(budget), "proposals": proposals.name, "completed_rows": int(len(got)),
                        "accuracy": round(100 * float(np.mean(got == truth)), 2) if len(got) else float("nan"),
                        "interpolation_model": {k: interp[k] for k in ("mrr", "valid_mrr") if k in interp},
                        "seconds": round(time.perf_counter() - t0, 1)}

            done = _cached(done_file, completion, budget)
            stored = np.load(proposals)
            entities, probabilities = stored["entities"], stored["probabilities"]
            comps_ok = (entities >= 0) & (np.nan_to_num(probabilities, nan=0.0) >= min_probability)
            filled = hidden[comps_ok].copy()
            col = np.where(subject_masked[comps_ok], 0, 2)
            filled[np.arange(len(filled)), col] = entities[comps_ok]
            completed = add_inferred(part, filled, probabilities[comps_ok].tolist(), name=part.name + "+completed")
            added = int(len(completed.facts("train")) - len(part.facts("train")))  # new facts only
            tag = f"-p{round(100 * min_probability)}" if min_probability else ""
            both = (tpar_run(completed, "extrapolation", budget, key.with_name(key.name + "-tpar-pipeline" + tag))
                    if method == "TPAR" else
                    baseline_run(completed, "extrapolation", "recurrency", budget, key.with_name(key.name + "-rec-pipeline")))
            for variant, row in (("alone", alone), ("pipeline", both)):
                rows.append({**row, "experiment": "pipeline", "data": label, "known": r,
                             "variant": variant + (f" p≥{min_probability:g}" if min_probability and variant == "pipeline" else ""),
                             "completion_accuracy": done["accuracy"] if variant == "pipeline" else None,
                             "completed_facts": added if variant == "pipeline" else 0,
                             "method": method})
    return rows


__all__ = ["BUDGETS", "Budget", "chronological", "path_length", "pipeline", "sparsity"]
