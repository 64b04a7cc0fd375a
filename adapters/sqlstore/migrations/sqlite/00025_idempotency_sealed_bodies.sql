-- +goose Up
-- From now on the HTTP host seals every response body it keeps for an
-- Idempotency-Key replay (a body may hold a secret shown once: a new API
-- token, an invitation's or a webhook's secret). The bodies kept before were
-- plain text: forget them. They would have lapsed within 24 hours; a retry
-- of one of their keys now runs as a new request.
DELETE FROM idempotency_keys;

-- +goose Down
-- Nothing to restore: the deleted rows were a cache of responses.
SELECT 1;
