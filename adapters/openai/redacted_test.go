package openai

import (
	"errors"
	"strings"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// TestRedactedCauseHidesTheKey checks the one rule for a redacted error: a
// provider's answer that echoes the API key is quoted without it, keeps its
// kind for errors.Is and errors.As, and neither errors.As nor errors.Unwrap
// reaches go-openai's error, which holds the key.
func TestRedactedCauseHidesTheKey(t *testing.T) {
	t.Parallel()
	for name, resp := range map[string]fakeopenai.Response{
		"API error":  fakeopenai.APIError(400, "invalid_request_error", "", "bad header Authorization: Bearer "+testKey+" and "+testKey),
		"plain body": fakeopenai.Error(400, "no JSON here, only "+testKey),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(resp)
			c, _ := newTestClient(t, f)
			_, err := c.Chat(t.Context(), userSays("q"), nil)
			var pe *ports.Error
			if !errors.As(err, &pe) || !errors.Is(err, ports.ErrInvalid) {
				t.Fatalf("Chat = %v, want an invalid Error", err)
			}
			if !strings.Contains(pe.Message, ports.RedactedText) {
				t.Errorf("message = %q, want the key quoted as %s", pe.Message, ports.RedactedText)
			}
			var apiErr *goopenai.APIError
			if errors.As(err, &apiErr) {
				t.Errorf("errors.As reached go-openai's APIError: %q", apiErr.Message)
			}
			var reqErr *goopenai.RequestError
			if errors.As(err, &reqErr) {
				t.Errorf("errors.As reached go-openai's RequestError: %q", reqErr.Body)
			}
			for u := err; u != nil; u = errors.Unwrap(u) {
				if strings.Contains(u.Error(), testKey) {
					t.Errorf("errors.Unwrap reached %T holding the key: %q", u, u.Error())
				}
			}
		})
	}
}
