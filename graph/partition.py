"""Users partitioned over several Neo4j servers by a configured map, and moving a user between them.

Each user's graph is independent, so the usual multi-tenant layout applies: a ``PartitionConfig``
names the servers and says where each user lives (a map, then a default rule: a stable hash of the
user id, or one named server). ``PartitionedStore`` is one ``GraphStore`` over them: every per-user
operation goes to that user's server; ``users`` and ``counts`` cover all of them. A server's ``uri``
may be ``neo4j://`` (or ``neo4j+s://``): the driver then routes within a Neo4j cluster or Aura, so a
partition can itself be a cluster where one is licensed.

``migrate_user`` moves one user (``evomem migrate --user U --to SERVER``), atomic from the user's view:

1. lock the user on the source: every commit, purge or replace of that user, from any process, waits
   until the move ends (reads go on);
2. export from the source, import into the target, and verify the target exports the same bytes;
3. write the map (atomic file replace; every process re-reads it when it changes);
4. delete the user from the source, in the transaction that holds the lock, and commit.

Killed or failed before 3: the map still names the source, which was never touched (a copy left on the
target is replaced by the next move). Killed between 3 and 4: the user is read and written on the
target, which holds a verified copy; the source's stale copy is an orphan that ``users`` does not list
and that the next ``migrate`` of that user removes. A writer that waited on the lock finds its version
gone and retries (memcore/retry.py) on the server the map names now.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ContextManager, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graph.models import Edit, Turn
from graph.portable import dumps, import_user, loads, read_user
from graph.snapshot import ChangeSet, Snapshot
from graph.store import GraphStore, PurgeSet, StoreError, Subgraph, UnknownUser

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
URI_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
STEPS = ("locked", "exported", "imported", "verified", "mapped", "deleted")


class PartitionError(StoreError, ValueError):
    """A partition map or a move that cannot be used as asked (the message says why)."""


class Neo4jServer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=NAME_PATTERN, description="Short name of this server: the user map, the default "
                      "rule and `evomem migrate --to NAME` refer to it.")
    uri: str = Field(description="bolt://host:7687 for one server; neo4j://host:7687 (or neo4j+s://) lets the "
                     "driver route within a Neo4j cluster or Aura (where licensed).")
    user: str | None = Field(default=None, description="Neo4j user (None = auth disabled).")
    password: str | None = Field(default=None, description="Neo4j password (None with auth disabled).")
    database: str | None = Field(default=None, description="Database name (None = the server's default).")

    @field_validator("uri")
    @classmethod
    def _scheme(cls, v: str) -> str:
        if v.split("://", 1)[0] not in URI_SCHEMES or "://" not in v:
            raise ValueError(f"uri {v!r}: use one of {', '.join(s + '://' for s in URI_SCHEMES)}")
        return v


class PartitionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    servers: list[Neo4jServer] = Field(min_length=1, description="The Neo4j servers (or clusters) users are "
                                       "spread over, each with a unique name; the order matters to the 'hash' rule.")
    default: str = Field(default="hash", description="Where a user the map does not name lives: 'hash' (a stable "
                         "hash of the user id over the servers in list order; adding a server moves such users, so "
                         "pin them in the map first) or a server name (every new user starts there).")
    users: dict[str, str] = Field(default_factory=dict, description="User id -> server name: where each listed "
                                  "user lives (entries of map_path win).")
    map_path: str | None = Field(default=None, description="JSON file {user id: server name} that `evomem migrate` "
                                 "writes (atomic replace) and every process re-reads when it changes; its entries win "
                                 "over `users`. None: a move is kept only by the process that made it.")

    @model_validator(mode="after")
    def _names_known(self) -> PartitionConfig:
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise ValueError(f"server names must be unique: {names}")
        if self.default != "hash" and self.default not in names:
            raise ValueError(f"default {self.default!r} is neither 'hash' nor a server name ({', '.join(names)})")
        unknown = sorted({s for s in self.users.values() if s not in names})
        if unknown:
            raise ValueError(f"the user map names unknown servers {unknown}; servers are {names}")
        return self

    @classmethod
    def from_file(cls, path: str | Path) -> PartitionConfig:
        """A JSON or YAML file (by suffix); a relative ``map_path`` is read from the file's folder."""
        p = Path(path)
        text = p.read_text(encoding="utf-8")
        if p.suffix in (".yaml", ".yml"):
            import yaml

            raw = yaml.safe_load(text)
        else:
            raw = json.loads(text)
        cfg = cls.model_validate(raw)
        if cfg.map_path and not Path(cfg.map_path).is_absolute():
            cfg = cfg.model_copy(update={"map_path": str(p.parent / cfg.map_path)})
        return cfg


