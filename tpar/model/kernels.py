"""The per-link work of one recursive step (paper Eqs. 5, 7 and Eq. 8's sum), for every admitted link:

    α_e = σ(b + wᵀ ReLU(A_node[src_e] + A_rel[rel_e] + A_query[q_e] + A_time[dt_e]))     (Eq. 7, split)
    out[dst_e] += α_e · (h[src_e] + H_rel[rel_e] + H_time[dt_e])                       (Eqs. 5, 8)

with the tables of :class:`tpar.model.layers.AttentionTerms`. Two interchangeable implementations:

* ``cpp`` -- :func:`csr_step` / :func:`csr_mark`: a fused C++ kernel (``csrc/links.cpp``, built and
  loaded by :mod:`tpar.model.kernel_build`). It reads each node's links straight from the CSR index, threads own whole queries, and nothing of
  size links × d is stored: the backward pass recomputes attention and messages. CPU, float32/64,
  and only where no per-link output is needed (no trace, no chronological ablation).
* ``torch`` -- :func:`links`: the same maths in torch ops over a listed set of links, chunked so
  temporaries stay bounded; any device; returns per-link α (explanations need it).

The same C++ module also runs the GRU gate between steps (:func:`gate_step`, ``ModelConfig.gate``): its
element-wise passes fused, and W_hh h_prev computed only for the nodes that existed before the step (a
node reached for the first time has h_prev = 0). Same maths as ``torch.nn.GRUCell``; gated ICEWS14 training 1.4-1.5x faster
than with the cell (``benchmarks/results/bench.json``, 2026-11-25).

Each model chooses (``TPAR.kernel``, from the ``TPAR_KERNEL`` environment variable when it is built,
:func:`default_kernel`): ``auto`` (the C++ kernel where it applies and builds, else torch, with one
warning if the build fails), ``cpp`` (the C++ kernel wherever it applies; an error if it cannot be
built) or ``torch``. :data:`steps_run` counts the steps each kernel ran, so a test can prove which one did.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import Counter
from typing import Literal

import torch

from tpar.model import kernel_build
from tpar.model.kernel_build import cpp_kernel
from tpar.model.attention import AttentionTerms

KernelChoice = Literal["auto", "cpp", "torch"]
KERNEL_CHOICES: tuple[KernelChoice, ...] = ("auto", "cpp", "torch")

_CHUNK = 1 << 13  # links per chunk on the CPU: temporaries stay in cache
_CHUNK_CUDA = 1 << 17  # on a GPU each chunk costs kernel launches: fewer, larger chunks (64 MB at d=128)
#: recursive steps run by each kernel in this process ("cpp" / "torch")
steps_run: Counter = Counter()
#: the same per thread (an app serves several sessions from one process, each in its own thread)
_thread_steps = threading.local()


def thread_steps() -> Counter:
    """Recursive steps run by each kernel in the calling thread (a live Counter)."""
    if not hasattr(_thread_steps, "counts"):
        _thread_steps.counts = Counter()
    return _thread_steps.counts


def _count(kernel: str) -> None:
    steps_run[kernel] += 1
    thread_steps()[kernel] += 1


def check_kernel(choice: str) -> KernelChoice:
    if choice not in KERNEL_CHOICES:
        raise ValueError(f"unknown kernel {choice!r} (expected one of {', '.join(KERNEL_CHOICES)})")
    return choice  # type: ignore[return-value]


def default_kernel() -> KernelChoice:
    """The kernel a new model uses: ``$TPAR_KERNEL`` (auto, cpp or torch), else ``auto``."""
    return check_kernel(os.environ.get("TPAR_KERNEL", "auto").lower() or "auto")


def kernel_status(choice: str = "auto") -> str:
    """``cpp`` when the fused kernel serves the CPU under ``choice``, else ``torch (why)``."""
    if check_kernel(choice) == "torch":
        return "torch (selected)"
    return "cpp" if kernel_build.cpp_kernel() is not None else f"torch ({kernel_build.build_failure()})"


def use_fused(choice: str, device: torch.device, dtype: torch.dtype, per_link_output: bool) -> bool:
    """Whether a step runs in the fused C++ kernel under ``choice``: it applies on the CPU, in
    float32/64, when no per-link output (α per link, chronological bounds) is needed; ``cpp`` then
    demands it, ``auto`` takes it once built (never waiting for a background build)."""
    if check_kernel(choice) == "torch":
        return False
    applies = device.type == "cpu" and dtype in (torch.float32, torch.float64) and not per_link_output
    if not applies:
        return False
    if choice == "auto" and kernel_build.kernel_building():
        return False  # being built in the background: the torch kernel answers meanwhile
    if kernel_build.cpp_kernel() is None:
        if choice == "cpp":
            raise RuntimeError(f"the C++ kernel was selected but cannot be built ({kernel_build.build_failure()})")
        if not kernel_build.BUILD.warned:
            kernel_build.BUILD.warned = True
            warnings.warn(f"TPAR C++ kernel unavailable ({kernel_build.build_failure()}); using the slower torch "
                          "kernel", stacklevel=2)
        return False
    return True


class _CsrStep(torch.autograd.Function):
    """The fused step reading links straight from the CSR index (no per-link arrays at all)."""

    @staticmethod
    def forward(ctx, h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, gate, graph: tuple, num_out: int):
        args = [x.contiguous() for x in (h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, gate)]
        out = cpp_kernel().csr_forward(*args, *graph, int(num_out))
        ctx.save_for_backward(*args)
        ctx.graph = graph
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grads = cpp_kernel().csr_backward(grad_out, *ctx.saved_tensors, *ctx.graph)
        g_gate = grads[9] if ctx.saved_tensors[9].numel() else None
        return (*grads[:9], g_gate, None, None)


class _GateStep(torch.autograd.Function):
    """The GRU gate between steps with its element-wise part in the C++ kernel; ``gh`` (the W_hh h_prev
    matmul) only for the nodes that existed before the step (a new node's h_prev is 0)."""

    @staticmethod
    def forward(ctx, x, h_old, old_row, w_ih, w_hh, b_ih, b_hh):
        d = x.shape[1]
        gi = torch.addmm(b_ih, x, w_ih.t())          # (P, 3d)
        gh_old = torch.addmm(b_hh, h_old, w_hh.t())  # (P_old, 3d): only the nodes that existed before
        ghn = cpp_kernel().gate_pre(gi, gh_old, old_row, b_hh)  # gi[:, :2d] += gh[:, :2d]; gh_n (P, d)
        gi[:, : 2 * d].sigmoid_()                    # r, z
        n = torch.addcmul(gi[:, 2 * d:], gi[:, :d], ghn).tanh_()
        out = cpp_kernel().gate_mix(n, gi, h_old, old_row)
        ctx.save_for_backward(x, h_old, old_row, w_ih, w_hh, gi, n, ghn)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, h_old, old_row, w_ih, w_hh, rz, n, ghn = ctx.saved_tensors
        g_gi, g_gh, g_hp, g_bh = cpp_kernel().gate_backward(grad, rz, n, ghn, old_row, h_old)
        g_x = g_gi @ w_ih if ctx.needs_input_grad[0] else None
        g_h_old = torch.addmm(g_hp, g_gh, w_hh) if ctx.needs_input_grad[1] else None
        return g_x, g_h_old, None, g_gi.t() @ x, g_gh.t() @ h_old, g_gi.sum(0), g_bh


def gate_step(cell: torch.nn.GRUCell, x: torch.Tensor, h_old: torch.Tensor, loop_dst: torch.Tensor,
              fused: bool) -> torch.Tensor:
    """The GRU gate between recursive steps: ``cell(x, h_prev)`` (P, d), where h_prev holds each old
    node's state h_old (P_old, d) at its row ``loop_dst`` (P_old,) and 0 for the nodes reached for
    the first time. ``fused``: the C++ kernel's element-wise pass, skipping W_hh for the new nodes
    (same maths, counted in :data:`steps_run` as ``cpp-gate``); else ``cell`` itself."""
    h_old = h_old.to(x.dtype)
    if not fused or cell.bias_ih is None or torch.is_autocast_enabled(x.device.type):
        return cell(x, x.new_zeros(x.shape).index_copy(0, loop_dst, h_old))
    _count("cpp-gate")
    old_row = torch.full((x.shape[0],), -1, dtype=torch.long, device=x.device)
    old_row[loop_dst] = torch.arange(loop_dst.shape[0], device=x.device)
    return _GateStep.apply(x.contiguous(), h_old.contiguous(), old_row, cell.weight_ih, cell.weight_hh,
                           cell.bias_ih, cell.bias_hh)


def _repeat_args(index, repeat, q_time) -> tuple[torch.Tensor, ...]:
    """The kernel's (rep_next, rep_prev, raw edge times, raw question times), empty when unused."""
    if repeat is None:
        empty = torch.empty(0, dtype=torch.long)
        return empty, empty, empty, empty
    return repeat[0].contiguous(), repeat[1].contiguous(), index.time, q_time.contiguous()


def csr_step(h: torch.Tensor, h_rel: torch.Tensor, h_time: torch.Tensor, terms: AttentionTerms, *, start, end,
             node_e, node_ptr, index, time_code, q_offset, own, pos, num_out: int,
             node_gate: torch.Tensor | None = None, repeat: tuple[torch.Tensor, torch.Tensor] | None = None,
             q_time: torch.Tensor | None = None) -> torch.Tensor:
    """Summed weighted messages (num_out, d) of every admitted link, read from the CSR ``index``:
    node p's links are index edges start[p]:end[p] minus each query's ``own`` fact (B, 4) and its
    inverse (its time given as a code); Δt-table row = time_code[e] − q_offset[q]; destination row =
    pos[q·E + dst entity];
    ``node_gate`` (P,): optional factor on the α of node p's links (takes gradients);
    ``repeat``: the index's per-edge repeat bounds (LinkLimits.repeats) with ``q_time`` (B,) each
    question's t_q -- older repeats of a fact are skipped."""
    empty = torch.empty(0, dtype=torch.long)
    graph = (start.contiguous(), end.contiguous(), node_e.contiguous(), node_ptr.contiguous(), index.dst, index.rel,
             time_code.contiguous(), q_offset.contiguous(), own.contiguous() if own is not None else empty, pos,
             *_repeat_args(index, repeat, q_time), int(index.num_entities), int(index.num_relations))
    _count("cpp")
    gate = node_gate if node_gate is not None else h.new_empty(0)
    return _CsrStep.apply(h, terms.node, h_rel, terms.relation, terms.query, h_time, terms.time, terms.w, terms.b,
                          gate, graph, num_out)


def csr_mark(start, end, node_e, node_ptr, index, time_code, own, repeat=None, q_time=None) -> torch.Tensor:
    """(B·E,) bool: the (query, entity) pairs that one step reaches (links and self-loops); ``own``'s
    times are codes comparable with ``time_code``; ``repeat`` / ``q_time`` as in :func:`csr_step`."""
    empty = torch.empty(0, dtype=torch.long)
    return cpp_kernel().csr_mark(start.contiguous(), end.contiguous(), node_e.contiguous(), node_ptr.contiguous(),
                                 index.dst, index.rel, time_code.contiguous(), own.contiguous() if own is not None else empty,
                                 *_repeat_args(index, repeat, q_time), int(index.num_entities), int(index.num_relations))


def _chunk(like: torch.Tensor) -> int:
    """Links per chunk of the torch kernel on ``like``'s device."""
    return _CHUNK_CUDA if like.is_cuda else _CHUNK


class _Aggregate(torch.autograd.Function):
    """out[dst] += α · (h[src] + H_rel[rel] + H_time[dt]) in chunks; backward recomputes messages."""

    @staticmethod
    def forward(ctx, h, h_rel, h_time, alpha, src, rel, dt, dst, num_out: int):
        out = h.new_zeros(num_out, h.shape[1])
        chunk = _chunk(h)
        for a in range(0, src.shape[0], chunk):
            b = a + chunk
            msg = torch.index_select(h, 0, src[a:b])
            msg += torch.index_select(h_rel, 0, rel[a:b])
            msg += torch.index_select(h_time, 0, dt[a:b])
            msg *= alpha[a:b, None].to(msg.dtype)
            out.index_add_(0, dst[a:b], msg)
        ctx.save_for_backward(h, h_rel, h_time, alpha, src, rel, dt, dst)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        h, h_rel, h_time, alpha, src, rel, dt, dst = ctx.saved_tensors
        g_h, g_r, g_t = torch.zeros_like(h), torch.zeros_like(h_rel), torch.zeros_like(h_time)
        g_a = torch.empty_like(alpha)
        grad_out = grad_out.contiguous()
        chunk = _chunk(h)
        for a in range(0, src.shape[0], chunk):
            b = a + chunk
            gm = torch.index_select(grad_out, 0, dst[a:b])
            msg = torch.index_select(h, 0, src[a:b])
            msg += torch.index_select(h_rel, 0, rel[a:b])
            msg += torch.index_select(h_time, 0, dt[a:b])
            g_a[a:b] = (gm * msg).sum(1).to(alpha.dtype)
            ga = gm * alpha[a:b, None].to(gm.dtype)
            g_h.index_add_(0, src[a:b], ga)
            g_r.index_add_(0, rel[a:b], ga)
            g_t.index_add_(0, dt[a:b], ga)
        return g_h, g_r, g_t, g_a, None, None, None, None, None


def links(h: torch.Tensor, h_rel: torch.Tensor, h_time: torch.Tensor, terms: AttentionTerms, src: torch.Tensor,
          rel: torch.Tensor, dt: torch.Tensor, dst: torch.Tensor, edge_ptr: torch.Tensor, num_out: int,
          link_weight: torch.Tensor | None = None,
          node_gate: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The torch kernel: summed weighted messages (num_out, d) and attention α (M,) of M listed links.

    Shapes: h (P, d), h_rel (2R+1, d), h_time (T, d); src/rel/dt/dst (M,) int64 rows of h, h_rel,
    h_time and of the output, with the links of query q at positions edge_ptr[q]:edge_ptr[q+1]
    (edge_ptr (B+1,)). ``link_weight`` (M,): optional factors on α that take gradients
    (explanations: ∂f/∂link, Eq. 14); ``node_gate`` (P,): optional factor on the α of node p's links
    (a learned top-K priority); α is returned without either.
    """
    counts = edge_ptr[1:] - edge_ptr[:-1]
    q = torch.repeat_interleave(torch.arange(counts.shape[0], device=src.device), counts)
    alpha = terms.alpha(src, rel, q, dt)
    weighted = alpha if node_gate is None else alpha * node_gate.index_select(0, src)
    if link_weight is not None:
        weighted = weighted * link_weight
    _count("torch")
    return _Aggregate.apply(h, h_rel, h_time, weighted, src, rel, dt, dst, num_out), alpha.detach()
