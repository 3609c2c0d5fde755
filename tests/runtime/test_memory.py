"""tpar.runtime.memory: a long scoring pass's freed score matrices go back to the system (glibc's mmap
threshold fixed), the user's own setting is left alone, and every long-lived entry point applies it."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

from tpar.runtime import memory

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"

FREED_BLOCK = textwrap.dedent("""
    import sys
    import numpy as np
    from tpar.runtime.memory import bound_heap_growth

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    applied = bound_heap_growth() if sys.argv[1] == "bounded" else False
    for _ in range(3):  # what a scoring pass does: 12 MB score matrices freed one after another, which
        x = np.ones(1_500_000)  # raises glibc's dynamic threshold past their size unless it is fixed
        del x
    big = np.ones(1_500_000)  # 12 MB, touched
    pin = [bytearray(64) for _ in range(1000)]  # small blocks allocated after it (the heap's top is taken)
    before = rss()
    del big
    print(applied, (before - rss()) / 2 ** 20)
""")


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only: elsewhere bound_heap_growth changes nothing")
def test_a_freed_score_matrix_goes_back_to_the_system():
    def returned(mode: str) -> tuple[str, float]:
        out = subprocess.run([sys.executable, "-c", FREED_BLOCK, mode], capture_output=True, text=True, check=True)
        applied, mb = out.stdout.split()
        return applied, float(mb)

    plain = returned("plain")
    if plain[1] > 10:
        pytest.skip("this malloc returns the freed block even without the fixed threshold: nothing to tell apart")
    applied, mb = returned("bounded")
    assert applied == "True" and mb > 10  # the 12 MB block was unmapped when freed (without the fix: kept)


def test_the_users_own_threshold_is_left_alone(monkeypatch):
    monkeypatch.setattr(memory, "_applied", None)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")

    def refuse(*_a, **_k):
        raise AssertionError("mallopt called although the user set the threshold")

    monkeypatch.setattr(memory.ctypes, "CDLL", refuse)
    assert memory.bound_heap_growth() is True


def test_no_glibc_changes_nothing_and_says_so(monkeypatch):
    monkeypatch.setattr(memory, "_applied", None)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)

    def no_libc(*_a, **_k):
        raise OSError("no libc here")

    monkeypatch.setattr(memory.ctypes, "CDLL", no_libc)
    assert memory.bound_heap_growth() is False


def test_the_cli_and_the_training_worker_bound_the_heap(monkeypatch, capsys):
    from tpar.cli import main

    called = []
    monkeypatch.setattr(memory, "bound_heap_growth", lambda *a, **k: called.append(True) or True)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert called == [True]
    import inspect

    from tpar.runtime import jobs

    assert "bound_heap_growth()" in inspect.getsource(jobs.run_job)
