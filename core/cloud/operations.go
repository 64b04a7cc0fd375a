package cloud

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// ServiceRef names a container service of an account's cluster.
type ServiceRef struct {
	AccountID string
	Cluster   string
	Service   string
}

// ScaleInput asks to set a service's desired task count. DesiredCount is
// required; 0 stops the service, and needs ConfirmScaleToZero.
type ScaleInput struct {
	ServiceRef
	DesiredCount       *int
	ConfirmScaleToZero bool
}

// LogsInput selects log events: Since, RFC 3339, optional; Limit 1..1000,
// 0 meaning 100.
type LogsInput struct {
	Since string
	Limit int
}

// InvokeInput asks to invoke a function with Payload, any JSON of at most
// 256 KiB ({} when empty). DryRun only checks that it could be invoked; it is
// a write all the same.
type InvokeInput struct {
	AccountID string
	Name      string
	Payload   json.RawMessage
	DryRun    bool
}

// AppDeployInput asks to deploy a hosted app's branch.
type AppDeployInput struct {
	AccountID string
	AppID     string
	Branch    string
}

// logQuery validates q: since malformed, limit invalid.
func (q LogsInput) logQuery(fields []ports.FieldError) (ports.LogQuery, error) {
	var lq ports.LogQuery
	if q.Since != "" {
		t, err := time.Parse(time.RFC3339, q.Since)
		if err != nil {
			fields = append(fields, ports.FieldError{Field: "since", Reason: "must be a time as RFC 3339, such as 2026-01-02T15:04:05Z"})
		}
		lq.Since = t.UTC()
	}
	if err := fieldsError(ports.KindMalformed, fields); err != nil {
		return lq, err
	}
	switch {
	case q.Limit == 0:
		lq.Limit = DefaultLogLimit
	case q.Limit < 1 || q.Limit > MaxLogLimit:
		return lq, fieldsError(ports.KindInvalid, []ports.FieldError{{Field: "limit", Reason: fmt.Sprintf("must be 1 to %d", MaxLogLimit)}})
	default:
		lq.Limit = q.Limit
	}
	return lq, nil
}

// ListClusters returns the container clusters of an account of the caller's
// organisation. Errors: malformed (account_id required); not_found for the
// account; the provider's errors.
func (s *Service) ListClusters(ctx context.Context, accountID string) ([]ports.Cluster, error) {
	_, a, err := s.target(ctx, accountID, required("account_id", accountID))
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, s.d.Provider.ListClusters)
}

// ListServices returns the services of an account's cluster, with their
// deployments. Errors: malformed (account_id, cluster required); not_found
// for the account or the cluster; the provider's errors.
func (s *Service) ListServices(ctx context.Context, accountID, cluster string) ([]ports.ContainerService, error) {
	_, a, err := s.target(ctx, accountID, required("account_id", accountID, "cluster", cluster))
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.ContainerService, error) {
		return s.d.Provider.ListServices(ctx, c, cluster)
	})
}

// DeployService forces a new deployment of a service, audited. Errors:
// malformed (account_id, cluster, service required); not_found for the
// account or the service; forbidden when the account is read-only; the
// provider's errors.
func (s *Service) DeployService(ctx context.Context, in ServiceRef) (ports.Deployment, error) {
	p, a, err := s.target(ctx, in.AccountID, required("account_id", in.AccountID, "cluster", in.Cluster, "service", in.Service))
	if err != nil {
		return ports.Deployment{}, err
	}
	o := op{action: "ecs.deploy_service", resource: in.Cluster + "/" + in.Service,
		args: map[string]any{"cluster": in.Cluster, "service": in.Service}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Deployment, error) {
		return s.d.Provider.DeployService(ctx, c, in.Cluster, in.Service)
	})
}

// ScaleService sets a service's desired task count, audited, and returns the
// service. Errors: malformed (account_id, cluster, service, desired_count
// required); invalid (desired_count 0..1000; confirm_scale_to_zero must be
// true to scale to 0); not_found for the account or the service; forbidden
// when the account is read-only; the provider's errors.
func (s *Service) ScaleService(ctx context.Context, in ScaleInput) (ports.ContainerService, error) {
	fields := required("account_id", in.AccountID, "cluster", in.Cluster, "service", in.Service)
	if in.DesiredCount == nil {
		fields = append(fields, ports.FieldError{Field: "desired_count", Reason: "required"})
	}
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContainerService{}, err
	}
	if err := fieldsError(ports.KindMalformed, fields); err != nil {
		return ports.ContainerService{}, err
	}
	n := *in.DesiredCount
	switch {
	case n < 0 || n > MaxDesiredCount:
		return ports.ContainerService{}, fieldsError(ports.KindInvalid, []ports.FieldError{{Field: "desired_count", Reason: fmt.Sprintf("must be 0 to %d", MaxDesiredCount)}})
	case n == 0 && !in.ConfirmScaleToZero:
		return ports.ContainerService{}, fieldsError(ports.KindInvalid, []ports.FieldError{{Field: "confirm_scale_to_zero", Reason: "must be true to scale a service to 0 tasks, which stops it"}})
	}
	a, err := s.account(ctx, p, in.AccountID)
	if err != nil {
		return ports.ContainerService{}, err
	}
	o := op{action: "ecs.scale_service", resource: in.Cluster + "/" + in.Service,
		args: map[string]any{"cluster": in.Cluster, "service": in.Service, "desired_count": n, "confirm_scale_to_zero": in.ConfirmScaleToZero}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.ContainerService, error) {
		return s.d.Provider.ScaleService(ctx, c, in.Cluster, in.Service, n)
	})
}

