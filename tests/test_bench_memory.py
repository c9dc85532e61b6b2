"""The bench's memory figure (bench/proctree.py) counts each address space once: a child still in
its parent's memory (a JVM's posix_spawn before the exec) is not added again, a forked child with
pages of its own is. Asked of the kernel on real processes and threads, not mocked."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import proctree  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1 << 20)


def test_a_thread_shares_its_process_memory_and_a_forked_child_does_not():
    if not proctree._shares_memory(os.getpid(), os.getpid()):
        pytest.skip("kcmp(2) is not allowed here: the bench falls back to comparing command lines")
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert proctree._shares_memory(t.native_id, os.getpid())  # one address space, as a spawn before its exec
    finally:
        stop.set()
        t.join()
    r, w = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(r)
        ballast = bytearray(64 << 20)  # pages of its own
        ballast[::4096] = b"x" * len(ballast[::4096])
        os.write(w, b"1")
        time.sleep(30)
        os._exit(0)
    try:
        os.close(w)
        assert os.read(r, 1) == b"1"
        assert not proctree._shares_memory(child, os.getpid())
        me, kid = _rss_mb(os.getpid()), _rss_mb(child)
        assert kid > 60
        assert proctree.tree_rss_mb(os.getpid()) >= me + kid - 5  # both counted
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)
        os.close(r)
