"""A trained model as a ranker for the evaluation protocol (:class:`tpar.evaluation.protocol.Ranker`)."""

from __future__ import annotations

from collections import Counter

import torch

from tpar.graph.background import Background, DeviceCopy
from tpar.graph.queries import QueryBatch
from tpar.model.device import resolve_device
from tpar.model.kernels import thread_steps
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
        #: recursive steps this ranker ran in each kernel ("cpp" / "torch"): the two add in another order, so their
        #: scores can differ in the last float digits -- enough to make or break an exact tie between two answers
        self.kernel_steps: Counter = Counter()

    @torch.no_grad()
    def score(self, batch: QueryBatch, background: Background) -> torch.Tensor:
        bg = self._on_device(background)
        out = []
        before = Counter(thread_steps())  # this thread's: another app session's steps are not this ranker's
        for a in range(0, len(batch), self.micro_batch):
            mb = batch[slice(a, a + self.micro_batch)].to(self.device)
            with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.amp):
                out.append(self.model(mb, bg).float().cpu())
        self.kernel_steps.update(Counter(thread_steps()) - before)
        return torch.cat(out) if out else torch.zeros(0, bg.num_entities)

    def kernel_text(self) -> str:
        """Which kernel scored: "the C++ kernel", "the torch kernel", or both with their shares of the steps."""
        names = {"cpp": "the C++ kernel", "torch": "the torch kernel"}
        used = {k: n for k, n in self.kernel_steps.items() if n and k in names}  # "cpp-gate": the gate of a cpp step
        if len(used) == 1:
            return names[next(iter(used))]
        total = sum(used.values())
        return " and ".join(f"{names[k]} ({100 * n / total:.0f}% of steps)" for k, n in sorted(used.items())) \
            or "no kernel (nothing scored)"
