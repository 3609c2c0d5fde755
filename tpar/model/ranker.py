"""A trained model as a ranker for the evaluation protocol (:class:`tpar.evaluation.protocol.Ranker`)."""

from __future__ import annotations

import torch

from tpar.graph.background import Background, DeviceCopy
from tpar.graph.queries import QueryBatch
from tpar.model.device import resolve_device
from tpar.model.network import TPAR


class ModelRanker:
    """Scores queries with a TPAR model in micro-batches (bounded memory); scores come back on the CPU."""

    name = "tpar"

    def __init__(self, model: TPAR, device: str | torch.device = "auto", micro_batch: int = 16,
                 amp: bool = False) -> None:
        self.device = resolve_device(device)
        self.model = model.to(self.device).eval()
        self.micro_batch = micro_batch
        self.amp = amp and self.device.type == "cuda"
        self._on_device = DeviceCopy(self.device)

    @torch.no_grad()
    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        bg = self._on_device(background)
        out = []
        for a in range(0, len(batch), self.micro_batch):
            mb = batch[slice(a, a + self.micro_batch)].to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
                out.append(self.model(mb, bg).float().cpu())
        return torch.cat(out) if out else torch.zeros(0, bg.num_entities)
