package bedrock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// TestChatConcurrentStreams: streams of one Client at once each get their
// own answer whole (the SDK's clients share one event-stream decoder
// between their streams; -race sees it).
func TestChatConcurrentStreams(t *testing.T) {
	t.Parallel()
	c, script := newClient(t, nil)
	answer := func(q string) []string {
		parts := make([]string, 12)
		for i := range parts {
			parts[i] = fmt.Sprintf("part %d of %s; ", i, q)
		}
		return parts
	}
	script.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.TextChunks(answer(r.LastMessage().Content)...).WithTokenDelay(2 * time.Millisecond)
	})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			q := fmt.Sprintf("question %d", i)
			res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: q}}}, nil)
			if want := strings.Join(answer(q), ""); err != nil || res.Content != want {
				t.Errorf("%s: %q, %v; want %q", q, res.Content, err, want)
			}
		})
	}
	wg.Wait()
}
