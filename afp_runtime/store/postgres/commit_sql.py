"""The server-side writes of the Postgres store, made by its migration 4
(docs/storage.md#one-round-trip-per-commit): the commit of ``Txn``s and the inbox post.

``afp_commit(parts, durable)`` writes the ``Txn`` of each part (``afp_part``: the agent, the
fence, the run started and ended, items with their bodies, bundles and their keys, the
checkpoint, inbox updates, journal, ledger, questions and folded spans) in one call, so a whole
group of commits is one statement in one implicit transaction: one round trip. Each part runs
in a ``BEGIN ... EXCEPTION`` block, a subtransaction: a part that breaks a constraint or names
a run that does not exist is rolled back alone and its error returned in its place; a part
whose fence no longer holds, or whose agent does not exist, writes nothing and returns what it
found. The statements are those of ``writes.write_txn`` (the path of a txn that replaces the
conversation), in the same order. Without ``durable`` the transaction commits with
``synchronous_commit=off``, set for this transaction only.

``afp_post`` accepts a person's message as ``Inbox.post`` did statement by statement: the
agent's row locked, the owner check, the idempotency key, the next position, the notice. It
returns what the store needs to answer or to raise (``outcome``: ``ok``, ``agent``, ``owner``
with the owner, ``duplicate`` with the first message's row); a refused post writes nothing.
"""

from __future__ import annotations

__all__ = ["SERVER_WRITES"]

_TYPES = """
CREATE TYPE afp_item AS (pos BIGINT, fp BYTEA, flags INTEGER, injected_by TEXT, body BYTEA);
CREATE TYPE afp_bundle AS (
    run_id TEXT, seq BIGINT, stage TEXT, iteration BIGINT, committed_at_ms BIGINT, writes BYTEA
);
CREATE TYPE afp_key AS (run_id TEXT, key TEXT, seq BIGINT, verb TEXT);
CREATE TYPE afp_inbox_update AS (message_id TEXT, status TEXT, turn BIGINT, closes BOOLEAN);
CREATE TYPE afp_journal_row AS (
    message_id TEXT, call_id TEXT, state TEXT, run_id TEXT, outcome BYTEA
);
CREATE TYPE afp_ledger_row AS (kind TEXT, turn BIGINT, body BYTEA);
CREATE TYPE afp_question AS (
    question_id TEXT, message_id TEXT, run_id TEXT, turn BIGINT, kind TEXT, prompt TEXT,
    tool_call_ids BYTEA, asked_at_ms BIGINT, status TEXT, repeat BIGINT, detail BYTEA
);
CREATE TYPE afp_span AS (summary_fp BYTEA, span BYTEA);
CREATE TYPE afp_part AS (
    agent_id TEXT,
    fence_host TEXT,
    fence_epoch BIGINT,
    run_id TEXT,
    run_turn BIGINT,
    run_kind TEXT,
    run_message_id TEXT,
    run_recovered_from TEXT,
    run_started_at_ms BIGINT,
    items afp_item[],
    bundles afp_bundle[],
    keys afp_key[],
    state BYTEA,
    crashed_run TEXT,
    crashed_at_ms BIGINT,
    end_run_id TEXT,
    end_status TEXT,
    end_at_ms BIGINT,
    end_usage BYTEA,
    end_answer TEXT,
    end_error_kind TEXT,
    end_error TEXT,
    end_cost BYTEA,
    inbox afp_inbox_update[],
    journal afp_journal_row[],
    ledger afp_ledger_row[],
    questions afp_question[],
    folded afp_span[]
);
"""

