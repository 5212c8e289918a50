"""MCP server declarations (docs/mcp.md#declaring-a-server): how an agent reaches a server of
tools, over stdio or streamable HTTP, and the options its tools take.

Pure values: nothing here starts a process or opens a socket; ``afp_runtime.mcp._connection``
does, in the host.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from afp_runtime.errors import AgentDefinitionError, shown

__all__ = ["McpServer", "McpToolOptions", "checked_servers", "http", "stdio"]

_SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,32}")
_PREFIX = re.compile(r"[A-Za-z0-9_-]{0,32}")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpToolOptions(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """Options for one tool of a server, by the name the server lists it under; each set one
    wins over what the tool's annotations suggest (docs/mcp.md#annotations-and-durability)."""

    idempotent: bool | None = None
    parallel_safe: bool | None = None
    check_in: bool | None = None
    timeout_s: float | None = None
    max_result_chars: int | None = None


class McpServer(
    msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True
):
    """One MCP server an agent takes tools from: ``command`` (stdio) or ``url`` (streamable
    HTTP), never both.

    Args:
        name: the server's name in errors, logs and the default prefix (``[A-Za-z0-9_-]``).
        command, args, env, cwd: the stdio server's program, arguments, the environment it gets
            on top of the SDK's minimal one (``HOME``, ``PATH``...), and its working directory.
        url, headers: the streamable HTTP endpoint and the headers every request carries.
        prefix: put before every tool name the server lists; ``name + "_"`` when not set.
        timeout_s: seconds (on the host's clock) one call may take, unless a tool's own option
            says otherwise.
        connect_timeout_s: seconds the server has to start and list its tools.
        check_in_destructive: a tool the server marks destructive asks the person first.
        tools: options for single tools, by the name the server lists them under.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    prefix: str | None = None
    timeout_s: float = 60.0
    connect_timeout_s: float = 20.0
    check_in_destructive: bool = False
    tools: dict[str, McpToolOptions] = {}

    @property
    def transport(self) -> str:
        """``stdio`` or ``http``."""
        return "stdio" if self.command is not None else "http"

    @property
    def tool_prefix(self) -> str:
        """What every tool name of the server starts with."""
        return self.prefix if self.prefix is not None else self.name + "_"


def stdio(
    name: str,
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    **options: Any,
) -> McpServer:
    """A server the host starts as a child process and talks to over its stdin and stdout.

    ``options`` are the other fields of ``McpServer`` (``prefix``, ``timeout_s``,
    ``connect_timeout_s``, ``check_in_destructive``, ``tools``)."""
    return _declared(
        name=name, command=command, args=tuple(args), env=dict(env or {}), cwd=cwd, **options
    )


def http(
    name: str, url: str, *, headers: Mapping[str, str] | None = None, **options: Any
) -> McpServer:
    """A server reached over streamable HTTP at ``url``; ``options`` as for ``stdio``."""
    return _declared(name=name, url=url, headers=dict(headers or {}), **options)


def _declared(**fields: Any) -> McpServer:
    tools = fields.pop("tools", None) or {}
    try:
        options = {
            key: value if isinstance(value, McpToolOptions) else McpToolOptions(**value)
            for key, value in dict(tools).items()
        }
    except TypeError as exc:
        raise AgentDefinitionError(
            f"an MCP tool option is unknown: {exc}", field="mcp.tools"
        ) from None
    try:
        return McpServer(**fields, tools=options)
    except TypeError as exc:
        raise AgentDefinitionError(f"an MCP server option is unknown: {exc}", field="mcp") from None


def checked_servers(
    servers: Sequence[McpServer], environ: Mapping[str, str] | None = None
) -> tuple[McpServer, ...]:
    """The servers after checking each, with ``${NAME}`` in ``env`` and ``headers`` values
    replaced from the environment (docs/mcp.md#declaring-a-server).

    Raises:
        AgentDefinitionError: naming the field (``mcp[1].headers.Authorization``) at fault.
    """
    environ = os.environ if environ is None else environ
    names: set[str] = set()
    checked = []
    for index, server in enumerate(servers):
        field = f"mcp[{index}]"
        if not isinstance(server, McpServer):
            raise AgentDefinitionError(
                "an MCP server is declared with afp.mcp.stdio or afp.mcp.http",
                field=field,
                value=shown(server),
            )
        _check(server, field)
        if server.name in names:
            raise AgentDefinitionError(
                f"two MCP servers are named {server.name!r}", field=f"{field}.name"
            )
        names.add(server.name)
        checked.append(
            msgspec.structs.replace(
                server,
                env=_expanded(server.env, f"{field}.env", environ),
                headers=_expanded(server.headers, f"{field}.headers", environ),
            )
        )
    return tuple(checked)


def _check(server: McpServer, field: str) -> None:
    if not isinstance(server.name, str) or not _SERVER_NAME.fullmatch(server.name):
        raise AgentDefinitionError(
            "an MCP server name must match ^[A-Za-z0-9_-]{1,32}$",
            field=f"{field}.name",
            value=shown(server.name),
        )
    if (server.command is None) == (server.url is None):
        raise AgentDefinitionError(
            "an MCP server has either command (stdio) or url (streamable HTTP)", field=field
        )
    if server.command is not None and not server.command.strip():
        raise AgentDefinitionError("command is empty", field=f"{field}.command")
    if server.url is not None and not re.match(r"https?://[^/\s]+", server.url):
        raise AgentDefinitionError(
            "url must be an http:// or https:// address",
            field=f"{field}.url",
            value=shown(server.url),
        )
    if server.command is None and (server.args or server.env or server.cwd is not None):
        raise AgentDefinitionError("args, env and cwd are for stdio servers", field=field)
    if server.url is None and server.headers:
        raise AgentDefinitionError("headers are for HTTP servers", field=f"{field}.headers")
    if server.prefix is not None and not _PREFIX.fullmatch(server.prefix):
        raise AgentDefinitionError(
            "prefix must match ^[A-Za-z0-9_-]{0,32}$",
            field=f"{field}.prefix",
            value=shown(server.prefix),
        )
    for key, wire in (("timeout_s", "timeoutS"), ("connect_timeout_s", "connectTimeoutS")):
        _check_seconds(getattr(server, key), f"{field}.{wire}")
    for tool, options in server.tools.items():
        if options.timeout_s is not None:
            _check_seconds(options.timeout_s, f"{field}.tools.{tool}.timeoutS")
        cap = options.max_result_chars
        if cap is not None and (isinstance(cap, bool) or cap < 1):
            raise AgentDefinitionError(
                "maxResultChars must be an int >= 1",
                field=f"{field}.tools.{tool}.maxResultChars",
                value=shown(cap),
            )


def _check_seconds(value: Any, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise AgentDefinitionError("must be a number of seconds", field=field, value=shown(value))
    if not math.isfinite(value) or value <= 0:
        raise AgentDefinitionError(
            "must be a finite number of seconds > 0", field=field, value=shown(value)
        )


def _expanded(values: Mapping[str, str], field: str, environ: Mapping[str, str]) -> dict[str, str]:
    expanded = {}
    for key, value in values.items():
        if not isinstance(value, str):
            raise AgentDefinitionError(
                "must be a string", field=f"{field}.{key}", value=shown(value)
            )

        def variable(match: re.Match[str], key: str = key) -> str:
            name = match.group(1)
            if name not in environ:
                raise AgentDefinitionError(
                    f"the environment variable {name} is not set", field=f"{field}.{key}"
                )
            return environ[name]

        expanded[key] = _VARIABLE.sub(variable, value)
    return expanded
