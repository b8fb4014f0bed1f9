"""The server's side of the sandbox workers (graph/cypher/worker.py): start, route, deadline, replace.

A query goes to a worker process, preferably the one that already holds the user's copy (users are
spread over workers by a hash of their id), else to any idle one. The caller waits at most the wall
deadline; a worker that has not answered by then is killed (SIGKILL) and the caller gets a timeout.
A worker that dies (a crash in the engine, SIGXCPU past its CPU budget, its memory cap) is replaced
on the next call that needs it; the server, its other threads and every other user carry on.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
import zlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graph.cypher.errors import CypherFailed, CypherTimeout
from graph.cypher.worker import decode

WORKER = Path(__file__).with_name("worker.py")


class SandboxSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workers: int = Field(default=2, ge=1, le=64, description="Sandbox worker processes (each runs one query at a time).")
    max_users: int = Field(default=4, ge=1, description="Per-user copies one worker keeps (LRU).")
    buffer_pool_mb: int = Field(default=64, ge=16, description="Engine buffer pool of one user's copy.")
    max_db_mb: int = Field(default=256, ge=16, description="Largest in-memory copy of one user's data.")
    memory_mb: int = Field(default=512, ge=64, description="Address space one query may add to its worker (RLIMIT_AS).")
    timeout_s: float = Field(default=2.0, gt=0, description="A query running longer is interrupted by the engine.")
    cpu_s: float = Field(default=4.0, gt=0, description="CPU seconds one query may use (RLIMIT_CPU ends the worker).")
    grace_s: float = Field(default=1.5, ge=0.1, description="Wall time past timeout_s before the worker is killed.")
    load_timeout_s: float = Field(default=120.0, gt=0, description="Wall deadline for building one user's copy.")
    max_rows: int = Field(default=1000, ge=1, description="Rows kept per query (one more signals truncation).")
    max_reply_mb: int = Field(default=16, ge=1, description="Largest result a query may return.")


class _Died(Exception):
    def __init__(self, why: str, returncode: int | None):
        super().__init__(why)
        self.why, self.returncode = why, returncode


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for f in (proc.stdin, proc.stdout):
        if f is not None:
            try:
                f.close()
            except OSError:
                pass


class _Worker:
    def __init__(self, init: dict[str, Any]):
        self.init = init
        self.lock = threading.Lock()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME")}
        env["OMP_NUM_THREADS"] = "1"
        # a new session: Ctrl-C in the server's terminal does not reach the workers; they leave when
        # the server's end of the pipe closes
        proc = subprocess.Popen([sys.executable, "-I", str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                env=env, bufsize=0, start_new_session=True)
        self.proc = proc
        self.started += 1
        self._talk(self.init, 30.0)
        return proc

    def alive(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            if self.proc is not None:
                _kill(self.proc)
            self._spawn()
        assert self.proc is not None
        return self.proc

    def close(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None

    def _read(self, n: int, deadline: float) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
            if not chunk:
                raise EOFError
            buf += chunk
        return buf

    def _talk(self, msg: dict[str, Any], wall_s: float, max_bytes: int = 1 << 30) -> dict[str, Any]:
        """One request, one reply; the worker is killed if the reply does not come in ``wall_s``."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None
        body = json.dumps(msg, separators=(",", ":")).encode()
        deadline = time.monotonic() + wall_s
        try:
            proc.stdin.write(struct.pack(">I", len(body)) + body)
            (n,) = struct.unpack(">I", self._read(4, deadline))
            if n > max_bytes:
                raise _Died("reply too large", None)
            reply = json.loads(self._read(n, deadline))
        except TimeoutError:
            self.close()
            raise _Died("deadline", None) from None
        except (EOFError, BrokenPipeError, ConnectionResetError, ValueError):
            code = proc.wait(timeout=10) if proc.poll() is None else proc.returncode
            self.close()
            raise _Died("died", code) from None
        if not isinstance(reply, dict):
            self.close()
            raise _Died("bad reply", None)
        return reply


