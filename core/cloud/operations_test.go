package cloud_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestReadsPassTheAccountsCredentials(t *testing.T) {
	t.Parallel()
	for _, in := range []cloud.NewAccount{roleAccount("Production"), keyAccount("Production")} {
		t.Run(string(in.Auth.Mode), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			id := e.add(in)
			c := creds(in)
			since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			clusters := []ports.Cluster{{Name: "prod", Status: "ACTIVE", RunningTasks: 3}}
			services := []ports.ContainerService{{Name: "checkout", Cluster: "prod", Desired: 3, Running: 3}}
			events := []ports.LogEvent{{Timestamp: since, Message: "GET /health 200", Stream: "ecs/checkout/1"}}
			functions := []ports.Function{{Name: "resize", Runtime: "nodejs22.x"}}
			apps := []ports.App{{ID: "d1abc", Name: "site", Branches: []string{"main"}}}
			build := ports.Build{ID: "7", AppID: "d1abc", Branch: "main", Status: "SUCCEED", Steps: []ports.BuildStep{{Name: "BUILD", Status: "SUCCEED", Log: "done"}}}
			e.prov.EXPECT().ListClusters(gomock.Any(), c).Return(clusters, nil)
			e.prov.EXPECT().ListServices(gomock.Any(), c, "prod").Return(services, nil)
			e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Since: since, Limit: 100}).Return(events, nil)
			e.prov.EXPECT().ListFunctions(gomock.Any(), c).Return(functions, nil)
			e.prov.EXPECT().FunctionLogs(gomock.Any(), c, "resize", ports.LogQuery{Limit: 1000}).Return(events, nil)
			e.prov.EXPECT().ListApps(gomock.Any(), c).Return(apps, nil)
			e.prov.EXPECT().ListBranches(gomock.Any(), c, "d1abc").Return([]ports.AppBranch{{Name: "main", Stage: "PRODUCTION"}}, nil)
			e.prov.EXPECT().BuildLogs(gomock.Any(), c, "d1abc", "main", "7").Return(build, nil)
			e.prov.EXPECT().Costs(gomock.Any(), c, gomock.Any()).Return(ports.CostReport{Currency: "USD"}, nil)

			ctx := as(alice)
			if got, err := e.svc.ListClusters(ctx, id); err != nil || !slices.Equal(got, clusters) {
				t.Errorf("ListClusters = %+v, %v", got, err)
			}
			if got, err := e.svc.ListServices(ctx, id, "prod"); err != nil || len(got) != 1 || got[0].Name != "checkout" {
				t.Errorf("ListServices = %+v, %v", got, err)
			}
			ref := cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"}
			if got, err := e.svc.ServiceLogs(ctx, ref, cloud.LogsInput{Since: "2026-01-01T13:00:00+01:00"}); err != nil || !slices.Equal(got, events) {
				t.Errorf("ServiceLogs = %+v, %v", got, err)
			}
			if got, err := e.svc.ListFunctions(ctx, id); err != nil || !slices.Equal(got, functions) {
				t.Errorf("ListFunctions = %+v, %v", got, err)
			}
			if got, err := e.svc.FunctionLogs(ctx, id, "resize", cloud.LogsInput{Limit: 1000}); err != nil || !slices.Equal(got, events) {
				t.Errorf("FunctionLogs = %+v, %v", got, err)
			}
			if got, err := e.svc.ListApps(ctx, id); err != nil || len(got.Items) != 1 || got.Items[0].ID != "d1abc" || got.Items[0].AccountID != id {
				t.Errorf("ListApps = %+v, %v", got, err)
			}
			if got, err := e.svc.BuildLogs(ctx, cloud.BuildQuery{AccountID: id, AppID: "d1abc", BuildID: "7"}); err != nil || got.Status != "SUCCEED" {
				t.Errorf("BuildLogs = %+v, %v", got, err)
			}
			if _, err := e.svc.Costs(ctx, cloud.CostInput{AccountID: id, StartDate: "2025-12-01", EndDate: "2025-12-31"}); err != nil {
				t.Errorf("Costs: %v", err)
			}
			if log := e.auditLog(); len(log) != 1 || log[0].Action != "account.create" {
				t.Errorf("reads were audited: %+v", log)
			}
			if in.Auth.Mode == ports.AuthAccessKey && (len(e.opens) != 9 || e.opens[0].aad != id) {
				t.Errorf("opens %+v", e.opens)
			}
		})
	}
}

