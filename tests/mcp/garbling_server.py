"""An MCP server written by hand over stdio, for the test of a server that breaks the protocol
(docs/mcp.md#how-this-is-tested): it answers the handshake and lists one tool, ``echo``, but
answers a call to it with a line that is not JSON-RPC."""

from __future__ import annotations

import json
import sys


def _send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        method, ident = request.get("method"), request.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            result = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "garbling", "version": "1"},
            }
            _send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/list":
            tool = {"name": "echo", "description": "Echo.", "inputSchema": {"type": "object"}}
            _send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [tool]}})
        elif method == "tools/call":
            sys.stdout.write("this is not json-rpc\n")
            sys.stdout.flush()
        else:
            error = {"code": -32601, "message": f"no method {method}"}
            _send({"jsonrpc": "2.0", "id": ident, "error": error})


if __name__ == "__main__":
    main()
