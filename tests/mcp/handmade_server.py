"""An MCP server written by hand over stdio with the handshake of MCP 2025 (no change stream),
for the tests of an older server and of one that breaks the protocol
(docs/mcp.md#how-this-is-tested): it lists ``echo``, ``grow`` and ``client``; ``grow`` pushes
``notifications/tools/list_changed`` before its answer and adds ``grown`` to the list; a call to
``echo`` is answered with a line that is not JSON-RPC; ``client`` answers with the name and
version the client gave at ``initialize``."""

from __future__ import annotations

import json
import sys

_SCHEMA = {"type": "object"}


def _send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _result(ident: object, result: dict[str, object]) -> None:
    _send({"jsonrpc": "2.0", "id": ident, "result": result})


def main() -> None:
    names = ["echo", "grow", "client"]
    client = ""
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            given = request["params"]["clientInfo"]
            client = f"{given['name']} {given['version']}"
            capabilities = {"tools": {"listChanged": True}}
            info = {"name": "handmade", "version": "1"}
            version = request["params"]["protocolVersion"]
            _result(
                ident,
                {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info},
            )
        elif method == "tools/list":
            tools = [
                {"name": n, "description": f"The {n} tool.", "inputSchema": _SCHEMA} for n in names
            ]
            _result(ident, {"tools": tools})
        elif method == "tools/call" and request["params"]["name"] == "grow":
            names.append("grown")
            _send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            _result(ident, {"content": [{"type": "text", "text": "grown"}]})
        elif method == "tools/call" and request["params"]["name"] == "client":
            _result(ident, {"content": [{"type": "text", "text": client}]})
        elif method == "tools/call":
            sys.stdout.write("this is not json-rpc\n")
            sys.stdout.flush()
        else:
            _send(
                {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "error": {"code": -32601, "message": f"no method {method}"},
                }
            )


if __name__ == "__main__":
    main()
