-- SQLite mirror of postgres/20261130000160_pending_actions.sql: what the chat coach proposes to
-- change, kept until its owner confirms it, discards it, or it expires. No RLS on SQLite (an
-- embedded file has one user).
CREATE TABLE pending_actions (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id TEXT REFERENCES chat_conversations (id) ON DELETE SET NULL,
    kind            TEXT NOT NULL
                    CONSTRAINT pending_actions_kind CHECK (kind IN (
                        'pause_deployment', 'resume_deployment', 'stop_deployment',
                        'save_skill_version')),
    deployment_id   TEXT REFERENCES deployments (id) ON DELETE CASCADE,
    skill_id        TEXT REFERENCES skills (id) ON DELETE CASCADE,
    arguments       TEXT NOT NULL
                    CONSTRAINT pending_actions_arguments_json CHECK (
                        json_valid(arguments) AND json_type(arguments) = 'object'
                        AND length(CAST(arguments AS BLOB)) <= 65536),
    summary         TEXT NOT NULL
                    CONSTRAINT pending_actions_summary_len CHECK (length(summary) BETWEEN 1 AND 500),
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CONSTRAINT pending_actions_status CHECK (status IN (
                        'pending', 'confirmed', 'discarded', 'expired', 'failed')),
    decided_at      TEXT,
    decided_by      TEXT
                    CONSTRAINT pending_actions_decided_by_len CHECK (length(decided_by) BETWEEN 1 AND 100),
    result          TEXT CONSTRAINT pending_actions_result_json CHECK (result IS NULL OR json_valid(result)),
    error           TEXT
                    CONSTRAINT pending_actions_error_len CHECK (length(error) BETWEEN 1 AND 1000),
    CONSTRAINT pending_actions_target CHECK (
        CASE WHEN kind = 'save_skill_version' THEN skill_id IS NOT NULL AND deployment_id IS NULL
             ELSE deployment_id IS NOT NULL AND skill_id IS NULL END),
    CONSTRAINT pending_actions_expiry CHECK (expires_at > created_at),
    CONSTRAINT pending_actions_decided CHECK ((status = 'pending') = (decided_at IS NULL)),
    CONSTRAINT pending_actions_decided_by CHECK (decided_by IS NULL OR status NOT IN ('pending', 'expired')),
    CONSTRAINT pending_actions_result CHECK (result IS NULL OR status = 'confirmed'),
    CONSTRAINT pending_actions_error CHECK ((error IS NOT NULL) = (status = 'failed'))
) STRICT;
CREATE INDEX pending_actions_user_idx ON pending_actions (user_id, created_at DESC, id);
CREATE INDEX pending_actions_expiry_idx ON pending_actions (expires_at) WHERE status = 'pending';

CREATE TRIGGER pending_actions_decided_final
BEFORE UPDATE ON pending_actions
WHEN OLD.status <> 'pending'
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: pending_actions_decided_final');
END;
