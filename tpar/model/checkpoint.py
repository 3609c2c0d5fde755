"""Checkpoints: weights plus everything needed to trust and reproduce them.

A checkpoint is one file written by ``torch.save`` holding only plain data: ``format``, ``meta``
(a JSON string: configs, relation vocabulary, time axis, setting, data fingerprint, training
history, metrics, seed, version, hardware), ``weights`` (a state dict of tensors) and, in resume
files, ``optimizer`` and ``position``. Loading uses ``torch.load(weights_only=True)``, so a file
that would run pickled code is refused; a sha256 over the weights detects tampering. Writes go to
a temporary file that is renamed over the target, so a crash never leaves a half-written file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from tpar import __version__
from tpar.model.config import RunConfig
from tpar.data.kg import TemporalKG
from tpar.errors import DataError
from tpar.model.network import TPAR

FORMAT = "tpar-checkpoint-v1"


def weights_digest(state: dict[str, torch.Tensor]) -> str:
    h = hashlib.sha256()
    for k in sorted(state):
        t = state[k].detach().cpu().contiguous()
        h.update(k.encode() + b"\x00" + str(t.dtype).encode() + str(tuple(t.shape)).encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def hardware() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(), "torch": torch.__version__,
            "cpu_threads": torch.get_num_threads(), "cuda": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


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

    # -- building ---------------------------------------------------------------------------------
    def build_model(self, device: str | torch.device = "cpu") -> TPAR:
        model = TPAR(self.config.model)
        missing, unexpected = model.load_state_dict(self.weights, strict=False)
        if missing or unexpected:
            raise DataError(f"checkpoint weights do not match the model: missing {missing[:3]}, unexpected {unexpected[:3]}")
        return model.to(device).eval()

    def check_fits(self, kg: TemporalKG) -> list[str]:
        """Refuse data the model cannot serve; return warnings for data it can but was not trained on."""
        if list(kg.relations.names) != list(self.relations):
            only_ckpt = [r for r in self.relations if r not in kg.relations][:3]
            only_data = [r for r in kg.relations.names if r not in self.relations][:3]
            raise DataError(
                f"checkpoint does not fit data {kg.name!r}: its relation vocabulary differs "
                f"({len(self.relations)} relations in the checkpoint, {kg.num_relations} in the data"
                + (f"; e.g. only in checkpoint: {only_ckpt}" if only_ckpt else "")
                + (f"; only in data: {only_data}" if only_data else "") + ")")
        ta = kg.time_axis.to_dict()
        if (ta["granularity"], ta["step"]) != (self.time_axis.get("granularity"), self.time_axis.get("step")):
            raise DataError(f"checkpoint does not fit data {kg.name!r}: it was trained with time steps of "
                            f"{self.time_axis.get('step')} {self.time_axis.get('granularity')}, the data has "
                            f"{ta['step']} {ta['granularity']}")
        warnings = []
        if kg.fingerprint != self.data_fingerprint:
            warnings.append(f"data fingerprint {kg.fingerprint[:12]} differs from the training data's "
                            f"{self.data_fingerprint[:12]} ({self.data_name}); relations and time unit match, "
                            "so the model can still answer (TPAR does not embed entities)")
        return warnings

    def meta(self) -> dict:
        return {"config": self.config.to_dict(), "relations": list(self.relations), "time_axis": self.time_axis,
                "setting": self.setting, "data_name": self.data_name, "data_fingerprint": self.data_fingerprint,
                "history": self.history, "metrics": self.metrics, "extra": self.extra, "version": self.version,
                "weights_sha256": weights_digest(self.weights)}

    # -- io ---------------------------------------------------------------------------------------
    def save(self, path: str | Path, *, optimizer: dict | None = None, position: dict | None = None) -> None:
        payload: dict = {"format": FORMAT, "meta": json.dumps(self.meta()),
                         "weights": {k: v.detach().cpu() for k, v in self.weights.items()}}
        if optimizer is not None:
            payload["optimizer"] = optimizer
        if position is not None:
            payload["position"] = json.dumps(position)
        atomic_torch_save(payload, path)

    @classmethod
    def load(cls, path: str | Path, *, with_state: bool = False):
        """Load and verify; ``with_state`` also returns (optimizer state, position) of a resume file."""
        p = Path(path)
        if not p.is_file():
            raise DataError("checkpoint not found", file=p)
        with open(p, "rb") as f:
            if f.read(4) != b"PK\x03\x04":
                raise DataError("not a readable checkpoint (not a torch zip archive)", file=p)
        try:
            payload = torch.load(p, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as e:
            raise DataError("refused: the file holds pickled Python objects, not plain tensors "
                            f"(weights-only load failed: {str(e).splitlines()[0][:160]})", file=p) from None
        except Exception as e:  # truncated, not a zip, ...
            raise DataError(f"not a readable checkpoint ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})",
                            file=p) from None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise DataError(f"not a TPAR checkpoint (expected format {FORMAT})", file=p)
        try:
            meta = json.loads(payload["meta"])
            weights = payload["weights"]
            if not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in weights.items()):
                raise ValueError("weights must map names to tensors")
            digest = weights_digest(weights)
            if digest != meta.get("weights_sha256"):
                raise DataError("refused: weights do not match their recorded sha256 (file altered or corrupt)", file=p)
            ckpt = cls(config=RunConfig.from_dict(meta["config"], str(p)), weights=weights, relations=meta["relations"],
                       time_axis=meta["time_axis"], setting=meta["setting"], data_name=meta["data_name"],
                       data_fingerprint=meta["data_fingerprint"], history=meta.get("history", []),
                       metrics=meta.get("metrics", {}), extra=meta.get("extra", {}), version=meta.get("version", "?"))
        except DataError:
            raise
        except (KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
            raise DataError(f"checkpoint metadata is malformed ({type(e).__name__}: {e})", file=p) from None
        if with_state:
            pos = json.loads(payload["position"]) if "position" in payload else None
            return ckpt, payload.get("optimizer"), pos
        return ckpt


def atomic_torch_save(obj, path: str | Path) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{int(time.time() * 1e6)}.tmp")
    try:
        torch.save(obj, tmp)
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def from_model(model: TPAR, run: RunConfig, kg: TemporalKG, setting: str, **kw) -> Checkpoint:
    return Checkpoint(config=run, weights={k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
                      relations=list(kg.relations.names), time_axis=kg.time_axis.to_dict(), setting=setting,
                      data_name=kg.name, data_fingerprint=kg.fingerprint, **kw)
