"""Induction subcommands."""

from __future__ import annotations

from evomem.commands.common import Command

COMMANDS: dict[str, Command] = {}
