"""The redaction corpus over every write path (issue 43 bar): 0 secrets readable afterwards, and a control
run with redaction off that finds them all.

What it does (tests/redaction_paths.py): writes the corpus of tests/redaction_corpus.py (42 shapes,
``--per-shape`` secrets each, new secrets for every path) over session ingest, ``POST /edits`` (every
free-text field), the forget reason, ``evomem import``, the MCP write tools and a real ``evomem serve``;
then looks for every secret in the responses, Cypher results, exports, logs and the raw bytes of the
embedded stores. Prints counts per path, per surface and per shape; exits 1 if a bar fails (a secret
readable with redaction on, or one the control run could not find).

    python bench/redaction.py                     # 126 secrets per path (3 per shape), then the control
    python bench/redaction.py --per-shape 1 --no-control
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from redaction_paths import PATHS, SURFACES, run  # noqa: E402


def table(summary: dict[str, object]) -> str:
    per = summary["readable_per_path_and_surface"]
    assert isinstance(per, dict)
    lines = [f"redaction {summary['redaction']}: {summary['secrets_total']} secrets in {summary['shapes']} shapes "
             f"({summary['seconds']} s)", "  path      secrets  " + "  ".join(f"{s:>11}" for s in SURFACES)
             + "  readable"]
    secrets = summary["secrets_per_path"]
    readable = summary["readable_per_path"]
    assert isinstance(secrets, dict) and isinstance(readable, dict)
    for p in PATHS:
        if p in per:
            lines.append(f"  {p:8s}  {secrets[p]:7d}  " + "  ".join(f"{per[p][s]:11d}" for s in SURFACES)
                         + f"  {readable[p]:8d}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-shape", type=int, default=3, help="Secrets per shape and path.")
    ap.add_argument("--no-control", action="store_true", help="Skip the run with redaction off.")
    ap.add_argument("--no-server", action="store_true", help="Skip the live `evomem serve` path.")
    ap.add_argument("--json", action="store_true", help="Print the summaries as JSON.")
    args = ap.parse_args()
    out, ok = [], True
    for redact in (True, False)[: 1 if args.no_control else 2]:
        with tempfile.TemporaryDirectory() as d:
            s = run(Path(d), redact=redact, per_shape=args.per_shape, live_server=not args.no_server).summary()
        out.append(s)
        readable, secrets = s["readable_per_path"], s["secrets_per_path"]
        assert isinstance(readable, dict) and isinstance(secrets, dict)
        ok &= all(readable[p] == 0 for p in readable) if redact else all(readable[p] == secrets[p] for p in readable)
        if not args.json:
            print(table(s))
            shapes = s["readable_per_shape"]
            assert isinstance(shapes, dict)
            bad = {k: v for k, v in shapes.items() if sum(v.values()) != (0 if redact else len(v) * args.per_shape)}
            print("  per shape: " + ("all as expected" if not bad else json.dumps(bad)))
    if args.json:
        print(json.dumps(out, indent=1))
    print("bars:", "met" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
