"""`evomem` — one CLI, one config class per subcommand, ``--json`` for machines.

    evomem demo                      # the main job: shipped history -> ontology -> retrieval with states
    evomem retrieve --user maya "Suggest a vacation"
    evomem cypher --user maya "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name, f.statement LIMIT 5"
    evomem undo --user maya EDIT_ID
"""

from __future__ import annotations

import argparse
import sys

from evomem.cliargs import add_model_args, model_from_args
from evomem.commands.common import Command


def _all_commands() -> dict[str, Command]:
    # Each area registers its subcommands in its own module; importing them is cheap (no models load).
    from evomem.commands import eval_cmds, graph_cmds, induction_cmds, policy_cmds, serving_cmds

    out: dict[str, Command] = {}
    for mod in (graph_cmds, induction_cmds, serving_cmds, policy_cmds, eval_cmds):
        out.update(mod.COMMANDS)
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evomem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (model, _, help_text) in _all_commands().items():
        add_model_args(sub.add_parser(name, help=help_text, description=help_text), model)
    return parser


def main(argv: list[str] | None = None) -> int:
    from graph.cypher_guard import CypherRefused
    from graph.edits import EditRejected
    from graph.store import StoreError
    from llmclients.chat import ChatError

    ns = build_parser().parse_args(argv)
    model, fn, _ = _all_commands()[ns.command]
    try:
        return fn(model_from_args(model, ns))
    except (EditRejected, StoreError, CypherRefused, ChatError, ValueError) as e:
        print(f"evomem {ns.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
