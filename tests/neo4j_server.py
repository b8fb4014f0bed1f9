"""Start/stop a real Neo4j 5.26 Community server for tests (stdlib only).

Wraps ``scripts/neo4j-server`` (an embedded Neo4j DBMS with only Bolt, no auth,
built from Maven Central artifacts; needs java 17+ and mvn on PATH).

    uri, stop = start_neo4j()
    try:
        ...  # neo4j.GraphDatabase.driver(uri, auth=None)
    finally:
        stop()
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Iterator

REPO_ROOT = Path(__file__).resolve().parents[1]
SERVER_SCRIPT = REPO_ROOT / "scripts" / "neo4j-server"
URI_PREFIX = "EVOMEM_NEO4J_URI="
# Extra time allowed for the Maven build (first run downloads ~125 MB of jars).
BUILD_ALLOWANCE_S = 900.0


def neo4j_available() -> bool:
    """True when a server can be used: EVOMEM_NEO4J_URI is set, or java and mvn are on PATH."""
    if os.environ.get("EVOMEM_NEO4J_URI"):
        return True
    return shutil.which("java") is not None and shutil.which("mvn") is not None


def start_neo4j(
    port: int | None = None,
    data_dir: str | None = None,
    timeout: float = 180,
) -> tuple[str, Callable[[], None]]:
    """Start a server in the background; return ``(bolt_uri, stop)``.

    ``port`` None/0 picks a free port; ``data_dir`` None uses a temp folder deleted on stop.
    ``timeout`` bounds the wait for readiness after the (cached) build. ``stop`` is
    idempotent and is also registered with atexit so a crashed test run leaks no JVM.
    Raises RuntimeError with the script's stderr (log tail) on failure.
    """
    run_dir = Path(tempfile.mkdtemp(prefix="evomem-neo4j-run-"))
    pidfile = run_dir / "neo4j.pid"
    logfile = run_dir / "neo4j.log"
    cmd = [str(SERVER_SCRIPT), "start", "--pidfile", str(pidfile), "--logfile", str(logfile)]
    if port:
        cmd += ["--port", str(port)]
    if data_dir:
        cmd += ["--data", str(data_dir)]
    env = dict(os.environ, EVOMEM_NEO4J_START_TIMEOUT=str(max(1, int(timeout))))

    stopped = False

    def stop() -> None:
        nonlocal stopped
        if stopped:
            return
        stopped = True
        subprocess.run(
            [str(SERVER_SCRIPT), "stop", "--pidfile", str(pidfile)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        shutil.rmtree(run_dir, ignore_errors=True)

    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout + BUILD_ALLOWANCE_S,
        )
    except subprocess.TimeoutExpired as exc:
        stop()
        raise RuntimeError(f"neo4j-server start timed out: {exc}") from exc
    uri = next(
        (ln[len(URI_PREFIX):].strip() for ln in proc.stdout.splitlines() if ln.startswith(URI_PREFIX)),
        None,
    )
    if proc.returncode != 0 or not uri:
        stop()
        raise RuntimeError(
            f"neo4j-server start failed (exit {proc.returncode}):\n{proc.stderr.strip()}"
        )
    atexit.register(stop)
    return uri, stop


def serve_for_tests(uri: str | None, what: str) -> Iterator[str]:
    """Body of a session fixture: yield ``uri`` if given, else a server started here and stopped after.

    Without java+mvn this is a skip on a developer's machine and a failure under CI (``CI`` set), so a
    CI run can never pass by skipping the Neo4j tests. ``what`` names the tests and the env var to set.
    """
    import pytest  # only the fixtures need it; the launcher itself stays stdlib-only

    if uri:
        yield uri
        return
    if not neo4j_available():
        if os.environ.get("CI"):
            pytest.fail(f"CI must run {what}, but no server is given and java+mvn are not available")
        pytest.skip(f"no Neo4j for {what}: install java 17 and maven")
    started, stop = start_neo4j()
    try:
        yield started
    finally:
        stop()
