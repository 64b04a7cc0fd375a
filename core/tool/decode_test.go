package tool_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

func TestDecodeArgs(t *testing.T) {
	t.Parallel()
	var v struct {
		Name string `json:"name"`
	}
	if err := tool.DecodeArgs(json.RawMessage(`{"name":"api"}`), &v); err != nil || v.Name != "api" {
		t.Fatalf("DecodeArgs = %v, %+v", err, v)
	}
	err := tool.DecodeArgs(json.RawMessage(`{"name":7}`), &v)
	if !errors.Is(err, ports.ErrInvalid) || ports.Public(err).Message != "the arguments do not fit the tool's schema" {
		t.Fatalf("DecodeArgs(bad) = %v, want invalid", err)
	}
}
