-- Controls (#45): pause, resume and stop a deployment, every change audited.
--
-- `deployment_controls` is the audit trail: one row per change of a deployment's status, who
-- asked (a user id, or an operator's name), why, when, and the status before and after. The
-- store writes it in the transaction that changes the status.
--
-- A stop may ask for the deployment's open positions to be closed ("flattened") through its
-- broker. The request is kept on the deployment (`flatten_requested_at`) until a runner has
-- done it (`flattened_at`), so it survives a runner killed in between; a failed attempt is
-- counted and retried later (`flatten_attempts`, `flatten_retry_at`, `flatten_error`).
-- A stopped deployment is final: nothing moves it back to active or paused.
ALTER TABLE deployments ADD COLUMN flatten_requested_at TEXT
    CONSTRAINT deployments_flatten_stopped CHECK (flatten_requested_at IS NULL OR status = 'stopped');
ALTER TABLE deployments ADD COLUMN flatten_attempts INTEGER NOT NULL DEFAULT 0
    CONSTRAINT deployments_flatten_attempts_nonneg CHECK (flatten_attempts >= 0);
ALTER TABLE deployments ADD COLUMN flatten_retry_at TEXT;
ALTER TABLE deployments ADD COLUMN flatten_error TEXT
    CONSTRAINT deployments_flatten_error_len CHECK (length(flatten_error) BETWEEN 1 AND 1000);
ALTER TABLE deployments ADD COLUMN flattened_at TEXT
    CONSTRAINT deployments_flattened_requested CHECK (flattened_at IS NULL OR flatten_requested_at IS NOT NULL);

-- Stopped deployments whose flatten is still to do (what runners look for).
CREATE INDEX deployments_flatten_due_idx ON deployments (flatten_retry_at)
    WHERE status = 'stopped' AND flatten_requested_at IS NOT NULL AND flattened_at IS NULL;

CREATE TRIGGER deployments_stopped_final
BEFORE UPDATE OF status ON deployments
WHEN OLD.status = 'stopped' AND NEW.status <> 'stopped'
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: deployments_stopped_final');
END;

CREATE TABLE deployment_controls (
    id            TEXT PRIMARY KEY,
    deployment_id TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    action        TEXT NOT NULL
                  CONSTRAINT deployment_controls_action CHECK (action IN ('pause', 'resume', 'stop')),
    flatten       INTEGER NOT NULL DEFAULT 0 CONSTRAINT deployment_controls_flatten_bool CHECK (flatten IN (0, 1)),
    requested_by  TEXT NOT NULL
                  CONSTRAINT deployment_controls_requested_by_len CHECK (length(requested_by) BETWEEN 1 AND 100),
    reason        TEXT
                  CONSTRAINT deployment_controls_reason_len CHECK (length(reason) BETWEEN 1 AND 500),
    requested_at  TEXT NOT NULL,
    from_status   TEXT NOT NULL
                  CONSTRAINT deployment_controls_from_status CHECK (from_status IN ('active', 'paused', 'stopped')),
    to_status     TEXT NOT NULL
                  CONSTRAINT deployment_controls_to_status CHECK (to_status IN ('active', 'paused', 'stopped')),
    CONSTRAINT deployment_controls_flatten_stop CHECK (NOT flatten OR action = 'stop'),
    CONSTRAINT deployment_controls_transition CHECK (
        (action = 'pause' AND from_status = 'active' AND to_status = 'paused')
        OR (action = 'resume' AND from_status = 'paused' AND to_status = 'active')
        OR (action = 'stop' AND to_status = 'stopped' AND (from_status <> 'stopped' OR flatten)))
) STRICT;
CREATE INDEX deployment_controls_deployment_idx
    ON deployment_controls (deployment_id, requested_at DESC, id);
