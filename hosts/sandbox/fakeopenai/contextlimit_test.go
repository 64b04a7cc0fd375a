package fakeopenai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func TestContextLimit(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.SetContextLimit(100)
	body := func(words int) string {
		return fmt.Sprintf(`{"model":"gpt-test","messages":[{"role":"user","content":%q}]}`, strings.Repeat("abc ", words))
	}
	tests := []struct {
		name   string
		words  int
		status int
	}{
		{"under the limit", 90, 200}, // 4+3+90 tokens
		{"over the limit", 100, 400}, // 4+3+100 tokens
	}
	for _, tt := range tests {
		f.Enqueue(fakeopenai.Text("ok"))
		resp := post(t, f.URL(), body(tt.words))
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Fatalf("%s: status %d %s", tt.name, resp.StatusCode, raw)
		}
		if tt.status == 400 {
			var e struct {
				Error struct{ Message, Type, Param, Code string }
			}
			if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code != "context_length_exceeded" || e.Error.Type != "invalid_request_error" ||
				e.Error.Param != "messages" || !strings.Contains(e.Error.Message, "maximum context length is 100 tokens. However, your messages resulted in 107 tokens.") {
				t.Errorf("%s: body %s", tt.name, raw)
			}
			if f.Pending() != 1 {
				t.Errorf("%s: the refused request consumed the script", tt.name)
			}
		}
	}
	if got := len(f.Requests()); got != 2 {
		t.Errorf("%d requests recorded, want 2", got)
	}
	f.SetContextLimit(0)
	if resp := post(t, f.URL(), body(1000)); resp.StatusCode != 200 {
		t.Errorf("without a limit: %d", resp.StatusCode)
	}
}
