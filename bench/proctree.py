"""Run a command and sample the resident memory of its whole process tree (JVM included).

/usr/bin/time reports the largest single process; a Spark run is a Python process plus a
JVM child, so we sum RSS over the tree every 50 ms from /proc (Linux only, no psutil).
"""

from __future__ import annotations

import os
import platform
import subprocess
import time
from dataclasses import dataclass


@dataclass
class Run:
    seconds: float
    peak_rss_mb: float
    returncode: int
    stdout: bytes
    stderr: bytes


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    return kids


def tree_rss_mb(root: int) -> float:
    kids = _children()
    total, todo = 0, [(root, None)]
    while todo:
        pid, parent = todo.pop()
        todo.extend((k, pid) for k in kids.get(pid, []))
        if parent is not None and _shares_memory(pid, parent):
            continue  # a spawn before its exec: the parent's pages, counted once (with the parent)
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            pass
    return total / (1 << 20)


_KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())  # kcmp(2)'s syscall number
_KCMP_VM = 1  # its "same address space?" question
_libc = None


def _shares_memory(pid: int, parent: int) -> bool:
    """Whether `pid` still runs in its parent's address space: a child started with
    posix_spawn (clone with CLONE_VM) before it execs. A JVM starts every shell command that way
    (Hadoop's local file system runs `chmod` for each file and directory Spark writes), and in
    that instant /proc shows the child with the JVM's whole resident size: summed, a 1M-file
    snapshot's engine tree read ~800 MB higher than it was (BENCHMARKS.md, session 23). Asked of the
    kernel (kcmp); where it will not say, a child that is still its parent's JVM command line."""
    global _libc
    if _KCMP is not None:
        try:
            if _libc is None:
                import ctypes

                _libc = ctypes.CDLL(None, use_errno=True)
            r = _libc.syscall(_KCMP, pid, parent, _KCMP_VM, 0, 0)
            if r in (0, 1, 2):  # equal, less, greater; -1: not allowed or gone
                return r == 0
        except (OSError, AttributeError):
            pass
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as a, open(f"/proc/{parent}/cmdline", "rb") as b:
            mine, theirs = a.read(), b.read()
        return mine == theirs and mine.split(b"\0")[0].endswith(b"java")
    except OSError:
        return False


def pids_running(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (the warm engine, which is not a child
    of the command that asks it)."""
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        out.append(int(p))
            except OSError:
                pass
    return out


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600, also: tuple[int, ...] = ()) -> Run:
    """`also`: more process trees (the engine's) whose memory counts with the command's."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = 0.0
    out_chunks: list[bytes] = []
    import threading

    def drain(stream, sink):
        for chunk in iter(lambda: stream.read(1 << 16), b""):
            sink.append(chunk)

    err_chunks: list[bytes] = []
    threads = [threading.Thread(target=drain, args=(p.stdout, out_chunks)), threading.Thread(target=drain, args=(p.stderr, err_chunks))]
    for th in threads:
        th.start()
    while p.poll() is None:
        peak = max(peak, tree_rss_mb(p.pid) + sum(tree_rss_mb(a) for a in also))
        if time.perf_counter() - t > timeout:
            p.kill()
            break
        time.sleep(0.05)
    p.wait()
    for th in threads:
        th.join()
    return Run(time.perf_counter() - t, peak, p.returncode, b"".join(out_chunks), b"".join(err_chunks))
