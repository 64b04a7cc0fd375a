-- +goose Up
-- The indexes the retention sweeps delete by (sqlstore.Retention), so that a
-- batch reads only the rows it deletes.
CREATE INDEX webhook_deliveries_processed_at_idx ON webhook_deliveries (processed_at) WHERE status <> 'pending';
CREATE INDEX webhook_digests_received_at_idx ON webhook_digests (received_at);
CREATE INDEX stream_events_created_at_idx ON stream_events (created_at);
CREATE INDEX invitations_unaccepted_expires_at_idx ON invitations (expires_at) WHERE accepted_at IS NULL;
CREATE INDEX oauth_states_expires_at_idx ON oauth_states (expires_at);
CREATE INDEX rate_windows_window_start_idx ON rate_windows (window_start);
CREATE INDEX cost_cache_expires_at_idx ON cost_cache (expires_at);
CREATE INDEX scm_activity_at_idx ON scm_activity (at);
CREATE INDEX audit_log_at_idx ON audit_log (at);
CREATE INDEX usage_keys_day_idx ON usage_keys (day);

-- +goose Down
DROP INDEX usage_keys_day_idx;
DROP INDEX audit_log_at_idx;
DROP INDEX scm_activity_at_idx;
DROP INDEX cost_cache_expires_at_idx;
DROP INDEX rate_windows_window_start_idx;
DROP INDEX oauth_states_expires_at_idx;
DROP INDEX invitations_unaccepted_expires_at_idx;
DROP INDEX stream_events_created_at_idx;
DROP INDEX webhook_digests_received_at_idx;
DROP INDEX webhook_deliveries_processed_at_idx;
