package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// Client-safe messages of the errors Chat returns.
const (
	msgRateLimited  = "the model provider is rate limiting requests; try again later"
	msgQuota        = "the model provider account has exceeded its quota"
	msgUnavailable  = "the model provider is unavailable"
	msgCredentials  = "the model provider rejected the credentials"
	msgContext      = "the conversation is too long for the model"
	msgTruncated    = "the model's answer was cut off before it finished"
	msgMalformed    = "the model provider sent a malformed stream"
	msgMalformedRes = "the model provider sent a malformed response"
	msgProviderFail = "the model provider failed"
)

// failure is why one attempt failed: a classified error, whether another
// attempt may succeed, or the error onDelta returned.
type failure struct {
	err       *ports.Error
	retryable bool
	callerErr error
}

// responseInfo is what the HTTP layer saw of an attempt's response, which
// go-openai's errors do not carry (Retry-After above all), and the call the
// attempt sends.
type responseInfo struct {
	status int
	header http.Header
	call   *call
	// limit, when positive, is the most bytes of the response body read:
	// a longer body fails with errResponseTooLarge.
	limit int64
	// body, when set, receives a copy of a successful response's body as
	// it is read (up to limit), for what go-openai does not decode.
	body *bytes.Buffer
}

// errResponseTooLarge is the error of reading a body past its limit.
var errResponseTooLarge = errors.New("openai: the response is too large")

type responseInfoKey struct{}

// recordingDoer is the http.Client go-openai calls. For a request whose
// context holds a responseInfo, it completes the body with the call's tools,
// notes the status and headers of the response, and keeps an idle stream
// cheap:
//
//   - the encoded request body is let go of once it has been sent; a resend
//     (GetBody, used by the transport to retry on another connection)
//     encodes the request again;
//   - a successful response is returned only once its body has sent a byte
//     (or failed), so the buffer go-openai reads the stream through is not
//     allocated while the model has not started answering.
type recordingDoer struct{ hc *http.Client }

// Do sends r and notes the status and headers of its response.
func (d recordingDoer) Do(r *http.Request) (*http.Response, error) {
	info, ok := r.Context().Value(responseInfoKey{}).(*responseInfo)
	if !ok {
		return d.hc.Do(r)
	}
	if cl := info.call; cl != nil && r.Body != nil && r.Body != http.NoBody {
		body, n := r.Body, r.ContentLength
		var full io.Reader
		if n > 1 { // go-openai's encoding of cl.req, without the tools
			full, n = cl.withTools(body, n)
		} else {
			var err error
			if full, n, err = cl.body(); err != nil {
				return nil, err
			}
		}
		r.Body, r.ContentLength = &sentBody{r: full, c: body}, n
		r.GetBody = func() (io.ReadCloser, error) {
			body, _, err := cl.body()
			if err != nil {
				return nil, err
			}
			return io.NopCloser(body), nil
		}
	}
	resp, err := d.hc.Do(r)
	if err != nil {
		return resp, err
	}
	info.status, info.header = resp.StatusCode, resp.Header
	if info.limit > 0 {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: info.limit}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if info.body != nil {
			resp.Body = teeBody{ReadCloser: resp.Body, copy: info.body}
		}
		resp.Body = awaitFirstByte(resp.Body)
	}
	return resp, nil
}

// teeBody is a response body that copies what is read of it.
type teeBody struct {
	io.ReadCloser
	copy *bytes.Buffer
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.copy.Write(p[:n])
	return n, err
}

// sentBody is a request body that drops what it reads from once that is
// read to the end or closed. It is safe for a Close concurrent with a Read,
// which a transport may do.
type sentBody struct {
	mu sync.Mutex
	r  io.Reader
	c  io.Closer
}

func (b *sentBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	r := b.r
	b.mu.Unlock()
	if r == nil {
		return 0, io.EOF
	}
	n, err := r.Read(p)
	if err == io.EOF {
		_ = b.Close()
	}
	return n, err
}

func (b *sentBody) Close() error {
	b.mu.Lock()
	c := b.c
	b.r, b.c = nil, nil
	b.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.Close()
}