// errOf is the error of a call.
func errOf[T any](_ T, err error) error { return err }

func TestReadsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(roleAccount("Production"))
	ctx := as(alice)
	ref := cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"}
	tests := []struct {
		name   string
		call   func() error
		kind   ports.Kind
		fields []string
	}{
		{"services without cluster", func() error { return errOf(e.svc.ListServices(ctx, id, " ")) }, ports.KindMalformed, []string{"cluster"}},
		{"service logs without anything", func() error {
			return errOf(e.svc.ServiceLogs(ctx, cloud.ServiceRef{}, cloud.LogsInput{Since: "today"}))
		}, ports.KindMalformed, []string{"service"}},
		{"service logs since a word", func() error {
			return errOf(e.svc.ServiceLogs(ctx, ref, cloud.LogsInput{Since: "today", Limit: 1001}))
		}, ports.KindInvalid, []string{"since", "limit"}},
		{"service logs since a time with fractions", func() error {
			_, err := e.svc.ServiceLogs(ctx, ref, cloud.LogsInput{Since: "2026-01-02T15:04:05.5+01:00", Limit: -1})
			return err
		}, ports.KindInvalid, []string{"limit"}},
		{"service logs limit 0 is the default, -1 is not", func() error { return errOf(e.svc.ServiceLogs(ctx, ref, cloud.LogsInput{Limit: -1})) }, ports.KindInvalid, []string{"limit"}},
		{"service logs limit 1001", func() error { return errOf(e.svc.ServiceLogs(ctx, ref, cloud.LogsInput{Limit: 1001})) }, ports.KindInvalid, []string{"limit"}},
		{"function logs without name", func() error { return errOf(e.svc.FunctionLogs(ctx, id, "", cloud.LogsInput{})) }, ports.KindMalformed, []string{"name"}},
		{"function logs since a date", func() error { return errOf(e.svc.FunctionLogs(ctx, id, "f", cloud.LogsInput{Since: "2026-01-01"})) }, ports.KindInvalid, []string{"since"}},
		{"build logs without anything", func() error { return errOf(e.svc.BuildLogs(ctx, cloud.BuildQuery{})) }, ports.KindMalformed, []string{"app_id", "build_id"}},
		{"build logs of a build id devpilot never gave", func() error {
			return errOf(e.svc.BuildLogs(ctx, cloud.BuildQuery{AppID: "d1abc", BuildID: "00000000-0000-7000-8000-0000000000ff"}))
		}, ports.KindNotFound, nil},
		{"deploy without service", func() error { return errOf(e.svc.DeployService(ctx, cloud.ServiceRef{AccountID: id, Cluster: "prod"})) }, ports.KindMalformed, []string{"service"}},
		{"scale without a count", func() error { return errOf(e.svc.ScaleService(ctx, cloud.ScaleInput{ServiceRef: ref})) }, ports.KindMalformed, []string{"desired_count"}},
		{"invoke without name", func() error { return errOf(e.svc.InvokeFunction(ctx, cloud.InvokeInput{AccountID: id})) }, ports.KindMalformed, []string{"name"}},
		{"deploy app without app", func() error { return errOf(e.svc.DeployApp(ctx, cloud.AppDeployInput{AccountID: id, Branch: "main"})) }, ports.KindMalformed, []string{"app_id"}},
		{"an account that is not an id", func() error { return errOf(e.svc.ListClusters(ctx, "production")) }, ports.KindNotFound, nil},
		{"an absent account", func() error { return errOf(e.svc.ListApps(ctx, "00000000-0000-7000-8000-0000000000ff")) }, ports.KindNotFound, nil},
		{"no principal", func() error { return errOf(e.svc.ListApps(context.Background(), id)) }, ports.KindUnauthenticated, nil},
	}
	for _, tt := range tests {
		err := tt.call()
		if ports.KindOf(err) != tt.kind || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("%s: %v (fields %v), want %s %v", tt.name, err, fieldsOf(err), tt.kind, tt.fields)
		}
	}
}

