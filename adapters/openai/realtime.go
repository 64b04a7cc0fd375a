package openai

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// maxRealtimeResponse bounds the response to a client secret request read:
// OpenAI's is a few kilobytes, the session's tools included.
const maxRealtimeResponse = 1 << 20

// CodeRealtimeUnsupported is the Code of the unavailable Error
// CreateClientSecret returns for an Azure configuration.
const CodeRealtimeUnsupported = "realtime_unsupported"

// realtimeSecretRequest is the body of POST /realtime/client_secrets in
// OpenAI's GA Realtime API.
type realtimeSecretRequest struct {
	ExpiresAfter struct {
		Anchor  string `json:"anchor"`
		Seconds int64  `json:"seconds"`
	} `json:"expires_after"`
	Session realtimeSession `json:"session"`
}

type realtimeSession struct {
	Type         string `json:"type"`
	Model        string `json:"model"`
	Instructions string `json:"instructions,omitempty"`
	Audio        struct {
		Output struct {
			Voice string `json:"voice"`
		} `json:"output"`
	} `json:"audio"`
	Tools      []realtimeTool `json:"tools,omitempty"`
	ToolChoice string         `json:"tool_choice,omitempty"`
}

// realtimeTool is a function tool of a realtime session: unlike Chat
// Completions', its name and schema are not nested under "function".
type realtimeTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// realtimeSecretResponse is the part of OpenAI's answer the adapter uses.
type realtimeSecretResponse struct {
	Value     string `json:"value"`
	ExpiresAt int64  `json:"expires_at"`
	Session   struct {
		Model string `json:"model"`
	} `json:"session"`
}

// CreateClientSecret implements ports.Realtime with OpenAI's
// POST /realtime/client_secrets: the session gets cfg's model, voice and
// instructions (the configured model and voice when cfg leaves them empty)
// and every tool of cfg as a function tool the model may choose to call; the
// secret lives cfg.ExpiresIn, or Config.RealtimeExpiry. The call is not
// tried again and is bounded by Config.RealtimeTimeout.
//
// Errors: invalid (Code invalid_request) for a tool without a name or with
// parameters that are not JSON, an expiry outside 10s..2h, or a request the
// provider rejects (with its message); rate_limited (with RetryAfter);
// unavailable for 5xx answers and failed connections, and (Code
// realtime_unsupported) for an Azure configuration, whose realtime API this
// adapter does not speak; timeout; upstream for rejected credentials and a
// malformed answer; ctx's error when ctx ends.
func (c *Client) CreateClientSecret(ctx context.Context, cfg ports.RealtimeSessionConfig) (ports.RealtimeSecret, error) {
	if c.apiType != APITypeOpenAI {
		return ports.RealtimeSecret{}, &ports.Error{
			Kind:    ports.KindUnavailable,
			Code:    CodeRealtimeUnsupported,
			Message: "realtime voice sessions are not supported with an Azure OpenAI configuration",
		}
	}
	body, model, err := c.realtimeBody(cfg)
	if err != nil {
		return ports.RealtimeSecret{}, err
	}
	b, _, err := c.postRealtime(ctx, "/realtime/client_secrets", "application/json", "application/json", bytes.NewReader(body))
	if err != nil {
		return ports.RealtimeSecret{}, err
	}
	var out realtimeSecretResponse
	if err := json.Unmarshal(b, &out); err != nil {
		return ports.RealtimeSecret{}, ports.Wrap(ports.KindUpstream, err, msgMalformedRes)
	}
	if out.Value == "" || out.ExpiresAt <= 0 {
		return ports.RealtimeSecret{}, ports.Wrap(ports.KindUpstream,
			errors.New("openai: the client secret has no value or no expiry"), msgMalformedRes)
	}
	return ports.RealtimeSecret{
		Value:     out.Value,
		ExpiresAt: time.Unix(out.ExpiresAt, 0).UTC(),
		Model:     cmp.Or(out.Session.Model, model),
	}, nil
}

