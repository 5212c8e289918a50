"""Numbered forward migrations of the SQLite schema, applied in order at open.

A migration is never edited once released; a change of schema is a new number.
"""

from __future__ import annotations

SCHEDULES = """
-- An agent's durable schedules (docs/host.md#schedules): the definition in its wire form (JSON),
-- where it came from, and the marks of its delivery; a delivery moves last_due_ms/next_due_ms
-- in the transaction that posts its messages, while the row still has the revision it read.
CREATE TABLE schedules (
    agent INTEGER NOT NULL REFERENCES agents(agent),
    name TEXT NOT NULL,
    definition BLOB NOT NULL,
    source TEXT NOT NULL,
    anchor_ms INTEGER NOT NULL,
    last_due_ms INTEGER NOT NULL,
    next_due_ms INTEGER,
    paused INTEGER NOT NULL DEFAULT 0,
    revision INTEGER NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    PRIMARY KEY (agent, name)
) WITHOUT ROWID;
-- A host finds the due schedules of its agents with one read of this index.
CREATE INDEX schedules_due ON schedules (next_due_ms) WHERE next_due_ms IS NOT NULL AND paused = 0;
"""

RECALL = """
-- The recall index (docs/recall.md): every message a window visit took out of an agent's
-- window, written in the transaction of that visit. One row per item position of the agent's
-- log; its words in recall_text (FTS5, contentless: the text lives here), rowid = -entry:
-- FTS5 reads a doclist forwards as it goes, so the newest entries come first that way.
CREATE TABLE recall_entries (
    entry INTEGER PRIMARY KEY,
    agent INTEGER NOT NULL REFERENCES agents(agent),
    pos INTEGER NOT NULL,
    kind TEXT NOT NULL,
    fingerprint TEXT,
    run_id TEXT NOT NULL,
    stage_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT,
    tool_name TEXT,
    said_at_ms INTEGER NOT NULL,
    UNIQUE (agent, pos)
);
CREATE INDEX recall_by_time ON recall_entries (agent, said_at_ms);
CREATE VIRTUAL TABLE recall_text USING fts5(body, content='', tokenize='unicode61');
-- The first item position a run appended (docs/recall.md#when-it-was-said): when a message
-- was said is the start of the run that appended it. Null for runs written before.
ALTER TABLE runs ADD COLUMN first_pos INTEGER;
CREATE INDEX runs_by_first_pos ON runs (agent, first_pos) WHERE first_pos IS NOT NULL;
"""

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "initial schema",
        """
        CREATE TABLE agents (
            agent INTEGER PRIMARY KEY,
            agent_id TEXT NOT NULL UNIQUE,
            created_at_ms INTEGER NOT NULL
        );
        CREATE TABLE conversations (
            agent INTEGER PRIMARY KEY REFERENCES agents(agent),
            state BLOB NOT NULL
        );
        -- Message bodies, content-addressed: stored once however often they are sent.
        CREATE TABLE bodies (
            fp BLOB PRIMARY KEY,
            body BLOB NOT NULL
        ) WITHOUT ROWID;
        -- Each agent's append-only item log: message references (fingerprint + markers).
        CREATE TABLE items (
            agent INTEGER NOT NULL,
            pos INTEGER NOT NULL,
            fp BLOB NOT NULL,
            flags INTEGER NOT NULL DEFAULT 0,
            injected_by TEXT,
            PRIMARY KEY (agent, pos)
        ) WITHOUT ROWID;
        CREATE TABLE runs (
            run INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL UNIQUE,
            agent INTEGER NOT NULL REFERENCES agents(agent),
            turn INTEGER NOT NULL,
            kind TEXT NOT NULL,
            message_id TEXT NOT NULL,
            recovered_from TEXT,
            status TEXT NOT NULL,
            started_at_ms INTEGER NOT NULL,
            ended_at_ms INTEGER,
            usage BLOB
        );
        CREATE INDEX runs_by_agent ON runs (agent, run);
        -- The append-only commit log.
        CREATE TABLE bundles (
            run INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            stage TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            committed_at_ms INTEGER NOT NULL,
            writes BLOB NOT NULL,
            PRIMARY KEY (run, seq)
        ) WITHOUT ROWID;
        -- Per-key index of each run's log: which bundles wrote which key, and how.
        CREATE TABLE key_index (
            run INTEGER NOT NULL,
            key TEXT NOT NULL,
            seq INTEGER NOT NULL,
            verb TEXT NOT NULL,
            PRIMARY KEY (run, key, seq)
        ) WITHOUT ROWID;
        CREATE INDEX bundles_by_stage ON bundles (run, stage, iteration);
        CREATE TABLE inbox (
            message INTEGER PRIMARY KEY,
            message_id TEXT NOT NULL UNIQUE,
            agent INTEGER NOT NULL REFERENCES agents(agent),
            position INTEGER NOT NULL,
            text TEXT NOT NULL,
            status TEXT NOT NULL,
            accepted_at_ms INTEGER NOT NULL,
            idempotency_key TEXT,
            sender TEXT,
            turn INTEGER,
            UNIQUE (agent, position),
            UNIQUE (agent, idempotency_key)
        );
        CREATE INDEX inbox_by_status ON inbox (agent, status, position);
        CREATE TABLE tool_journal (
            agent INTEGER NOT NULL,
            message_id TEXT NOT NULL,
            call_id TEXT NOT NULL,
            state TEXT NOT NULL,
            run_id TEXT NOT NULL,
            outcome BLOB,
            PRIMARY KEY (agent, message_id, call_id, state)
        ) WITHOUT ROWID;
        """,
    ),
    (
        2,
        "folded spans",
        """
        -- Append-only: one row per fold, oldest first; originals by reference to the item log.
        CREATE TABLE folded_spans (
            agent INTEGER NOT NULL REFERENCES agents(agent),
            idx INTEGER NOT NULL,
            summary_fp BLOB NOT NULL,
            span BLOB NOT NULL,
            PRIMARY KEY (agent, idx)
        ) WITHOUT ROWID;
        CREATE INDEX folded_by_summary ON folded_spans (agent, summary_fp);
        """,
    ),
    (
        3,
        "archived conversations",
        """
        -- A conversation replaced by an import is archived here whole (checkpoint and spans);
        -- its messages stay in the item log, so nothing it referenced is lost.
        CREATE TABLE archived_conversations (
            agent INTEGER NOT NULL REFERENCES agents(agent),
            archived_at_ms INTEGER NOT NULL,
            state BLOB NOT NULL,
            folded BLOB NOT NULL,
            ledger BLOB
        );
        """,
    ),
    (
        4,
        "findings ledger",
        """
        -- The conversation's append-only ledger (findings, time rows), in wire form, oldest first.
        CREATE TABLE ledger_rows (
            agent INTEGER NOT NULL REFERENCES agents(agent),
            idx INTEGER NOT NULL,
            kind TEXT NOT NULL,
            turn INTEGER,
            row BLOB NOT NULL,
            PRIMARY KEY (agent, idx)
        ) WITHOUT ROWID;
        """,
    ),
    (
        5,
        "check-in questions and the conversation owner",
        """
        -- Questions a paused turn waits on (docs/host.md#check-ins): asked in the pause's
        -- transaction,
        -- closed by an answer or an abandon (each its own FULL commit).
        CREATE TABLE questions (
            question INTEGER PRIMARY KEY,
            question_id TEXT NOT NULL UNIQUE,
            agent INTEGER NOT NULL REFERENCES agents(agent),
            message_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            turn INTEGER NOT NULL,
            kind TEXT NOT NULL,
            prompt TEXT NOT NULL,
            tool_call_ids BLOB NOT NULL,
            asked_at_ms INTEGER NOT NULL,
            status TEXT NOT NULL,
            repeat INTEGER NOT NULL DEFAULT 0,
            answer BLOB,
            answered_at_ms INTEGER,
            answered_by TEXT
        );
        CREATE INDEX questions_by_agent ON questions (agent, status, question);
        -- The conversation's owner (docs/host.md#the-owner-check): set by the first message
        -- that names a principal.
        ALTER TABLE agents ADD COLUMN owner TEXT;
        """,
    ),
    (
        6,
        "host leases and agent claims",
        """
        -- One row per host process (docs/storage.md#leases-and-fencing): renewed once per
        -- period; raising lease_epoch makes every claim made under the old epoch stale.
        CREATE TABLE host_leases (
            host_id TEXT PRIMARY KEY,
            lease_epoch INTEGER NOT NULL,
            expires_at_ms INTEGER NOT NULL,
            renewed_at_ms INTEGER NOT NULL
        );
        -- The claim fencing every commit for an agent: (claim_host, claim_epoch).
        ALTER TABLE agents ADD COLUMN claim_host TEXT;
        ALTER TABLE agents ADD COLUMN claim_epoch INTEGER;
        -- A take-over asks whether any claim still rests on an expired lease's epoch.
        CREATE INDEX agents_by_claim ON agents (claim_host, claim_epoch);
        """,
    ),
    (
        7,
        "bundles as a rowid table",
        """
        -- A WITHOUT ROWID row keeps at most ~1,000 bytes in its page and spills the rest to an
        -- overflow page of its own: a receipt bundle of 1.1 KB took 8 KB. A rowid table keeps
        -- rows up to ~4 KB in place; the commit log is unchanged.
        CREATE TABLE bundles_v7 (
            run INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            stage TEXT NOT NULL,
            iteration INTEGER NOT NULL,
            committed_at_ms INTEGER NOT NULL,
            writes BLOB NOT NULL,
            UNIQUE (run, seq)
        );
        INSERT INTO bundles_v7 (run, seq, stage, iteration, committed_at_ms, writes)
            SELECT run, seq, stage, iteration, committed_at_ms, writes FROM bundles
            ORDER BY run, seq;
        DROP TABLE bundles;
        ALTER TABLE bundles_v7 RENAME TO bundles;
        CREATE INDEX bundles_by_stage ON bundles (run, stage, iteration);
        """,
    ),
    (
        8,
        "the time a message carries",
        """
        -- An inbox message's optional `time` {now?, zone?, window?} (docs/time.md#the-run-clock),
        -- as sent.
        ALTER TABLE inbox ADD COLUMN time BLOB;
        """,
    ),
    (
        9,
        "time questions",
        """
        -- What a time question offers and how its answers are judged
        -- (docs/time.md#question-shapes):
        -- format, mention, quote, choices, zone, the waiting tools' facts, refused answers.
        ALTER TABLE questions ADD COLUMN detail BLOB;
        """,
    ),
    (
        10,
        "the epoch-anchor index carries seq",
        """
        -- In a rowid table the index must hold `seq` itself, or finding an epoch's receipt
        -- (stage + iteration, first by seq) scans the run in seq order instead
        -- (docs/architecture.md#decision-3-served-views-read-an-index-not-a-replay).
        DROP INDEX bundles_by_stage;
        CREATE INDEX bundles_by_stage ON bundles (run, stage, iteration, seq);
        """,
    ),
    (
        11,
        "runs carry their answer or why there is none",
        """
        -- Filled when a run ends (docs/storage.md#the-schema): the answer's text, or the error
        -- kind and words of a held or stalled run, so lists need no commit log read.
        ALTER TABLE runs ADD COLUMN answer TEXT;
        ALTER TABLE runs ADD COLUMN error_kind TEXT;
        ALTER TABLE runs ADD COLUMN error TEXT;
        """,
    ),
    (
        12,
        "the anchor index holds anchors only",
        """
        -- Only receipt and call-model bundles are ever looked up by stage
        -- (docs/storage.md#the-commit-log-and-per-key-indexes): a partial index of them is
        -- two fifths of one over every bundle.
        DROP INDEX bundles_by_stage;
        CREATE INDEX bundles_anchors ON bundles (run, stage, iteration, seq)
            WHERE stage IN ('receipt', 'call-model');
        """,
    ),
    (
        13,
        "runs carry their cost",
        """
        -- What the run's model calls cost (docs/cost.md#figures), filled when the run ends.
        ALTER TABLE runs ADD COLUMN cost BLOB;
        """,
    ),
    (14, "schedules", SCHEDULES),
    (
        15,
        "agents carry their definition summary",
        """
        -- The model, provider, tools, window and zone the agent was last registered with
        -- (docs/storage.md#definition-summaries), JSON; NULL until a host or run registers it.
        ALTER TABLE agents ADD COLUMN profile BLOB;
        """,
    ),
    (16, "the recall index", RECALL),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
