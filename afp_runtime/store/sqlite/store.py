"""The embedded SQLite store: a WAL-mode file, an append-only commit log, bodies by fingerprint.

``SqliteStore`` is the ``afp_runtime.store.Store`` port on one file, put together from one
mixin per concern over the connection of ``_core``: conversations and commits, the inbox and
the tool journal, questions, listings and run logs, leases and fencing, health, and agents
moving between stores.
"""

from __future__ import annotations

from afp_runtime.store.sqlite.conversations import Conversations
from afp_runtime.store.sqlite.health import Health
from afp_runtime.store.sqlite.inbox import Inbox
from afp_runtime.store.sqlite.leases import Leases
from afp_runtime.store.sqlite.moving import Moving
from afp_runtime.store.sqlite.questions import Questions
from afp_runtime.store.sqlite.recall import Recall
from afp_runtime.store.sqlite.runs import Runs
from afp_runtime.store.sqlite.schedules import Schedules


class SqliteStore(Conversations, Inbox, Questions, Runs, Leases, Health, Moving, Schedules, Recall):
    """The store port on one SQLite file.

    Open with ``await SqliteStore.open(path)`` (creates the file and runs migrations) or
    ``SqliteStore.open(path, read_only=True)`` for readers; close with ``aclose``. Doors open
    it through ``afp_runtime.store.open_store``.
    """

    async def open_reader(self) -> SqliteStore:
        """A read-only store on the same file."""
        return await SqliteStore.open(self.path, read_only=True)
