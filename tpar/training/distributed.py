"""Data-parallel training and sharded evaluation on ``torch.distributed`` (``torchrun``).

``torchrun --nproc_per_node=N -m tpar train ...`` starts N processes that each hold the whole graph
index and model (TPAR's questions are independent given the background). Each optimiser step's
global batch is cut into micro-batches; micro-batch k goes to rank k mod N, runs with the dropout
seed of (seed, epoch, step, k) -- so a question's dropout masks are those a single process draws for
it, whatever the number of processes -- and the gradients are summed over ranks by an all-reduce
before the (identical) optimiser step on every rank. (A plain all-reduce, not DDP's bucketed hooks:
with micro-batch sharding a rank may have nothing to do in a step, which DDP cannot express without
dummy passes.) Rank 0 alone writes checkpoints, resume files, logs and progress. Evaluation splits the
questions by batch (rank r takes batches r, r+N, ...) and gathers the ranks, giving exactly the
single-process result. (Evaluation deals whole batches, not single questions: a question's scores
depend on its batch only through float rounding, which would otherwise flip a few exact ties.)
Collectives time out (``TPAR_DIST_TIMEOUT`` seconds, default 600): a rank
that dies makes the others fail with a message instead of hanging.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as tdist


@dataclass(frozen=True)
class Dist:
    rank: int
    world: int
    local_world: int
    backend: str

    @property
    def main(self) -> bool:
        return self.rank == 0

    def all_reduce_grads(self, params) -> None:
        """Sum every parameter's gradient over the ranks (missing gradients count as zeros)."""
        params = [p for p in params if p.requires_grad]
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])
        tdist.all_reduce(flat, op=tdist.ReduceOp.SUM)
        at = 0
        for p in params:
            n = p.numel()
            p.grad = flat[at:at + n].view_as(p).clone()
            at += n

    def sum(self, value: float) -> float:
        t = torch.tensor([value], dtype=torch.float64)
        tdist.all_reduce(t, op=tdist.ReduceOp.SUM)
        return float(t)

    def any(self, flag: bool) -> bool:
        """Whether any rank says yes (cancel, signal): every rank then stops at the same step."""
        return self.sum(1.0 if flag else 0.0) > 0

    def gather(self, obj):
        out = [None] * self.world
        tdist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        tdist.barrier()


_current: Dist | None = None


def current() -> Dist | None:
    """The process group this process belongs to (None: a single process)."""
    return _current


def init_from_env(backend: str = "auto") -> Dist | None:
    """Join the process group torchrun describes in the environment (``WORLD_SIZE`` > 1); gloo on
    the CPU, NCCL where CUDA is available (``TPAR_DIST_BACKEND`` overrides). Threads per rank: the
    cores divided by the ranks on this node."""
    global _current
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return None
    if _current is not None:
        return _current
    from tpar.model.kernel_build import cpp_kernel

    cpp_kernel()  # build or load the C++ kernel before any collective: a first build outlasts a short timeout
    backend = os.environ.get("TPAR_DIST_BACKEND", backend)
    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    timeout = dt.timedelta(seconds=float(os.environ.get("TPAR_DIST_TIMEOUT", "600")))
    tdist.init_process_group(backend=backend, timeout=timeout)
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    _current = Dist(tdist.get_rank(), world, local_world, backend)
    return _current


def shutdown() -> None:
    global _current
    if _current is not None and tdist.is_initialized():
        tdist.destroy_process_group()
    _current = None


def exit_worker(code: int) -> None:
    """End a torchrun worker process now, its output flushed, skipping the interpreter's finalisation.
    Called after :func:`shutdown` has destroyed the process group.

    Why: gloo's worker threads free a finished collective's tensors *after* the caller has seen it
    complete; a tensor whose Python object is already gone needs the GIL for that last decref. A rank that
    leaves right after its last collective (rank > 0 has nothing to write) can reach ``Py_Finalize`` first,
    and a thread asking for the GIL during finalisation is torn down by a forced unwind through a
    ``noexcept`` destructor: ``terminate called without an active exception``, SIGABRT, a failed job
    although all work was done (seen about once in eight 2-rank runs under load; core dump:
    ``ProcessGroupGloo::runLoop`` → ``~AsyncAllreduceWork`` → ``decref_pyobject`` → ``take_gil`` →
    ``pthread_exit`` while the main thread is in ``Py_FinalizeEx``). ``destroy_process_group`` does not
    join those threads while anything still refers to the group. Every file a rank writes is closed
    before this point (rank 0's checkpoint, lock and resume files are written and released inside
    ``train``), so only the standard streams need flushing."""
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed, or a broken pipe: nothing left to say there
            pass
    os._exit(code)


def microbatch_seed(seed: int, epoch: int, step: int, k: int) -> int:
    """The dropout seed of micro-batch k of a step: the same in any number of processes."""
    return int(np.random.SeedSequence([seed, epoch, step, k]).generate_state(1)[0])


def merge_shards(parts: list[dict], n: int, batch_size: int) -> dict:
    """Per-rank arrays (rank r holds the batches r, r+N, ... of ``batch_size`` questions) back in one
    array per key, in the single-process order."""
    from tpar.evaluation.protocol import shard_positions

    world = len(parts)
    out = {}
    for key in parts[0]:
        first = np.asarray(parts[0][key])
        full = np.zeros((n,) + first.shape[1:], dtype=first.dtype)
        for r, part in enumerate(parts):
            full[shard_positions(n, batch_size, r, world)] = np.asarray(part[key])
        out[key] = full
    return out


def evaluate_everywhere(kg, ranker, setting, split: str = "test", dist: Dist | None = None, **kw):
    """:func:`tpar.evaluation.protocol.evaluate` split over the ranks of ``dist`` (each ranks its
    share of the questions), gathered so that every rank returns the whole single-process result."""
    from dataclasses import replace

    from tpar.evaluation.protocol import evaluate

    dist = dist or current()
    if dist is None:
        return evaluate(kg, ranker, setting, split, **kw)
    kw["progress"] = kw.get("progress", True) and dist.main
    part = evaluate(kg, ranker, setting, split, shard=(dist.rank, dist.world), **kw)
    parts = dist.gather({"queries": part.queries, "optimistic": part.optimistic, "pessimistic": part.pessimistic})
    n = sum(len(p["optimistic"]) for p in parts)
    full = merge_shards(parts, n, kw.get("batch_size", 256))
    params = dict(part.params)
    params.pop("shard", None)
    params["ranks"] = dist.world
    seconds = max(dist.gather(part.seconds))
    return replace(part, queries=full["queries"], optimistic=full["optimistic"], pessimistic=full["pessimistic"],
                   params=params, seconds=seconds)