// limitedBody is a response body that fails with errResponseTooLarge once
// more than its limit has been read.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errResponseTooLarge
	}
	return n, err
}

// awaitFirstByte blocks until body yields a byte or an error, and returns a
// body that yields that byte, then the rest (or the error).
func awaitFirstByte(body io.ReadCloser) io.ReadCloser {
	p := &primedBody{ReadCloser: body}
	var b [1]byte
	for {
		n, err := body.Read(b[:])
		if n > 0 {
			p.first, p.primed, p.err = b[0], true, err
			return p
		}
		if err != nil {
			p.err = err
			return p
		}
	}
}

// primedBody is a response body whose first byte, or first error, was read
// ahead.
type primedBody struct {
	io.ReadCloser
	first  byte
	primed bool  // first is still to be read
	err    error // returned once first is read
}

func (p *primedBody) Read(b []byte) (int, error) {
	switch {
	case p.primed:
		if len(b) == 0 {
			return 0, nil
		}
		b[0], p.primed = p.first, false
		return 1, nil
	case p.err != nil:
		return 0, p.err
	}
	return p.ReadCloser.Read(b)
}

// classify turns the error of one attempt into a failure. inStream says the
// error came while reading a stream that had started. A cause whose text
// holds the API key is kept redacted (ports.Redacted).
func (c *Client) classify(err error, info *responseInfo, inStream bool) *failure {
	f := c.classifyRaw(err, info, inStream)
	if f.err != nil {
		c.hideKey(f.err)
	}
	return f
}

// hideKey replaces e's cause, when its text holds the API key, with the
// cause redacted of it: errors.Is still sees through it, errors.As and
// errors.Unwrap no longer reach go-openai's error.
func (c *Client) hideKey(e *ports.Error) {
	if c.apiKey == "" || e.Err == nil || !strings.Contains(e.Err.Error(), c.apiKey) {
		return
	}
	e.Err = ports.Redacted(e.Err, strings.ReplaceAll(e.Err.Error(), c.apiKey, ports.RedactedText))
}

// classifyRaw is classify without hiding the key in the cause.
func (c *Client) classifyRaw(err error, info *responseInfo, inStream bool) *failure {
	var retryAfter time.Duration
	if info != nil {
		retryAfter = parseRetryAfter(info.header, time.Now())
	}
	var apiErr *goopenai.APIError
	if errors.As(err, &apiErr) {
		return c.fromProvider(err, apiErr.HTTPStatusCode, apiErr.Type, codeString(apiErr.Code), apiErr.Message, retryAfter)
	}
	var reqErr *goopenai.RequestError
	if errors.As(err, &reqErr) {
		return c.fromProvider(err, reqErr.HTTPStatusCode, "", "", string(reqErr.Body), retryAfter)
	}
	if inStream {
		var syntaxErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, goopenai.ErrTooManyEmptyStreamMessages) {
			return &failure{err: ports.Wrap(ports.KindUpstream, err, msgMalformed)}
		}
		return &failure{err: truncated(err), retryable: true}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) || (info != nil && info.status != 0) {
		return &failure{err: ports.Wrap(ports.KindUnavailable, err, msgUnavailable), retryable: true}
	}
	return &failure{err: &ports.Error{
		Kind:    ports.KindInvalid,
		Code:    ports.CodeInvalidRequest,
		Message: "the request cannot be sent to the model provider: " + ports.Quote(err.Error(), c.apiKey),
		Err:     err,
	}}
}

