-- +goose Up
-- Webhook payloads (JSON, typically a few KB) are compressed with LZ4 rather
-- than the default pglz: several times less CPU per delivery stored or read,
-- for about the space pglz saves. A server built without LZ4 (or older than
-- PostgreSQL 14) keeps pglz. Only values written from now on change.
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE webhook_deliveries ALTER COLUMN payload SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    EXECUTE 'ALTER TABLE webhook_deliveries ALTER COLUMN payload SET COMPRESSION default';
EXCEPTION WHEN syntax_error THEN
    NULL;
END
$$;
-- +goose StatementEnd
