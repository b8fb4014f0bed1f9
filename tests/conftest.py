"""Shared fixtures: a network guard, a real Neo4j server, and a store fixture parametrized over both backends.

Neo4j: ``EVOMEM_NEO4J_URI`` if set, else the project's own launcher (scripts/neo4j-server) is started
once per session. Locally the Neo4j tests skip only when neither java nor mvn exists; under CI
(``CI`` set) a missing server is an error, never a skip. The same holds for the benchmark dev data
(``bench_data``).
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from neo4j_server import serve_for_tests  # noqa: E402

# Hooks that order slow files first and print per-file times (see tests/file_order.py).
from file_order import (  # noqa: E402,F401
    STAND_IN,
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_terminal_summary,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _allowed(address: object) -> bool:
    if not isinstance(address, tuple):
        return True  # unix sockets
    host = str(address[0])
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def _guard(fn):  # type: ignore[no-untyped-def]
    def connect(self, address):  # type: ignore[no-untyped-def]
        if not _allowed(address):
            raise RuntimeError(f"network guard: tests may only connect to loopback, not {address!r}")
        return fn(self, address)

    return connect


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{STAND_IN}(test): a quick test that ``test`` (same file, same parameters) "
                            "fully covers; deselected when ``test`` runs too (tests/file_order.py)")
    socket.socket.connect = _guard(_real_connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guard(_real_connect_ex)  # type: ignore[method-assign]


IN_CI = bool(os.environ.get("CI"))


@pytest.fixture(scope="session")
def neo4j_uri() -> Iterator[str]:
    # Under pytest-xdist (scripts/run-tests runs two workers) the Neo4j tests of different workers must
    # not share a server (they wipe it): the first worker uses EVOMEM_NEO4J_URI, the others start their own.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    uri = os.environ.get("EVOMEM_NEO4J_URI") if worker == "gw0" else None
    yield from serve_for_tests(uri, "the Neo4j tests (or set EVOMEM_NEO4J_URI)")


@pytest.fixture(scope="session")
def bench_data() -> Path:
    """The benchmark dev data (training_data/paths.py: <repo>/../shared/data or EVOMEM_DATA_DIR).

    Missing data is a skip on a developer's machine and a failure under CI, like Neo4j: CI clones
    with ../shared beside the checkout, so a skip there would hide a broken path.
    """
    from training_data.paths import data_dir

    d = data_dir()
    if not (d / "locomo").is_dir() or not (d / "memsyco-bench").is_dir() or not (d / "beam").is_dir():
        msg = f"benchmark data not found at {d}: put it at <repo>/../shared/data or set EVOMEM_DATA_DIR"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return d


@pytest.fixture(scope="session")
def _neo4j_store(neo4j_uri: str) -> Iterator[object]:
    from graph.neo4j import Neo4jStore

    store = Neo4jStore(neo4j_uri, embedding_dim=16)
    store.setup()
    yield store
    store.close()


@pytest.fixture(params=["embedded", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """A fresh, empty store of each backend (embedding dim 16 for the hash embedder in tests)."""
    if request.param == "embedded":
        from graph.embedded import EmbeddedStore

        s = EmbeddedStore(tmp_path / "store")
        s.setup()
        yield s
        s.close()
    else:
        s = request.getfixturevalue("_neo4j_store")
        s.wipe()  # type: ignore[attr-defined]
        yield s


@pytest.fixture
def embedder() -> object:
    from llmclients.embeddings import HashEmbedder

    return HashEmbedder(16)


@pytest.fixture
def memory(store: object, embedder: object) -> object:
    """A Memory over ``store`` holding the shipped example history (users maya, leo, sara)."""
    from evomem.examples import load_fixture
    from memcore.memory import Memory

    mem = Memory(store, embedder)  # type: ignore[arg-type]
    load_fixture(mem)
    return mem


@pytest.fixture
def embedded_memory(tmp_path: Path, embedder: object) -> Iterator[object]:
    """An empty Memory over a fresh embedded store (tests that are about logic, not backends)."""
    from memcore.memory import Memory
    from graph.embedded import EmbeddedStore

    store = EmbeddedStore(tmp_path / "store")
    store.setup()
    mem = Memory(store, embedder)  # type: ignore[arg-type]
    yield mem
    mem.close()


@pytest.fixture
def mem(store: object) -> object:
    """An empty Memory over ``store`` with a wider (256-d) hashing embedder than ``embedder``: the
    induction rules' cosine thresholds need sentences that share words to score high and unrelated
    ones low."""
    from memcore.memory import Memory
    from llmclients.embeddings import HashEmbedder

    cache = getattr(store, "_emb_cache", None)
    if cache is not None:  # the shared Neo4j store outlives wipe(); versions restart at 0 per test
        cache.clear()
    return Memory(store, HashEmbedder(256))  # type: ignore[arg-type]