_PART = """
CREATE FUNCTION afp_commit_part(p afp_part) RETURNS TEXT LANGUAGE plpgsql AS $fn$
DECLARE
    v_agent BIGINT;
    v_host TEXT;
    v_epoch BIGINT;
    v_lease BIGINT;
    v_found BOOLEAN;
    v_n BIGINT;
    v_missing TEXT;
    u afp_inbox_update;
BEGIN
    SELECT agent, claim_host, claim_epoch INTO v_agent, v_host, v_epoch
        FROM agents WHERE agent_id = p.agent_id FOR UPDATE;
    v_found := FOUND;
    IF p.fence_host IS NOT NULL THEN
        SELECT lease_epoch INTO v_lease FROM host_leases WHERE host_id = p.fence_host FOR SHARE;
        IF NOT v_found OR v_host IS DISTINCT FROM p.fence_host
                OR v_epoch IS DISTINCT FROM p.fence_epoch
                OR v_lease IS DISTINCT FROM p.fence_epoch THEN
            RETURN json_build_object('fence', CASE WHEN v_found
                THEN json_build_array(v_host, v_epoch, v_lease) END)::text;
        END IF;
    END IF;
    IF NOT v_found THEN
        RETURN json_build_object('agent', p.agent_id)::text;
    END IF;
    IF p.run_id IS NOT NULL THEN
        INSERT INTO runs (run_id, agent, turn, kind, message_id, recovered_from, status,
                          started_at_ms)
            VALUES (p.run_id, v_agent, p.run_turn, p.run_kind, p.run_message_id,
                    p.run_recovered_from, 'running', p.run_started_at_ms);
    END IF;
    IF cardinality(p.items) > 0 THEN
        INSERT INTO bodies SELECT i.fp, i.body FROM unnest(p.items) i ON CONFLICT DO NOTHING;
        INSERT INTO items SELECT v_agent, i.pos, i.fp, i.flags, i.injected_by
            FROM unnest(p.items) i;
    END IF;
    IF cardinality(p.bundles) > 0 THEN
        INSERT INTO bundles SELECT r.run, b.seq, b.stage, b.iteration, b.committed_at_ms, b.writes
            FROM unnest(p.bundles) b JOIN runs r ON r.run_id = b.run_id;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n < cardinality(p.bundles) THEN
            SELECT b.run_id INTO v_missing FROM unnest(p.bundles) b
                WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = b.run_id) LIMIT 1;
            RAISE EXCEPTION USING ERRCODE = 'AF003', MESSAGE = v_missing;
        END IF;
        INSERT INTO key_index SELECT r.run, k.key, k.seq, k.verb
            FROM unnest(p.keys) k JOIN runs r ON r.run_id = k.run_id;
    END IF;
    IF p.state IS NOT NULL THEN
        UPDATE conversations SET state = p.state WHERE agent = v_agent;
    END IF;
    IF p.crashed_run IS NOT NULL AND p.crashed_at_ms IS NOT NULL THEN
        -- Only a run nothing ended (a shutdown ends its runs cancelled itself).
        UPDATE runs SET status = 'crashed', ended_at_ms = p.crashed_at_ms
            WHERE run_id = p.crashed_run AND status = 'running';
    END IF;
    IF p.end_run_id IS NOT NULL THEN
        UPDATE runs SET status = p.end_status, ended_at_ms = p.end_at_ms, usage = p.end_usage,
            answer = p.end_answer, error_kind = p.end_error_kind, error = p.end_error,
            cost = p.end_cost
            WHERE run_id = p.end_run_id;
    END IF;
    FOREACH u IN ARRAY p.inbox LOOP
        UPDATE inbox SET status = u.status, turn = COALESCE(u.turn, inbox.turn)
            WHERE message_id = u.message_id;
        IF u.closes THEN
            DELETE FROM tool_journal WHERE agent = v_agent AND message_id = u.message_id;
        END IF;
    END LOOP;
    IF cardinality(p.journal) > 0 THEN
        INSERT INTO tool_journal
            SELECT v_agent, j.message_id, j.call_id, j.state, j.run_id, j.outcome
            FROM unnest(p.journal) j ON CONFLICT DO NOTHING;
    END IF;
    IF cardinality(p.ledger) > 0 THEN
        SELECT COALESCE(MAX(idx) + 1, 0) INTO v_n FROM ledger_rows WHERE agent = v_agent;
        INSERT INTO ledger_rows SELECT v_agent, v_n + l.ord - 1, l.kind, l.turn, l.body
            FROM unnest(p.ledger) WITH ORDINALITY AS l(kind, turn, body, ord);
    END IF;
    IF cardinality(p.questions) > 0 THEN
        INSERT INTO questions (question_id, agent, message_id, run_id, turn, kind, prompt,
                               tool_call_ids, asked_at_ms, status, repeat, detail)
            SELECT q.question_id, v_agent, q.message_id, q.run_id, q.turn, q.kind, q.prompt,
                   q.tool_call_ids, q.asked_at_ms, q.status, q.repeat, q.detail
            FROM unnest(p.questions) q;
    END IF;
    IF cardinality(p.folded) > 0 THEN
        SELECT COALESCE(MAX(idx) + 1, 0) INTO v_n FROM folded_spans WHERE agent = v_agent;
        INSERT INTO folded_spans SELECT v_agent, v_n + f.ord - 1, f.summary_fp, f.span
            FROM unnest(p.folded) WITH ORDINALITY AS f(summary_fp, span, ord);
    END IF;
    RETURN NULL;
END
$fn$;
"""

