"""The crash corpus of user Cypher (issue 43): queries that took the whole server down when the engine
ran in process, and generated variants of each class.

- ``skip``: ORDER BY with a large SKIP (LadybugDB 0.22 segfaults from SKIP 15,420 on); refused by the
  parser now (SKIP/LIMIT <= 10,000), and variants under the cap that must run.
- ``fold``: a literal doubled with ``WITH s + s`` until a quadratic function (levenshtein) works on
  ~50-100K characters at bind time, where the engine's timeout does not reach.
- ``builder``: one step that builds a huge value from a parameter (``replace($s, 'a', $s)``: 40 KB in,
  1.6 GB out) or a list comprehension over a large parameter.

``corpus(n, seed)`` yields (class, query, params); the same seed gives the same corpus.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from typing import Any

CLASSES = ("skip", "fold", "builder")
PROPS = ("statement", "kind", "holder", "fact_id", "evidence", "scope")


def _skip(rng: random.Random) -> tuple[str, dict[str, Any]]:
    skip = rng.choice([rng.randint(15_420, 40_000), rng.randint(10_001, 1_000_000), 20_000, 100_000])
    limit = rng.randint(1, 50)
    p = rng.choice(PROPS)
    q = rng.choice([
        f"MATCH (f:Fact) RETURN f.{p} ORDER BY f.{p} SKIP {skip} LIMIT {limit}",
        f"UNWIND [1,2] AS x RETURN x ORDER BY x SKIP {skip} LIMIT {limit}",
        f"MATCH (t:Turn) RETURN t.text AS s ORDER BY s DESC SKIP {skip} LIMIT {limit}",
        f"UNWIND range(1, {rng.randint(2, 500)}) AS x WITH x ORDER BY x SKIP {skip} RETURN x LIMIT {limit}",
    ])
    return q, {}


def _fold(rng: random.Random) -> tuple[str, dict[str, Any]]:
    lit = "".join(rng.choice(string.ascii_letters + " ") for _ in range(rng.randint(150, 260)))
    steps = rng.randint(8, 9)
    names = [f"s{i}" for i in range(steps + 1)]
    parts = [f"WITH '{lit}' AS {names[0]}"]
    parts += [f"WITH {a} + {a} AS {b}" for a, b in zip(names, names[1:])]
    last = names[-1]
    tail = rng.choice([f"RETURN levenshtein({last}, {last} + 'f') AS d",
                       f"RETURN levenshtein(reverse({last}), {last}) AS d",
                       f"RETURN levenshtein(upper({last}), lower({last})) AS d"])
    return " ".join(parts + [tail]), {}


def _builder(rng: random.Random) -> tuple[str, dict[str, Any]]:
    n = rng.randint(30_000, 60_000)
    s = "a" * n if rng.random() < 0.5 else "".join(rng.choice("ab") for _ in range(n))
    q = rng.choice([
        "RETURN size(replace($s, 'a', $s)) AS n",
        "RETURN size(replace($s, 'a', $s + $s)) AS n",
        "WITH replace($s, 'a', $s) AS big RETURN size(big) AS n",
        "RETURN size(replace(replace($s, 'b', 'a'), 'a', $s)) AS n",
    ])
    return q, {"s": s}


_MAKERS = {"skip": _skip, "fold": _fold, "builder": _builder}


def corpus(n: int, seed: int = 0, classes: tuple[str, ...] = CLASSES) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``n`` generated queries, the classes in turn; the first of each class is the probe's own query."""
    firsts = {
        "skip": ("MATCH (f:Fact) RETURN f.statement ORDER BY f.statement SKIP 20000 LIMIT 1", {}),
        "fold": _fold(random.Random(-1)),
        "builder": ("RETURN size(replace($s,'a',$s))", {"s": "a" * 40_000}),
    }
    rng = random.Random(seed)
    for i in range(n):
        cls = classes[i % len(classes)]
        q, p = firsts[cls] if i < len(classes) else _MAKERS[cls](rng)
        yield cls, q, p


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def sentence(msg: str) -> bool:
    """A message a person can read: starts with a capital, ends with a full stop, names no internals."""
    return bool(msg) and msg[0].isupper() and msg.rstrip().endswith((".", "?", "!")) and "Traceback" not in msg


def attack(url: str, pid: int, keys: list[str], user: str, items: list[tuple[str, str, dict[str, Any]]],
           health_every_s: float = 0.05) -> dict[str, Any]:
    """Send ``items`` to ``url`` from one client per key while /health is polled and the server's RSS
    sampled; returns what every bar of issue 43 needs (statuses per class, /health percentiles, RSS,
    whether ``pid`` is still the server)."""
    import statistics
    import threading
    import time
    from collections import Counter

    import httpx

    todo = list(enumerate(items))
    lock = threading.Lock()
    by_class: dict[str, Counter[int]] = {c: Counter() for c in CLASSES}
    bad_messages: list[str] = []
    transport_errors: list[str] = []
    stop = threading.Event()
    health: list[float] = []
    rss: list[float] = []

    def client(key: str) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120,
                          trust_env=False) as c:
            while True:
                with lock:
                    if not todo:
                        return
                    _, (cls, q, p) = todo.pop()
                try:
                    r = c.post(f"/v1/users/{user}/cypher", json={"query": q, "params": p})
                except httpx.HTTPError as e:
                    with lock:
                        transport_errors.append(f"{cls}: {type(e).__name__}")
                    continue
                with lock:
                    by_class[cls][r.status_code] += 1
                    if r.status_code != 200:
                        msg = r.json().get("error", {}).get("message", "") if r.headers.get(
                            "content-type", "").startswith("application/json") else r.text
                        if not sentence(msg):
                            bad_messages.append(f"{r.status_code} {msg[:120]}")

    def watch() -> None:
        with httpx.Client(base_url=url, timeout=30, trust_env=False) as h:
            while not stop.is_set():
                t = time.perf_counter()
                try:
                    ok = h.get("/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                health.append((time.perf_counter() - t) * 1e3 if ok else float("inf"))
                try:
                    rss.append(rss_mb(pid))
                except OSError:
                    rss.append(float("inf"))
                time.sleep(health_every_s)

    t0 = time.perf_counter()
    w = threading.Thread(target=watch)
    w.start()
    threads = [threading.Thread(target=client, args=(k,)) for k in keys]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stop.set()
    w.join()
    hs = sorted(health)
    try:
        alive = open(f"/proc/{pid}/status").read() != ""
    except OSError:
        alive = False
    return {"queries": len(items), "seconds": round(time.perf_counter() - t0, 1),
            "statuses": {c: dict(sorted(v.items())) for c, v in by_class.items() if v},
            "not_a_sentence": bad_messages[:5], "n_not_a_sentence": len(bad_messages),
            "transport_errors": len(transport_errors), "server_alive": alive,
            "health_n": len(hs), "health_p50_ms": round(statistics.median(hs), 1) if hs else None,
            "health_p95_ms": round(hs[min(len(hs) - 1, int(0.95 * (len(hs) - 1)))], 1) if hs else None,
            "health_max_ms": round(hs[-1], 1) if hs else None, "rss_max_mb": round(max(rss), 1) if rss else None}
