package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"
	"golang.org/x/oauth2"

	"github.com/devpilot/devpilot/ports"
)

// CodeTokenRevoked is the Code of the upstream Error a call returns when
// GitHub no longer accepts the user's token.
const CodeTokenRevoked = "token_revoked"

// The Codes of the invalid Errors Exchange returns when GitHub refuses it.
const (
	CodeBadVerificationCode = "bad_verification_code"
	CodePKCEFailed          = "pkce_failed"
	CodeRedirectMismatch    = "redirect_uri_mismatch"
	CodeClientCredentials   = "incorrect_client_credentials"
)

// Client-safe messages.
const (
	msgTokenRevoked = "the GitHub token was revoked or expired; reconnect GitHub"
	msgTimeout      = "GitHub did not answer in time"
	msgUnavailable  = "GitHub is unavailable"
	msgMalformed    = "GitHub sent an answer devpilot cannot read"
)

// Waits suggested when GitHub names none: after a secondary rate limit
// (GitHub asks for at least a minute) and after a 429 or 202.
const (
	defaultAbuseWait = time.Minute
	defaultRetryWait = 5 * time.Second
)

// failed maps the error of a REST call made with token to a ports.Error;
// what names the resource a 404 is about. The cause is kept for logs with
// the token removed from its text (ports.Redacted: errors.Is sees through it,
// errors.As and errors.Unwrap do not reach go-github's error). A cancellation of ctx (the caller's, not
// the per-call timeout) is returned as context.Canceled.
func (c *Client) failed(ctx context.Context, token, what string, err error) error {
	if _, ok := ports.AsError(err); ok {
		return err
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("github: %w", context.Canceled)
	}
	cause := ports.Redacted(err, redact(err.Error(), token))
	e := c.classify(err)
	if e == nil {
		e = &ports.Error{Kind: ports.KindUpstream, Message: "GitHub failed"}
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil {
			e = c.fromStatus(er.Response, ports.Quote(er.Message, token), what)
			a := &answer{status: er.Response.StatusCode, cause: cause}
			for _, fe := range er.Errors {
				a.codes = append(a.codes, fe.Code)
				if m := ports.Quote(fe.Message, token); m != "" {
					a.messages = append(a.messages, m)
				}
			}
			cause = a
		}
	}
	e.Err = cause
	return e
}

// answer is what the refinements of a mapped error (writeErr,
// searchRejected, a rejected cursor) need of GitHub's error answer: its
// status and its field errors' codes and quoted messages, none of which
// holds the token. It unwraps to the redacted cause, never to go-github's
// ErrorResponse.
type answer struct {
	status   int
	codes    []string
	messages []string
	cause    error
}

// Error returns the redacted cause's text.
func (a *answer) Error() string { return a.cause.Error() }

// Unwrap returns the redacted cause.
func (a *answer) Unwrap() error { return a.cause }

// answerOf returns the GitHub error answer behind err, a mapped error.
func answerOf(err error) (*answer, bool) { return errors.AsType[*answer](err) }

// classify maps the failures that are not plain error answers: rate
// limits, transport failures and unreadable answers. It returns nil for the
// rest.
func (c *Client) classify(err error) *ports.Error {
	var rl *gh.RateLimitError
	var abuse *gh.AbuseRateLimitError
	var accepted *gh.AcceptedError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var netErr net.Error
	switch {
	case errors.As(err, &rl):
		wait := c.untilReset(rl.Rate.Reset.Time)
		return &ports.Error{Kind: ports.KindRateLimited, RetryAfter: wait,
			Message: "the GitHub API rate limit is exhausted; try again in " + wait.String()}
	case errors.As(err, &abuse):
		wait := defaultAbuseWait
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			wait = ceilSecond(*abuse.RetryAfter)
		}
		return &ports.Error{Kind: ports.KindRateLimited, RetryAfter: wait,
			Message: "GitHub's secondary rate limit was hit; try again in " + wait.String()}
	case errors.As(err, &accepted):
		return &ports.Error{Kind: ports.KindUnavailable, RetryAfter: defaultRetryWait,
			Message: "GitHub is still preparing the answer; try again shortly"}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &ports.Error{Kind: ports.KindTimeout, Message: msgTimeout}
	case errors.As(err, &syntax), errors.As(err, &typ):
		return &ports.Error{Kind: ports.KindUpstream, Message: msgMalformed}
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &ports.Error{Kind: ports.KindUnavailable, Message: msgUnavailable}
	}
	return nil
}