// postRealtime posts body (of contentType) to path under the base URL with
// the API key, within the realtime timeout, and returns the 2xx answer's
// body (at most maxRealtimeResponse bytes) and header. Errors: the
// provider's (providerError), unavailable when it cannot be reached,
// timeout past the realtime timeout, upstream for an answer too large;
// ctx's error when ctx ends. None is retried (oneShot).
func (c *Client) postRealtime(ctx context.Context, path, contentType, accept string, body io.Reader) ([]byte, http.Header, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, c.realtimeTimeout, errCallTimeout)
	defer cancel()
	// failed classifies an error of the exchange; fallback is used when ctx
	// and the timeout are not what ended it.
	failed := func(fallback *ports.Error) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if callCtx.Err() != nil {
			return timeoutAfter(c.realtimeTimeout)
		}
		return fallback
	}
	req, err := http.NewRequestWithContext(callCtx, http.MethodPost, c.baseURL+path, body)
	if err != nil {
		return nil, nil, ports.Wrap(ports.KindInternal, err, "the realtime request cannot be built")
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, nil, failed(oneShot(ports.Wrap(ports.KindUnavailable, err, msgUnavailable)))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRealtimeResponse+1))
	if err != nil {
		return nil, nil, failed(oneShot(ports.Wrap(ports.KindUnavailable, err, msgUnavailable)))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, oneShot(c.providerError(resp.StatusCode, resp.Header, b))
	}
	if len(b) > maxRealtimeResponse {
		return nil, nil, ports.Wrap(ports.KindUpstream, errResponseTooLarge, msgMalformedRes)
	}
	return b, resp.Header, nil
}

// realtimeBody encodes the request for a session configured as cfg, and
// returns it with the model it asks for.
func (c *Client) realtimeBody(cfg ports.RealtimeSessionConfig) ([]byte, string, error) {
	var r realtimeSecretRequest
	expiry := cmp.Or(cfg.ExpiresIn, c.realtimeExpiry)
	secs := int64(math.Round(expiry.Seconds()))
	if secs < int64(MinRealtimeExpiry/time.Second) || secs > int64(MaxRealtimeExpiry/time.Second) {
		return nil, "", invalidRequest(fmt.Sprintf("the realtime secret's lifetime %s is not between %s and %s",
			expiry, MinRealtimeExpiry, MaxRealtimeExpiry))
	}
	r.ExpiresAfter.Anchor, r.ExpiresAfter.Seconds = "created_at", secs
	s, err := c.realtimeSessionOf(cfg)
	if err != nil {
		return nil, "", err
	}
	r.Session = s
	b, err := json.Marshal(&r)
	if err != nil {
		return nil, "", invalidRequest(fmt.Sprintf("the realtime session cannot be encoded: %v", err))
	}
	return b, s.Model, nil
}

// realtimeSessionOf is the session configured as cfg, with the configured
// model and voice where cfg leaves them empty. Errors: invalid (Code
// invalid_request) for a tool without a name or with parameters that are
// not JSON.
func (c *Client) realtimeSessionOf(cfg ports.RealtimeSessionConfig) (realtimeSession, error) {
	var s realtimeSession
	s.Type = "realtime"
	s.Model = cmp.Or(cfg.Model, c.realtimeModel)
	s.Instructions = cfg.Instructions
	s.Audio.Output.Voice = cmp.Or(cfg.Voice, c.realtimeVoice)
	for _, t := range cfg.Tools {
		if t.Name == "" {
			return s, invalidRequest("a tool has no name")
		}
		params := t.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		} else if !json.Valid(params) {
			return s, invalidRequest(fmt.Sprintf("tool %s: the parameters schema is not valid JSON", t.Name))
		}
		s.Tools = append(s.Tools, realtimeTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	if len(s.Tools) > 0 {
		s.ToolChoice = "auto"
	}
	return s, nil
}
