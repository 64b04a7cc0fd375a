package tool

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

var uuidInText = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)

// ShortID is how a summary shows an id beside a name: its first 8
// characters and an ellipsis ("01a225cf…").
func ShortID(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[:8] + "…"
}

// NamedSummary makes a Tool.Describe from summary: each UUID in the
// sentence summary writes is shown as name says it, with the short id after
// it ("account demo-aws (01a225cf…)"). name returns "" for an id it does
// not know (absent, another's, or a failed look-up), which keeps its full
// form, so nothing is hidden.
func NamedSummary(summary func(json.RawMessage) string, name func(ctx context.Context, id string) string) func(context.Context, json.RawMessage) string {
	return func(ctx context.Context, args json.RawMessage) string {
		known := map[string]string{}
		return uuidInText.ReplaceAllStringFunc(summary(args), func(id string) string {
			n, ok := known[id]
			if !ok {
				n = strings.TrimSpace(ports.OneLine(name(ctx, id)))
				known[id] = n
			}
			if n == "" {
				return id
			}
			return n + " (" + ShortID(id) + ")"
		})
	}
}
