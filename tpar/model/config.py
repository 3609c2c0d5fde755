"""Configurations: the model's hyper-parameters and the training run's, as dataclasses that are
saved with every checkpoint and loaded from JSON files (``configs/*.json``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal, get_args

from tpar.errors import DataError

#: the shipped configurations: ``paper/<data>-<setting>.json`` (the paper's hyper-parameters),
#: ``cpu/...`` (the budgets used on a 2-core CPU), ``app/...`` (the app's defaults)
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"
Activation = Literal["identity", "tanh", "relu"]
TrainingSetting = Literal["extrapolation", "interpolation", "unified"]
DeviceChoice = Literal["auto", "cpu", "cuda"]
Priority = Literal["score", "learned"]
LRSchedule = Literal["constant", "cosine", "plateau"]
ACTIVATIONS: tuple[Activation, ...] = get_args(Activation)
#: the sparse propagation new models train with unless told otherwise (``--propagation exact``): the
#: first step exact -- every fact of the question's subject, however old -- then each entity sends
#: along its 24 links nearest t_q, each repeated fact (s, r, o) once, at its time nearest t_q, and only
#: the K = 256 best-scoring entities of each question send from step 2 on (node pruning: the frontier
#: holds about half the entities by step 5). One default for every setting since 2026-11-26; trained to
#: convergence on ICEWS14 with the exact models' schedules: extrapolation valid 47.71 (exact 47.61), test
#: 46.22 (exact 46.43), 5.0x cheaper to train than exact and 240 q/s (L=5, d=64, one thread, one `tpar
#: bench` run); interpolation valid 63.93, test 62.72 (exact 62.69; the cap-32 default it replaces 62.44),
#: 6.4x cheaper to train on the shipped model's shape (`benchmarks/propagation.py probe`). Caps of 16
#: trailed by 0.52 / 0.80. benchmarks/results/propagation.md holds every comparison.
SPARSE_DEFAULT: dict = {"recent_repeats": 1, "link_cap": 24, "top_k": 256, "exact_steps": 1}
SPARSE_PROPAGATION_BY_SETTING: dict[str, dict] = {
    "extrapolation": SPARSE_DEFAULT,
    "interpolation": SPARSE_DEFAULT,
    "unified": SPARSE_DEFAULT,
}
SPARSE_PROPAGATION: dict = SPARSE_DEFAULT
#: the ModelConfig fields that make up a propagation (all 0 / "score": exact)
PROPAGATION_FIELDS: tuple[str, ...] = ("history_window", "link_cap", "recent_repeats", "exact_steps", "top_k", "priority")
SETTINGS: tuple[TrainingSetting, ...] = get_args(TrainingSetting)


#: the largest value each numeric option may take: a configuration file (or a checkpoint's) asking for more
#: would allocate without bound or run for ever (L = 10^5 steps, d = 10^9); a value outside is refused by name
LIMITS: dict[str, tuple[float, float]] = {
    "dim": (1, 4096), "attn_dim": (1, 1024), "num_layers": (1, 64), "dropout": (0.0, 0.999),
    "attention_bias_init": (-1e3, 1e3), "num_relations": (0, 10 ** 7), "time_span": (0, 2 ** 62),
    "history_window": (0, 2 ** 62), "link_cap": (0, 10 ** 9), "recent_repeats": (0, 10 ** 9),
    "exact_steps": (0, 64), "top_k": (0, 10 ** 9),
    "lr": (1e-12, 10.0), "batch_size": (1, 10 ** 6), "micro_batch": (1, 10 ** 6), "epochs": (1, 10 ** 6),
    "patience": (0, 10 ** 6), "max_train_queries": (0, 10 ** 12), "max_valid_queries": (0, 10 ** 12),
    "background_fraction": (1e-9, 1 - 1e-9), "weight_decay": (0.0, 10.0), "seed": (0, 2 ** 63 - 1),
    "checkpoint_every": (1e-3, 1e9), "relation_balance": (0.0, 10.0),
}


def check_fields(obj) -> None:
    """Every field of the dataclass ``obj`` of the type it is declared with -- an int not a float or a bool, a
    float a finite number (an int is taken as one), a bool a bool, a choice one of its choices -- and within
    :data:`LIMITS`; a ValueError naming the field and the value else (a config file's ``"dim": 64.5``, ``"lr":
    NaN`` or ``"num_layers": 100000`` end here, not deep in the model)."""
    import math
    import typing

    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        value, kind = getattr(obj, f.name), hints[f.name]
        shown = repr(value)[:40]
        if kind is bool:
            if not isinstance(value, bool):
                raise ValueError(f"{f.name} must be true or false, got {shown}")
            continue
        if kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{f.name} must be a whole number, got {shown}")
        elif kind is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not (math.isfinite(value) if isinstance(value, float) else value.bit_length() < 1000):
                raise ValueError(f"{f.name} must be a finite number, got {shown}")
            setattr(obj, f.name, float(value))
            value = float(value)
        elif typing.get_origin(kind) is Literal:
            if not isinstance(value, str) or value not in get_args(kind):
                raise ValueError(f"{f.name} must be one of {', '.join(get_args(kind))}, got {shown}")
            continue
        else:
            continue
        lo, hi = LIMITS.get(f.name, (None, None))
        if lo is not None and not lo <= value <= hi:
            raise ValueError(f"{f.name} must be between {_bound(lo)} and {_bound(hi)}, got {shown}")


def _bound(x: float) -> str:
    """A limit as written in a message, exactly: 4,611,686,018,427,387,904, not 4.61169e+18; 0.999999999, not 1."""
    return f"{x:,}" if isinstance(x, int) else f"{x:.12g}"


@dataclass
class ModelConfig:
    """TPAR hyper-parameters (paper Section 4; grid in Appendix D.3), each documented below it."""

    dim: int = 64
    """d: the dimension of entities' query-specific states, relations and time."""
    attn_dim: int = 5
    """d_a: the attention dimension (Eq. 7)."""
    num_layers: int = 5
    """L: the maximum temporal-path length (number of recursive steps)."""
    dropout: float = 0.2
    """Dropout on each layer's output states."""
    activation: Activation = "identity"
    """δ of Eq. 8."""
    chronological: bool = False
    """Extrapolation only: links along a path must have non-increasing times (t_1 >= t_2 >= ...), the
    ordering the paper relaxes (Section 4.1) -- for its ablation."""
    attention_bias_init: float = -5.0
    """Initial bias of w_α (Eq. 7). Negative, so that α starts near σ(-5) ≈ 0.007: Eq. 8 sums messages
    over every admitted link, and a hub entity has thousands of them, so with α ≈ 0.5 the states grow
    by orders of magnitude per step at initialisation and training stalls (measured on ICEWS14: valid
    MRR 0.1% vs 18-29% after 400 steps). The attention then learns which links to open."""
    num_relations: int = 0
    """R: base relations of the data the model was built for (set from data)."""
    time_span: int = 365
    """Characteristic number of time steps of the data (set from data); scales the initial
    frequencies of the time encoding."""
    history_window: int = 0
    """Propagation, W > 0: a query's links lie within W time steps of t_q (extrapolation:
    t_q − W ≤ t < t_q; interpolation: |t − t_q| ≤ W). 0: every admitted link (exact)."""
    link_cap: int = 0
    """Propagation, M > 0: each entity sends along at most its M links nearest t_q (the M most recent
    before t_q when extrapolating; half before, half at or after t_q when interpolating). 0: exact."""
    recent_repeats: int = 0
    """Propagation, m > 0: of the links that repeat one fact (s, r, o) at several times, each entity
    sends along only the m nearest t_q (the m most recent before t_q; when interpolating, also the m
    earliest after it). Every fact exact propagation walks is still walked at its latest times, so
    the same entities are reached; older copies of a fact are dropped. 0: every repeat."""
    exact_steps: int = 0
    """Propagation: the first N recursive steps are exact (no window, cap, repeat limit or top-K);
    the pruning applies from step N + 1 on. The first step leaves only the question's subject, so
    keeping it exact keeps every direct fact of the subject, however old, at almost no cost."""
    top_k: int = 0
    """Propagation, K > 0: after each step only the K highest-priority entities of each query send
    messages in the next step; the others keep their state through their self-loop. 0: exact."""
    priority: Priority = "score"
    """How top-K ranks entities: ``score`` -- the step's own provisional score w·h^ℓ (Eq. 9 applied to
    h^ℓ); ``learned`` -- a small network of the state and the query relation (A*Net-style) whose
    σ(priority) also weights the kept entities' messages, so that it learns what to keep."""

    gate: bool = False
    """A GRU-style gate between steps (not in the paper; present in code attributed to its authors):
    h^ℓ = GRUCell(δ(W^ℓ Σ α·M), h^{ℓ-1}) per node, with h^{ℓ-1} = 0 for a node first reached at step ℓ."""

    @property
    def is_sparse_default(self) -> bool:
        """Whether this propagation is the sparse default (:data:`SPARSE_DEFAULT`, no window, score priority)."""
        return (not self.history_window and self.priority == "score"
                and all(getattr(self, k) == v for k, v in SPARSE_DEFAULT.items()))

    @property
    def propagation(self) -> str:
        """``exact``, or the pruning in use, e.g. ``window=60+top_k=200(score)``."""
        parts = [f"window={self.history_window}" if self.history_window else "",
                 f"cap={self.link_cap}" if self.link_cap else "",
                 f"repeats={self.recent_repeats}" if self.recent_repeats else "",
                 f"top_k={self.top_k}({self.priority})" if self.top_k else ""]
        pruning = "+".join(x for x in parts if x)
        if not pruning:
            return "exact"
        return pruning + (f" from step {self.exact_steps + 1}" if self.exact_steps else "")

    @property
    def propagation_words(self) -> str:
        """The propagation in plain words for a card or a page, e.g. "the sparse default (each entity sends along at
        most its 24 links nearest the question's time; a fact repeated at several times is walked at its latest time
        only; at most 256 entities carried to the next step (by score); the first step exact)"."""
        if self.propagation == "exact":
            return "exact (every link the question may see is walked, at every step)"
        parts = [f"only links within {self.history_window:,} time steps of the question's time" if self.history_window
                 else "",
                 f"each entity sends along at most its {self.link_cap:,} links nearest the question's time"
                 if self.link_cap else "",
                 ("a fact repeated at several times is walked at its latest time only" if self.recent_repeats == 1
                  else f"a fact repeated at several times is walked at its {self.recent_repeats:,} latest times only")
                 if self.recent_repeats else "",
                 (f"at most {self.top_k:,} entities carried to the next step "
                  f"({'by score' if self.priority == 'score' else 'chosen by a learned priority'})") if self.top_k else ""]
        text = "; ".join(x for x in parts if x)
        if self.exact_steps:
            text += f"; the first {'step' if self.exact_steps == 1 else f'{self.exact_steps} steps'} exact"
        return ("the sparse default" if self.is_sparse_default else "pruned") + f" ({text})"

    def with_exact_propagation(self) -> "ModelConfig":
        """The same model with every pruning switched off (exact propagation)."""
        from dataclasses import replace

        return replace(self, history_window=0, link_cap=0, recent_repeats=0, exact_steps=0, top_k=0)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.dim < 1 or self.attn_dim < 1 or self.num_layers < 1:
            raise ValueError("dim, attn_dim and num_layers must be positive")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError("dropout must be in [0, 1)")
        if min(self.history_window, self.link_cap, self.top_k, self.recent_repeats, self.exact_steps) < 0:
            raise ValueError("history_window, link_cap, recent_repeats, top_k and exact_steps must be >= 0 (0 = off)")
        if self.priority not in get_args(Priority):
            raise ValueError(f"priority must be one of {get_args(Priority)}, got {self.priority!r}")