func TestProviderErrorsPassThrough(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
	}{
		{"rate limited", &ports.Error{Kind: ports.KindRateLimited, Message: "ecs: ThrottlingException", RetryAfter: 3 * time.Second}},
		{"upstream", &ports.Error{Kind: ports.KindUpstream, Message: "ecs: AccessDeniedException: not authorized to perform ecs:ListClusters"}},
		{"timeout", &ports.Error{Kind: ports.KindTimeout, Message: "ecs: no answer in 10s"}},
		{"not found", ports.NotFound("cluster", "prod")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			id := e.add(keyAccount("Production"))
			e.prov.EXPECT().ListServices(gomock.Any(), gomock.Any(), "prod").Return(nil, tt.err)
			_, err := e.svc.ListServices(as(alice), id, "prod")
			if err != tt.err {
				t.Errorf("error %#v, want %#v unchanged", err, tt.err)
			}
		})
	}
}

func TestSecretsNeverLeakIntoErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(keyAccount("Production"))
	leak := &ports.Error{Kind: ports.KindUpstream, Message: "SignatureDoesNotMatch with key " + secret, RetryAfter: time.Second,
		Err: errors.New("raw response mentions " + secret)}
	e.prov.EXPECT().ListClusters(gomock.Any(), gomock.Any()).Return(nil, leak)
	e.prov.EXPECT().DeployService(gomock.Any(), gomock.Any(), "prod", "checkout").Return(ports.Deployment{}, errors.New("plain error with "+secret))

	_, err := e.svc.ListClusters(as(alice), id)
	pe, ok := ports.AsError(err)
	if !ok || pe.Kind != ports.KindUpstream || pe.RetryAfter != time.Second || strings.Contains(err.Error(), secret) || !strings.Contains(pe.Message, "SignatureDoesNotMatch with key [redacted]") {
		t.Errorf("read error %v", err)
	}
	_, err = e.svc.DeployService(as(alice), cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"})
	if err == nil || strings.Contains(err.Error(), secret) || ports.KindOf(err) != ports.KindInternal {
		t.Errorf("write error %v", err)
	}
	if b, _ := json.Marshal(e.auditLog()); strings.Contains(string(b), secret) {
		t.Errorf("the audit log holds the secret: %s", b)
	}
}

// writeCase is one write operation, run by do; expect sets up its provider
// call's expectation.
type writeCase struct {
	name     string
	action   string
	resource string
	args     string
	expect   func(e *env, c ports.CloudCredentials, err error)
	do       func(e *env, id string) error
}

var payload = json.RawMessage(`{"image": "cat.png"}`)

func payloadSum() string {
	s := sha256.Sum256([]byte(`{"image":"cat.png"}`))
	return hex.EncodeToString(s[:])
}

var writeCases = []writeCase{
	{
		name: "deploy service", action: "ecs.deploy_service", resource: "prod/checkout", args: `{"cluster":"prod","service":"checkout"}`,
		expect: func(e *env, c ports.CloudCredentials, err error) {
			e.prov.EXPECT().DeployService(gomock.Any(), c, "prod", "checkout").Return(ports.Deployment{ID: "ecs-svc/1", Status: "PRIMARY"}, err)
		},
		do: func(e *env, id string) error {
			d, err := e.svc.DeployService(as(alice), cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"})
			if err == nil && d.ID != "ecs-svc/1" {
				return errors.New("wrong deployment")
			}
			return err
		},
	},
	{
		name: "scale service", action: "ecs.scale_service", resource: "prod/checkout",
		args: `{"cluster":"prod","confirm_scale_to_zero":false,"desired_count":3,"service":"checkout"}`,
		expect: func(e *env, c ports.CloudCredentials, err error) {
			e.prov.EXPECT().ListServices(gomock.Any(), c, "prod").Return([]ports.ContainerService{{Name: "checkout", Desired: 2}}, nil)
			e.prov.EXPECT().ScaleService(gomock.Any(), c, "prod", "checkout", 3).Return(ports.ContainerService{Name: "checkout", Desired: 3}, err)
		},
		do: func(e *env, id string) error {
			s, err := e.svc.ScaleService(as(alice), cloud.ScaleInput{ServiceRef: cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"}, DesiredCount: intp(3)})
			if err == nil && s.Desired != 3 {
				return errors.New("wrong service")
			}
			return err
		},
	},
	{
		name: "invoke function", action: "lambda.invoke_function", resource: "resize",
		args: `{"dry_run":false,"name":"resize","payload_bytes":19,"payload_sha256":"` + payloadSum() + `"}`,
		expect: func(e *env, c ports.CloudCredentials, err error) {
			e.prov.EXPECT().InvokeFunction(gomock.Any(), c, "resize", json.RawMessage(`{"image":"cat.png"}`), false).
				Return(ports.Invocation{StatusCode: 200, Payload: json.RawMessage(`"ok"`)}, err)
		},
		do: func(e *env, id string) error {
			_, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "resize", Payload: payload})
			return err
		},
	},
	{
		name: "invoke function dry run", action: "lambda.invoke_function", resource: "resize",
		args: `{"dry_run":true,"name":"resize","payload_bytes":2,"payload_sha256":"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"}`,
		expect: func(e *env, c ports.CloudCredentials, err error) {
			e.prov.EXPECT().InvokeFunction(gomock.Any(), c, "resize", json.RawMessage(`{}`), true).Return(ports.Invocation{StatusCode: 204}, err)
		},
		do: func(e *env, id string) error {
			_, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "resize", DryRun: true})
			return err
		},
	},
	{
		name: "deploy app", action: "amplify.deploy_app", resource: "d1abc/main", args: `{"app_id":"d1abc","branch":"main"}`,
		expect: func(e *env, c ports.CloudCredentials, err error) {
			e.prov.EXPECT().DeployApp(gomock.Any(), c, "d1abc", "main").Return(ports.Build{ID: "8", Status: "PENDING"}, err)
		},
		do: func(e *env, id string) error {
			_, err := e.svc.DeployApp(as(alice), cloud.AppDeployInput{AccountID: id, AppID: "d1abc", Branch: "main"})
			return err
		},
	},
}

func TestWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range writeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check := func(t *testing.T, e *env, id string, outcome, errMsg string) {
				t.Helper()
				log := e.auditOf(tc.action)
				if len(log) != 1 {
					t.Fatalf("audit %+v", e.auditLog())
				}
				got := log[0]
				want := ports.AuditEntry{ID: got.ID, OrgID: alice.OrgID, UserID: alice.UserID, AccountID: id, Action: tc.action,
					Resource: tc.resource, Arguments: json.RawMessage(tc.args), Outcome: outcome, Error: errMsg, At: e.clock.Now()}
				if got.ID == "" || got.OrgID != want.OrgID || got.UserID != want.UserID || got.AccountID != want.AccountID ||
					got.Resource != want.Resource || string(got.Arguments) != tc.args || got.Outcome != want.Outcome ||
					got.Error != want.Error || !got.At.Equal(want.At) {
					t.Errorf("audit %+v\nwant  %+v", got, want)
				}
			}

			t.Run("ok", func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, cloud.Config{})
				in := keyAccount("Production")
				id := e.add(in)
				tc.expect(e, creds(in), nil)
				if err := tc.do(e, id); err != nil {
					t.Fatal(err)
				}
				check(t, e, id, ports.AuditOK, "")
			})
			t.Run("failed", func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, cloud.Config{})
				in := roleAccount("Production")
				id := e.add(in)
				refused := &ports.Error{Kind: ports.KindUpstream, Message: "AccessDeniedException: not authorized"}
				tc.expect(e, creds(in), refused)
				if err := tc.do(e, id); err != refused {
					t.Fatalf("error %v, want the provider's", err)
				}
				check(t, e, id, ports.AuditFailed, refused.Message)
			})
			t.Run("read-only", func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, cloud.Config{})
				in := roleAccount("Production")
				in.ReadOnly = true
				id := e.add(in)
				err := tc.do(e, id) // no provider call is expected
				if !errors.Is(err, ports.ErrForbidden) || err.Error() != "cloud account Production is read-only" {
					t.Fatalf("error %v, want forbidden", err)
				}
				check(t, e, id, ports.AuditRefused, "cloud account Production is read-only")
			})
			t.Run("credentials that do not open", func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, cloud.Config{})
				id := e.add(keyAccount("Production"))
				e.spoil(id)
				if err := tc.do(e, id); !errors.Is(err, ports.ErrInternal) {
					t.Fatalf("error %v, want internal", err)
				}
				check(t, e, id, ports.AuditFailed, "internal error")
			})
			t.Run("an audit log that fails", func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, cloud.Config{})
				in := roleAccount("Production")
				id := e.add(in)
				e.audit.err = errors.New("disk full")
				tc.expect(e, creds(in), nil)
				if err := tc.do(e, id); err != nil {
					t.Fatalf("a write that happened reports %v", err)
				}
			})
		})
	}
}

