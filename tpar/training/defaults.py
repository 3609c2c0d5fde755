"""The training-defaults policy: what ``tpar train`` and the app's Train page use when nobody chose.

Sized to the data, by its number of training facts:

* **small** (at most 5,000): the app's small model (L = 3, d = 32, tanh) and every training question
  each epoch in batches of 5, for up to 30 epochs (early stopping after 6 without progress): small
  data needs many optimiser steps, and an epoch takes seconds. Checked on 400-row CSVs cut from the
  sample world: test MRR 24 and 38 against the frequency baseline's 14 and 26 (10-20 s of training).
* **medium** (at most 100,000; the sample world): the same model, 20,000 questions per epoch, 4 epochs.
* **large**: the same model and schedule.

Every size trains with the default sparse propagation (:func:`tpar.model.config.sparse_propagation`),
as accurate as exact propagation at convergence on ICEWS14 and several times cheaper.

Validation always uses a bounded, seeded sample of valid questions (500 / 1,000 per setting), so an
epoch's validation never dominates it. A known benchmark's paper configuration is not a default: it
is meant for GPUs and long runs (``tpar train --config paper``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tpar.data.kg import TemporalKG
from tpar.model.config import RunConfig, apply_propagation, builtin_config
from tpar.errors import plural

#: at most this many training facts: a small data set
SMALL_FACTS = 5_000
#: more than this many training facts: a large data set
LARGE_FACTS = 100_000


@dataclass
class TrainingDefaults:
    """The default run for one data set, with the size class that chose it and why."""

    run: RunConfig
    size: str          # "small", "medium" or "large"
    reason: str        # e.g. "320 training facts (small: at most 5,000)"

    def describe(self) -> str:
        """Every setting of the run, in a few lines (printed when a run starts)."""
        return describe_run(self.run, f"defaults for a {self.size} data set: {self.reason}")


def describe_run(run: RunConfig, source: str) -> str:
    """The run's whole configuration in a few lines, headed by where it came from."""
    m, t = asdict(run.model), asdict(run.train)
    model = ", ".join(f"{k}={v}" for k, v in m.items() if k not in ("num_relations", "time_span"))
    train = ", ".join(f"{k}={v}" for k, v in t.items())
    return (f"config: {source}\n  model: L={run.model.num_layers}, d={run.model.dim}, propagation "
            f"{run.model.propagation}; {model}\n  train: {train}")


def size_class(train_facts: int) -> str:
    """``small``, ``medium`` or ``large`` for a data set with this many training facts."""
    if train_facts <= SMALL_FACTS:
        return "small"
    return "medium" if train_facts <= LARGE_FACTS else "large"


def training_defaults(kg: TemporalKG, setting: str = "unified") -> TrainingDefaults:
    """The default run for ``kg`` in ``setting`` (see the module docstring)."""
    n = len(kg.facts("train")) if "train" in kg.splits else 0
    return defaults_for_size(n, setting)


def defaults_for_size(train_facts: int, setting: str = "unified") -> TrainingDefaults:
    """The default run for a data set with ``train_facts`` training facts."""
    run = builtin_config("app/train-page")  # the small model: L=3, d=32, tanh, lr 0.002
    run.train.setting = setting
    size = size_class(train_facts)
    if size == "small":
        run.train.epochs, run.train.patience = 30, 6
        run.train.batch_size = run.train.micro_batch = 5  # more, smaller steps: a few hundred questions per epoch
        run.train.max_train_queries, run.train.max_valid_queries = 0, 500
        limit = f"small: at most {SMALL_FACTS:,}"
    elif size == "medium":
        run.train.epochs, run.train.patience = 4, 2
        run.train.max_train_queries, run.train.max_valid_queries = 20_000, 1_000
        limit = f"medium: {SMALL_FACTS:,} to {LARGE_FACTS:,}"
    else:
        run.train.epochs, run.train.patience = 4, 2
        run.train.max_train_queries, run.train.max_valid_queries = 20_000, 1_000
        limit = f"large: over {LARGE_FACTS:,}"
    run.model = apply_propagation(run.model, setting, "sparse")  # every size: tpar.model.config
    run = RunConfig.from_dict(run.to_dict(), "training defaults")  # validated
    return TrainingDefaults(run, size, f"{plural(train_facts, 'training fact')} ({limit})")
