"""`evomem` — one CLI, one config class per subcommand, ``--json`` for machines.

    evomem demo                      # the main job: shipped history -> ontology -> retrieval with states
    evomem retrieve --user maya "Suggest a vacation"
    evomem cypher --user maya "MATCH (c:Concept)-[:CONTAINS]->(f:Fact) RETURN c.name, f.statement LIMIT 5"
    evomem undo --user maya EDIT_ID
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from evomem.cliargs import add_model_args, model_from_args
from evomem.commands.common import Command
from evomem.errors import USAGE, debug_requested, run_reporting


# Each area registers its subcommands in its own module (COMMANDS); this table says which module holds
# which command, so a command imports its own module only (tests/test_cli_start.py keeps it in step).
# Importing a command module is cheap: models load inside the commands that need them, never at import.
_AREAS = ("graph_cmds", "induction_cmds", "serving_cmds", "mcp_cmds", "policy_cmds", "relations_cmds", "eval_cmds",
          "data_cmds", "concept_cmds")  # the order of `evomem --help`
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(("demo", "retrieve", "cypher", "undo", "load-example", "users"), "graph_cmds"),
    **dict.fromkeys(("ingest", "forget", "purge", "history"), "induction_cmds"),
    **dict.fromkeys(("serve", "serve-model", "vllm-command", "answer"), "serving_cmds"),
    "mcp": "mcp_cmds",
    **dict.fromkeys(("build-data", "build-instances", "train-policy", "ship-policy", "train-reader"), "policy_cmds"),
    "train-relations": "relations_cmds",
    "eval": "eval_cmds",
    **dict.fromkeys(("export", "import", "migrate", "facts", "profile"), "data_cmds"),
    "concepts": "concept_cmds",
}


def _all_commands(only: str | None = None) -> dict[str, Command]:
    """Every subcommand, or just ``only`` (then only its module is imported) when the table knows it."""
    if only in COMMAND_MODULES:
        mod = importlib.import_module(f"evomem.commands.{COMMAND_MODULES[only]}")
        if only in mod.COMMANDS:
            return {only: mod.COMMANDS[only]}
    out: dict[str, Command] = {}
    for area in _AREAS:
        out.update(importlib.import_module(f"evomem.commands.{area}").COMMANDS)
    return out


def _command_name(argv: list[str]) -> str | None:
    """The subcommand named on the command line (the top level takes flags without values only)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _quiet_third_party() -> None:
    """No Hugging Face progress bars (loading weights, hub files) on any command: they flash for a
    fraction of a second and bury the output. Long work keeps its own bars (ingest, training: plain
    tqdm, untouched). Set HF_HUB_DISABLE_PROGRESS_BARS=0 to see them again."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (not the usage block), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(commands: dict[str, Command] | None = None) -> argparse.ArgumentParser:
    """The parser for ``commands`` (default: every subcommand)."""
    parser = _Parser(prog="evomem", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    debug_help = "Show the Python traceback of an error (also EVOMEM_DEBUG=1)."
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (model, _, help_text) in (_all_commands() if commands is None else commands).items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        add_model_args(p, model)
        # SUPPRESS: a subcommand that is not given --debug leaves the top-level value alone
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `evomem` entry point: every failure is a sentence on stderr (evomem/errors.py)."""
    argv = sys.argv[1:] if argv is None else argv
    _quiet_third_party()
    commands = _all_commands(_command_name(argv))  # one module when the command is known: starts at once
    ns = build_parser(commands).parse_args(argv)
    model, fn, _ = commands[ns.command]
    return run_reporting(ns.command, lambda: fn(model_from_args(model, ns)), debug_requested(ns.debug))


if __name__ == "__main__":
    sys.exit(main())