_GROUP = """
CREATE FUNCTION afp_commit(parts afp_part[], durable BOOLEAN) RETURNS TEXT[]
LANGUAGE plpgsql AS $fn$
DECLARE
    p afp_part;
    outcome TEXT;
    outcomes TEXT[] := '{}';
BEGIN
    IF NOT durable THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    FOREACH p IN ARRAY parts LOOP
        BEGIN
            outcome := afp_commit_part(p);
        EXCEPTION WHEN OTHERS THEN
            -- This part's writes are rolled back; the other parts go on.
            outcome := json_build_object('code', SQLSTATE, 'message', SQLERRM)::text;
        END;
        outcomes := array_append(outcomes, outcome);
    END LOOP;
    RETURN outcomes;
END
$fn$;
"""

_POST = """
CREATE FUNCTION afp_post(
    p_agent_id TEXT, p_message_id TEXT, p_text TEXT, p_now_ms BIGINT, p_key TEXT,
    p_sender TEXT, p_shared BOOLEAN, p_time BYTEA, p_channel TEXT,
    OUT outcome TEXT, OUT found_id TEXT, OUT found_text TEXT, OUT found_at_ms BIGINT,
    OUT found_position BIGINT
) LANGUAGE plpgsql AS $fn$
DECLARE
    v_agent BIGINT;
    v_owner TEXT;
BEGIN
    -- The agent's row stays locked to COMMIT: positions of one agent never race.
    SELECT agent, owner INTO v_agent, v_owner FROM agents WHERE agent_id = p_agent_id FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'agent';
        RETURN;
    END IF;
    IF NOT p_shared AND v_owner IS NOT NULL AND v_owner IS DISTINCT FROM p_sender THEN
        outcome := 'owner';
        found_text := v_owner;
        RETURN;
    END IF;
    IF p_key IS NOT NULL THEN
        SELECT message_id, text, accepted_at_ms, position
            INTO found_id, found_text, found_at_ms, found_position
            FROM inbox WHERE agent = v_agent AND idempotency_key = p_key;
        IF FOUND THEN
            outcome := 'duplicate';
            IF found_text IS DISTINCT FROM p_text THEN
                RETURN;  -- a conflict: the store raises it, and nothing was written
            END IF;
        END IF;
    END IF;
    IF NOT p_shared AND v_owner IS NULL AND p_sender IS NOT NULL THEN
        UPDATE agents SET owner = p_sender WHERE agent = v_agent;
    END IF;
    IF outcome = 'duplicate' THEN
        RETURN;
    END IF;
    INSERT INTO inbox (message_id, agent, position, text, status, accepted_at_ms,
                       idempotency_key, sender, time)
        SELECT p_message_id, v_agent, COALESCE(MAX(position), 0) + 1, p_text, 'queued',
               p_now_ms, p_key, p_sender, p_time
        FROM inbox WHERE agent = v_agent
        RETURNING position INTO found_position;
    -- Delivered at COMMIT to every host listening (docs/host.md#a-message-reaches-its-host).
    PERFORM pg_notify(p_channel, p_agent_id);
    outcome := 'ok';
END
$fn$;
"""

SERVER_WRITES = _TYPES + _PART + _GROUP + _POST