def hash_server(user_id: str, names: Sequence[str]) -> str:
    """The 'hash' rule: stable across processes and runs (not Python's salted ``hash``).

    >>> hash_server("maya", ["a", "b"]) == hash_server("maya", ["a", "b"])
    True
    """
    return names[int.from_bytes(hashlib.sha256(user_id.encode()).digest()[:8], "big") % len(names)]


class PartitionMap:
    """user -> server name: the config's map, the map file over it, then the default rule. The file is
    re-read whenever it changes (a stat per lookup), so a move made by one process reaches the others."""

    def __init__(self, cfg: PartitionConfig):
        self.names = [s.name for s in cfg.servers]
        self.default = cfg.default
        self._inline = dict(cfg.users)
        self.path = Path(cfg.map_path) if cfg.map_path else None
        self._moved: dict[str, str] = {}  # the file's entries (or this process's moves without a file)
        self._stamp: tuple[int, int, int] | None = None
        self._lock = threading.Lock()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path) if self.path else None
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size) if st else None

    def _read_file(self) -> dict[str, str]:
        assert self.path is not None
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        if not isinstance(raw, dict) or any(not isinstance(v, str) or v not in self.names for v in raw.values()):
            raise PartitionError(f"map file {self.path}: expected {{user id: server name}} with servers "
                                 f"{self.names}")
        return {str(k): v for k, v in raw.items()}

    def _refresh(self) -> None:
        if self.path is None:
            return
        stamp = self._stat()
        if stamp != self._stamp:
            with self._lock:
                self._moved, self._stamp = (self._read_file() if stamp else {}), stamp

    def server_for(self, user_id: str) -> str:
        self._refresh()
        name = self._moved.get(user_id) or self._inline.get(user_id)
        if name is not None:
            return name
        return hash_server(user_id, self.names) if self.default == "hash" else self.default

    def assign(self, user_id: str, server: str) -> None:
        """Pin ``user_id`` to ``server``: the file is re-read under a lock, changed and replaced atomically
        (fsynced), so concurrent moves of other users in other processes are kept."""
        if server not in self.names:
            raise PartitionError(f"unknown server {server!r}; servers are {self.names}")
        if self.path is None:
            with self._lock:
                self._moved[user_id] = server
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            current = self._read_file()
            current[user_id] = server
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(current, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
            dirfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dirfd)
            finally:
                os.close(dirfd)
        with self._lock:
            self._moved, self._stamp = current, self._stat()


class UserHold(Protocol):
    version: int

    def purge(self) -> int: ...


class HoldsUsers(Protocol):
    def hold_user(self, user_id: str) -> ContextManager[UserHold]: ...


