package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"github.com/devpilot/devpilot/ports"
)

// maxSidebandEvent bounds one event read from a sideband connection: a
// response.done carries the response's output items (transcripts, tool
// calls), a few kilobytes as a rule.
const maxSidebandEvent = 4 << 20

// unsupportedRealtime is the error of the realtime methods on an Azure
// configuration.
var unsupportedRealtime = &ports.Error{
	Kind:    ports.KindUnavailable,
	Code:    CodeRealtimeUnsupported,
	Message: "realtime voice sessions are not supported with an Azure OpenAI configuration",
}

// StartCall implements ports.Realtime with OpenAI's POST /realtime/calls
// (the WebRTC "unified interface"): a multipart form of the offer (field
// sdp) and the session configured as cfg (field session, JSON, as
// CreateClientSecret configures it), sent with the server's API key. The
// answer is the SDP answer (201, application/sdp) and the call's id is the
// last segment of its Location (/v1/realtime/calls/{call_id}). The call is
// not tried again and is bounded by Config.RealtimeTimeout.
//
// Errors: invalid (Code invalid_request) for a tool without a name or with
// parameters that are not JSON, or an offer the provider rejects (with its
// message); rate_limited (with RetryAfter); unavailable for 5xx answers and
// failed connections, and (Code realtime_unsupported) for an Azure
// configuration; timeout; upstream for rejected credentials and an answer
// without SDP or without a call id; ctx's error when ctx ends.
func (c *Client) StartCall(ctx context.Context, offerSDP string, cfg ports.RealtimeSessionConfig) (ports.RealtimeCall, error) {
	if c.apiType != APITypeOpenAI {
		return ports.RealtimeCall{}, unsupportedRealtime
	}
	sess, err := c.realtimeSessionOf(cfg)
	if err != nil {
		return ports.RealtimeCall{}, err
	}
	sessJSON, err := json.Marshal(&sess)
	if err != nil {
		return ports.RealtimeCall{}, invalidRequest(fmt.Sprintf("the realtime session cannot be encoded: %v", err))
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := errors.Join(mw.WriteField("sdp", offerSDP), mw.WriteField("session", string(sessJSON)), mw.Close()); err != nil {
		return ports.RealtimeCall{}, ports.Wrap(ports.KindInternal, err, "the realtime call request cannot be built")
	}

	b, header, err := c.postRealtime(ctx, "/realtime/calls", mw.FormDataContentType(), "application/sdp", &body)
	if err != nil {
		return ports.RealtimeCall{}, err
	}
	id := callIDOf(header.Get("Location"))
	answer := string(b)
	if id == "" || !strings.HasPrefix(strings.TrimSpace(answer), "v=") {
		return ports.RealtimeCall{}, ports.Wrap(ports.KindUpstream,
			fmt.Errorf("openai: the realtime call answer has no call id (Location %q) or no SDP", header.Get("Location")), msgMalformedRes)
	}
	return ports.RealtimeCall{ID: id, AnswerSDP: answer, Model: sess.Model}, nil
}

// callIDOf returns the call id of a Location /v1/realtime/calls/{call_id}
// (absolute or not), or "".
func callIDOf(location string) string {
	u, err := url.Parse(location)
	if err != nil {
		return ""
	}
	const prefix = "/realtime/calls/"
	i := strings.LastIndex(u.Path, prefix)
	if i < 0 {
		return ""
	}
	id := u.Path[i+len(prefix):]
	if strings.Contains(id, "/") {
		return ""
	}
	return id
}

// sidebandURL is the WebSocket URL that joins call id: the base URL with a
// ws(s) scheme, path /realtime and query call_id.
func (c *Client) sidebandURL(id string) (string, error) {
	u, err := url.Parse(c.baseURL + "/realtime")
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	u.RawQuery = url.Values{"call_id": {id}}.Encode()
	return u.String(), nil
}

// sidebandEvent is the part of a server event WatchCall reads.
type sidebandEvent struct {
	Type     string `json:"type"`
	Response *struct {
		ID    string `json:"id"`
		Usage *struct {
			InputTokens       int64 `json:"input_tokens"`
			OutputTokens      int64 `json:"output_tokens"`
			InputTokenDetails struct {
				CachedTokens int64 `json:"cached_tokens"`
				AudioTokens  int64 `json:"audio_tokens"`
			} `json:"input_token_details"`
			OutputTokenDetails struct {
				AudioTokens int64 `json:"audio_tokens"`
			} `json:"output_token_details"`
		} `json:"usage"`
	} `json:"response"`
}

// WatchCall implements ports.Realtime with a sideband connection: a
// WebSocket to /realtime?call_id={callID} with the server's API key, whose
// response.done events carry each response's usage. Joining is bounded by
// Config.RealtimeTimeout; the connection then lasts until the call ends
// (the provider closes it normally, with 1000 or 1001, and a call that
// ended answers the join with 404: both return nil) or ctx ends. A response.done without usage (none was
// used) is not reported.
//
// Errors: unavailable when the join fails, the connection drops without
// a close or is closed with an error status, and (Code realtime_unsupported) for an Azure configuration;
// timeout when the join takes longer than Config.RealtimeTimeout;
// rate_limited, upstream (rejected credentials) and invalid as a refused
// join answers; upstream for an event that is not JSON or a response.done
// without a response id; onUsage's error as it returned it; ctx's error
// when ctx ends.
func (c *Client) WatchCall(ctx context.Context, callID string, onUsage func(ports.RealtimeUsage) error) error {
	if c.apiType != APITypeOpenAI {
		return unsupportedRealtime
	}
	u, err := c.sidebandURL(callID)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "the sideband URL cannot be built")
	}
	header := http.Header{}
	if c.apiKey != "" {
		header.Set("Authorization", "Bearer "+c.apiKey)
	}
	dialCtx, cancel := context.WithTimeoutCause(ctx, c.realtimeTimeout, errCallTimeout)
	conn, resp, err := websocket.Dial(dialCtx, u, &websocket.DialOptions{HTTPClient: c.hc, HTTPHeader: header})
	cancel()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(context.Cause(dialCtx), errCallTimeout):
			return timeoutAfter(c.realtimeTimeout)
		case resp == nil:
			return ports.Wrap(ports.KindUnavailable, err, msgUnavailable)
		case resp.StatusCode == http.StatusNotFound:
			return nil // the call ended, or never was
		default:
			var b []byte
			if resp.Body != nil {
				b, _ = io.ReadAll(io.LimitReader(resp.Body, maxRealtimeResponse))
			}
			if resp.StatusCode >= 200 && resp.StatusCode < 300 || resp.StatusCode == http.StatusSwitchingProtocols {
				return ports.Wrap(ports.KindUpstream, err, msgMalformedRes)
			}
			return c.providerError(resp.StatusCode, resp.Header, b)
		}
	}
	defer conn.CloseNow()
	conn.SetReadLimit(maxSidebandEvent)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway:
				return nil // the provider closed the call's sideband: the call ended
			case websocket.CloseStatus(err) != -1:
				// Another close (an error of the provider's, an event past the
				// read limit): joining again tells whether the call goes on.
				return ports.Wrap(ports.KindUnavailable, err, "the model provider closed the sideband connection with an error")
			default:
				return ports.Wrap(ports.KindUnavailable, err, "the sideband connection to the model provider dropped")
			}
		}
		var ev sidebandEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return ports.Wrap(ports.KindUpstream, err, msgMalformedRes)
		}
		if ev.Type != "response.done" || ev.Response == nil || ev.Response.Usage == nil {
			continue
		}
		if ev.Response.ID == "" {
			return ports.Wrap(ports.KindUpstream, errors.New("openai: a response.done event has no response id"), msgMalformedRes)
		}
		us := ev.Response.Usage
		if err := onUsage(ports.RealtimeUsage{
			ResponseID: ev.Response.ID, InputTokens: us.InputTokens, OutputTokens: us.OutputTokens,
			CachedTokens: us.InputTokenDetails.CachedTokens, InputAudioTokens: us.InputTokenDetails.AudioTokens,
			OutputAudioTokens: us.OutputTokenDetails.AudioTokens,
		}); err != nil {
			return err
		}
	}
}
