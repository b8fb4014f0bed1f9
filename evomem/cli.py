"""`evomem` — one CLI, one config class per subcommand, ``--json`` for machines.

    evomem demo                      # the main job: shipped history -> ontology -> retrieval with states
    evomem retrieve --user maya "Suggest a vacation"
    evomem cypher --user maya "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name, f.statement LIMIT 5"
    evomem undo --user maya EDIT_ID
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from evomem.cliargs import add_model_args, model_from_args
from evomem.commands.common import Command
from evomem.errors import USAGE, debug_requested, run_reporting


def _all_commands() -> dict[str, Command]:
    # Each area registers its subcommands in its own module; importing them is cheap (no models load).
    from evomem.commands import (data_cmds, eval_cmds, graph_cmds, induction_cmds, mcp_cmds, policy_cmds,
                                 relations_cmds, serving_cmds)

    out: dict[str, Command] = {}
    for mod in (graph_cmds, induction_cmds, serving_cmds, mcp_cmds, policy_cmds, relations_cmds, eval_cmds, data_cmds):
        out.update(mod.COMMANDS)
    return out


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (not the usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="evomem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    debug_help = "Show the Python traceback of an error (also EVOMEM_DEBUG=1)."
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (model, _, help_text) in _all_commands().items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_model_args(p, model)
        # SUPPRESS: a subcommand that is not given --debug leaves the top-level value alone
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `evomem` entry point: every failure is a sentence on stderr (evomem/errors.py)."""
    ns = build_parser().parse_args(argv)
    model, fn, _ = _all_commands()[ns.command]
    return run_reporting(ns.command, lambda: fn(model_from_args(model, ns)), debug_requested(ns.debug))


if __name__ == "__main__":
    sys.exit(main())
