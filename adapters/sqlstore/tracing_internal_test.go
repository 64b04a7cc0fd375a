package sqlstore

import "testing"

// summarize reads the operations and tables of the statements devpilot
// runs, as db.query.summary, db.operation.name and db.collection.name.
func TestSummarize(t *testing.T) {
	for q, want := range map[string]querySummary{
		"SELECT id, body FROM chat_messages WHERE id = $1":                                            {"SELECT", "chat_messages", "SELECT chat_messages"},
		"select * from a join b on a.id = b.id":                                                       {"SELECT", "", "SELECT a b"},
		"INSERT INTO usage (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = 1":                  {"INSERT", "usage", "INSERT usage"},
		"UPDATE specs SET title = 'FROM x' WHERE id = ?":                                              {"UPDATE", "specs", "UPDATE specs"},
		"DELETE FROM \"webhook_deliveries\" WHERE id IN (SELECT id FROM webhook_deliveries LIMIT 10)": {"DELETE", "webhook_deliveries", "DELETE webhook_deliveries SELECT webhook_deliveries"},
		"-- a comment\nSELECT 1":                                                                      {"SELECT", "", "SELECT"},
		"BEGIN":                                                                                       {},
	} {
		if got := summarize(q); got != want {
			t.Errorf("summarize(%q) = %+v, want %+v", q, got, want)
		}
	}
}