func TestAuditSurvivesACallerThatGoesAway(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	in := roleAccount("Production")
	id := e.add(in)
	ctx, cancel := context.WithCancel(as(alice))
	e.prov.EXPECT().DeployApp(gomock.Any(), gomock.Any(), "d1abc", "main").DoAndReturn(
		func(context.Context, ports.CloudCredentials, string, string) (ports.Build, error) {
			cancel()
			return ports.Build{ID: "9"}, nil
		})
	if _, err := e.svc.DeployApp(ctx, cloud.AppDeployInput{AccountID: id, AppID: "d1abc", Branch: "main"}); err != nil {
		t.Fatal(err)
	}
	if log := e.auditOf("amplify.deploy_app"); len(log) != 1 || log[0].Outcome != ports.AuditOK {
		t.Errorf("audit %+v", log)
	}
}

func TestScaleValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(roleAccount("Production"))
	ref := cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"}
	tests := []struct {
		name    string
		in      cloud.ScaleInput
		kind    ports.Kind
		field   string
		desired int // the provider's count when it is called
	}{
		{"negative", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(-1)}, ports.KindInvalid, "desired_count", 0},
		{"too many", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(1001)}, ports.KindInvalid, "desired_count", 0},
		{"zero unconfirmed", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(0)}, ports.KindInvalid, "confirm_scale_to_zero", 0},
		{"missing", cloud.ScaleInput{ServiceRef: ref}, ports.KindMalformed, "desired_count", 0},
		{"zero confirmed", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(0), ConfirmScaleToZero: true}, "", "", 0},
		{"the most, named", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(1000), ConfirmName: "checkout"}, "", "", 1000},
		// From 4 tasks now: more than twice, less than half, or above 10
		// needs the name typed; a small change does not.
		{"the most, unnamed", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(1000)}, ports.KindInvalid, "confirm_name", 0},
		{"more than twice", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(9)}, ports.KindInvalid, "confirm_name", 0},
		{"less than half", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(1)}, ports.KindInvalid, "confirm_name", 0},
		{"above the size", cloud.ScaleInput{ServiceRef: cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "search"}, DesiredCount: intp(11)}, ports.KindInvalid, "confirm_name", 0},
		{"a wrong name", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(9), ConfirmName: "Checkout"}, ports.KindInvalid, "confirm_name", 0},
		{"twice", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(8)}, "", "", 8},
		{"half", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(2)}, "", "", 2},
		{"more than twice, named", cloud.ScaleInput{ServiceRef: ref, DesiredCount: intp(9), ConfirmName: "checkout"}, "", "", 9},
	}
	e.prov.EXPECT().ListServices(gomock.Any(), gomock.Any(), "prod").Return([]ports.ContainerService{{Name: "checkout", Desired: 4}, {Name: "search", Desired: 8}}, nil).AnyTimes()
	for _, tt := range tests {
		if tt.kind == "" {
			e.prov.EXPECT().ScaleService(gomock.Any(), gomock.Any(), "prod", "checkout", tt.desired).Return(ports.ContainerService{}, nil)
		}
		_, err := e.svc.ScaleService(as(alice), tt.in)
		if ports.KindOf(err) != tt.kind || (tt.field != "" && !slices.Equal(fieldsOf(err), []string{tt.field})) {
			t.Errorf("%s: %v (fields %v), want %s %s", tt.name, err, fieldsOf(err), tt.kind, tt.field)
		}
	}
	// Invalid counts are not audited; large changes without the name are,
	// as refused, with why.
	outcomes := map[string]int{}
	for _, en := range e.auditOf("ecs.scale_service") {
		outcomes[en.Outcome]++
		if en.Outcome == ports.AuditRefused && !strings.Contains(en.Error, "confirm_name") {
			t.Errorf("refusal without its reason: %+v", en)
		}
	}
	if outcomes[ports.AuditOK] != 5 || outcomes[ports.AuditRefused] != 5 || len(outcomes) != 2 {
		t.Errorf("audit outcomes %v, want 5 ok and 5 refused", outcomes)
	}
}

func TestInvokePayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(roleAccount("Production"))
	// A JSON string that compacts to exactly 256 KiB, and one byte more.
	exact := json.RawMessage(`"` + strings.Repeat("a", cloud.MaxPayloadBytes-2) + `"`)
	over := json.RawMessage(`"` + strings.Repeat("a", cloud.MaxPayloadBytes-1) + `"`)
	e.prov.EXPECT().InvokeFunction(gomock.Any(), gomock.Any(), "f", exact, false).Return(ports.Invocation{StatusCode: 200}, nil)
	e.prov.EXPECT().InvokeFunction(gomock.Any(), gomock.Any(), "f", json.RawMessage(`[1,2]`), false).Return(ports.Invocation{StatusCode: 200}, nil)
	e.prov.EXPECT().InvokeFunction(gomock.Any(), gomock.Any(), "f", json.RawMessage(`null`), false).Return(ports.Invocation{StatusCode: 200}, nil)

	if _, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "f", Payload: exact}); err != nil {
		t.Errorf("256 KiB: %v", err)
	}
	_, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "f", Payload: over})
	if !errors.Is(err, ports.ErrPayloadTooLarge) || !slices.Equal(fieldsOf(err), []string{"payload"}) {
		t.Errorf("256 KiB + 1: %v", err)
	}
	if _, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "f", Payload: json.RawMessage(" [1, 2]\n")}); err != nil {
		t.Errorf("an array: %v", err)
	}
	if _, err := e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "f", Payload: json.RawMessage("null")}); err != nil {
		t.Errorf("null: %v", err)
	}
	_, err = e.svc.InvokeFunction(as(alice), cloud.InvokeInput{AccountID: id, Name: "f", Payload: json.RawMessage(`{"a":`)})
	if !errors.Is(err, ports.ErrMalformed) || !slices.Equal(fieldsOf(err), []string{"payload"}) {
		t.Errorf("not JSON: %v", err)
	}
	// Only the calls that reached the provider were audited, and never with the payload itself.
	log := e.auditOf("lambda.invoke_function")
	if len(log) != 3 {
		t.Fatalf("audit %+v", log)
	}
	if strings.Contains(string(log[0].Arguments), "aaaa") || !strings.Contains(string(log[0].Arguments), `"payload_bytes":262144`) {
		t.Errorf("audited arguments %s", log[0].Arguments)
	}
}

func TestListAudit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	prod := e.add(roleAccount("Production"))
	staging := e.add(roleAccount("Staging"))
	e.prov.EXPECT().DeployApp(gomock.Any(), gomock.Any(), "d1abc", "main").Return(ports.Build{}, nil).Times(2)
	e.clock.Advance(time.Minute)
	for _, id := range []string{prod, staging} {
		if _, err := e.svc.DeployApp(as(alice), cloud.AppDeployInput{AccountID: id, AppID: "d1abc", Branch: "main"}); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := e.svc.ListAudit(as(alice), prod, ports.Page{})
	if err != nil || len(list) != 2 || list[0].Action != "amplify.deploy_app" || !list[0].At.Equal(fixture.Epoch.Add(time.Minute)) || list[1].Action != "account.create" {
		t.Errorf("ListAudit(prod) = %+v, %v", list, err)
	}
	if list, _, _ := e.svc.ListAudit(as(alice), "", ports.Page{}); len(list) != 4 {
		t.Errorf("ListAudit() = %+v", list)
	}
	if list, _, err := e.svc.ListAudit(as(alice), "not-an-id", ports.Page{}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("ListAudit(not-an-id) = %+v, %v; want not_found", list, err)
	}
	// Another organisation's account is not found, like any of its resources.
	theirs, err := e.svc.CreateAccount(as(other), keyAccount("Theirs"))
	if err != nil {
		t.Fatal(err)
	}
	if list, _, err := e.svc.ListAudit(as(alice), theirs.ID, ports.Page{}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("ListAudit(another org's account) = %+v, %v; want not_found", list, err)
	}
	// A deleted account's entries stay readable.
	if err := e.svc.DeleteAccount(as(admin), staging); err != nil {
		t.Fatal(err)
	}
	if list, _, err := e.svc.ListAudit(as(alice), staging, ports.Page{}); err != nil || len(list) != 3 || list[0].Action != "account.delete" {
		t.Errorf("ListAudit(deleted account) = %+v, %v", list, err)
	}
	if _, _, err := e.svc.ListAudit(as(alice), "", ports.Page{Limit: -1}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("limit -1: %v", err)
	}
}
