package bedrock

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/devpilot/devpilot/ports"
)

// Client-safe messages of the errors Chat returns.
const (
	msgThrottled    = "the model provider is throttling requests; try again later"
	msgUnavailable  = "the model provider is unavailable"
	msgModelTimeout = "the model did not answer in time"
	msgCredentials  = "the model provider rejected the credentials"
	msgQuota        = "the model provider account has exceeded its quota"
	msgContext      = "the conversation is too long for the model"
	msgTruncated    = "the model's answer was cut off before it finished"
	msgProviderFail = "the model provider failed"
)

// contextLengthPhrases are what Bedrock's validation errors say of an input
// too long for the model, in the words of the models' providers.
var contextLengthPhrases = []string{
	"input is too long", "prompt is too long", "too many input tokens", "context window",
	"context length", "context_length", "maximum context", "input length and `max_tokens` exceed context limit",
	"exceeds the maximum number of tokens", "too many tokens",
}

// classify maps an error of the SDK (of the call, or of its stream) to a
// ports.Error. The cause is kept for logs; it holds no credentials (the SDK
// never puts them in errors).
func classify(err error) *ports.Error {
	if errors.Is(err, errNoMessageStop) {
		return &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: msgTruncated, Err: err}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return fromAPI(err, api)
	}
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) { // a response the SDK could not read as an error
		return fromStatus(err, resp.HTTPStatusCode())
	}
	// No answer at all (the endpoint unreachable, the connection dropped
	// before the response), or no credentials to sign with.
	if isCredentialsError(err) {
		return ports.Wrap(ports.KindUpstream, err, msgCredentials)
	}
	if started(err) {
		return &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: msgTruncated, Err: err}
	}
	return ports.Wrap(ports.KindUnavailable, err, msgUnavailable)
}

// fromAPI maps one of Bedrock's exceptions (or STS's, when assuming the
// role failed).
func fromAPI(cause error, api smithy.APIError) *ports.Error {
	code, message := api.ErrorCode(), api.ErrorMessage()
	switch code {
	case "ThrottlingException", "TooManyRequestsException", "Throttling":
		e := ports.Wrap(ports.KindUnavailable, cause, msgThrottled)
		e.RetryAfter = retryAfter(cause, time.Now())
		return e
	case "ServiceUnavailableException", "InternalServerException", "ModelNotReadyException", "InternalFailure",
		"ServiceUnavailable":
		e := ports.Wrap(ports.KindUnavailable, cause, msgUnavailable)
		e.RetryAfter = retryAfter(cause, time.Now())
		return e
	case "ModelTimeoutException", "RequestTimeout", "RequestTimeoutException":
		return ports.Wrap(ports.KindTimeout, cause, msgModelTimeout)
	case "ValidationException":
		if contextLength(message) {
			return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: msgContext, Err: cause}
		}
		return rejected(cause, message)
	case "ResourceNotFoundException":
		return rejected(cause, message)
	case "AccessDeniedException", "AccessDenied", "UnrecognizedClientException", "InvalidSignatureException",
		"IncompleteSignatureException", "MissingAuthenticationTokenException", "ExpiredTokenException",
		"ExpiredToken", "InvalidClientTokenId", "SignatureDoesNotMatch", "UnauthorizedException":
		if cachePointRefusal(message) {
			return rejected(cause, message)
		}
		return ports.Wrap(ports.KindUpstream, cause, msgCredentials)
	case "ServiceQuotaExceededException":
		return ports.Wrap(ports.KindUpstream, cause, msgQuota)
	case "ModelStreamErrorException", "ModelErrorException":
		return ports.Wrap(ports.KindUpstream, cause, msgProviderFail)
	}
	var resp *awshttp.ResponseError
	if errors.As(cause, &resp) {
		return fromStatus(cause, resp.HTTPStatusCode())
	}
	return ports.Wrap(ports.KindUpstream, cause, msgProviderFail)
}

// fromStatus maps an error response by its status alone.
func fromStatus(cause error, status int) *ports.Error {
	switch {
	case status == 0: // no response: the request could not be sent
		return ports.Wrap(ports.KindUnavailable, cause, msgUnavailable)
	case status == http.StatusTooManyRequests || status >= 500:
		e := ports.Wrap(ports.KindUnavailable, cause, msgUnavailable)
		e.RetryAfter = retryAfter(cause, time.Now())
		return e
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return ports.Wrap(ports.KindUpstream, cause, msgCredentials)
	case status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusRequestEntityTooLarge ||
		status == http.StatusUnprocessableEntity:
		return rejected(cause, "")
	}
	return ports.Wrap(ports.KindUpstream, cause, msgProviderFail)
}

func rejected(cause error, message string) *ports.Error {
	msg := "the model provider rejected the request"
	if detail := ports.Quote(message); detail != "" {
		msg += ": " + detail
	}
	return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: msg, Err: cause}
}

func contextLength(message string) bool {
	lower := strings.ToLower(message)
	for _, p := range contextLengthPhrases {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// cachePointRefusal reports whether an exception's message is Bedrock's
// refusal of prompt caching for a model: "You invoked an unsupported model
// or your request did not allow prompt caching" (a ValidationException, or
// an AccessDeniedException for some models), or a model's own "extraneous
// key [cachePoint] is not permitted".
func cachePointRefusal(message string) bool {
	lower := strings.ToLower(message)
	return strings.Contains(lower, "prompt caching") || strings.Contains(lower, "cachepoint")
}

// refusedCachePoint reports whether err is Bedrock refusing a request for
// its cachePoint blocks.
func refusedCachePoint(err error) bool {
	var api smithy.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode() {
	case "ValidationException", "AccessDeniedException":
		return cachePointRefusal(api.ErrorMessage())
	}
	return false
}

// refusedToolChoice reports whether err is Bedrock refusing a request for
// its toolChoice ("This model doesn't support the toolConfig.toolChoice.tool
// field").
func refusedToolChoice(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ValidationException" &&
		strings.Contains(strings.ToLower(api.ErrorMessage()), "toolchoice")
}

// isCredentialsError reports whether the SDK found no usable credentials
// to sign the request with.
func isCredentialsError(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed to retrieve credentials") || strings.Contains(msg, "failed to refresh cached credentials")
}

// started reports whether err came while reading a stream that had begun:
// the event stream reader's errors.
func started(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "decode event") || strings.Contains(msg, "deserialize event")
}

// retryAfter reads how long the service asked to wait (Retry-After in
// seconds or as an HTTP date) from the response of err; 0 when it did not
// say.
func retryAfter(err error, now time.Time) time.Duration {
	var resp *awshttp.ResponseError
	if !errors.As(err, &resp) || resp.Response == nil {
		return 0
	}
	v := strings.TrimSpace(resp.Response.Header.Get("Retry-After"))
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
