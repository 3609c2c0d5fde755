"""Building and loading the fused C++ kernel (``csrc/links.cpp``); the maths is in :mod:`tpar.model.kernels`.

Compiled on first use with ``torch.utils.cpp_extension`` (needs a C++ compiler and ninja), once per
build key -- source, torch, compiler flags, Python ABI, CPU -- in :func:`cache_root`, shared by every
checkout. One build per process (:data:`BUILD`): in the foreground when a pass first needs it
(:func:`cpp_kernel`), or in the background at an app's start (:func:`build_in_background`), while
``auto`` passes run the torch kernel instead of waiting.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import torch

T = TypeVar("T")


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


class KernelBuild:
    """This process's one build of the C++ kernel: the loaded ``module``, or why it ``failed``, and the
    background thread building it."""

    def __init__(self) -> None:
        self.module = None
        self.failed: str | None = None
        self.thread: threading.Thread | None = None
        self.warned = False  # the one warning that ``auto`` falls back to torch
        self._start_lock = threading.Lock()  # guards starting the background thread
        self._lock = threading.Lock()  # held while the module is built or loaded

    def get(self):
        """The compiled module (built on first call), or ``None`` where it cannot be built."""
        if self.module is not None or self.failed is not None:
            return self.module
        with self._lock:  # one build per process; a caller that needs the module waits for a running one
            return self.build()

    def build(self):
        if self.module is not None or self.failed is not None:
            return self.module
        try:
            inputs = build_inputs()
            name = build_key(inputs)
            self.module = build_once(cache_root(), name, lambda tmp: _compile_kernel(name, tmp),
                                     lambda folder: _load_kernel(name, folder), inputs)
        except Exception as e:  # no compiler, no ninja, a failed build: the torch kernel serves instead
            self.failed = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return self.module

    def start(self) -> bool:
        """Start building in a thread unless built, failed or started; whether a build is running."""
        if self.module is not None or self.failed is not None:
            return False
        with self._start_lock:
            if self.thread is None:
                self.thread = threading.Thread(target=self.get, name="tpar-kernel-build", daemon=True)
                self.thread.start()
        return self.running()

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


#: the process's build of the C++ kernel
BUILD = KernelBuild()


def build_in_background() -> bool:
    """Start building (or loading from the kernel cache) the C++ kernel in a thread and return at once;
    until it is ready, ``auto`` runs the torch kernel instead of waiting (an app's first question is
    answered meanwhile). Returns whether a build is running."""
    return BUILD.start()


def wait_for_kernel(timeout: float | None = None) -> bool:
    """Wait up to ``timeout`` seconds for a background build; whether it is done."""
    thread = BUILD.thread
    if thread is not None:
        thread.join(timeout)
    return not BUILD.running()


def kernel_building() -> bool:
    """Whether a background build started by :func:`build_in_background` is still running."""
    return BUILD.running()


def cpp_kernel():
    """The compiled C++ module (built on first call), or ``None`` where it cannot be built (the reason
    is :func:`build_failure`)."""
    return BUILD.get()


def build_failure() -> str | None:
    """Why the C++ kernel could not be built (None: it built, or no build was tried yet)."""
    return BUILD.failed