@dataclass
class TrainConfig:
    """One training run.

    Attributes:
        setting: ``extrapolation``, ``interpolation`` or ``unified`` (both kinds of queries).
        lr: Adam learning rate. batch_size: queries per optimiser step (paper's batch size);
        micro_batch: queries per forward/backward pass (gradients are accumulated), bounds memory.
        epochs: maximum epochs; patience: epochs without a better validation MRR before stopping.
        max_train_queries: queries sampled (seeded) per epoch; 0 = all training queries.
        max_valid_queries: validation queries used per epoch (seeded subset); 0 = all.
        background_fraction: interpolation: share of training facts used as background each epoch
            (the rest are queries), 3/4 in the paper (Appendix D.1).
        checkpoint_every: seconds between periodic (resumable) checkpoints.
        relation_balance: when an epoch samples fewer questions than there are, draw them with
            probability ∝ count(relation)^(−relation_balance): 0 uniform, 1 every relation equally.
        calibrate: after training, fit each setting's temperature and conformal thresholds on valid
            (``tpar.evaluation.calibration``) and keep them in the checkpoint.
        lr_schedule: ``constant``; ``cosine`` -- lr·(0.1 + 0.9·(1 + cos(π·p))/2) at the share p of the
            planned optimiser steps done (down to lr/10 at the last epoch); ``plateau`` -- lr halved for
            each epoch so far whose validation MRR did not improve. Both follow from (epoch, batch,
            history), so a resumed run continues on the same curve.
        device: ``auto`` (CUDA if available), ``cpu`` or ``cuda``. amp: bfloat16 autocast on CUDA.
        (No torch.compile option: on the CPU the fused C++ step replaced it. Measured here on 1.5M
        links: a compiled gather/scatter took 231 ms, eager index ops 180 ms; the C++ step is 4-5x
        faster than eager.)
    """

    setting: TrainingSetting = "extrapolation"
    device: DeviceChoice = "auto"
    amp: bool = False
    lr: float = 3e-4
    batch_size: int = 10
    micro_batch: int = 5
    epochs: int = 10
    patience: int = 3
    max_train_queries: int = 0
    max_valid_queries: int = 2000
    background_fraction: float = 0.75
    weight_decay: float = 0.0
    seed: int = 0
    checkpoint_every: float = 300.0
    calibrate: bool = True
    relation_balance: float = 0.0
    lr_schedule: LRSchedule = "constant"

    def __post_init__(self) -> None:
        check_fields(self)
        if self.lr_schedule not in get_args(LRSchedule):
            raise ValueError(f"lr_schedule must be one of {get_args(LRSchedule)}, got {self.lr_schedule!r}")
        if self.setting not in SETTINGS:
            raise ValueError(f"setting must be one of {SETTINGS}, got {self.setting!r}")
        if not 0.0 < self.background_fraction < 1.0:
            raise ValueError(f"background_fraction must be in (0, 1), got {self.background_fraction!r}")
        if self.batch_size < 1 or self.micro_batch < 1:
            raise ValueError("batch_size and micro_batch must be positive")