// ServiceLogs returns a service's newest log events. Errors: malformed
// (account_id, cluster, service required; since RFC 3339); invalid (limit
// 1..1000); not_found for the account or the service; the provider's errors.
func (s *Service) ServiceLogs(ctx context.Context, in ServiceRef, q LogsInput) ([]ports.LogEvent, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lq, err := q.logQuery(required("account_id", in.AccountID, "cluster", in.Cluster, "service", in.Service))
	if err != nil {
		return nil, err
	}
	a, err := s.account(ctx, p, in.AccountID)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.LogEvent, error) {
		return s.d.Provider.ServiceLogs(ctx, c, in.Cluster, in.Service, lq)
	})
}

// ListFunctions returns the serverless functions of an account. Errors:
// malformed (account_id required); not_found for the account; the
// provider's errors.
func (s *Service) ListFunctions(ctx context.Context, accountID string) ([]ports.Function, error) {
	_, a, err := s.target(ctx, accountID, required("account_id", accountID))
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, s.d.Provider.ListFunctions)
}

// InvokeFunction invokes a function synchronously (or, with DryRun, only
// checks that it could be), audited with the payload's size and SHA-256, not
// its content. A function that fails is an Invocation with FunctionError,
// not an error. Errors: malformed (account_id, name required; payload JSON);
// payload_too_large (payload over 256 KiB); not_found for the account or the
// function; forbidden when the account is read-only; the provider's errors.
func (s *Service) InvokeFunction(ctx context.Context, in InvokeInput) (ports.Invocation, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Invocation{}, err
	}
	fields := required("account_id", in.AccountID, "name", in.Name)
	payload := json.RawMessage(`{}`)
	if len(bytes.TrimSpace(in.Payload)) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, in.Payload); err != nil {
			fields = append(fields, ports.FieldError{Field: "payload", Reason: "must be JSON"})
		}
		payload = buf.Bytes()
	}
	if err := fieldsError(ports.KindMalformed, fields); err != nil {
		return ports.Invocation{}, err
	}
	if len(payload) > MaxPayloadBytes {
		return ports.Invocation{}, &ports.Error{Kind: ports.KindPayloadTooLarge,
			Message: fmt.Sprintf("the payload is %d bytes; a function takes at most %d", len(payload), MaxPayloadBytes),
			Fields:  []ports.FieldError{{Field: "payload", Reason: fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes)}}}
	}
	a, err := s.account(ctx, p, in.AccountID)
	if err != nil {
		return ports.Invocation{}, err
	}
	sum := sha256.Sum256(payload)
	o := op{action: "lambda.invoke_function", resource: in.Name,
		args: map[string]any{"name": in.Name, "dry_run": in.DryRun, "payload_bytes": len(payload), "payload_sha256": hex.EncodeToString(sum[:])}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Invocation, error) {
		return s.d.Provider.InvokeFunction(ctx, c, in.Name, payload, in.DryRun)
	})
}

// FunctionLogs returns a function's newest log events. Errors: malformed
// (account_id, name required; since RFC 3339); invalid (limit 1..1000);
// not_found for the account or the function; the provider's errors.
func (s *Service) FunctionLogs(ctx context.Context, accountID, name string, q LogsInput) ([]ports.LogEvent, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lq, err := q.logQuery(required("account_id", accountID, "name", name))
	if err != nil {
		return nil, err
	}
	a, err := s.account(ctx, p, accountID)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.LogEvent, error) {
		return s.d.Provider.FunctionLogs(ctx, c, name, lq)
	})
}

// ListApps returns the hosted apps of an account. Errors: malformed
// (account_id required); not_found for the account; the provider's errors.
func (s *Service) ListApps(ctx context.Context, accountID string) ([]ports.App, error) {
	_, a, err := s.target(ctx, accountID, required("account_id", accountID))
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, s.d.Provider.ListApps)
}

// DeployApp starts a release build of an app's branch, audited. Errors:
// malformed (account_id, app_id, branch required); not_found for the account,
// the app or the branch; forbidden when the account is read-only; the
// provider's errors.
func (s *Service) DeployApp(ctx context.Context, in AppDeployInput) (ports.Build, error) {
	p, a, err := s.target(ctx, in.AccountID, required("account_id", in.AccountID, "app_id", in.AppID, "branch", in.Branch))
	if err != nil {
		return ports.Build{}, err
	}
	o := op{action: "amplify.deploy_app", resource: in.AppID + "/" + in.Branch,
		args: map[string]any{"app_id": in.AppID, "branch": in.Branch}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Build, error) {
		return s.d.Provider.DeployApp(ctx, c, in.AppID, in.Branch)
	})
}

// BuildLogs returns a build of an app's branch with each step's log.
// Errors: malformed (account_id, app_id, branch, build_id required);
// not_found for the account or the build; the provider's errors.
func (s *Service) BuildLogs(ctx context.Context, accountID, appID, branch, buildID string) (ports.Build, error) {
	_, a, err := s.target(ctx, accountID, required("account_id", accountID, "app_id", appID, "branch", branch, "build_id", buildID))
	if err != nil {
		return ports.Build{}, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) (ports.Build, error) {
		return s.d.Provider.BuildLogs(ctx, c, appID, branch, buildID)
	})
}