// fromStatus maps an error answer GitHub gave with resp's status (and
// headers) and its message, quoted (ports.Quote).
func (c *Client) fromStatus(resp *http.Response, quoted, what string) *ports.Error {
	status := resp.StatusCode
	switch {
	case status == http.StatusUnauthorized:
		return &ports.Error{Kind: ports.KindUpstream, Code: CodeTokenRevoked, Message: msgTokenRevoked}
	case status == http.StatusTooManyRequests || status == http.StatusForbidden && rateLimited(resp):
		wait := c.retryAfter(resp)
		return &ports.Error{Kind: ports.KindRateLimited, RetryAfter: wait,
			Message: "GitHub is rate limiting requests; try again in " + wait.String()}
	case status == http.StatusNotFound:
		return &ports.Error{Kind: ports.KindNotFound, Message: what + " not found"}
	case status >= 500:
		return &ports.Error{Kind: ports.KindUnavailable, Message: fmt.Sprintf("%s (HTTP %d)", msgUnavailable, status)}
	}
	msg := fmt.Sprintf("GitHub answered HTTP %d", status)
	if quoted != "" {
		msg += ": " + quoted
	}
	return &ports.Error{Kind: ports.KindUpstream, Message: msg}
}

// rateLimited reports whether a 403 carries rate-limit headers.
func rateLimited(resp *http.Response) bool {
	return resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"
}

// retryAfter is how long resp asks to wait: Retry-After, else until
// X-RateLimit-Reset, else defaultRetryWait.
func (c *Client) retryAfter(resp *http.Response) time.Duration {
	if v := strings.TrimSpace(resp.Header.Get("Retry-After")); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return c.untilReset(t)
		}
	}
	if v := resp.Header.Get("X-RateLimit-Reset"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return c.untilReset(time.Unix(n, 0))
		}
	}
	return defaultRetryWait
}

// untilReset is the wait until t in whole seconds, at least one.
func (c *Client) untilReset(t time.Time) time.Duration {
	return max(ceilSecond(t.Sub(c.now())), time.Second)
}

func ceilSecond(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
}

// isStatus reports whether err, a mapped error, is GitHub's error answer
// with that status.
func isStatus(err error, status int) bool {
	a, ok := answerOf(err)
	return ok && a.status == status
}

// exchangeFailed maps the error of a code exchange: GitHub's OAuth error
// codes (sent with status 200) to invalid Errors the user can act on, the
// rest like a REST call's.
func (c *Client) exchangeFailed(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("github: %w", context.Canceled)
	}
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		if e := c.classify(err); e != nil {
			e.Err = err
			return e
		}
		return ports.Wrap(ports.KindUpstream, err, "GitHub did not issue a token")
	}
	field := func(code, name, message string) error {
		return &ports.Error{Kind: ports.KindInvalid, Code: code, Message: message,
			Fields: []ports.FieldError{{Field: name, Reason: "rejected"}}, Err: re}
	}
	described := strings.ToLower(re.ErrorCode + " " + re.ErrorDescription)
	switch {
	case re.ErrorCode == "bad_verification_code":
		return field(CodeBadVerificationCode, "code", "the GitHub authorization code is incorrect, expired or already used; connect GitHub again")
	case re.ErrorCode == "incorrect_client_credentials":
		return field(CodeClientCredentials, "client_id", "GitHub rejected the OAuth app's client id or secret; check the GitHub OAuth configuration")
	case re.ErrorCode == "redirect_uri_mismatch":
		return field(CodeRedirectMismatch, "redirect_uri", "the redirect URI does not match the GitHub OAuth app's callback URL")
	case re.ErrorCode == "invalid_grant", strings.Contains(described, "code_verifier"),
		strings.Contains(described, "code_challenge"), strings.Contains(described, "pkce"):
		return field(CodePKCEFailed, "code_verifier", "GitHub rejected the PKCE code verifier; connect GitHub again")
	case re.ErrorCode != "":
		msg := "GitHub refused the token exchange: " + re.ErrorCode
		if d := ports.Quote(re.ErrorDescription); d != "" {
			msg += " (" + d + ")"
		}
		return ports.Wrap(ports.KindUpstream, re, msg)
	case re.Response != nil:
		status := re.Response.StatusCode
		e := &ports.Error{Kind: ports.KindUpstream, Message: fmt.Sprintf("GitHub's token endpoint answered HTTP %d", status), Err: re}
		switch {
		case status >= 500:
			e.Kind = ports.KindUnavailable
		case status == http.StatusTooManyRequests || status == http.StatusForbidden && rateLimited(re.Response):
			e.Kind, e.RetryAfter = ports.KindRateLimited, c.retryAfter(re.Response)
		}
		return e
	}
	return ports.Wrap(ports.KindUpstream, re, "GitHub did not issue a token")
}

// redact removes token from s, replacing it with ports.RedactedText; a
// token shorter than 4 bytes is no token GitHub issues, and replacing it
// would only garble the text.
func redact(s, token string) string {
	if len(token) >= 4 {
		s = strings.ReplaceAll(s, token, ports.RedactedText)
	}
	return s
}
