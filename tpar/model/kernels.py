"""The per-link work of one recursive step (paper Eqs. 5, 7 and the sum of Eq. 8):

    α_e = σ(b + wᵀ ReLU(A_node[src_e] + A_rel[rel_e] + A_query[q_e] + A_time[dt_e]))
    out[dst_e] += α_e · (h[src_e] + H_rel[rel_e] + H_time[dt_e])

Two interchangeable implementations:

* :func:`csr_step` (CPU): a fused C++ kernel (``tpar/csrc/links.cpp``), compiled on first use with
  ``torch.utils.cpp_extension`` (needs a C++ compiler and ninja; cached afterwards). It reads each
  node's links straight from the CSR index, threads own whole queries, and nothing of size
  links × d (nor links × 1) is stored: the backward pass recomputes attention and messages.
* :func:`links` (any device; CUDA, explanations that need per-link α, the chronological ablation):
  the same maths in torch ops over a listed set of links, chunked so temporaries stay bounded.

``TPAR_KERNEL=torch`` disables the C++ kernel; if its build fails the torch path is used with one
warning.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import torch

_CHUNK = 1 << 13
_cpp_module = None
_cpp_failed: str | None = None


def cpp_kernel():
    """The compiled C++ module, or ``None`` where it cannot be built (reason in :func:`cpp_status`)."""
    global _cpp_module, _cpp_failed
    if _cpp_module is not None or _cpp_failed is not None:
        return _cpp_module
    if os.environ.get("TPAR_KERNEL", "").lower() == "torch":
        _cpp_failed = "disabled by TPAR_KERNEL=torch"
        return None
    try:
        from torch.utils.cpp_extension import load

        src = Path(__file__).resolve().parent / "csrc" / "links.cpp"
        flags = ["-O3", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math"]
        if os.environ.get("TPAR_NATIVE", "1") != "0":
            flags.append("-march=native")
        _cpp_module = load(name="tpar_links", sources=[str(src)], extra_cflags=flags, verbose=False)
    except Exception as e:  # no compiler, no ninja, ...: fall back to the torch backend
        _cpp_failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        warnings.warn(f"TPAR C++ kernel unavailable ({_cpp_failed}); using the slower torch backend", stacklevel=2)
    return _cpp_module


def cpp_status() -> str:
    cpp_kernel()
    return "cpp" if _cpp_module is not None else f"torch ({_cpp_failed})"


class _CsrStep(torch.autograd.Function):
    """The fused step reading links straight from the CSR index (no per-link arrays at all)."""

    @staticmethod
    def forward(ctx, h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, graph: tuple, num_out: int):
        mod = cpp_kernel()
        args = [x.contiguous() for x in (h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b)]
        out = mod.csr_forward(*args, *graph, int(num_out))
        ctx.save_for_backward(*args)
        ctx.graph = graph
        return out

    @staticmethod
    def backward(ctx, grad_out):
        grads = cpp_kernel().csr_backward(grad_out, *ctx.saved_tensors, *ctx.graph)
        return (*grads, None, None)


def csr_step(h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, *, start, end, node_e, node_ptr, index,
             q_offset, own, pos, num_out) -> torch.Tensor:
    """Aggregated messages (num_out, d) of every admitted link, read from the CSR ``index``:
    node p's links are index edges start[p]:end[p] minus each query's ``own`` fact (B, 4) and its
    inverse; Δt-table row = link time − q_offset[q]; destination row = pos[q·E + dst entity].
    CPU only (needs :func:`cpp_kernel`)."""
    empty = torch.empty(0, dtype=torch.long)
    graph = (start.contiguous(), end.contiguous(), node_e.contiguous(), node_ptr.contiguous(), index.dst, index.rel,
             index.time, q_offset.contiguous(), own.contiguous() if own is not None else empty, pos,
             int(index.num_entities), int(index.num_relations))
    return _CsrStep.apply(h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, graph, num_out)


def csr_mark(start, end, node_e, node_ptr, index, own) -> torch.Tensor:
    """(B·E,) bool: the (query, entity) pairs that one step reaches (links and self-loops)."""
    empty = torch.empty(0, dtype=torch.long)
    return cpp_kernel().csr_mark(start.contiguous(), end.contiguous(), node_e.contiguous(), node_ptr.contiguous(),
                                 index.dst, index.rel, index.time, own.contiguous() if own is not None else empty,
                                 int(index.num_entities), int(index.num_relations))


class _Aggregate(torch.autograd.Function):
    """out[dst] += α · (h[src] + H_rel[rel] + H_time[dt]) in chunks; backward recomputes messages."""

    @staticmethod
    def forward(ctx, h, h_rel, h_time, alpha, src, rel, dt, dst, num_out: int):
        out = h.new_zeros(num_out, h.shape[1])
        for a in range(0, src.shape[0], _CHUNK):
            b = a + _CHUNK
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
        for a in range(0, src.shape[0], _CHUNK):
            b = a + _CHUNK
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


def links_torch(h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, src, rel, dt, dst, edge_ptr, num_out,
                link_weight=None):
    """Reference backend in torch ops; same arguments and results as :func:`links`."""
    counts = edge_ptr[1:] - edge_ptr[:-1]
    q = torch.repeat_interleave(torch.arange(counts.shape[0], device=src.device), counts)
    pre = (torch.index_select(a_node, 0, src) + torch.index_select(a_rel, 0, rel)
           + torch.index_select(a_query, 0, q) + torch.index_select(a_time, 0, dt))
    alpha = torch.sigmoid(torch.relu(pre) @ w + b)
    weighted = alpha if link_weight is None else alpha * link_weight
    out = _Aggregate.apply(h, h_rel, h_time, weighted, src, rel, dt, dst, num_out)
    return out, alpha.detach()


def links(h: torch.Tensor, a_node: torch.Tensor, h_rel: torch.Tensor, a_rel: torch.Tensor, a_query: torch.Tensor,
          h_time: torch.Tensor, a_time: torch.Tensor, w: torch.Tensor, b: torch.Tensor, src: torch.Tensor,
          rel: torch.Tensor, dt: torch.Tensor, dst: torch.Tensor, edge_ptr: torch.Tensor,
          num_out: int, link_weight: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Aggregated messages (num_out, d) and attention weights α (M,) of M listed links (any device).

    Shapes: h (P, d), a_node (P, d_a), h_rel (2R+1, d), a_rel (2R+1, d_a), a_query (B, d_a),
    h_time (T, d), a_time (T, d_a), w (d_a,), b (1,); src/rel/dt/dst (M,) int64 with the links of
    query q at positions edge_ptr[q]:edge_ptr[q+1] (edge_ptr (B+1,)). ``link_weight`` (M,): optional
    factors on α that take gradients (explanations: ∂f/∂link, Eq. 14); α is returned without them.
    """
    return links_torch(h, a_node, h_rel, a_rel, a_query, h_time, a_time, w, b, src, rel, dt, dst, edge_ptr, num_out,
                       link_weight)
