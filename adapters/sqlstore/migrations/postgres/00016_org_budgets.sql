-- +goose Up
-- The monthly token budget (prompt + completion tokens) an admin set for an
-- organisation; an organisation without a row has the configured default.
CREATE TABLE org_token_budgets (
    org_id         TEXT PRIMARY KEY,
    monthly_tokens BIGINT NOT NULL CHECK (monthly_tokens >= 0)
);

-- +goose Down
DROP TABLE org_token_budgets;
