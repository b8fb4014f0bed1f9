"""``evomem mcp``: the memory as an MCP server for agents (stdio or streamable HTTP); serving/mcp_server.py."""

from __future__ import annotations

import os
import sys
from typing import Literal

from pydantic import Field

from evomem.commands.common import Command
from evomem.commands.serving_cmds import LogLevel, ModelOptions, _is_loopback


class McpOptions(ModelOptions):
    transport: Literal["stdio", "http"] = Field(default="stdio", description="stdio (an agent spawns this "
                                                "process) or http (streamable HTTP at --host:--port/mcp).")
    user: str | None = Field(default=None, description="Bind the server to this one user (default: each call "
                             "names user_id, checked against the caller's key over HTTP).")
    host: str = Field(default="127.0.0.1", description="HTTP bind address (auth is required off loopback).")
    port: int = Field(default=8765, ge=0, le=65535, description="HTTP port.")
    path: str = Field(default="/mcp", description="HTTP endpoint path.")
    api_key: str | None = Field(default=None, description="HTTP: deployment API key for every user (default: "
                                "EVOMEM_API_KEY).")
    api_keys_file: str | None = Field(default=None, description="HTTP: YAML/JSON list of {key, users, name} "
                                      "(default: EVOMEM_API_KEYS_FILE), as for `evomem serve`.")
    auth: bool = Field(default=True, description="HTTP: require API keys; --no-auth only on a loopback address.")
    log_level: LogLevel = Field(default="warning", description="uvicorn log level (HTTP).")


def cmd_mcp(opts: McpOptions) -> int:
    from serving.api import ApiSettings, load_api_keys
    from serving.mcp_server import McpSettings, run_mcp
    from serving.server import build_deps

    keys = load_api_keys(opts.api_key or os.environ.get("EVOMEM_API_KEY"),
                         opts.api_keys_file or os.environ.get("EVOMEM_API_KEYS_FILE"))
    http = opts.transport == "http"
    if http and not keys and opts.auth:
        print("evomem mcp: the HTTP transport needs an API key: set EVOMEM_API_KEY, --api-key or --api-keys-file "
              "(or --no-auth on a loopback address for local experiments)", file=sys.stderr)
        return 2
    if http and not opts.auth and not _is_loopback(opts.host):
        print(f"evomem mcp: --no-auth is only allowed on a loopback address, not {opts.host}", file=sys.stderr)
        return 2
    if opts.user is not None:
        from graph.ids import validate_user_id

        try:
            validate_user_id(opts.user)
        except ValueError as e:
            print(f"evomem mcp: --user: {e}", file=sys.stderr)
            return 2
    # stdio: the process is the local operator's own (like the CLI); keys only guard the HTTP transport
    api = ApiSettings(keys=keys, require_auth=http and opts.auth)
    settings = opts.settings()
    deps = build_deps(settings, opts.models(), opts.pipeline_config(), api, ingest_config=settings.ingest)
    run_mcp(deps, McpSettings(user=opts.user), opts.transport, opts.host, opts.port, opts.path, opts.log_level)
    return 0


COMMANDS: dict[str, Command] = {
    "mcp": (McpOptions, cmd_mcp, "Run the MCP server for agents (stdio or streamable HTTP): add, search, state, "
            "answer, facts, history, forget, purge, read-only Cypher; profile and concept-tree resources."),
}