// fromProvider classifies an error the provider reported: status is 0 for an
// error event inside a stream.
func (c *Client) fromProvider(cause error, status int, typ, code, message string, retryAfter time.Duration) *failure {
	lower := strings.ToLower(typ + " " + code + " " + message)
	contextLength := strings.Contains(lower, "context_length") || strings.Contains(lower, "context length") ||
		strings.Contains(lower, "context size") || strings.Contains(lower, "context_size") ||
		strings.Contains(lower, "context window")
	quota := strings.Contains(lower, "insufficient_quota")
	switch {
	case status == http.StatusTooManyRequests && quota, status == 0 && quota:
		return &failure{err: ports.Wrap(ports.KindUpstream, cause, msgQuota)}
	case status == http.StatusTooManyRequests, status == 0 && strings.Contains(lower, "rate_limit"):
		e := ports.Wrap(ports.KindRateLimited, cause, msgRateLimited)
		e.RetryAfter = retryAfter
		return &failure{err: e, retryable: true}
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return &failure{err: ports.Wrap(ports.KindUpstream, cause, msgCredentials)}
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500,
		status == 0 && (strings.Contains(lower, "server_error") || strings.Contains(lower, "overloaded")):
		e := ports.Wrap(ports.KindUnavailable, cause, msgUnavailable)
		e.RetryAfter = retryAfter
		return &failure{err: e, retryable: true}
	case contextLength && (status == 0 || status == http.StatusBadRequest ||
		status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity):
		return &failure{err: &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: msgContext, Err: cause}}
	case status == http.StatusBadRequest, status == http.StatusNotFound,
		status == http.StatusRequestEntityTooLarge, status == http.StatusUnprocessableEntity:
		msg := "the model provider rejected the request"
		if detail := ports.Quote(message, c.apiKey); detail != "" {
			msg += ": " + detail
		}
		return &failure{err: &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: msg, Err: cause}}
	case status == 0:
		return &failure{err: ports.Wrap(ports.KindUpstream, cause, msgProviderFail)}
	default:
		return &failure{err: ports.Wrap(ports.KindUpstream, cause, fmt.Sprintf("%s (status %d)", msgProviderFail, status))}
	}
}

// classifyOnce classifies the error of a call that neither streams nor is
// tried again (a transcription): the provider's errors as Chat's, a
// response that started well but cannot be decoded as upstream, and a
// connection that fails as unavailable.
func (c *Client) classifyOnce(err error, info *responseInfo) *ports.Error {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	if errors.As(err, &apiErr) || errors.As(err, &reqErr) || info == nil || info.status < 200 || info.status > 299 {
		return c.classify(err, info, false).err
	}
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var e *ports.Error
	if errors.As(err, &syntaxErr) || errors.As(err, &typeErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errResponseTooLarge) {
		e = ports.Wrap(ports.KindUpstream, err, msgMalformedRes)
	} else {
		e = ports.Wrap(ports.KindUnavailable, err, msgUnavailable)
	}
	c.hideKey(e)
	return e
}

// providerError classifies a response with a failure status whose body
// (OpenAI's {"error":{…}} or anything else) has been read.
func (c *Client) providerError(status int, header http.Header, body []byte) *ports.Error {
	var res goopenai.ErrorResponse
	var cause error
	if err := json.Unmarshal(body, &res); err == nil && res.Error != nil {
		res.Error.HTTPStatusCode, res.Error.HTTPStatus = status, http.StatusText(status)
		cause = res.Error
	} else {
		cause = &goopenai.RequestError{HTTPStatus: http.StatusText(status), HTTPStatusCode: status, Err: err, Body: body}
	}
	return c.classify(cause, &responseInfo{status: status, header: header}, false).err
}

// timeoutAfter is the error of a call that did not finish within d.
func timeoutAfter(d time.Duration) *ports.Error {
	return ports.Wrap(ports.KindTimeout, errCallTimeout,
		fmt.Sprintf("the model provider did not finish answering within %s", d))
}

func truncated(cause error) *ports.Error {
	return &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: msgTruncated, Err: cause}
}

// codeString renders the code of an APIError, which is a string, a number or
// absent.
func codeString(code any) string {
	switch v := code.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// parseRetryAfter reads how long a provider asks to wait: retry-after-ms
// (OpenAI), else Retry-After in seconds or as an HTTP date. It returns 0 when
// there is no usable header.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
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

// oneShot turns unavailable into upstream for the calls a client waits on
// once (realtime secrets, transcription): a provider that fails or cannot be
// reached is a bad gateway (502) to that client, with any Retry-After kept.
// Chat keeps unavailable, which its retries and the spec worker key on.
func oneShot(e *ports.Error) *ports.Error {
	if e != nil && e.Kind == ports.KindUnavailable {
		c := *e
		c.Kind = ports.KindUpstream
		if c.Code == string(ports.KindUnavailable) {
			c.Code = ""
		}
		return &c
	}
	return e
}
