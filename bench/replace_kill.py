"""`import --replace` under SIGKILL at random moments (issue 43 bar: >= 20 kills per backend, 0 users lost).

What it does: a writer process (tests/replace_writer.py) swaps user ``ada`` between two memories A and
B with ``import_user(..., 'replace')`` in a loop; it is killed with SIGKILL at a random moment after its
first swap, the store is reopened and the user must hold exactly A or B (never none, never a mix).
Then the same through the real CLI: ``evomem import FILE --replace`` killed at a random moment.

    python bench/replace_kill.py --kills 20                      # embedded
    python bench/replace_kill.py --kills 20 --backends embedded neo4j
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from replace_writer import USER, open_store, statements, version  # noqa: E402
from test_replace_kill import A, B, kill_rounds  # noqa: E402

from graph.portable import dumps, import_user  # noqa: E402


def cli_kills(kind: str, where: str, work: Path, kills: int, seed: int) -> list[str]:
    """``evomem import --replace`` (the CLI a user runs) killed at a random moment of its run."""
    rng = random.Random(seed)
    files = {t: work / f"ada-{t}.jsonl" for t in "AB"}
    for t, p in files.items():
        p.write_text(dumps(version(t)))
    store = open_store(kind, where)
    store.purge_user(USER)
    import_user(store, version("A"))
    store.close()
    opts = (["--store", "embedded", "--store-path", where] if kind == "embedded"
            else ["--store", "neo4j", "--neo4j-uri", where]) + ["--embedder", "hash"]
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "evomem.cli", "import", str(files["B"]), "--replace", *opts], check=True,
                   cwd=ROOT, capture_output=True)
    full = time.perf_counter() - t0  # one whole run: the kills land anywhere inside it
    found = []
    for i in range(kills):
        p = subprocess.Popen([sys.executable, "-m", "evomem.cli", "import", str(files["AB"[i % 2]]), "--replace",
                              *opts], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, full))
        p.kill()
        p.wait()
        store = open_store(kind, where)
        try:
            held = statements(store)
        finally:
            store.close()
        found.append("A" if held == A else "B" if held == B else "none" if not held else "mix")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--backends", nargs="+", default=["embedded"], choices=["embedded", "neo4j"])
    args = ap.parse_args(argv)
    report: dict[str, Any] = {}
    stop = None
    uri = os.environ.get("EVOMEM_NEO4J_URI")
    if "neo4j" in args.backends and not uri:
        from neo4j_server import start_neo4j

        uri, stop = start_neo4j()
    try:
        for b in args.backends:
            with tempfile.TemporaryDirectory(prefix="evomem-bench-replace-") as tmp:
                where = str(Path(tmp) / "store") if b == "embedded" else str(uri)
                loop = kill_rounds(b, where, args.kills, seed=11)
                cli = cli_kills(b, where if b == "neo4j" else str(Path(tmp) / "store-cli"), Path(tmp), args.kills, 12)
                lost = sum(f[0] not in "AB" for f in loop) + sum(f not in ("A", "B") for f in cli)
                report[b] = {"writer_loop_kills": len(loop), "replaces_acked_before_kills": sum(int(f[1:]) for f in loop),
                             "cli_kills": len(cli), "cli_held": {k: cli.count(k) for k in sorted(set(cli))},
                             "users_lost_or_mixed": lost}
                print(json.dumps({b: report[b]}), flush=True)
    finally:
        if stop:
            stop()
    return 0 if all(r["users_lost_or_mixed"] == 0 for r in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