def _died_error(d: _Died, s: SandboxSettings) -> Exception:
    if d.why == "deadline":
        return CypherTimeout(f"the query ran longer than {s.timeout_s:g} s and was stopped; narrow it "
                             "(a LIMIT, fewer hops, fewer MATCH parts, shorter strings)")
    if d.returncode == -signal.SIGXCPU:
        return CypherTimeout(f"the query used more than {s.cpu_s:g} s of CPU and was stopped; narrow it "
                             "(a LIMIT, fewer hops, shorter strings)")
    if d.returncode == 3:
        return CypherFailed(f"the query needs more memory than a user query may use ({s.memory_mb} MB); narrow it")
    return CypherFailed("the query crashed the query engine, which was restarted (no other query was affected); "
                        "narrow it (a smaller SKIP or LIMIT, shorter strings)")


class SandboxPool:
    """A few worker processes; ``run`` is thread-safe and never lets a worker's failure escape as a crash."""

    def __init__(self, settings: SandboxSettings, schema: list[str], loads: dict[str, str]):
        self.settings = settings
        init = {"op": "init", "schema": schema, "load_order": list(loads), "loads": loads,
                "max_boxes": settings.max_users, "buffer_pool_mb": settings.buffer_pool_mb,
                "max_db_mb": settings.max_db_mb}
        self.workers = [_Worker(init) for _ in range(settings.workers)]
        _POOLS.add(self)

    @property
    def restarts(self) -> int:
        """Workers started beyond the first of each slot (each one replaced a worker that died or was killed)."""
        return sum(max(0, w.started - 1) for w in self.workers)

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self.workers if w.proc is not None and w.proc.poll() is None]

    def _acquire(self, user: str) -> _Worker:
        n = len(self.workers)
        home = zlib.crc32(user.encode()) % n
        order = [self.workers[(home + i) % n] for i in range(n)]
        for w in order:
            if w.lock.acquire(blocking=False):
                return w
        wait = self.settings.timeout_s + self.settings.grace_s + 5.0
        if order[0].lock.acquire(timeout=wait):
            return order[0]
        raise CypherTimeout("every Cypher sandbox worker is busy; retry in a few seconds")

    def run(self, user: str, key: str, rows: Any, text: str, params: dict[str, Any]) -> list[list[Any]]:
        """Rows of ``text`` on the copy ``key`` of ``user``'s data; ``rows()`` builds the copy if needed."""
        s = self.settings
        msg = {"op": "run", "key": key, "text": text, "params": params, "timeout_s": s.timeout_s,
               "memory_mb": s.memory_mb, "cpu_s": s.cpu_s, "max_rows": s.max_rows,
               "max_reply_bytes": s.max_reply_mb << 20}
        w = self._acquire(user)
        try:
            w.alive()
            reply = w._talk(msg, s.timeout_s + s.grace_s, s.max_reply_mb << 21)
            if reply.get("need"):
                loaded = w._talk({"op": "load", "key": key, "user": user, "rows": rows()}, s.load_timeout_s)
                if "err" in loaded:
                    raise CypherFailed(str(loaded["msg"]))
                reply = w._talk(msg, s.timeout_s + s.grace_s, s.max_reply_mb << 21)
            if reply.get("err") == "memory":
                w.close()  # it is leaving anyway (worker.py replaces a worker that hit its cap)
        except _Died as d:
            raise _died_error(d, s) from None
        finally:
            w.lock.release()
        if "err" in reply:
            raise WorkerError(str(reply["err"]), str(reply["msg"]))
        return [decode(r) for r in reply["ok"]]

    def close(self) -> None:
        for w in self.workers:
            with w.lock:
                w.close()


class WorkerError(Exception):
    """The engine refused or failed the query inside a worker that is still healthy."""

    def __init__(self, kind: str, msg: str):
        super().__init__(msg)
        self.kind = kind


_POOLS: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


def sandbox_restarts() -> int:
    """Sandbox workers replaced in this process so far (killed at the deadline, over the memory cap or
    crashed), over every pool: what ``/metrics`` reports so operators see hostile queries arriving."""
    return sum(p.restarts for p in list(_POOLS))


@atexit.register
def _close_all() -> None:
    for p in list(_POOLS):
        for w in p.workers:
            w.close()
