"""Every CLI failure becomes one sentence on stderr and a non-zero exit code, never a traceback.

Commands raise what they raise; :func:`describe` maps the known exception types to a sentence that
says what went wrong and what to do, in this one module. Exit codes: 2 = the input or usage is
wrong (fix the command line, file or config), 1 = the environment failed (a server is down, the
store is locked, a dependency is missing). ``--debug`` or ``EVOMEM_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

USAGE, RUNTIME = 2, 1
_MAX_CHARS = 400  # a sentence, not a dump of a server's reply


class CliError(Exception):
    """A failure already phrased for the user; ``exit_code`` 2 for wrong input, 1 for the environment."""

    def __init__(self, message: str, exit_code: int = RUNTIME):
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CliError):
    """The command line, a file or a config given by the user is wrong."""

    def __init__(self, message: str):
        super().__init__(message, USAGE)


def debug_requested(argv_flag: bool = False) -> bool:
    return argv_flag or os.environ.get("EVOMEM_DEBUG", "").lower() not in ("", "0", "false", "no")


def _one_line(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _MAX_CHARS else text[: _MAX_CHARS - 1] + "…"


def _process(pid: int) -> str:
    """``PID 123 (evomem serve ...)`` when /proc tells us the command line, else ``PID 123``."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = ""
    return f"PID {pid} ({_one_line(cmd)[:120]})" if cmd else f"PID {pid}"


def _validation(e: BaseException) -> str:
    """A pydantic ValidationError as ``field: reason; field: reason``."""
    parts = []
    for err in getattr(e, "errors")():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        msg = str(err.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "invalid options: " + "; ".join(parts)


def _fname(e: BaseException) -> str | None:
    return getattr(e, "filename", None)


def _locked(e: BaseException) -> tuple[str, int]:
    pid, path = getattr(e, "pid", None), getattr(e, "path", "?")
    holder = f", {_process(pid)}" if pid else " (e.g. `evomem serve`)"
    return f"the store {path} is open in another process{holder}; stop it, or use another --store-path", RUNTIME


def _rules() -> list[tuple[type[BaseException] | tuple[type[BaseException], ...], Callable[[BaseException], tuple[str, int]]]]:
    """(exception types, sentence maker), most specific first. Imports are lazy-light: these modules
    are already loaded by the time a command has failed."""
    from pydantic import ValidationError

    from graph.store import StoreLocked, UnknownUser
    from llmclients.chat import ChatError

    rules: list[tuple[type[BaseException] | tuple[type[BaseException], ...],
                      Callable[[BaseException], tuple[str, int]]]] = [
        (CliError, lambda e: (str(e), getattr(e, "exit_code", RUNTIME))),
        (StoreLocked, _locked),
        (UnknownUser, lambda e: (f"{e.args[0] if e.args else e} (list them with `evomem users`)", USAGE)),
        (ChatError, lambda e: (f"{e} — is the model server running, and is the URL right?"
                               if getattr(e, "kind", "") in ("connection", "timeout") else str(e), RUNTIME)),
        (ValidationError, lambda e: (_validation(e), USAGE)),
        (FileNotFoundError, lambda e: (f"{_fname(e)}: no such file or directory" if _fname(e) else str(e), USAGE)),
        (IsADirectoryError, lambda e: (f"{_fname(e)}: is a folder, expected a file", USAGE)),
        (NotADirectoryError, lambda e: (f"{_fname(e)}: is a file, expected a folder", USAGE)),
        (PermissionError, lambda e: (f"{_fname(e)}: permission denied", RUNTIME)),
        (ModuleNotFoundError, lambda e: (f"missing dependency: the Python package {getattr(e, 'name', '?')!r} is not "
                                         "installed (run `make setup`)", RUNTIME)),
        ((ValueError, KeyError), lambda e: (str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e), USAGE)),
        (ConnectionError, lambda e: (f"cannot connect: {e}", RUNTIME)),
    ]
    # The Neo4j driver is installed with the project but only loaded by `--store neo4j` (importing it
    # costs seconds): when it is not loaded, the failure cannot be one of its exceptions.
    neo = sys.modules.get("neo4j.exceptions")
    if neo is not None:
        rules[1:1] = [
            (neo.ServiceUnavailable, lambda e: (f"Neo4j is not reachable ({e}); start it (scripts/neo4j-server "
                                                "start) or fix --neo4j-uri / EVOMEM_NEO4J_URI", RUNTIME)),
            (neo.AuthError, lambda e: ("Neo4j refused the credentials: set EVOMEM_NEO4J_USER and "
                                       "EVOMEM_NEO4J_PASSWORD", RUNTIME)),
        ]
    return rules


def describe(exc: BaseException) -> tuple[str, int]:
    """(one-line sentence, exit code) for any exception a command can raise."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted", 130
    for types, make in _rules():
        if isinstance(exc, types):
            msg, code = make(exc)
            return _one_line(msg), code
    return (_one_line(f"unexpected {type(exc).__name__}: {exc}") + " (run with --debug for the traceback)", RUNTIME)


def run_reporting(command: str, fn: Callable[[], int], debug: bool = False) -> int:
    """Run ``fn``; turn any exception into ``evomem <command>: error: <sentence>`` and an exit code."""
    try:
        return fn()
    except (Exception, KeyboardInterrupt) as e:  # SystemExit passes: it already carries an exit code
        if debug:
            traceback.print_exc(file=sys.stderr)
        msg, code = describe(e)
        print(f"evomem {command}: error: {msg}", file=sys.stderr)
        return code
