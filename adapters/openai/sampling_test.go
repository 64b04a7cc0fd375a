package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// TestTemperatureAndSeed: the request's temperature and seed reach the
// provider, an explicit temperature of 0 included (go-openai's encoding
// drops a 0), none is sent when the request has none or the model takes
// none, and a temperature outside 0 to 2 is refused.
func TestTemperatureAndSeed(t *testing.T) {
	t.Parallel()
	f64 := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name            string
		model           string
		temperature     *float64
		seed            *int64
		tools           bool
		wantTemperature *float64
		wantSeed        *int64
	}{
		{name: "none"},
		{name: "both", temperature: f64(0.7), seed: i64(42), wantTemperature: f64(0.7), wantSeed: i64(42)},
		{name: "zero", temperature: f64(0), seed: i64(0), wantTemperature: f64(0), wantSeed: i64(0)},
		{name: "zero with tools", temperature: f64(0), tools: true, wantTemperature: f64(0)},
		{name: "the highest", temperature: f64(2), seed: i64(-1 << 40), wantTemperature: f64(2), wantSeed: i64(-1 << 40)},
		{name: "a reasoning model takes no temperature", model: "o3-mini", temperature: f64(0.2), seed: i64(7), wantSeed: i64(7)},
		{name: "nor a zero one", model: "gpt-5-mini", temperature: f64(0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(fakeopenai.Text("ok"))
			c, _ := newTestClient(t, f)
			req := userSays("hi")
			if tt.tools {
				req = toolsRequest([]ports.ToolDefinition{{Name: "get_time", Description: "The time now."}})
			}
			req.Model, req.Temperature, req.Seed = tt.model, tt.temperature, tt.seed
			if _, err := c.Chat(t.Context(), req, nil); err != nil {
				t.Fatal(err)
			}
			r := f.Requests()[0]
			if !sameFloat(r.Temperature, tt.wantTemperature) || !sameInt(r.Seed, tt.wantSeed) {
				t.Errorf("sent temperature %v seed %v, want %v %v\nbody %s", show(r.Temperature), show(r.Seed), show(tt.wantTemperature), show(tt.wantSeed), r.Body)
			}
			if tt.tools && len(r.Tools) != 1 {
				t.Errorf("sent tools %+v", r.Tools)
			}
			if !json.Valid(r.Body) || bytes.Count(r.Body, []byte(`"temperature"`)) > 1 {
				t.Errorf("body %s", r.Body)
			}
		})
	}
	for _, bad := range []float64{-0.1, 2.01, math.NaN(), math.Inf(1)} {
		f := fakeopenai.New(t)
		c, _ := newTestClient(t, f)
		req := userSays("hi")
		req.Temperature = &bad
		_, err := c.Chat(t.Context(), req, nil)
		wantError(t, err, ports.KindInvalid, "invalid_request")
		if n := len(f.Requests()); n != 0 {
			t.Errorf("temperature %v: %d requests sent", bad, n)
		}
	}
}

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameInt(a, b *int64) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show[T any](p *T) any {
	if p == nil {
		return "none"
	}
	return *p
}
