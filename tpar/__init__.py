"""TPAR Explorer: temporal-path reasoning over temporal knowledge graphs (Chen et al., ACL 2024).

Data flows one way, one subpackage per stage; each imports only from the stages before it:

    tpar.data        files -> TemporalKG (vocabularies, time axis, readers, uploads, sample world)
    tpar.graph       TemporalKG -> TemporalGraphIndex, queries, Background (the no-leakage rules)
    tpar.evaluation  rankers -> ranks under the protocol (time-aware filter, tie modes), baselines
    tpar.model       what the paper defines: the TPAR network, its layers and kernels, configs, checkpoints
    tpar.training    how a model is fitted: trainer, schedule, early stopping, resume, distributed, estimates
    tpar.reasoning   a checkpoint on a data set -> predictions, path explanations, rule recovery
    tpar.runtime     background training jobs, the speed benchmark
    tpar.cli         the ``tpar`` command;  app/ (Streamlit) calls this package and holds no model logic

The names below are importable from ``tpar`` directly (loaded on first use).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "DataError": "tpar.errors",
    "TemporalKG": "tpar.data.kg", "Vocabulary": "tpar.data.vocab", "TimeAxis": "tpar.data.timeaxis",
    "load_dataset": "tpar.data.loading",
    "TemporalGraphIndex": "tpar.graph.index", "Setting": "tpar.graph.queries", "Question": "tpar.graph.queries",
    "QueryBatch": "tpar.graph.queries", "Background": "tpar.graph.background",
    "evaluate": "tpar.evaluation.protocol", "EvaluationResult": "tpar.evaluation.protocol",
    "RankType": "tpar.evaluation.ranks", "RANK_TYPES": "tpar.evaluation.ranks",
    "FrequencyBaseline": "tpar.evaluation.baselines", "RecurrencyBaseline": "tpar.evaluation.baselines",
    "fit_recurrency": "tpar.evaluation.baselines",
    "ModelConfig": "tpar.model.config", "TrainConfig": "tpar.model.config", "RunConfig": "tpar.model.config",
    "config_for_new_model": "tpar.model.config",
    "TPAR": "tpar.model.network", "Checkpoint": "tpar.model.checkpoint", "ModelRanker": "tpar.model.ranker",
    "train": "tpar.training.trainer", "TrainResult": "tpar.training.trainer",
    "Predictor": "tpar.reasoning.prediction", "Prediction": "tpar.reasoning.prediction",
    "Explainer": "tpar.reasoning.explanation", "Explanation": "tpar.reasoning.explanation",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tpar' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