_RETIRED_TRAIN_OPTIONS = {"compile"}  # accepted in older checkpoints, no longer used


@dataclass
class RunConfig:
    """A model config and a training config, as kept in ``configs/<data>-<setting>.json``."""

    model: ModelConfig
    train: TrainConfig

    def to_dict(self) -> dict:
        return {"model": asdict(self.model), "train": asdict(self.train)}

    @classmethod
    def from_dict(cls, d: dict, source: str = "config") -> "RunConfig":
        if not isinstance(d, dict):
            raise DataError(f"a configuration is a JSON object with 'model' and 'train' sections, not "
                            f"{type(d).__name__}", file=source)
        unknown = set(d) - {"model", "train", "comment"}
        if unknown:
            raise DataError(f"unknown section{'s' if len(unknown) > 1 else ''} {sorted(unknown)} (expected model, "
                            "train)", file=source)
        for section in ("model", "train"):
            if not isinstance(d.get(section, {}), dict):
                raise DataError(f"the {section!r} section must be a JSON object of options, not "
                                f"{type(d[section]).__name__}", file=source)
        train = {k: v for k, v in d.get("train", {}).items() if k not in _RETIRED_TRAIN_OPTIONS}
        return cls(_build(ModelConfig, d.get("model", {}), source), _build(TrainConfig, train, source))

    @classmethod
    def load(cls, path: str | Path) -> "RunConfig":
        from tpar.data.textfile import read_small_json

        p = Path(path)
        return cls.from_dict(read_small_json(p, "configuration"), str(p))  # from_dict checks its shape


