"""The release this source tree is: the one place the version is written (pyproject.toml reads
it too), so the CLI, the API's health and the MCP client's handshake all say the same."""

VERSION = "0.1.0"
