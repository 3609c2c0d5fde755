"""Checkpoints: weights plus everything needed to trust and reproduce them.

A checkpoint is one file written by ``torch.save`` holding only plain data: ``format``, ``meta``
(a JSON string: configs, relation vocabulary, time axis, setting, data fingerprint, training
history, metrics, seed, version, hardware), ``weights`` (a state dict of tensors) and, in resume
files, ``optimizer`` and ``position``. Loading uses ``torch.load(weights_only=True)``, so a file
that would run pickled code is refused; a sha256 over the weights detects tampering. Writes go to
a temporary file that is renamed over the target, so a crash never leaves a half-written file.
A composite model (several checkpoints and a history prior, :mod:`tpar.model.composite`) has a format of its
own; :meth:`Checkpoint.load` reads either and verifies a composite member by member.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import platform
import re
import shutil
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tpar import __version__
from tpar.model.config import RunConfig
from tpar.data.kg import TemporalKG
from tpar.data.lineage import growth_text
from tpar.data.relation_matching import (DEFAULT_MIN_COVERAGE, MatchedKG, RelationMap, RelationMatch,
                                         as_loaded, match_relations, share_text)
from tpar.errors import DataError, finite_number, plural
from tpar.model.network import TPAR

FORMAT = "tpar-checkpoint-v1"
#: the format names of every version: "tpar-checkpoint-v<N>"
FORMAT_PREFIX, FORMAT_VERSION = "tpar-checkpoint-v", 1
#: a checkpoint file larger than this is refused before it is read (paper-scale models are a few MB)
MAX_FILE_BYTES = 512 * 2 ** 20
#: ... and one whose archive would inflate to more than this (a zip bomb), before any tensor is made
MAX_INFLATED_BYTES = 1024 * 2 ** 20


def content_digest(meta: dict, weights: dict[str, torch.Tensor]) -> str:
    """sha256 over the metadata (configs, vocabulary, time axis, history, ...; its digest fields left
    out) and the weights: any change to either is detected."""
    body = {k: v for k, v in meta.items() if k not in ("sha256", "weights_sha256")}
    h = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode() + b"\x00")
    h.update(weights_digest(weights).encode())
    return h.hexdigest()


#: the settings a model is trained for (a unified model answers both)
SETTINGS = ("extrapolation", "interpolation", "unified")
#: a checkpoint's metadata (JSON text) is refused above this many characters before it is parsed: parsing and
#: checking cost many times the text in memory (a real composite's is about 0.1 MB)
MAX_META_CHARS = 16 * 2 ** 20


def parse_meta(text: object) -> object:
    """The metadata JSON of a checkpoint payload (or a resume file's position), its size bounded before it is
    parsed; a key given twice is refused (ValueError; ``strict_json``). Its numbers are checked by field after."""
    if not isinstance(text, str):
        raise ValueError("meta is not JSON text")
    if len(text) > MAX_META_CHARS:
        raise ValueError(f"the metadata is {len(text) / 2 ** 20:,.1f} MB of text, more than a checkpoint's may be "
                         f"({MAX_META_CHARS / 2 ** 20:,.0f} MB)")
    from tpar.data.textfile import strict_json

    return strict_json(text, numbers_checked_later=True)


#: the longest data set name a checkpoint may record (a file or folder name: 255 bytes on common file systems)
MAX_DATA_NAME = 255
#: what a data set's name never holds in a checkpoint: a line break, which printed whole lines of its own (other
#: controls, escapes among them, are shown escaped, :func:`tpar.runtime.terminal.printable`)
_CONTROL = re.compile("[\n\r\u000b\u000c\u001c-\u001e\u0085\u2028\u2029]")


def _check_meta_schema(meta: object) -> None:
    """Types of the metadata fields the code relies on (ValueError naming the first that is wrong)."""
    if not isinstance(meta, dict):
        raise ValueError("metadata is not an object")
    expect = {"config": dict, "relations": list, "time_axis": dict, "setting": str, "data_name": str,
              "data_fingerprint": str, "history": list, "metrics": dict, "extra": dict}
    for key, kind in expect.items():
        if key in meta and not isinstance(meta[key], kind):
            raise ValueError(f"{key} must be a {kind.__name__}, not {type(meta[key]).__name__}")
    if not all(isinstance(r, str) for r in meta.get("relations", [])):
        raise ValueError("relations must be names")
    if not all(isinstance(h, dict) for h in meta.get("history", [])):
        raise ValueError("history entries must be objects")
    if len(meta.get("data_name", "")) > MAX_DATA_NAME:  # a file or folder name: echoed in every answer's provenance
        raise ValueError(f"data_name is {len(meta['data_name']):,} characters long (a data set's name is a file or "
                         f"folder name, at most {MAX_DATA_NAME})")
    if _CONTROL.search(meta.get("data_name", "")):  # a line break would print whole lines of its own in every answer
        raise ValueError(f"data_name {ascii(meta['data_name'][:40])} holds a line break (a data set's name is a file "
                         "or folder name)")
    if "setting" in meta and meta["setting"] not in SETTINGS:
        raise ValueError(f"setting {str(meta['setting'])[:40]!r} is not one of {', '.join(SETTINGS)}")
    baseline = meta.get("extra", {}).get("baseline_test", {})  # {setting: {"method": …, "mrr": …}}
    if not isinstance(baseline, dict) or not all(isinstance(v, dict) for v in baseline.values()):
        raise ValueError("extra.baseline_test must map each setting to an object of the baseline's figures")
    ta = meta.get("time_axis", {})
    if not isinstance(ta.get("granularity"), str) or not isinstance(ta.get("step", 1), int):
        raise ValueError("time_axis needs a granularity name and an integer step")


def _number_problem(path: str, value: object, lo: float | None = None, hi: float | None = None) -> str | None:
    """Why ``value`` (stored at ``path``) is not a finite number within [lo, hi]; None when it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{path} is {str(value)[:40]!r}, not a number"
    if not finite_number(value) and isinstance(value, int):
        return f"{path} is an integer of {value.bit_length():,} bits, not a finite number"
    if not finite_number(value):
        return f"{path} is {value!r}, not a finite number"
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return f"{path} is {value!r}, outside {lo:g}..{hi:g}" if hi is not None else f"{path} is {value!r}, below {lo:g}"
    return None


#: :func:`number_problems` stops after this many (a refusal names three and says there are more)
MAX_PROBLEMS = 3
#: stored figures that are shares (MRR, Hits@k, accuracies): 0..1; counts and durations: at least 0
_SHARES = ("mrr", "hits@", "valid_mrr", "accuracy", "acc")
_COUNTS = ("count", "queries", "epoch", "seconds", "wall_seconds", "valid_subset", "batches",
           "cpu_threads")


def _share_key(key: str) -> bool:
    return key.startswith(_SHARES) or key.endswith("_mrr") or "hits@" in key


#: stored values a card or a page formats as numbers wherever they appear: anything else there is refused
_SCALAR_FIGURES = ("seconds", "wall_seconds", "entities", "count", "epoch", "best_epoch")


def _must_be_number(path: str, value: object) -> bool:
    """``value``, stored at ``path``, is not a number where one must be: under a key of :data:`_SCALAR_FIGURES`
    (anything but a number), or a share's key (text, a boolean or null; a share's key may hold a table of them)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return False
    key = path.rsplit(".", 1)[-1].lower()
    if "[" in key:  # an element of a list: checked by its own value
        return False
    return key in _SCALAR_FIGURES or (_share_key(key) and not isinstance(value, (dict, list)))


def out_of_range(problems: list[str]) -> str:
    """The refusal of a file whose stored figures are out of range: the first three, and whether there are more."""
    return ("refused: stored figures out of range (file altered or corrupt): " + "; ".join(problems[:3])
            + (" (and more)" if len(problems) > 3 else ""))


def stored_number_problems(meta: dict) -> list[str]:
    """Every stored figure of the metadata's ``metrics``, ``history`` and ``extra`` (training time,
    warm starts, ranks ...; its calibration is checked apart) that is not a finite number in its range
    (shares 0..1, counts and durations at least 0, anything else finite), by its path (``metrics.x.mrr``)."""
    return (number_problems("metrics", meta.get("metrics", {})) + number_problems("history", meta.get("history", []))
            + number_problems("extra", {k: v for k, v in meta.get("extra", {}).items() if k != "calibration"}))


def number_problems(path: str, value: object) -> list[str]:
    """:func:`stored_number_problems` for any stored structure ``value`` (named ``path``): each number in
    it checked by its key (shares 0..1, counts and durations at least 0, anything else finite)."""
    problems: list[str] = []

    def walk(path: str, value: object, depth: int = 0) -> None:
        if len(problems) > MAX_PROBLEMS:  # enough to refuse the file and say why; the rest is not looked at
            return
        if depth > 8:
            problems.append(f"{path} is nested too deeply")
        elif _must_be_number(path, value):
            problems.append(f"{path} is {str(value)[:40]!r}, not a number")  # a figure the card formats as one
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{path}.{k}", v, depth + 1)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(f"{path}[{i}]", v, depth + 1)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            key = path.rsplit(".", 1)[-1].lower()
            if _share_key(key):
                why = _number_problem(path, value, 0.0, 1.0)
            elif key == "best_epoch":  # -1: a run cancelled before its first validation (never validated)
                why = _number_problem(path, value, -1.0)
            elif key in _COUNTS:
                why = _number_problem(path, value, 0.0)
            else:
                why = _number_problem(path, value)
            if why:
                problems.append(why)

    walk(path, value)
    return problems


#: warm starts a model's record keeps (a longer chain keeps its most recent ones and says that it left some out)
MAX_WARM_STARTS = 1000


def flat_warm_start(record: dict) -> dict:
    """A warm-start record (``extra["warm_start"]``: the run a model continued) with every earlier run in one flat
    list ``before`` (most recent first, each without ``before``), whether the file linked them one inside the other
    (files written before 2026-11-28: each stage nested its predecessor, so a chain of stages grew deeper than the
    loader's nesting limit and its model was refused) or flat. Walked without recursion, at most
    :data:`MAX_WARM_STARTS` records (``earlier_warm_starts_left_out`` says when there were more)."""
    head = {k: v for k, v in record.items() if k != "before"}
    chain, todo = [], [record.get("before")]
    while todo and len(chain) < MAX_WARM_STARTS:
        w = todo.pop(0)
        if isinstance(w, list):
            todo[:0] = w
        elif isinstance(w, dict):
            chain.append({k: v for k, v in w.items() if k != "before"})
            todo.insert(0, w.get("before"))
    cut = any(isinstance(w, (dict, list)) and w for w in todo)
    return {**head, "before": chain, **({"earlier_warm_starts_left_out": True} if cut else {})}


def weights_digest(state: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k, t in sorted(state.items()):  # items(): one read of weights kept on disk (:class:`WeightsOnDisk`)
        t = t.detach().cpu().contiguous()
        h.update(k.encode() + b"\x00" + str(t.dtype).encode() + str(tuple(t.shape)).encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")  # 0-dim too
    return h.hexdigest()


def hardware() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "cpu_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


class WeightsOnDisk(Mapping[str, torch.Tensor]):
    """The weights of a checkpoint file that was loaded and verified once, left on disk rather than held in memory
    (a listing of many models holds only their metadata: :mod:`tpar.model.registry`). Its names are known without
    reading; the tensors are read when asked for: each :meth:`read` loads and verifies the file again
    (:meth:`Checkpoint.load`) and checks that its sha256 is still ``digest``, so weights of a file changed since it
    was listed are never mixed with the metadata listed. ``member``: one composite model's member (0-based).
    ``items()`` and ``values()`` read the file once; ``w[name]`` reads it each time (use ``dict(w.items())``)."""

    def __init__(self, path: Path, digest: str, names: list[str], member: int | None = None) -> None:
        self.path, self.digest, self.names, self.member = Path(path), digest, list(names), member

    def checkpoint(self) -> "Checkpoint":
        """The whole file's checkpoint as it is now, loaded and verified; a :class:`DataError` naming the file when
        it is gone, cannot be loaded, or was changed since it was listed."""
        ck = Checkpoint.load(self.path)
        if ck.digest != self.digest:
            raise DataError("the model file changed since it was listed (its sha256 differs): list the models "
                            "again (in the app: reload the page)", file=self.path)
        return ck

    def read(self) -> dict[str, torch.Tensor]:
        """The weights as the file holds them now (see :meth:`checkpoint`)."""
        ck = self.checkpoint()
        if self.member is not None:
            ck = ck.member_checkpoints[self.member]
        return ck.weights

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.read()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def items(self):  # type: ignore[override]  -- one read, not one per name
        return self.read().items()

    def values(self):  # type: ignore[override]
        return self.read().values()

    def __repr__(self) -> str:
        return f"WeightsOnDisk({str(self.path)!r}, {len(self.names)} tensors" + (
            f", member {self.member})" if self.member is not None else ")")


@dataclass
class Checkpoint:
    """A loaded (or about to be saved) model with its metadata."""

    config: RunConfig
    weights: dict[str, torch.Tensor]
    relations: list[str]
    time_axis: dict
    setting: str
    data_name: str
    data_fingerprint: str
    history: list[dict] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)  # training time, hardware, notes ...
    version: str = __version__
    #: what loading set aside and the user must be told (a stored calibration that was not usable ...)
    load_notes: list[str] = field(default_factory=list)
    #: the sha256 recorded in the file (over metadata and weights) when loaded or saved; "" before
    digest: str = ""
    #: the metadata as the file holds it (a copy; None for a model not loaded from a file): a composite keeps
    #: its members' exactly so, so that each keeps the sha256 of the file it came from
    source_meta: dict | None = field(default=None, repr=False, compare=False)

    # -- building ---------------------------------------------------------------------------------
    def build_model(self, device: str | torch.device = "cpu", *, exact_propagation: bool = False) -> TPAR:
        """The model with its weights; ``exact_propagation``: with every pruning switched off instead of
        the propagation it was trained with (a learned top-K priority is then unused)."""
        weights = dict(self.weights.items())  # one read of weights kept on disk (:class:`WeightsOnDisk`)
        self._check_shapes(weights)  # before allocating anything the config asks for
        cfg = self.config.model.with_exact_propagation() if exact_propagation else self.config.model
        model = TPAR(cfg)
        if exact_propagation:
            weights = {k: v for k, v in weights.items() if not k.startswith("priority.")}
        missing, unexpected = model.load_state_dict(weights, strict=False)
        if missing or unexpected:
            raise DataError(f"checkpoint weights do not match the model: missing {missing[:3]}, unexpected {unexpected[:3]}")
        return model.to(device).eval()

    def _check_shapes(self, weights: dict[str, torch.Tensor] | None = None) -> None:
        """The config must describe the stored weights (``weights``, default this checkpoint's: d, d_a, L, R), so
        that a config altered to ask for a huge model is refused before that model is built."""
        m, w = self.config.model, (dict(self.weights.items()) if weights is None else weights)  # one read at most
        layers = {k.split(".")[1] for k in w if k.startswith("layers.")}
        got = {"dim": tuple(w["score.weight"].shape) if "score.weight" in w else None, "layers": len(layers),
               "relations": tuple(w["layers.0.rel_emb.weight"].shape) if "layers.0.rel_emb.weight" in w else None,
               "attn_dim": tuple(w["layers.0.att_rel.weight"].shape) if "layers.0.att_rel.weight" in w else None}
        want = {"dim": (1, m.dim), "layers": m.num_layers, "relations": (2 * m.num_relations + 1, m.dim),
                "attn_dim": (m.attn_dim, m.dim)}
        wrong = [k for k in want if got[k] != want[k]]
        if wrong:
            raise DataError(f"checkpoint config does not describe its weights ({', '.join(wrong)}: config "
                            f"{[want[k] for k in wrong]}, weights {[got[k] for k in wrong]})")
        # every weight, named and shaped as the model the config describes (its size now bounded by the weights')
        shapes = {k: tuple(v.shape) for k, v in TPAR(m).state_dict().items()}
        stored = {k: tuple(v.shape) for k, v in w.items()}
        missing = sorted(set(shapes) - set(stored))
        unexpected = sorted(set(stored) - set(shapes))
        misshapen = sorted(k for k in set(shapes) & set(stored) if shapes[k] != stored[k])
        if missing or unexpected or misshapen:
            parts = ([f"missing {', '.join(missing[:3])}"] if missing else []) + \
                ([f"unexpected {', '.join(k[:60] for k in unexpected[:3])}"] if unexpected else []) + \
                [f"{k} is {list(stored[k])}, the model's {list(shapes[k])}" for k in misshapen[:3]]
            raise DataError("checkpoint weights do not match the model its config describes: " + "; ".join(parts))

    def match(self, kg: TemporalKG, relation_map: RelationMap | dict[str, str] | None = None,
              min_coverage: float = DEFAULT_MIN_COVERAGE) -> RelationMatch:
        """How ``kg``'s relations map to this model's (:mod:`tpar.data.relation_matching`); no refusal."""
        return match_relations(self.relations, kg, model_name=self.data_name, mapping=relation_map,
                               min_coverage=min_coverage)

    def fit(self, kg: TemporalKG, relation_map: RelationMap | dict[str, str] | None = None,
            min_coverage: float = DEFAULT_MIN_COVERAGE) -> TemporalKG:
        """``kg`` ready for this model: itself when it has the model's relation vocabulary (and no
        ``relation_map``), else its relations matched by name and ``relation_map``
        (a :class:`~tpar.data.relation_matching.MatchedKG`); a :class:`DataError` when the match covers
        fewer than ``min_coverage`` of the facts, or the time unit differs (:meth:`check_fits`)."""
        if isinstance(kg, MatchedKG) and kg.match is not None and kg.match.model_relations == tuple(self.relations):
            self.check_fits(kg)
            return kg
        if not relation_map and list(kg.relations.names) == list(self.relations):
            self.check_fits(kg)
            return kg
        base = as_loaded(kg)
        problem = self.time_unit_problem(base)
        if problem:
            raise DataError(problem)
        m = self.match(base, relation_map, min_coverage)
        m.check()
        out = m.apply(base)
        self.check_fits(out)
        return out

    def _check_calibration(self) -> None:
        """Stored calibrations that are not usable (a temperature or threshold not finite or out of its
        range ...) are set aside, each with a note: the model then gives raw softmax probabilities and
        says so, and ``tpar calibrate`` writes a new calibration."""
        from tpar.evaluation.calibration import Calibration

        if "calibration" not in self.extra:
            return
        cal = self.extra["calibration"]
        if not isinstance(cal, dict):
            self.extra.pop("calibration")
            self.load_notes.append("the stored calibration is unreadable and was ignored: probabilities are the "
                                   "raw softmax (tpar calibrate fits a new one)")
            return
        for setting in list(cal):
            try:
                Calibration.from_dict(cal[setting])
            except (KeyError, TypeError, ValueError, OverflowError) as e:
                cal.pop(setting)
                self.load_notes.append(f"the stored {setting} calibration was ignored ({str(e)[:200]}): "
                                       "probabilities are the raw softmax (tpar calibrate fits a new one)")

    def check_fits(self, kg: TemporalKG) -> list[str]:
        """Refuse data the model cannot serve; return warnings for data it can but was not trained on.
        Data with other relations is served through :meth:`fit` (relations matched by name)."""
        if list(kg.relations.names) != list(self.relations):
            m = kg.match if isinstance(kg, MatchedKG) else None
            if m is None or m.model_relations != tuple(self.relations):
                m = self.match(kg)
                raise DataError(f"checkpoint does not fit data {kg.name!r} as it is: its relations differ "
                                f"({m.describe()}); to answer over this data, match them with Checkpoint.fit "
                                "(tpar predict, explain, evaluate, complete and the app do)")
        problem = self.time_unit_problem(kg)
        if problem:
            raise DataError(problem)
        warnings = []
        if isinstance(kg, MatchedKG) and kg.match is not None:
            warnings.append(self.other_data_warning(kg, kg.match))
        elif self.grown_from_me(kg):
            warnings.append(self.other_data_warning(kg))
        elif kg.fingerprint != self.data_fingerprint:
            warnings.append(f"data fingerprint {kg.fingerprint[:12]} differs from the training data's "
                            f"{self.data_fingerprint[:12]} ({self.data_name}); relations and time unit match, "
                            "so the model can still answer (TPAR does not embed entities)")
        return warnings

    def grown_from_me(self, kg: TemporalKG) -> bool:
        """``kg`` (a relation-matched view: the data as loaded) grew from this model's training data (its lineage,
        :mod:`tpar.data.lineage`), and is no longer that data."""
        data = as_loaded(kg)
        return data.fingerprint != self.data_fingerprint and any(x.get("base_fingerprint") == self.data_fingerprint
                                                                 for x in data.lineage)

    def other_data_warning(self, kg: TemporalKG, match: RelationMatch | None = None) -> str:
        """What limits this model on ``kg``, data it was not trained on, with its relations matched by ``match``
        (None: the model's own relations): data grown from its training data (a saved growth may read its relations
        back in another order, or add one), or other data (zero-shot)."""
        if self.grown_from_me(kg):
            data = as_loaded(kg)
            unknown = [u.data_relation for u in match.unmatched] if match is not None else []
            named = ", ".join(repr(r) for r in unknown[:5]) + (" …" if len(unknown) > 5 else "")
            return (f"the data has grown since this model was trained on it "
                    f"({growth_text(data.lineage, self.data_fingerprint)}): it answers over the grown history "
                    "without retraining (TPAR embeds no entities)"
                    + (f"; its relations matched by name, {share_text(match.fact_coverage)} of the facts"
                       if match is not None else "")
                    + (f"; new relation{'s' if len(unknown) > 1 else ''} {named} it does not know: their facts are "
                       "left out of what it reads"
                       if unknown else "")
                    + f"; its test figures and calibration were measured on {self.data_name} as it was")
        return (f"{match.describe()}: the model answers over data it was not trained on (zero-shot; TPAR embeds no "
                "entities, so new entities are fine, but its accuracy and calibration were measured on "
                f"{self.data_name}, not on this data)")

    def time_unit_problem(self, kg: TemporalKG) -> str | None:
        """Why ``kg``'s time unit does not fit the model's, or None when it does."""
        ta = kg.time_axis.to_dict()
        if (ta["granularity"], ta["step"]) != (self.time_axis.get("granularity"), self.time_axis.get("step")):
            return (f"checkpoint does not fit data {kg.name!r}: it was trained with time steps of "
                    f"{self.time_axis.get('step')} {self.time_axis.get('granularity')}, the data has "
                    f"{ta['step']} {ta['granularity']}")
        return None

    def warm_starts(self) -> list[dict]:
        """The earlier runs this model continued (``extra["warm_start"]`` and the earlier ones in its ``before``),
        the most recent first, each without ``before``; empty for a model trained from scratch."""
        w = self.extra.get("warm_start")
        if not isinstance(w, dict):
            return []
        flat = flat_warm_start(w)
        return [{k: v for k, v in flat.items() if k != "before"}] + list(flat["before"])

    def unfinished(self) -> str:
        """Why this model is not a finished training run, in a few words; "" when it is one. A run
        cancelled or interrupted before its planned epochs is unfinished, e.g. "cancelled after 0.1 of 4
        epochs, never validated (best epoch -1)"; so is the best model so far of a run still going on or killed
        outright (``stopped: "running"``, until the run records how it ended)."""
        stopped = self.extra.get("stopped")
        if stopped not in ("cancelled", "interrupted", "running"):
            return ""
        done = self.extra.get("epochs_trained")
        done = f"{done:.2g}" if isinstance(done, (int, float)) else f"{len(self.history)}"
        best = self.extra.get("best_epoch")
        checked = (f"best epoch {best} of {len(self.history)} validated" if isinstance(best, int) and best >= 1
                   else f"never validated (best epoch {best})")
        if stopped == "running":  # the best model so far, written while its run went on (Trainer._save_best)
            return (f"the best model so far (epoch {best}; {len(self.history)} of at most "
                    f"{plural(self.config.train.epochs, 'epoch')} validated when it was saved) of a run still "
                    "training, or killed before it finished")
        return f"{stopped} after {done} of {plural(self.config.train.epochs, 'epoch')}, {checked}"

    def meta(self) -> dict:
        return {"config": self.config.to_dict(), "relations": list(self.relations), "time_axis": self.time_axis,
                "setting": self.setting, "data_name": self.data_name, "data_fingerprint": self.data_fingerprint,
                "history": self.history, "metrics": self.metrics, "extra": self.extra, "version": self.version}

    # -- io ---------------------------------------------------------------------------------------
    def save(self, path: str | Path, *, optimizer: dict | None = None, position: dict | None = None) -> None:
        meta = self.meta()
        weights = dict(self.weights.items())  # one read of weights left on disk (:class:`WeightsOnDisk`)
        meta["sha256"] = content_digest(meta, weights)
        self.digest = meta["sha256"]
        payload: dict = {"format": FORMAT, "meta": json.dumps(meta),
                         "weights": {k: v.detach().cpu() for k, v in weights.items()}}
        if optimizer is not None:
            payload["optimizer"] = optimizer
        if position is not None:
            payload["position"] = json.dumps(position)
        atomic_torch_save(payload, path)

    @classmethod
    def load(cls, path: str | Path, *, with_state: bool = False):
        """Load and verify; ``with_state`` also returns (optimizer state, position) of a resume file. A
        composite model's file (:mod:`tpar.model.composite`) loads as a
        :class:`~tpar.model.composite.CompositeCheckpoint`, verified the same way, member by member."""
        p = Path(path)
        payload = read_payload(p)
        if payload["format"] != FORMAT:  # the other formats read_payload lets through: a composite's
            from tpar.model.composite import CompositeCheckpoint

            if with_state:
                raise DataError("a composite model is not a training run's resume file", file=p)
            return CompositeCheckpoint.from_payload(payload, p)
        try:
            meta = parse_meta(payload["meta"])
            _check_meta_schema(meta)
            weights = checked_weights(payload["weights"])
            if "sha256" in meta:
                if content_digest(meta, weights) != meta["sha256"]:
                    raise DataError("refused: the metadata or weights do not match their recorded sha256 "
                                    "(file altered or corrupt)", file=p)
            elif weights_digest(weights) != meta.get("weights_sha256"):  # files written before metadata was covered
                raise DataError("refused: weights do not match their recorded sha256 (file altered or corrupt)", file=p)
            ckpt = cls.from_meta(meta, weights, str(p))
        except DataError as e:
            raise DataError(e.problem, file=p) from None
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError, OverflowError) as e:
            raise DataError(f"checkpoint metadata is malformed ({type(e).__name__}: {str(e)[:200]})", file=p) from None
        if with_state:
            try:
                pos = parse_meta(payload["position"]) if "position" in payload else None
            except (TypeError, ValueError, RecursionError) as e:
                raise DataError(f"the resume file's position is not readable ({type(e).__name__}: {str(e)[:120]})",
                                file=p) from None
            return ckpt, payload.get("optimizer"), pos
        return ckpt

    @classmethod
    def from_meta(cls, meta: dict, weights: dict[str, torch.Tensor], source: str = "") -> "Checkpoint":
        """A single model from its (schema-checked, digest-verified) metadata and weights, every stored
        number and weight checked (a :class:`DataError` or ValueError says what is wrong)."""
        source_meta = json.loads(json.dumps(meta))  # a copy: loading sets aside what it must in its own dicts
        extra = meta.get("extra")
        if isinstance(extra, dict) and isinstance(extra.get("warm_start"), dict):  # files of any age: one flat chain
            meta["extra"] = {**extra, "warm_start": flat_warm_start(extra["warm_start"])}
        ckpt = cls(config=RunConfig.from_dict(meta["config"], source), weights=weights, relations=meta["relations"],
                   time_axis=meta["time_axis"], setting=meta["setting"], data_name=meta["data_name"],
                   data_fingerprint=meta["data_fingerprint"], history=meta.get("history", []),
                   metrics=meta.get("metrics", {}), extra=meta.get("extra", {}), version=meta.get("version", "?"))
        names = ckpt.relations
        if len(names) != ckpt.config.model.num_relations:
            raise DataError(f"the checkpoint names {len(names):,} relations but its model has "
                            f"{ckpt.config.model.num_relations:,}: every relation id would be misnamed")
        if len(set(names)) != len(names):
            twice = next(n for i, n in enumerate(names) if n in names[:i])
            raise DataError(f"the checkpoint names relation {twice[:80]!r} twice: its answers could not say which "
                            "relation they are of")
        ckpt._check_shapes()
        ckpt.digest = str(meta.get("sha256") or meta.get("weights_sha256") or "")
        ckpt.source_meta = source_meta
        problems = stored_number_problems(meta)
        if problems:
            raise DataError(out_of_range(problems))
        check_finite_weights(weights)
        ckpt._check_calibration()
        return ckpt

    # -- what kind of model --------------------------------------------------------------------------
    #: "single" (one trained TPAR) or "composite" (:class:`tpar.model.composite.CompositeCheckpoint`)
    kind = "single"

    @property
    def member_checkpoints(self) -> list["Checkpoint"]:
        """The trained models whose scores the ranking uses: this one (a composite: each of its members)."""
        return [self]

    def keep_weights_on_disk(self, path: str | Path) -> "Checkpoint":
        """This checkpoint, loaded from ``path`` and verified, with its weights (a composite's: each member's too)
        left in the file (:class:`WeightsOnDisk`): read again only when a model is built from it. Returns itself."""
        path = Path(path)
        members = self.member_checkpoints
        for i, m in enumerate(members):
            if m is not self:
                m.weights = WeightsOnDisk(path, self.digest, list(m.weights), member=i)
        self.weights = WeightsOnDisk(path, self.digest, list(self.weights))
        return self

    @property
    def num_layers(self) -> int:
        """L: the longest temporal path any of its models walks."""
        return max(m.config.model.num_layers for m in self.member_checkpoints)

    @property
    def history_window(self) -> int:
        """The widest history window of its models (0: some model sees the whole history)."""
        windows = [m.config.model.history_window for m in self.member_checkpoints]
        return 0 if 0 in windows else max(windows)

    def describe(self) -> str:
        """The model in a few words, e.g. "L=3, d=64, cap=24+repeats=1 from step 2"."""
        m = self.config.model
        return f"L={m.num_layers}, d={m.dim}" + ("" if m.propagation == "exact" else f", {m.propagation}")


#: the most entries a checkpoint's archive may list (a model stores a few dozen tensors, a composite a few hundred):
#: Python's zipfile builds an object per entry before anything could count them (300,000 empty ones: 400 MB)
MAX_ARCHIVE_ENTRIES = 10_000
#: the largest central directory (the archive's list of entries) read: zipfile reads records until it has read the
#: size the archive declares, whatever count it declares, so both are bounded (a shipped checkpoint's records take
#: about 100 bytes each; 46 is a record's least, so this bound holds at most 55,000 of them)
MAX_DIRECTORY_BYTES = MAX_ARCHIVE_ENTRIES * 256


def archive_directory(p: Path) -> tuple[int, int] | None:
    """(entries, bytes) of the zip archive ``p``'s central directory as its end-of-central-directory record (and the
    zip64 one it points to) declares them, read without listing any; ``None`` when there is no such record (zipfile
    then says why)."""
    with open(p, "rb") as f:
        f.seek(0, 2)
        size = f.tell()
        f.seek(max(0, size - 65_557))  # the record (22 bytes) and at most a 65,535-byte comment
        tail = f.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) < at + 22:
            return None
        count = int.from_bytes(tail[at + 10:at + 12], "little")
        directory = int.from_bytes(tail[at + 12:at + 16], "little")
        if (count != 0xFFFF and directory != 0xFFFFFFFF) or at < 20 or tail[at - 20:at - 16] != b"PK\x06\x07":
            return count, directory
        f.seek(int.from_bytes(tail[at - 12:at - 4], "little"))  # the zip64 record's offset, from its locator
        record = f.read(56)
        if record[:4] != b"PK\x06\x06" or len(record) < 48:
            return None
        return int.from_bytes(record[32:40], "little"), int.from_bytes(record[40:48], "little")


def read_payload(p: Path) -> dict:
    """The checked payload of a checkpoint file: size and archive bounded before anything is inflated,
    loaded weights-only (no pickled code runs), its ``format`` one this tpar reads (a single model's
    :data:`FORMAT` or a composite's, :mod:`tpar.model.composite`); a :class:`DataError` naming ``p`` else."""
    from tpar.data.textfile import check_regular
    from tpar.model.composite import COMPOSITE_FORMATS, COMPOSITE_PREFIX, COMPOSITE_VERSION

    if not p.exists() and not p.is_symlink():
        raise DataError("checkpoint not found", file=p)
    check_regular(p, "checkpoint file (.tpar)")  # a folder, a pipe, a device, a dangling link: named as such
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise DataError(f"refused: {size / 2 ** 20:,.0f} MB is larger than a checkpoint may be "
                        f"({MAX_FILE_BYTES / 2 ** 20:,.0f} MB)", file=p)
    with open(p, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise DataError("not a readable checkpoint (not a torch zip archive)", file=p)
    directory = archive_directory(p)
    if directory is not None and directory[0] > MAX_ARCHIVE_ENTRIES:
        raise DataError(f"refused: the archive lists {directory[0]:,} entries (a checkpoint holds a few hundred at "
                        f"most; at most {MAX_ARCHIVE_ENTRIES:,} are read)", file=p)
    if directory is not None and directory[1] > MAX_DIRECTORY_BYTES:
        raise DataError(f"refused: the archive's list of entries takes {directory[1]:,} bytes (a checkpoint's takes a "
                        f"few tens of kB; at most {MAX_DIRECTORY_BYTES:,} are read)", file=p)
    try:
        with zipfile.ZipFile(p) as z:
            entries = z.infolist()
    except (zipfile.BadZipFile, OSError) as e:
        raise DataError(f"not a readable checkpoint ({e})", file=p) from None
    # bounded before anything is inflated: torch.save stores entries uncompressed, so a checkpoint
    # never unpacks to more than its own size; a compressed entry (a zip bomb) is refused unread
    inflated = sum(i.file_size for i in entries)
    compressed = any(i.compress_type != zipfile.ZIP_STORED for i in entries)
    if inflated > MAX_INFLATED_BYTES or (compressed and inflated > size):
        raise DataError(f"refused: the archive would inflate {size / 2 ** 20:,.1f} MB to "
                        f"{inflated / 2 ** 20:,.0f} MB (a checkpoint's entries are stored uncompressed; "
                        f"at most {MAX_INFLATED_BYTES / 2 ** 20:,.0f} MB)", file=p)
    try:
        payload = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # torch's own text goes on to suggest weights_only=False, which would run the file's code: only what it
        # names is kept
        named = re.search(r"Unsupported global: GLOBAL ([\w.]{1,80})", str(e))
        raise DataError("refused: the file holds pickled Python objects, not only tensors and plain values"
                        + (f" (it names {named.group(1)})" if named else "") + "; nothing in it was run", file=p) from None
    except Exception as e:  # truncated, not a zip, ...
        raise DataError(f"not a readable checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})",
                        file=p) from None
    fmt = payload.get("format") if isinstance(payload, dict) else None
    if isinstance(fmt, str) and fmt not in (FORMAT, *COMPOSITE_FORMATS):
        for prefix, version, what in ((FORMAT_PREFIX, FORMAT_VERSION, "TPAR checkpoint"),
                                      (COMPOSITE_PREFIX, COMPOSITE_VERSION, "TPAR composite model")):
            if fmt.startswith(prefix):
                found = fmt[len(prefix):]
                newer = found.isdigit() and int(found) > version
                raise DataError(f"a {what} of format version {found[:20]!r}, which this tpar "
                                f"({__version__}, format version {version}) cannot read"
                                + ("; it was written by a newer tpar: upgrade tpar to load it" if newer else ""), file=p)
    if fmt not in (FORMAT, *COMPOSITE_FORMATS):
        raise DataError(f"not a TPAR checkpoint (expected format {FORMAT})", file=p)
    return payload


#: the dtypes a model's weights are stored in (an integer or boolean "weight" is refused)
WEIGHT_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def checked_weights(weights: object) -> dict[str, torch.Tensor]:
    """``weights`` when it maps names to dense floating-point tensors that hold every element they declare: a
    tensor whose shape and strides claim more elements than its stored bytes (an expanded, stride-0 view: a
    67 KB file can declare 10^10 elements, which hashing would materialise), one that is not contiguous, sparse
    or of an integer dtype raises a ValueError before any of them is copied; so does a total above
    :data:`MAX_INFLATED_BYTES`."""
    if not isinstance(weights, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                for k, v in weights.items()):
        raise ValueError("weights must map names to tensors")
    total = 0
    for name, t in weights.items():
        shown = name[:80]
        if t.layout != torch.strided or t.is_quantized:
            raise ValueError(f"weight {shown!r} is not a dense tensor ({t.layout})")
        if t.dtype not in WEIGHT_DTYPES:
            raise ValueError(f"weight {shown!r} is of dtype {t.dtype}, not floating point")
        need = t.numel() * t.element_size()
        stored = t.untyped_storage().nbytes() - t.storage_offset() * t.element_size()
        if not t.is_contiguous() or need > stored:
            raise ValueError(f"weight {shown!r} declares {t.numel():,} elements of shape {tuple(t.shape)} but its "
                             f"file stores {max(stored, 0):,} bytes (an expanded or strided view, not a weight)")
        total += need
    if total > MAX_INFLATED_BYTES:
        raise ValueError(f"the weights declare {total / 2 ** 20:,.0f} MB, more than a checkpoint may hold")
    return weights


def check_finite_weights(weights: dict[str, torch.Tensor]) -> None:
    bad = [k for k, v in weights.items() if v.is_floating_point() and not bool(torch.isfinite(v).all())]
    if bad:
        raise DataError(f"refused: weights hold NaN or infinite values ({', '.join(bad[:3])})")


def atomic_torch_save(obj, path: str | Path) -> None:
    """``torch.save`` to a temporary file renamed over ``path``; a file system error (read-only, full)
    is a :class:`DataError` naming ``path``, and ``path`` keeps its old content."""
    from tpar.data.outputs import writing

    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise DataError(f"cannot create the checkpoint's folder ({e.strerror or e})", file=p.parent) from None
    with writing(p, "checkpoint") as tmp:
        try:
            torch.save(obj, tmp)
        except RuntimeError as e:  # torch's writer reports a failed open or write (disk full ...) so; the object
            # is plain data of ours, so its failure is the file's (a full disk: "unexpected pos 128 vs 0", audit 39 #8)
            msg = str(e)
            try:
                free = shutil.disk_usage(p.parent).free
            except OSError:
                free = None
            if free is not None and free < 2 ** 20:
                why = f"no space left on the device: {free / 2 ** 10:,.0f} kB free"
            elif "strerror:" in msg:
                why = msg.split("strerror:", 1)[1].strip()
            elif any(w in msg for w in ("failed", "writ", "inline_container", "unexpected pos")):
                why = msg.splitlines()[0][:160]
            else:
                raise
            raise OSError(0, why) from None


def from_model(model: TPAR, run: RunConfig, kg: TemporalKG, setting: str, **kw) -> Checkpoint:
    """A checkpoint of ``model`` trained on ``kg``; its ``extra`` records the training facts' time range (labels),
    so that an answer over data that grew since can say how far it lies past them (:mod:`tpar.data.lineage`)."""
    train = kg.facts("train")
    if len(train):
        extra = dict(kw.pop("extra", None) or {})
        extra.setdefault("train_time_range", [kg.time_axis.label(int(train[:, 3].min())),
                                              kg.time_axis.label(int(train[:, 3].max()))])
        kw["extra"] = extra
    return Checkpoint(config=run, weights={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
                      relations=list(kg.relations.names), time_axis=kg.time_axis.to_dict(), setting=setting,
                      data_name=_CONTROL.sub("\ufffd", kg.name), data_fingerprint=kg.fingerprint, **kw)
