"""The per-link work of one recursive step (paper Eqs. 5, 7 and Eq. 8's sum), for every admitted link:

    α_e = σ(b + wᵀ ReLU(A_node[src_e] + A_rel[rel_e] + A_query[q_e] + A_time[dt_e]))     (Eq. 7, split)
    out[dst_e] += α_e · (h[src_e] + H_rel[rel_e] + H_time[dt_e])                       (Eqs. 5, 8)

with the tables of :class:`tpar.model.layers.AttentionTerms`. Two interchangeable implementations:

* ``cpp`` -- :func:`csr_step` / :func:`csr_mark`: a fused C++ kernel (``csrc/links.cpp``), compiled on
  first use with ``torch.utils.cpp_extension`` (needs a C++ compiler and ninja), once per build key --
  source, torch, compiler flags, Python ABI, CPU -- in :func:`cache_root`, shared by every checkout.
  It reads each node's links straight from the CSR index, threads own whole queries, and nothing of
  size links × d is stored: the backward pass recomputes attention and messages. CPU, float32/64,
  and only where no per-link output is needed (no trace, no chronological ablation).
* ``torch`` -- :func:`links`: the same maths in torch ops over a listed set of links, chunked so
  temporaries stay bounded; any device; returns per-link α (explanations need it).

The same C++ module also runs the GRU gate between steps (:func:`gate_step`, ``ModelConfig.gate``): its
element-wise passes fused, and W_hh h_prev computed only for the nodes that existed before the step (a
node reached for the first time has h_prev = 0). Same maths as ``torch.nn.GRUCell``; gated ICEWS14 training 1.4-1.5x faster
than with the cell (``benchmarks/results/bench.json``, 2026-11-25).

**One switch** chooses: :func:`select_kernel` (or the ``TPAR_KERNEL`` environment variable at start-up)
with ``auto`` (the C++ kernel where it applies and builds, else torch, with one warning if the build
fails), ``cpp`` (the C++ kernel wherever it applies; an error if it cannot be built) or ``torch``.
:data:`steps_run` counts the steps each kernel ran, so a test can prove which one did.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import threading
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Literal, TypeVar

import torch

from tpar.model.layers import AttentionTerms

T = TypeVar("T")

KernelChoice = Literal["auto", "cpp", "torch"]
KERNEL_CHOICES: tuple[KernelChoice, ...] = ("auto", "cpp", "torch")

_CHUNK = 1 << 13  # links per chunk on the CPU: temporaries stay in cache
_CHUNK_CUDA = 1 << 17  # on a GPU each chunk costs kernel launches: fewer, larger chunks (64 MB at d=128)
_cpp_module = None
_cpp_failed: str | None = None
_choice: KernelChoice = "auto"
#: recursive steps run by each kernel in this process ("cpp" / "torch")
steps_run: Counter = Counter()


def select_kernel(choice: str) -> None:
    """Choose the kernel for every later forward pass: ``auto``, ``cpp`` or ``torch``."""
    global _choice
    if choice not in KERNEL_CHOICES:
        raise ValueError(f"unknown kernel {choice!r} (expected one of {', '.join(KERNEL_CHOICES)})")
    _choice = choice  # type: ignore[assignment]


@contextmanager
def kernel(choice: str) -> Iterator[None]:
    """``with kernel("torch"): ...`` -- :func:`select_kernel` for a block, restored afterwards."""
    before = _choice
    select_kernel(choice)
    try:
        yield
    finally:
        select_kernel(before)


select_kernel(os.environ.get("TPAR_KERNEL", "auto").lower() or "auto")


#: the compiler flags of the C++ kernel (part of its cache key)
CPP_FLAGS: tuple[str, ...] = ("-O3", "-fopenmp-simd", "-fno-math-errno", "-fno-trapping-math", "-march=native")
CPP_SOURCE = Path(__file__).resolve().parent / "csrc" / "links.cpp"
#: where built kernels are kept (default ``~/.cache/tpar/kernels``, or under ``$XDG_CACHE_HOME``)
CACHE_ENV = "TPAR_KERNEL_CACHE"


def cache_root() -> Path:
    """The folder of built kernels, one sub-folder per build key, shared by every checkout and venv."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tpar" / "kernels"


