package aws_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"

	awsadapter "github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

const (
	region      = "eu-west-1"
	userAccount = "111111111111"
	roleAccount = "222222222222"
	baseAccount = "333333333333"
	userKey     = "AKIAFAKEUSER00000001"
	userSecret  = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
	baseKey     = "AKIAFAKEBASE00000001"
	baseSecret  = "baseSecretBaseSecretBaseSecretBaseSecret"
	roleName    = "devpilot-operator"
	externalID  = "ext-8f14e45f"
)

// env is a Provider wired to a fake with a user key in userAccount, a role
// in roleAccount and the base credentials (which assume roles) in
// baseAccount.
type env struct {
	fake  *fakeaws.Server
	p     *awsadapter.Provider
	clock *fixture.Clock
	logs  *syncBuffer
}

// syncBuffer collects log lines from concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// isolated keeps the developer's AWS files out of a test's configuration.
func isolated(opts ...func(*config.LoadOptions) error) []func(*config.LoadOptions) error {
	return append([]func(*config.LoadOptions) error{
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(baseKey, baseSecret, "")),
	}, opts...)
}

func newEnv(t *testing.T, tune ...func(*awsadapter.Options)) *env {
	t.Helper()
	e := &env{fake: fakeaws.New(t), clock: fixture.NewClock(), logs: &syncBuffer{}}
	e.fake.Regions(region, "us-east-1")
	e.fake.Account(userAccount).User("devpilot", userKey, userSecret)
	e.fake.Account(roleAccount).Role(roleName, externalID)
	e.fake.Account(baseAccount).User("devpilot-host", baseKey, baseSecret)
	opts := awsadapter.Options{
		LoadOptions: isolated(config.WithBaseEndpoint(e.fake.URL())),
		MaxAttempts: 3,
		MaxBackoff:  time.Millisecond,
		Timeout:     10 * time.Second,
		Clock:       e.clock,
		Logger:      slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, fn := range tune {
		fn(&opts)
	}
	p, err := awsadapter.New(context.Background(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.p = p
	return e
}

func keyCreds() ports.CloudCredentials {
	return ports.CloudCredentials{Region: region, Mode: ports.AuthAccessKey, AccessKeyID: userKey, SecretAccessKey: userSecret}
}

func roleCreds() ports.CloudCredentials {
	return ports.CloudCredentials{
		Region: region, Mode: ports.AuthAssumeRole,
		RoleARN: "arn:aws:iam::" + roleAccount + ":role/" + roleName, ExternalID: externalID,
	}
}

func wantKind(t *testing.T, err error, kind ports.Kind) *ports.Error {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != kind {
		t.Fatalf("error = %v (kind %q), want kind %q", err, ports.KindOf(err), kind)
	}
	return e
}

func TestCallerIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		creds   ports.CloudCredentials
		want    ports.CallerIdentity
		signers []string // access key ids of the STS calls, in order
	}{
		{
			name:    "access key",
			creds:   keyCreds(),
			want:    ports.CallerIdentity{Account: userAccount, ARN: "arn:aws:iam::" + userAccount + ":user/devpilot"},
			signers: []string{userKey},
		},
		{
			name:  "assumed role",
			creds: roleCreds(),
			want: ports.CallerIdentity{
				Account: roleAccount,
				ARN:     "arn:aws:sts::" + roleAccount + ":assumed-role/" + roleName + "/devpilot",
			},
			signers: []string{baseKey, "ASIA"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			got, err := e.p.CallerIdentity(context.Background(), tt.creds)
			if err != nil {
				t.Fatalf("CallerIdentity: %v", err)
			}
			if got.Account != tt.want.Account || got.ARN != tt.want.ARN || got.UserID == "" {
				t.Errorf("CallerIdentity = %+v, want %+v with a user id", got, tt.want)
			}
			calls := e.fake.CallsTo(fakeaws.ServiceSTS, "")
			if len(calls) != len(tt.signers) {
				t.Fatalf("STS calls = %+v, want %d", calls, len(tt.signers))
			}
			for i, c := range calls {
				if !strings.HasPrefix(c.AccessKeyID, tt.signers[i]) || c.Region != region {
					t.Errorf("STS call %d (%s) signed by %s in %s, want %s… in %s", i, c.Operation, c.AccessKeyID, c.Region, tt.signers[i], region)
				}
			}
		})
	}
}

func TestAssumeRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(roleAccount).Cluster("prod")
	ctx := context.Background()
	if err := e.p.Probe(ctx, roleCreds()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if _, err := e.p.ListClusters(ctx, roleCreds()); err != nil {
		t.Fatalf("ListClusters: %v", err)
	}
	if _, err := e.p.CallerIdentity(ctx, roleCreds()); err != nil {
		t.Fatalf("CallerIdentity: %v", err)
	}

	assumes := e.fake.CallsTo(fakeaws.ServiceSTS, "AssumeRole")
	if len(assumes) != 1 {
		t.Fatalf("AssumeRole calls = %d, want 1 (the role's credentials are cached)", len(assumes))
	}
	in := assumes[0].Input
	if in["RoleArn"] != roleCreds().RoleARN || in["ExternalId"] != externalID || in["RoleSessionName"] != "devpilot" {
		t.Errorf("AssumeRole input = %v", in)
	}
	if assumes[0].AccessKeyID != baseKey {
		t.Errorf("AssumeRole signed by %s, want the base credentials %s", assumes[0].AccessKeyID, baseKey)
	}
	var temp string
	for _, c := range e.fake.Calls() {
		if c.Operation == "AssumeRole" {
			continue
		}
		if !strings.HasPrefix(c.AccessKeyID, "ASIA") || (temp != "" && c.AccessKeyID != temp) {
			t.Errorf("%s %s signed by %s, want the one temporary key", c.Service, c.Operation, c.AccessKeyID)
		}
		temp = c.AccessKeyID
	}
	clusters, err := e.p.ListClusters(ctx, roleCreds())
	if err != nil || len(clusters) != 1 || !strings.Contains(clusters[0].ARN, roleAccount) {
		t.Errorf("ListClusters = %+v, %v; want the role account's cluster", clusters, err)
	}
}

func TestAssumeRoleCacheIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		size    int
		assumes int
	}{
		{size: 1, assumes: 3},
		{size: 2, assumes: 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("size %d", tt.size), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *awsadapter.Options) { o.RoleCacheSize = tt.size })
			e.fake.Account(roleAccount).Role("other", "")
			other := roleCreds()
			other.RoleARN, other.ExternalID = "arn:aws:iam::"+roleAccount+":role/other", ""
			for _, c := range []ports.CloudCredentials{roleCreds(), other, roleCreds()} {
				if err := e.p.Probe(context.Background(), c); err != nil {
					t.Fatalf("Probe(%v): %v", c, err)
				}
			}
			if got := len(e.fake.CallsTo(fakeaws.ServiceSTS, "AssumeRole")); got != tt.assumes {
				t.Errorf("AssumeRole calls = %d, want %d", got, tt.assumes)
			}
		})
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.p.Probe(context.Background(), keyCreds()); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	calls := e.fake.Calls()
	if len(calls) != 1 || calls[0].Operation != "ListClusters" || calls[0].Input["maxResults"] != float64(1) {
		t.Errorf("calls = %+v, want one ECS ListClusters with maxResults 1", calls)
	}
	if n := len(e.fake.CallsTo(fakeaws.ServiceCost, "")); n != 0 {
		t.Errorf("Probe made %d Cost Explorer calls", n)
	}
}

func TestCredentialsAreValidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name  string
		creds ports.CloudCredentials
	}{
		{"no region", ports.CloudCredentials{Mode: ports.AuthAccessKey, AccessKeyID: userKey, SecretAccessKey: userSecret}},
		{"no secret", ports.CloudCredentials{Region: region, Mode: ports.AuthAccessKey, AccessKeyID: userKey}},
		{"no role", ports.CloudCredentials{Region: region, Mode: ports.AuthAssumeRole}},
		{"unknown mode", ports.CloudCredentials{Region: region, Mode: "password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKind(t, e.p.Probe(context.Background(), tt.creds), ports.KindInvalid)
		})
	}
	if n := len(e.fake.Calls()); n != 0 {
		t.Errorf("%d calls reached AWS", n)
	}
}

// TestEndpointFromEnvironment cannot run in parallel: it sets the
// environment.
func TestEndpointFromEnvironment(t *testing.T) {
	for _, variable := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_ECS"} {
		t.Run(variable, func(t *testing.T) {
			fake := fakeaws.New(t)
			fake.Account(userAccount).User("devpilot", userKey, userSecret)
			t.Setenv(variable, fake.URL())
			p, err := awsadapter.New(context.Background(), awsadapter.Options{LoadOptions: isolated(), MaxBackoff: time.Millisecond})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if err := p.Probe(context.Background(), keyCreds()); err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if calls := fake.CallsTo(fakeaws.ServiceECS, "ListClusters"); len(calls) != 1 {
				t.Errorf("ListClusters calls at the fake = %d, want 1", len(calls))
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	listServices := func(ctx context.Context, p *awsadapter.Provider) error {
		_, err := p.ListServices(ctx, keyCreds(), "prod")
		return err
	}
	tests := []struct {
		name    string
		timeout time.Duration
		fault   fakeaws.Fault
		service string
		op      string
		call    func(context.Context, *awsadapter.Provider) error
		kind    ports.Kind // "" for success
		message string     // a part of the message
		retry   time.Duration
		calls   int
	}{
		{
			name: "throttled beyond the retries", fault: fakeaws.Throttling(), service: fakeaws.ServiceECS, op: "ListServices",
			call: listServices, kind: ports.KindRateLimited, message: "aws: ThrottlingException", retry: time.Second, calls: 3,
		},
		{
			name: "throttled twice, then served", fault: fakeaws.Throttling().Times(2), service: fakeaws.ServiceECS, op: "ListServices",
			call: listServices, calls: 3,
		},
		{
			name: "throttled with Retry-After", fault: fakeaws.Throttling().WithRetryAfter(7 * time.Second),
			service: fakeaws.ServiceLambda, op: "ListFunctions",
			call: func(ctx context.Context, p *awsadapter.Provider) error {
				_, err := p.ListFunctions(ctx, keyCreds())
				return err
			},
			kind: ports.KindRateLimited, message: "aws: TooManyRequestsException", retry: 7 * time.Second, calls: 3,
		},
		{
			name: "access denied", fault: fakeaws.AccessDenied().WithMessage("no access with " + userSecret),
			service: fakeaws.ServiceECS, op: "ListServices", call: listServices,
			kind: ports.KindUpstream, message: "aws: AccessDeniedException: no access with [redacted]", calls: 1,
		},
		{
			name: "access denied to the role", fault: fakeaws.AccessDenied(), service: fakeaws.ServiceSTS, op: "AssumeRole",
			call: func(ctx context.Context, p *awsadapter.Provider) error { return p.Probe(ctx, roleCreds()) },
			kind: ports.KindUpstream, message: "aws: AccessDenied", calls: 1,
		},
		{
			name: "expired token", fault: fakeaws.APIError(400, "ExpiredTokenException", "The security token included in the request is expired"),
			service: fakeaws.ServiceECS, op: "ListServices", call: listServices,
			kind: ports.KindUpstream, message: "aws: ExpiredTokenException: The security token", calls: 1,
		},
		{
			name: "not found", fault: fakeaws.NotFound(), service: fakeaws.ServiceECS, op: "ListServices",
			call: listServices, kind: ports.KindNotFound, message: "cluster prod not found", calls: 1,
		},
		{
			name: "validation", fault: fakeaws.APIError(400, "ValidationException", "bad dates"), service: fakeaws.ServiceCost, op: "GetCostAndUsage",
			call: func(ctx context.Context, p *awsadapter.Provider) error {
				_, err := p.Costs(ctx, keyCreds(), ports.CostQuery{Start: day(1), End: day(3)})
				return err
			},
			kind: ports.KindInvalid, message: "aws: ValidationException: bad dates", calls: 1,
		},
		{
			name: "server error", fault: fakeaws.APIError(500, "ServerException", "internal"), service: fakeaws.ServiceECS, op: "ListServices",
			call: listServices, kind: ports.KindUpstream, message: "aws: ServerException: internal", calls: 3,
		},
		{
			name: "no answer in time", timeout: 250 * time.Millisecond, fault: fakeaws.Hang(), service: fakeaws.ServiceECS, op: "ListServices",
			call: listServices, kind: ports.KindTimeout, message: "did not answer in time", calls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, func(o *awsadapter.Options) {
				if tt.timeout > 0 {
					o.Timeout = tt.timeout
				}
			})
			e.fake.Account(userAccount).Cluster("prod")
			e.fake.Inject(tt.service, tt.op, tt.fault)
			err := tt.call(context.Background(), e.p)
			if got := len(e.fake.CallsTo(tt.service, tt.op)); got != tt.calls {
				t.Errorf("%s calls = %d, want %d", tt.op, got, tt.calls)
			}
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("error = %v, want success", err)
				}
				return
			}
			pe := wantKind(t, err, tt.kind)
			if !strings.Contains(pe.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", pe.Message, tt.message)
			}
			if pe.RetryAfter != tt.retry {
				t.Errorf("RetryAfter = %v, want %v", pe.RetryAfter, tt.retry)
			}
			for what, text := range map[string]string{"message": pe.Message, "error": err.Error(), "log": e.logs.String()} {
				if strings.Contains(text, userSecret) || strings.Contains(text, baseSecret) {
					t.Errorf("the %s holds a secret access key: %s", what, text)
				}
			}
			if !strings.Contains(e.logs.String(), "aws call failed") {
				t.Errorf("log = %q, want a line for the failed call", e.logs.String())
			}
		})
	}
}

func TestCallerCancellation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Inject(fakeaws.ServiceECS, "ListClusters", fakeaws.Hang())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := e.p.Probe(ctx, keyCreds())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Probe with a cancelled context = %v, want context.Canceled", err)
	}
}