def config_for_new_model(path: str | Path, setting: str) -> tuple[RunConfig, bool]:
    """(the run, whether the sparse default was applied): a config file as ``tpar train --config`` reads it for a new
    model of ``setting`` -- its own propagation where its ``model`` section names one, else the sparse default. The
    Python API and the CLI train the same model from the same file (new-user walk 38: the API trained it exact)."""
    from tpar.data.textfile import read_small_json

    run = RunConfig.load(path)
    run.train.setting = setting
    section = read_small_json(Path(path), "configuration").get("model", {})
    if isinstance(section, dict) and names_propagation(section):
        return run, False
    run.model = apply_propagation(run.model, setting, "sparse")
    return run, True


def _build(cls, d: dict, source: str):
    names = {f.name for f in fields(cls)}
    unknown = set(d) - names
    if unknown:
        raise DataError(f"unknown {cls.__name__} option{'s' if len(unknown) > 1 else ''} {sorted(unknown)}; "
                        f"known: {sorted(names)}", file=source)
    try:
        return cls(**d)
    except (TypeError, ValueError) as e:
        raise DataError(str(e), file=source) from None


def sparse_propagation(setting: str) -> dict:
    """The default sparse propagation's ModelConfig fields for a training setting (a copy)."""
    return dict(SPARSE_PROPAGATION_BY_SETTING.get(setting, SPARSE_PROPAGATION_BY_SETTING["unified"]))


def names_propagation(model_section: dict) -> bool:
    """Whether a config file's ``model`` section chooses a propagation itself (any propagation field)."""
    return any(k in model_section for k in PROPAGATION_FIELDS)


def apply_propagation(model: ModelConfig, setting: str, choice: str) -> ModelConfig:
    """``model`` with the propagation ``choice`` (``"sparse"``: :func:`sparse_propagation` of the
    setting; ``"exact"``: every link) in place of its propagation fields."""
    from dataclasses import replace

    exact = replace(model.with_exact_propagation(), priority="score")
    return exact if choice == "exact" else replace(exact, **sparse_propagation(setting))


def builtin_config(name: str) -> RunConfig:
    """A shipped configuration by name, e.g. ``"app/train-page"`` or ``"paper/icews14-extrapolation"``."""
    return RunConfig.load(CONFIG_DIR / f"{name}.json")


def paper_config_path(data_name: str, setting: str) -> Path | None:
    """The paper's configuration for a known benchmark (``configs/paper/<data>-<setting>.json``), if any."""
    p = CONFIG_DIR / "paper" / f"{data_name.lower()}-{setting}.json"
    return p if p.is_file() else None
