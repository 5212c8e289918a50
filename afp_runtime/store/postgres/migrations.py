"""Numbered forward migrations of the Postgres schema, applied in order at open
(docs/storage.md#the-postgres-backend).

The Postgres schema has its own numbers: its migration 1 is the SQLite schema as of SQLite's
migration 11, in Postgres types. A migration is never edited once released; a change of schema is
a new number. ``meta`` and ``migrations`` themselves are made by the store before migration 1.
"""

from __future__ import annotations

from afp_runtime.store.postgres.commit_sql import SERVER_WRITES

RECALL = """
-- As SQLite's migration 16: the recall index (docs/recall.md). Its words are a tsvector of the
-- 'simple' configuration (no stemming, no stop words: ids and numbers are kept as written),
-- searched through a GIN index.
CREATE TABLE recall_entries (
    entry BIGSERIAL PRIMARY KEY,
    agent BIGINT NOT NULL REFERENCES agents (agent),
    pos BIGINT NOT NULL,
    kind TEXT NOT NULL,
    fingerprint TEXT,
    run_id TEXT NOT NULL,
    stage_id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT,
    tool_name TEXT,
    said_at_ms BIGINT NOT NULL,
    words tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig,
        content || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, ''))) STORED,
    UNIQUE (agent, pos)
);
CREATE INDEX recall_by_time ON recall_entries (agent, said_at_ms);
CREATE INDEX recall_words ON recall_entries USING GIN (words);
-- The first item position a run appended (docs/recall.md#when-it-was-said), set as the run is
-- inserted (by afp_commit_part or a statement-by-statement commit) before its items are.
ALTER TABLE runs ADD COLUMN first_pos BIGINT;
CREATE INDEX runs_by_first_pos ON runs (agent, first_pos) WHERE first_pos IS NOT NULL;
CREATE FUNCTION afp_run_first_pos() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NEW.status = 'running' AND NEW.first_pos IS NULL THEN
        SELECT GREATEST(COALESCE(MAX(pos) + 1, 0), 0) INTO NEW.first_pos
            FROM items WHERE agent = NEW.agent;
    END IF;
    RETURN NEW;
END
$fn$;
CREATE TRIGGER runs_first_pos BEFORE INSERT ON runs
    FOR EACH ROW EXECUTE FUNCTION afp_run_first_pos();
"""

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "initial schema",
        """
        CREATE TABLE agents (
            agent BIGSERIAL PRIMARY KEY,
            agent_id TEXT NOT NULL UNIQUE,
            created_at_ms BIGINT NOT NULL,
            owner TEXT,
            claim_host TEXT,
            claim_epoch BIGINT
        );
        CREATE INDEX agents_by_claim ON agents (claim_host, claim_epoch);
        CREATE TABLE conversations (
            agent BIGINT PRIMARY KEY REFERENCES agents (agent),
            state BYTEA NOT NULL
        );
        -- Message bodies, content-addressed: stored once however often they are sent.
        CREATE TABLE bodies (fp BYTEA PRIMARY KEY, body BYTEA NOT NULL);
        -- Each agent's append-only item log: message references (fingerprint + markers).
        CREATE TABLE items (
            agent BIGINT NOT NULL,
            pos BIGINT NOT NULL,
            fp BYTEA NOT NULL,
            flags INTEGER NOT NULL DEFAULT 0,
            injected_by TEXT,
            PRIMARY KEY (agent, pos)
        );
        CREATE TABLE runs (
            run BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL UNIQUE,
            agent BIGINT NOT NULL REFERENCES agents (agent),
            turn BIGINT NOT NULL,
            kind TEXT NOT NULL,
            message_id TEXT NOT NULL,
            recovered_from TEXT,
            status TEXT NOT NULL,
            started_at_ms BIGINT NOT NULL,
            ended_at_ms BIGINT,
            usage BYTEA,
            answer TEXT,
            error_kind TEXT,
            error TEXT
        );
        CREATE INDEX runs_by_agent ON runs (agent, run);
        -- The append-only commit log.
        CREATE TABLE bundles (
            run BIGINT NOT NULL,
            seq BIGINT NOT NULL,
            stage TEXT NOT NULL,
            iteration BIGINT NOT NULL,
            committed_at_ms BIGINT NOT NULL,
            writes BYTEA NOT NULL,
            PRIMARY KEY (run, seq)
        );
        CREATE INDEX bundles_by_stage ON bundles (run, stage, iteration, seq);
        -- Per-key index of each run's log: which bundles wrote which key, and how.
        CREATE TABLE key_index (
            run BIGINT NOT NULL,
            key TEXT NOT NULL,
            seq BIGINT NOT NULL,
            verb TEXT NOT NULL,
            PRIMARY KEY (run, key, seq)
        );
        CREATE TABLE inbox (
            message BIGSERIAL PRIMARY KEY,
            message_id TEXT NOT NULL UNIQUE,
            agent BIGINT NOT NULL REFERENCES agents (agent),
            position BIGINT NOT NULL,
            text TEXT NOT NULL,
            status TEXT NOT NULL,
            accepted_at_ms BIGINT NOT NULL,
            idempotency_key TEXT,
            sender TEXT,
            turn BIGINT,
            time BYTEA,
            UNIQUE (agent, position),
            UNIQUE (agent, idempotency_key)
        );
        CREATE INDEX inbox_by_status ON inbox (agent, status, position);
        CREATE TABLE tool_journal (
            agent BIGINT NOT NULL,
            message_id TEXT NOT NULL,
            call_id TEXT NOT NULL,
            state TEXT NOT NULL,
            run_id TEXT NOT NULL,
            outcome BYTEA,
            PRIMARY KEY (agent, message_id, call_id, state)
        );
        -- Append-only: one row per fold, oldest first; originals by reference to the item log.
        CREATE TABLE folded_spans (
            agent BIGINT NOT NULL REFERENCES agents (agent),
            idx BIGINT NOT NULL,
            summary_fp BYTEA NOT NULL,
            span BYTEA NOT NULL,
            PRIMARY KEY (agent, idx)
        );
        CREATE INDEX folded_by_summary ON folded_spans (agent, summary_fp);
        -- A conversation replaced by an import, archived whole (checkpoint, spans, ledger).
        CREATE TABLE archived_conversations (
            agent BIGINT NOT NULL REFERENCES agents (agent),
            archived_at_ms BIGINT NOT NULL,
            state BYTEA NOT NULL,
            folded BYTEA NOT NULL,
            ledger BYTEA
        );
        -- The conversation's append-only ledger (findings, time rows), in wire form.
        CREATE TABLE ledger_rows (
            agent BIGINT NOT NULL REFERENCES agents (agent),
            idx BIGINT NOT NULL,
            kind TEXT NOT NULL,
            turn BIGINT,
            "row" BYTEA NOT NULL,
            PRIMARY KEY (agent, idx)
        );
        -- Questions a paused turn waits on (docs/host.md#check-ins).
        CREATE TABLE questions (
            question BIGSERIAL PRIMARY KEY,
            question_id TEXT NOT NULL UNIQUE,
            agent BIGINT NOT NULL REFERENCES agents (agent),
            message_id TEXT NOT NULL,
            run_id TEXT NOT NULL,
            turn BIGINT NOT NULL,
            kind TEXT NOT NULL,
            prompt TEXT NOT NULL,
            tool_call_ids BYTEA NOT NULL,
            asked_at_ms BIGINT NOT NULL,
            status TEXT NOT NULL,
            repeat BIGINT NOT NULL DEFAULT 0,
            answer BYTEA,
            answered_at_ms BIGINT,
            answered_by TEXT,
            detail BYTEA
        );
        CREATE INDEX questions_by_agent ON questions (agent, status, question);
        -- One row per host process (docs/storage.md#leases-and-fencing).
        CREATE TABLE host_leases (
            host_id TEXT PRIMARY KEY,
            lease_epoch BIGINT NOT NULL,
            expires_at_ms BIGINT NOT NULL,
            renewed_at_ms BIGINT NOT NULL
        )
        """,
    ),
    (
        2,
        "the anchor index holds anchors only",
        """
        -- As SQLite's migration 12: only receipt and call-model bundles are looked up by stage.
        DROP INDEX bundles_by_stage;
        CREATE INDEX bundles_anchors ON bundles (run, stage, iteration, seq)
            WHERE stage IN ('receipt', 'call-model')
        """,
    ),
    (
        3,
        "runs carry their cost",
        """
        -- As SQLite's migration 13: what the run's model calls cost (docs/cost.md#figures).
        ALTER TABLE runs ADD COLUMN cost BYTEA
        """,
    ),
    (4, "commits and posts in one call", SERVER_WRITES),
    (
        5,
        "schedules",
        """
        -- As SQLite's migration 14: an agent's durable schedules (docs/host.md#schedules);
        -- paused is 0 or 1 as there, so a dump's rows are the same on both backends.
        CREATE TABLE schedules (
            agent BIGINT NOT NULL REFERENCES agents (agent),
            name TEXT NOT NULL,
            definition BYTEA NOT NULL,
            source TEXT NOT NULL,
            anchor_ms BIGINT NOT NULL,
            last_due_ms BIGINT NOT NULL,
            next_due_ms BIGINT,
            paused INTEGER NOT NULL DEFAULT 0,
            revision BIGINT NOT NULL,
            delivered BIGINT NOT NULL DEFAULT 0,
            created_at_ms BIGINT NOT NULL,
            updated_at_ms BIGINT NOT NULL,
            PRIMARY KEY (agent, name)
        );
        CREATE INDEX schedules_due ON schedules (next_due_ms)
            WHERE next_due_ms IS NOT NULL AND paused = 0
        """,
    ),
    (
        6,
        "agents carry their definition summary",
        """
        -- As SQLite's migration 15 (docs/storage.md#definition-summaries): the model, provider,
        -- tools, window and zone the agent was last registered with, JSON; NULL until then.
        ALTER TABLE agents ADD COLUMN profile BYTEA
        """,
    ),
    (7, "the recall index", RECALL),
)

SCHEMA_VERSION = MIGRATIONS[-1][0]