def _cpu_description() -> str:
    """This CPU's feature flags: the kernel is built with -march=native, so a cache shared with another
    kind of CPU must never serve it code it cannot run."""
    try:
        cpu = Path("/proc/cpuinfo").read_text(errors="replace")
        return next((line for line in cpu.splitlines() if line.startswith("flags")), cpu[:2000])
    except OSError:
        return platform.processor()


def build_inputs(source: Path = CPP_SOURCE) -> dict[str, str]:
    """Everything the built kernel depends on: its source, torch (version and C++ ABI), the compiler
    and its flags, the Python ABI and the CPU. Two checkouts or venvs agreeing on these share one build."""
    import sysconfig

    return {"source_sha256": hashlib.sha256(source.read_bytes()).hexdigest(),
            "torch": torch.__version__,
            "torch_cxx11_abi": str(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", "?")),
            "compiler": os.environ.get("CXX", "c++"),
            "flags": " ".join(CPP_FLAGS),
            "python_abi": f"{sys.implementation.cache_tag} {sysconfig.get_config_var('EXT_SUFFIX')}",
            "machine": platform.machine(),
            "cpu_sha1": hashlib.sha1(_cpu_description().encode()).hexdigest()}


def build_key(inputs: dict[str, str] | None = None) -> str:
    """A short hash of :func:`build_inputs`: the cache folder's (and the module's) name."""
    text = json.dumps(inputs or build_inputs(), sort_keys=True)
    return "tpar_links_" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _build_name() -> str:
    return build_key()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` across processes (and threads: each call opens its own file). The
    operating system releases it when its holder dies, so a killed build never leaves a stale lock.
    Where ``fcntl`` is missing (Windows) there is no lock; the atomic rename still keeps builds whole."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def build_once(root: Path, name: str, compile_into: Callable[[Path], T], load_built: Callable[[Path], T],
               inputs: dict[str, str] | None = None) -> T:
    """The module ``name`` from ``root/name/``, built at most once however many processes ask.

    A finished build is loaded with ``load_built(folder)`` without any lock. Otherwise, under a file
    lock, ``compile_into(tmp)`` builds (and loads) it in a fresh temporary folder that is then renamed
    to ``root/name`` -- a reader sees a complete build or none. Temporary folders left by builds
    that were killed are removed first (a live builder would hold the lock). ``inputs`` are written
    beside the build (``build.json``) to say what it was built from."""
    final = root / name
    if (final / "build.json").is_file():
        return load_built(final)
    root.mkdir(parents=True, exist_ok=True)
    with _file_lock(root / f"{name}.lock"):
        if (final / "build.json").is_file():  # built by another process while this one waited
            return load_built(final)
        for old in root.glob(f"{name}.build-*"):  # left by a killed build: nobody else holds the lock
            shutil.rmtree(old, ignore_errors=True)
        if final.exists():  # an incomplete folder (e.g. from an older layout): rebuild
            shutil.rmtree(final, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}.build-", dir=root))
        try:
            tmp.chmod(0o755)  # mkdtemp's 0700 would keep a shared cache from other users
            module = compile_into(tmp)
            (tmp / "build.json").write_text(json.dumps(inputs or {}, indent=2, sort_keys=True) + "\n")
            os.rename(tmp, final)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return module


def _compile_kernel(name: str, build_dir: Path):
    """Build the C++ kernel in ``build_dir`` (its source copied there: the build does not depend on
    which checkout asked) and load it."""
    from torch.utils.cpp_extension import load

    src = build_dir / "links.cpp"
    shutil.copyfile(CPP_SOURCE, src)
    return load(name=name, sources=[str(src)], extra_cflags=list(CPP_FLAGS), build_directory=str(build_dir),
                verbose=False)


def _load_kernel(name: str, folder: Path):
    """Import a finished build's extension module."""
    import importlib.util
    from torch.utils.cpp_extension import LIB_EXT

    spec = importlib.util.spec_from_file_location(name, folder / f"{name}{LIB_EXT}")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the built kernel from {folder}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_build_lock = threading.Lock()  # guards starting the background thread
_module_lock = threading.Lock()  # held while the module is built or loaded
_build_thread: threading.Thread | None = None


def build_in_background() -> bool:
    """Start building (or loading from the kernel cache) the C++ kernel in a thread and return at once;
    until it is ready, ``auto`` runs the torch kernel instead of waiting (an app's first question is
    answered meanwhile). Returns whether a build is running."""
    global _build_thread
    if _choice == "torch" or _cpp_module is not None or _cpp_failed is not None:
        return False
    with _build_lock:
        if _build_thread is None:
            _build_thread = threading.Thread(target=cpp_kernel, name="tpar-kernel-build", daemon=True)
            _build_thread.start()
    return kernel_building()


def wait_for_kernel(timeout: float | None = None) -> bool:
    """Wait up to ``timeout`` seconds for a background build; whether it is done."""
    thread = _build_thread
    if thread is not None:
        thread.join(timeout)
    return not kernel_building()


def kernel_building() -> bool:
    """Whether a background build started by :func:`build_in_background` is still running."""
    return _build_thread is not None and _build_thread.is_alive()


def cpp_kernel():
    """The compiled C++ module (built on first call), or ``None`` where it cannot be built (the reason
    is in :func:`kernel_status`). Not consulted when ``torch`` is selected."""
    if _cpp_module is not None or _cpp_failed is not None:
        return _cpp_module
    with _module_lock:  # one build per process; a caller that needs the module waits for a running one
        return _build()


def _build():
    global _cpp_module, _cpp_failed
    if _cpp_module is not None or _cpp_failed is not None:
        return _cpp_module
    try:
        inputs = build_inputs()
        name = build_key(inputs)
        _cpp_module = build_once(cache_root(), name, lambda tmp: _compile_kernel(name, tmp),
                                 lambda folder: _load_kernel(name, folder), inputs)
    except Exception as e:  # no compiler, no ninja, a failed build: the torch kernel serves instead
        _cpp_failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        if _choice == "auto":
            warnings.warn(f"TPAR C++ kernel unavailable ({_cpp_failed}); using the slower torch kernel", stacklevel=2)
    return _cpp_module


def kernel_status() -> str:
    """``cpp`` when the fused kernel serves the CPU, else ``torch (why)``."""
    if _choice == "torch":
        return "torch (selected)"
    cpp_kernel()
    return "cpp" if _cpp_module is not None else f"torch ({_cpp_failed})"


def use_fused(device: torch.device, dtype: torch.dtype, per_link_output: bool) -> bool:
    """Whether a step runs in the fused C++ kernel: it applies on the CPU, in float32/64, when no
    per-link output (α per link, chronological bounds) is needed; ``cpp`` then demands it."""
    if _choice == "torch":
        return False
    applies = device.type == "cpu" and dtype in (torch.float32, torch.float64) and not per_link_output
    if not applies:
        return False
    if _choice == "auto" and kernel_building():
        return False  # being built in the background: the torch kernel answers meanwhile
    if cpp_kernel() is None:
        if _choice == "cpp":
            raise RuntimeError(f"the C++ kernel was selected but cannot be built ({_cpp_failed})")
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
    steps_run["cpp-gate"] += 1
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
    steps_run["cpp"] += 1
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
    steps_run["torch"] += 1
    return _Aggregate.apply(h, h_rel, h_time, weighted, src, rel, dt, dst, num_out), alpha.detach()