class PartitionedStore:
    """One GraphStore over several servers: each per-user call goes to the server the map names."""

    name = "partitioned"
    remote_version_token = True

    def __init__(self, members: dict[str, GraphStore], pmap: PartitionMap):
        missing = sorted(set(pmap.names) - set(members))
        if missing:
            raise PartitionError(f"no store for servers {missing}")
        self.members, self.map = members, pmap

    @classmethod
    def open(cls, cfg: PartitionConfig, embedding_dim: int = 384) -> PartitionedStore:
        from graph.neo4j import Neo4jStore

        members: dict[str, GraphStore] = {}
        try:
            for s in cfg.servers:
                members[s.name] = Neo4jStore(s.uri, s.user, s.password, s.database, embedding_dim=embedding_dim)
        except BaseException:
            for m in members.values():
                m.close()
            raise
        return cls(members, PartitionMap(cfg))

    def server_for(self, user_id: str) -> str:
        return self.map.server_for(user_id)

    def store_for(self, user_id: str) -> GraphStore:
        return self.members[self.map.server_for(user_id)]

    # -- whole store --
    def setup(self) -> None:
        for m in self.members.values():
            m.setup()

    def close(self) -> None:
        for m in self.members.values():
            m.close()

    def users(self) -> list[str]:
        """Users across the servers, each where the map routes it (a stale copy left by a killed move is not
        listed: see ``orphans``)."""
        return sorted(u for name, m in self.members.items() for u in m.users() if self.server_for(u) == name)

    def orphans(self) -> list[tuple[str, str]]:
        """(server, user) copies on a server the map does not route the user to."""
        return sorted((name, u) for name, m in self.members.items() for u in m.users() if self.server_for(u) != name)

    def counts(self, user_id: str | None = None) -> dict[str, int]:
        if user_id is not None:
            return self.store_for(user_id).counts(user_id)
        out: dict[str, int] = {}
        for m in self.members.values():
            for k, n in m.counts().items():
                out[k] = out.get(k, 0) + n
        return out

    # -- per user: routed --
    def load_snapshot(self, user_id: str) -> Snapshot:
        return self.store_for(user_id).load_snapshot(user_id)

    def commit(self, changes: ChangeSet) -> None:
        self.store_for(changes.user_id).commit(changes)

    def version_token(self, user_id: str) -> str:
        # the server's name is part of the token: a moved user's caches never match the old server's
        name = self.server_for(user_id)
        return f"{name}/{self.members[name].version_token(user_id)}"

    def vector_search(self, user_id: str, embedding: Sequence[float], k: int) -> list[tuple[str, float]]:
        return self.store_for(user_id).vector_search(user_id, embedding, k)

    def text_search(self, user_id: str, query: str, k: int) -> list[tuple[str, float]]:
        return self.store_for(user_id).text_search(user_id, query, k)

    def expand(self, user_id: str, fact_ids: Sequence[str], max_hops: int) -> set[str]:
        return self.store_for(user_id).expand(user_id, fact_ids, max_hops)

    def fetch(self, user_id: str, fact_ids: Sequence[str], hops: int = 0) -> Subgraph:
        return self.store_for(user_id).fetch(user_id, fact_ids, hops)

    def turns(self, user_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        return self.store_for(user_id).turns(user_id, turn_ids)

    def turn_facts(self, user_id: str, turn_ids: Sequence[str]) -> list[str]:
        return self.store_for(user_id).turn_facts(user_id, turn_ids)

    def embeddings(self, user_id: str) -> dict[str, list[float]]:
        return self.store_for(user_id).embeddings(user_id)

    def edits(self, user_id: str) -> list[Edit]:
        return self.store_for(user_id).edits(user_id)

    def run_readonly_cypher(self, user_id: str, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        from graph.cypher.sandbox import run_user_cypher

        return run_user_cypher(self, user_id, query, params)  # the sandbox reads the user through this store

    def purge_user(self, user_id: str) -> int:
        return self.store_for(user_id).purge_user(user_id)

    def replace_user(self, changes: ChangeSet) -> int:
        return self.store_for(changes.user_id).replace_user(changes)

    def purge_items(self, purge: PurgeSet) -> dict[str, int]:
        return self.store_for(purge.user_id).purge_items(purge)


def migrate_user(store: PartitionedStore, user_id: str, to: str,
                 on_step: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Move ``user_id`` to server ``to`` (see the module docstring for the steps and what a kill leaves).
    ``on_step`` is called after each step of ``STEPS`` (progress; tests inject failures there). A user
    already on ``to`` has only its stale copies on other servers removed."""
    t0, timings = time.perf_counter(), dict[str, float]()  # seconds from the start to the end of each step

    def step(name: str) -> None:
        timings[name] = round(time.perf_counter() - t0, 3)
        if on_step is not None:
            on_step(name)

    if to not in store.members:
        raise PartitionError(f"unknown server {to!r}; servers are {sorted(store.members)}")
    src_name = store.server_for(user_id)
    if src_name == to:
        stale = {name: m.purge_user(user_id) for name, m in store.members.items()
                 if name != to and user_id in m.users()}
        if user_id not in store.members[to].users():
            raise UnknownUser(f"no memories are stored for user {user_id!r}")
        return {"user_id": user_id, "from": to, "to": to, "moved": False, "verified": True,
                "stale_copies_removed": stale}
    src, dst = store.members[src_name], store.members[to]
    if user_id not in src.users():
        raise UnknownUser(f"no memories are stored for user {user_id!r} (on server {src_name!r})")
    if not hasattr(src, "hold_user"):
        raise PartitionError(f"server {src_name!r}: its store cannot hold a user's writes during a move")
    holder: HoldsUsers = src  # type: ignore[assignment]
    with holder.hold_user(user_id) as hold:  # this user's writes wait, in every process, until the move ends
        step("locked")
        text = dumps(read_user(src, user_id))
        step("exported")
        # a copy on the target is a killed move's leftover (the map routes the user to the source): replaced
        import_user(dst, loads(text), "replace" if user_id in dst.users() else "new")
        step("imported")
        if dumps(read_user(dst, user_id)) != text:
            with contextlib.suppress(StoreError):
                dst.purge_user(user_id)
            raise PartitionError(f"user {user_id!r} reads back differently on {to!r}; the move was undone, "
                                 f"the user stays on {src_name!r}")
        step("verified")
        store.map.assign(user_id, to)  # from here the user is read and written on the target
        step("mapped")
        removed = hold.purge()  # committed when the block ends; killed before that, the source keeps a copy
    step("deleted")
    return {"user_id": user_id, "from": src_name, "to": to, "moved": True, "verified": True,
            "bytes": len(text.encode()), "source_nodes_deleted": removed, "timings_s": timings}

