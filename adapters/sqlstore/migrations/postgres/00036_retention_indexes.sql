-- +goose NO TRANSACTION
-- +goose Up
-- The indexes the retention sweeps delete by (sqlstore.Retention), so that a
-- batch reads only the rows it deletes. Built CONCURRENTLY: a large table
-- keeps taking writes while its index is built.
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_deliveries_processed_at_idx ON webhook_deliveries (processed_at) WHERE status <> 'pending';
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhook_digests_received_at_idx ON webhook_digests (received_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS stream_events_created_at_idx ON stream_events (created_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS invitations_unaccepted_expires_at_idx ON invitations (expires_at) WHERE accepted_at IS NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS oauth_states_expires_at_idx ON oauth_states (expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS rate_windows_window_start_idx ON rate_windows (window_start);
CREATE INDEX CONCURRENTLY IF NOT EXISTS cost_cache_expires_at_idx ON cost_cache (expires_at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS scm_activity_at_idx ON scm_activity (at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS audit_log_at_idx ON audit_log (at);
CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_keys_day_idx ON usage_keys (day);

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS usage_keys_day_idx;
DROP INDEX CONCURRENTLY IF EXISTS audit_log_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS scm_activity_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS cost_cache_expires_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS rate_windows_window_start_idx;
DROP INDEX CONCURRENTLY IF EXISTS oauth_states_expires_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS invitations_unaccepted_expires_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS stream_events_created_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_digests_received_at_idx;
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_processed_at_idx;
