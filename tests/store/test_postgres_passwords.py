"""Where the Postgres password comes from, and that a server echoing it cannot show it
(docs/storage.md#passwords).

The server here is a local one speaking the Postgres wire protocol as far as a password
exchange goes: it asks for a cleartext password, records what it gets, and refuses it with an
error quoting it (as a careless proxy might).
"""

from __future__ import annotations

import os
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketStream

from afp_runtime.errors import StoreUnavailable
from afp_runtime.store import open_store


class PasswordServer:
    """The passwords the server was sent, in order, and its address."""

    def __init__(self) -> None:
        self.port = 0
        self.passwords: list[str] = []

    def url(self, tail: str = "") -> str:
        """A URL on this server for user ``ann``, database ``afp``, no password."""
        return f"postgresql://ann@127.0.0.1:{self.port}/afp?sslmode=disable&pool_min=1{tail}"

    async def serve(self, stream: SocketStream) -> None:
        async with stream:
            buffer = b""

            async def take(count: int) -> bytes:
                nonlocal buffer
                while len(buffer) < count:
                    buffer += await stream.receive()
                data, buffer = buffer[:count], buffer[count:]
                return data

            (length,) = struct.unpack("!I", await take(4))
            await take(length - 4)  # the startup message: protocol version and parameters
            await stream.send(b"R" + struct.pack("!II", 8, 3))  # cleartext password, please
            kind = await take(1)
            (length,) = struct.unpack("!I", await take(4))
            password = (await take(length - 4)).rstrip(b"\0").decode()
            assert kind == b"p"
            self.passwords.append(password)
            fields = b"SFATAL\0C28P01\0M" + f"password {password} refused".encode() + b"\0\0"
            await stream.send(b"E" + struct.pack("!I", len(fields) + 4) + fields)


@asynccontextmanager
async def password_server() -> AsyncIterator[PasswordServer]:
    """A running ``PasswordServer`` (in the test's own task: a task group cannot span a
    fixture's setup and teardown)."""
    server = PasswordServer()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, server.serve)
        yield server
        group.cancel_scope.cancel()


async def _refused(url: str) -> str:
    with pytest.raises(StoreUnavailable) as caught:
        await open_store(url)
    return str(caught.value)


async def _pgpass(path: Path, text: str) -> anyio.Path:
    written = anyio.Path(path)
    await written.write_text(text, encoding="utf-8")
    await written.chmod(0o600)
    return written


async def test_pgpassword_is_sent_and_an_echo_of_it_is_not_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``PGPASSWORD`` is the password; the server's error quoting it is shown with ``***``."""
    async with password_server() as server:
        monkeypatch.setenv("PGPASSWORD", "env-Pw-91ab")
        message = await _refused(server.url())
        assert server.passwords == ["env-Pw-91ab"]
        assert "password *** refused" in message
        assert "env-Pw-91ab" not in message


async def test_a_passfile_option_names_a_libpq_password_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``passfile=`` names a file in libpq's format: comments skipped, the first line whose
    host, port, database and user match (``*`` for any) wins, ``\\:`` is a colon."""
    async with password_server() as server:
        monkeypatch.delenv("PGPASSWORD", raising=False)
        lines = [
            "# host:port:database:user:password",
            f"127.0.0.1:{server.port}:other:ann:not-this-one",
            f"127.0.0.1:{server.port + 1}:afp:ann:nor-this",
            "127.0.0.1:*:afp:ann:file\\:Pw-77",
            "*:*:*:*:too-late",
        ]
        passfile = await _pgpass(tmp_path / "pass", "\n".join(lines) + "\n")
        message = await _refused(server.url(f"&passfile={passfile}"))
        assert server.passwords == ["file:Pw-77"]
        assert "file:Pw-77" not in message


async def test_the_home_pgpass_is_read_unless_others_may_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a password given, ``~/.pgpass`` is read; a file its group or others may read
    is ignored, as libpq ignores it, and nothing is sent."""
    async with password_server() as server:
        monkeypatch.delenv("PGPASSWORD", raising=False)
        monkeypatch.delenv("PGPASSFILE", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))
        home = await _pgpass(tmp_path / ".pgpass", f"127.0.0.1:{server.port}:afp:ann:home-Pw-55\n")
        await _refused(server.url())
        await home.chmod(0o644)
        await _refused(server.url())
        assert server.passwords == ["home-Pw-55", ""]


async def test_a_password_in_the_url_wins_over_the_environment_and_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The URL's password first, then ``PGPASSWORD``, then the password file."""
    async with password_server() as server:
        monkeypatch.setenv("PGPASSWORD", "env-Pw-2")
        passfile = await _pgpass(tmp_path / "pass", "*:*:*:*:file-Pw-3\n")
        url = server.url(f"&passfile={passfile}")
        await _refused(url.replace("ann@", "ann:url-Pw-1@"))
        await _refused(url)
        monkeypatch.delenv("PGPASSWORD")
        await _refused(url)
        assert server.passwords == ["url-Pw-1", "env-Pw-2", "file-Pw-3"]
        assert os.environ.get("PGPASSWORD") is None
