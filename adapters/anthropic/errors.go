package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/devpilot/devpilot/ports"
)

// Client-safe messages of the errors Chat returns.
const (
	msgRateLimited  = "the model provider is rate limiting requests; try again later"
	msgBilling      = "the model provider account cannot be billed"
	msgUnavailable  = "the model provider is unavailable"
	msgCredentials  = "the model provider rejected the credentials"
	msgContext      = "the conversation is too long for the model"
	msgTruncated    = "the model's answer was cut off before it finished"
	msgMalformed    = "the model provider sent a malformed stream"
	msgProviderFail = "the model provider failed"
)

// failure is why a call failed: a classified error, or the error onDelta
// returned.
type failure struct {
	err       *ports.Error
	callerErr error
}

// classify turns the error of a call into a failure. started says the
// stream had delivered an event. A cause whose text holds the API key is
// kept redacted (ports.Redacted).
func (c *Client) classify(err error, started bool) *failure {
	e := c.classifyRaw(err, started)
	if c.apiKey != "" && e.Err != nil && strings.Contains(e.Err.Error(), c.apiKey) {
		e.Err = ports.Redacted(e.Err, strings.ReplaceAll(e.Err.Error(), c.apiKey, ports.RedactedText))
	}
	return &failure{err: e}
}

func (c *Client) classifyRaw(err error, started bool) *ports.Error {
	var apiErr *anthropic.Error
	if errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		var header http.Header
		if apiErr.Response != nil {
			header = apiErr.Response.Header
		}
		if status >= 200 && status < 300 {
			status = 0 // an error event inside a stream that had started well
		}
		return c.fromProvider(err, status, string(apiErr.Type()), apiErr.Message, parseRetryAfter(header, time.Now()))
	}
	if started {
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) {
			return ports.Wrap(ports.KindUpstream, err, msgMalformed)
		}
		return truncated(err)
	}
	return ports.Wrap(ports.KindUnavailable, err, msgUnavailable)
}

// fromProvider classifies an error the provider reported: status is 0 for
// an error event inside a stream.
func (c *Client) fromProvider(cause error, status int, typ, message string, retryAfter time.Duration) *ports.Error {
	lower := strings.ToLower(message)
	contextLength := strings.Contains(lower, "prompt is too long") || strings.Contains(lower, "context window") ||
		strings.Contains(lower, "context length") || strings.Contains(lower, "too many tokens")
	switch {
	case status == http.StatusTooManyRequests, typ == "rate_limit_error":
		e := ports.Wrap(ports.KindRateLimited, cause, msgRateLimited)
		e.RetryAfter = retryAfter
		return e
	case status == http.StatusUnauthorized, status == http.StatusForbidden,
		typ == "authentication_error", typ == "permission_error":
		return ports.Wrap(ports.KindUpstream, cause, msgCredentials)
	case status == http.StatusPaymentRequired, typ == "billing_error":
		return ports.Wrap(ports.KindUpstream, cause, msgBilling)
	case status == http.StatusRequestTimeout, status >= 500,
		typ == "overloaded_error", typ == "api_error", typ == "timeout_error":
		e := ports.Wrap(ports.KindUnavailable, cause, msgUnavailable)
		e.RetryAfter = retryAfter
		return e
	case contextLength && (status == 0 || status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge):
		return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: msgContext, Err: cause}
	case status == http.StatusBadRequest, status == http.StatusNotFound, status == http.StatusRequestEntityTooLarge,
		status == http.StatusUnprocessableEntity, typ == "invalid_request_error", typ == "not_found_error":
		msg := "the model provider rejected the request"
		if detail := ports.Quote(message, c.apiKey); detail != "" {
			msg += ": " + detail
		}
		return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: msg, Err: cause}
	case status == 0:
		return ports.Wrap(ports.KindUpstream, cause, msgProviderFail)
	default:
		return ports.Wrap(ports.KindUpstream, cause, fmt.Sprintf("%s (status %d)", msgProviderFail, status))
	}
}

// timeoutAfter is the error of a call that did not finish within d.
func timeoutAfter(d time.Duration) *ports.Error {
	return ports.Wrap(ports.KindTimeout, errCallTimeout,
		fmt.Sprintf("the model provider did not finish answering within %s", d))
}

func truncated(cause error) *ports.Error {
	return &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: msgTruncated, Err: cause}
}

// parseRetryAfter reads how long the API asks to wait: Retry-After in
// seconds or as an HTTP date. It returns 0 when there is no usable header.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
