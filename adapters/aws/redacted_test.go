package aws_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// TestRedactedCauseHidesTheSDKError checks the one rule for a redacted
// error: an AWS error that echoes the secret key keeps its kind for
// errors.Is and errors.As, while neither errors.As nor errors.Unwrap reaches
// the SDK's error, whose fields hold the unredacted text.
func TestRedactedCauseHidesTheSDKError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(userAccount).Cluster("prod")
	e.fake.Inject(fakeaws.ServiceECS, "ListServices", fakeaws.AccessDenied().WithMessage("no access with "+userSecret))
	_, err := e.p.ListServices(context.Background(), keyCreds(), "prod")
	if !errors.Is(err, ports.ErrUpstream) {
		t.Fatalf("error = %v, want an upstream Error", err)
	}
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindUpstream {
		t.Errorf("errors.As does not find the upstream Error in %v", err)
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		t.Errorf("errors.As reached the SDK's APIError: %q", apiErr.ErrorMessage())
	}
	var opErr *smithy.OperationError
	if errors.As(err, &opErr) {
		t.Errorf("errors.As reached the SDK's OperationError: %v", opErr)
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		t.Errorf("errors.As reached the SDK's ResponseError: %v", respErr)
	}
	n := 0
	for u := err; u != nil; u = errors.Unwrap(u) {
		if strings.Contains(u.Error(), userSecret) {
			t.Errorf("errors.Unwrap reached %T holding the secret: %q", u, u.Error())
		}
		n++
	}
	if n != 2 { // the Error, then its redacted cause
		t.Errorf("the Unwrap chain has %d errors, want 2 (the Error and its redacted cause)", n)
	}
}
