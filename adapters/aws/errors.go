package aws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/devpilot/devpilot/ports"
)

// defaultRetryAfter is the wait suggested for a throttled call when AWS
// names none.
const defaultRetryAfter = time.Second

var notFoundCodes = map[string]bool{
	"ClusterNotFoundException":  true,
	"ServiceNotFoundException":  true,
	"ResourceNotFoundException": true,
	"NotFoundException":         true,
}

var invalidCodes = map[string]bool{
	"InvalidParameterException":      true,
	"InvalidParameterValueException": true,
	"InvalidParameterCombination":    true,
	"ValidationException":            true,
	"ValidationError":                true,
	"InvalidRequestContentException": true,
	"RequestTooLargeException":       true,
	"BadRequestException":            true,
	"InvalidNextTokenException":      true,
	"UnsupportedMediaTypeException":  true,
}

var timeoutCodes = map[string]bool{"RequestTimeout": true, "RequestTimeoutException": true}

// resources names, by error code, the resource a not-found error is about;
// the entry "" is used for any other not-found code.
type resources map[string]string

// fail maps an error of an SDK call made for s to a ports.Error. Messages
// name the AWS error code and message, never the credentials; the cause is
// kept for logs, redacted (ports.Redacted: errors.Is sees through it, errors.As
// and errors.Unwrap do not reach the SDK's error).
func (p *Provider) fail(ctx context.Context, s *session, err error, res resources) error {
	if _, ok := ports.AsError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == context.Canceled {
		return fmt.Errorf("aws: %w", context.Canceled)
	}
	e, service, operation, cause := classify(err, s.creds, res)
	p.log.Debug("aws call failed", "service", service, "operation", operation, "kind", string(e.Kind), "error", cause.Error())
	return e
}

// classify maps err, an SDK call's error that is not a cancellation, to a
// ports.Error whose cause is err redacted of c's secret; res names the
// resource of a not-found error. It also returns the service and operation
// the error names, and the redacted cause.
func classify(err error, c ports.CloudCredentials, res resources) (e *ports.Error, service, operation string, cause error) {
	service, operation = "AWS", "call"
	var opErr *smithy.OperationError
	if errors.As(err, &opErr) {
		service, operation = opErr.ServiceID, opErr.OperationName
	}
	cause = ports.Redacted(err, redact(err.Error(), c))

	var apiErr smithy.APIError
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		e = &ports.Error{Kind: ports.KindTimeout, Message: fmt.Sprintf("aws: %s %s did not answer in time", service, operation)}
	case errors.As(err, &apiErr):
		code := apiErr.ErrorCode()
		msg := "aws: " + code
		if m := ports.Quote(redact(apiErr.ErrorMessage(), c)); m != "" {
			msg += ": " + m
		}
		switch {
		case isThrottle(code):
			e = &ports.Error{Kind: ports.KindRateLimited, Message: msg, RetryAfter: retryAfter(err)}
		case notFoundCodes[code]:
			what := res[code]
			if what == "" {
				what = res[""]
			}
			if what != "" {
				msg = what + " not found"
			}
			e = &ports.Error{Kind: ports.KindNotFound, Message: msg}
		case invalidCodes[code]:
			e = &ports.Error{Kind: ports.KindInvalid, Message: msg}
		case timeoutCodes[code]:
			e = &ports.Error{Kind: ports.KindTimeout, Message: msg}
		default:
			e = &ports.Error{Kind: ports.KindUpstream, Message: msg}
		}
	default:
		e = &ports.Error{Kind: ports.KindUpstream, Message: fmt.Sprintf("aws: %s %s failed", service, operation)}
	}
	e.Err = cause
	return e, service, operation, cause
}

func isThrottle(code string) bool {
	_, ok := retry.DefaultThrottleErrorCodes[code]
	return ok
}

// retryAfter is the wait AWS asked for in the Retry-After header of the
// last response, or defaultRetryAfter.
func retryAfter(err error) time.Duration {
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) && respErr.Response != nil {
		if v := strings.TrimSpace(respErr.Response.Header.Get("Retry-After")); v != "" {
			if n, perr := strconv.ParseFloat(v, 64); perr == nil && n > 0 {
				return time.Duration(n * float64(time.Second))
			}
		}
	}
	return defaultRetryAfter
}

// secretShaped matches a standalone 40-character run of base64 characters:
// the shape of an AWS secret access key. It is the AWS adapter's own rule, on
// top of ports.Quote's: it would take a git commit hash for a key elsewhere.
var secretShaped = regexp.MustCompile(`(^|[^A-Za-z0-9/+=])[A-Za-z0-9/+]{40}($|[^A-Za-z0-9/+=])`)

// redact removes c's secret (and anything shaped like a secret access key)
// from s, replacing each with ports.RedactedText.
func redact(s string, c ports.CloudCredentials) string {
	if c.SecretAccessKey != "" {
		s = strings.ReplaceAll(s, c.SecretAccessKey, ports.RedactedText)
	}
	return secretShaped.ReplaceAllString(s, "${1}"+ports.RedactedText+"${2}")
}
