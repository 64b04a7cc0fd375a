package fakeaws_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
)

const (
	account = "123456789012"
	keyID   = "AKIAFAKETEST00000001"
	secret  = "testSecretTestSecretTestSecretTestSecret"
	region  = "eu-central-1"
)

// creds are the credentials a test request is signed with.
type creds struct {
	keyID, secret, token string
}

var user = creds{keyID: keyID, secret: secret}

// request describes one raw request to the fake.
type request struct {
	method, path string
	header       map[string]string
	body         string
	service      string // signing name; "" sends the request unsigned
	region       string
	creds        creds
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func newFake(t *testing.T) *fakeaws.Server {
	t.Helper()
	f := fakeaws.New(t)
	f.Account(account).User("tester", keyID, secret)
	return f
}

func send(t *testing.T, base string, r request) response {
	t.Helper()
	req, err := http.NewRequest(r.method, base+r.path, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.service != "" {
		c := r.creds
		if c.keyID == "" {
			c = user
		}
		reg := r.region
		if reg == "" {
			reg = region
		}
		sum := sha256.Sum256([]byte(r.body))
		err := v4.NewSigner().SignHTTP(context.Background(),
			sdkaws.Credentials{AccessKeyID: c.keyID, SecretAccessKey: c.secret, SessionToken: c.token},
			req, hex.EncodeToString(sum[:]), r.service, reg, time.Now())
		if err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func jsonRequest(target, body string) request {
	service := map[string]string{
		"AmazonEC2ContainerServiceV20141113": "ecs", "Logs_20140328": "logs", "AWSInsightsIndexService": "ce",
	}[strings.Split(target, ".")[0]]
	return request{
		method: http.MethodPost, path: "/", body: body, service: service,
		header: map[string]string{"X-Amz-Target": target, "Content-Type": "application/x-amz-json-1.1"},
	}
}

func stsRequest(form url.Values) request {
	form.Set("Version", "2011-06-15")
	return request{
		method: http.MethodPost, path: "/", body: form.Encode(), service: "sts",
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
	}
}

// errorCode is the error code of a JSON, REST or query error answer.
func errorCode(t *testing.T, r response) string {
	t.Helper()
	if h := r.header.Get("X-Amzn-Errortype"); h != "" {
		return h
	}
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/xml") {
		var e struct {
			Error struct{ Code string }
		}
		if err := xml.Unmarshal(r.body, &e); err != nil {
			t.Fatalf("error body %s: %v", r.body, err)
		}
		return e.Error.Code
	}
	var e struct {
		Type string `json:"__type"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	return e.Type
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	listClusters := jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", "{}")
	with := func(r request, fn func(*request)) request {
		h := map[string]string{}
		for k, v := range r.header {
			h[k] = v
		}
		r.header = h
		fn(&r)
		return r
	}
	tests := []struct {
		name   string
		req    request
		status int
		code   string
	}{
		{name: "signed", req: listClusters, status: 200},
		{name: "unsigned", req: with(listClusters, func(r *request) { r.service = "" }), status: 403, code: "MissingAuthenticationTokenException"},
		{
			name:   "malformed",
			req:    with(listClusters, func(r *request) { r.service = ""; r.header["Authorization"] = "AWS4-HMAC-SHA256 Credential=x" }),
			status: 403, code: "IncompleteSignatureException",
		},
		{name: "another service's scope", req: with(listClusters, func(r *request) { r.service = "logs" }), status: 403, code: "InvalidSignatureException"},
		{name: "a region not served", req: with(listClusters, func(r *request) { r.region = "ap-south-2" }), status: 403, code: "InvalidSignatureException"},
		{
			name:   "an unknown key",
			req:    with(listClusters, func(r *request) { r.creds = creds{keyID: "AKIAUNKNOWN", secret: secret} }),
			status: 403, code: "UnrecognizedClientException",
		},
		{
			name:   "STS unsigned",
			req:    with(stsRequest(url.Values{"Action": {"GetCallerIdentity"}}), func(r *request) { r.service = "" }),
			status: 403, code: "MissingAuthenticationToken",
		},
		{
			name:   "STS with an unknown key",
			req:    with(stsRequest(url.Values{"Action": {"GetCallerIdentity"}}), func(r *request) { r.creds = creds{keyID: "AKIAUNKNOWN", secret: secret} }),
			status: 403, code: "InvalidClientTokenId",
		},
		{
			name:   "Lambda scoped to ECS",
			req:    request{method: http.MethodGet, path: "/2015-03-31/functions", service: "ecs"},
			status: 403, code: "InvalidSignatureException",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.Regions(region)
			resp := send(t, f.URL(), tt.req)
			if resp.status != tt.status {
				t.Fatalf("status = %d, want %d (%s)", resp.status, tt.status, resp.body)
			}
			if tt.code != "" {
				if got := errorCode(t, resp); got != tt.code {
					t.Errorf("code = %q, want %q", got, tt.code)
				}
			}
			calls := f.Calls()
			if len(calls) != 1 || calls[0].Status != tt.status || calls[0].ErrorCode != tt.code {
				t.Errorf("calls = %+v, want one answered %d %q", calls, tt.status, tt.code)
			}
		})
	}
}

func TestAssumeRole(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	target := f.Account("999999999999").Role("deployer", "ext-1")
	roleARN := target.RoleARN("deployer")

	denied := send(t, f.URL(), stsRequest(url.Values{"Action": {"AssumeRole"}, "RoleArn": {roleARN}, "RoleSessionName": {"s1"}, "ExternalId": {"wrong"}}))
	if denied.status != 403 || errorCode(t, denied) != "AccessDenied" {
		t.Fatalf("AssumeRole with a wrong external id = %d %s", denied.status, denied.body)
	}

	resp := send(t, f.URL(), stsRequest(url.Values{"Action": {"AssumeRole"}, "RoleArn": {roleARN}, "RoleSessionName": {"s1"}, "ExternalId": {"ext-1"}}))
	if resp.status != 200 {
		t.Fatalf("AssumeRole = %d %s", resp.status, resp.body)
	}
	var out struct {
		Result struct {
			AssumedRoleUser struct{ Arn string }
			Credentials     struct {
				AccessKeyID     string `xml:"AccessKeyId"`
				SecretAccessKey string
				SessionToken    string
				Expiration      string
			}
		} `xml:"AssumeRoleResult"`
	}
	if err := xml.Unmarshal(resp.body, &out); err != nil {
		t.Fatal(err)
	}
	c := out.Result.Credentials
	if !strings.HasPrefix(c.AccessKeyID, "ASIA") || c.SecretAccessKey == "" || c.SessionToken == "" {
		t.Fatalf("credentials = %+v", c)
	}
	if exp, err := time.Parse(time.RFC3339, c.Expiration); err != nil || !exp.After(time.Now()) {
		t.Errorf("Expiration = %q", c.Expiration)
	}
	if want := "arn:aws:sts::999999999999:assumed-role/deployer/s1"; out.Result.AssumedRoleUser.Arn != want {
		t.Errorf("AssumedRoleUser = %q, want %q", out.Result.AssumedRoleUser.Arn, want)
	}

	identity := func(cr creds) response {
		r := stsRequest(url.Values{"Action": {"GetCallerIdentity"}})
		r.creds = cr
		return send(t, f.URL(), r)
	}
	if r := identity(creds{keyID: c.AccessKeyID, secret: c.SecretAccessKey}); r.status != 403 || errorCode(t, r) != "InvalidClientTokenId" {
		t.Errorf("temporary key without its session token = %d %s", r.status, r.body)
	}
	r := identity(creds{keyID: c.AccessKeyID, secret: c.SecretAccessKey, token: c.SessionToken})
	var id struct {
		Result struct{ Arn, UserID, Account string } `xml:"GetCallerIdentityResult"`
	}
	if err := xml.Unmarshal(r.body, &id); err != nil || r.status != 200 {
		t.Fatalf("GetCallerIdentity = %d %s (%v)", r.status, r.body, err)
	}
	if id.Result.Account != "999999999999" || id.Result.Arn != out.Result.AssumedRoleUser.Arn {
		t.Errorf("identity = %+v, want the assumed role", id.Result)
	}
	if calls := f.CallsTo(fakeaws.ServiceSTS, "GetCallerIdentity"); calls[len(calls)-1].AccessKeyID != c.AccessKeyID {
		t.Errorf("the call is recorded as signed by %s, want %s", calls[len(calls)-1].AccessKeyID, c.AccessKeyID)
	}
}

func TestJSONProtocol(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Account(account).Cluster("prod")
	tests := []struct {
		name   string
		req    request
		status int
		code   string
		body   string // a part of a successful body
	}{
		{name: "ECS", req: jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", `{"maxResults":1}`), status: 200,
			body: `"clusterArns":["arn:aws:ecs:` + region + `:` + account + `:cluster/prod"]`},
		{name: "unknown operation", req: jsonRequest("AmazonEC2ContainerServiceV20141113.DeleteCluster", `{}`), status: 400, code: "UnknownOperationException"},
		{name: "wrong content type", req: func() request {
			r := jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", `{}`)
			r.header["Content-Type"] = "application/json"
			return r
		}(), status: 400, code: "SerializationException"},
		{name: "too many services", req: jsonRequest("AmazonEC2ContainerServiceV20141113.DescribeServices",
			`{"cluster":"prod","services":["1","2","3","4","5","6","7","8","9","10","11"]}`), status: 400, code: "InvalidParameterException"},
		{name: "bad page token", req: jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", `{"nextToken":"bogus"}`),
			status: 400, code: "InvalidParameterException"},
		{name: "missing cluster", req: jsonRequest("AmazonEC2ContainerServiceV20141113.ListServices", `{"cluster":"nope"}`),
			status: 400, code: "ClusterNotFoundException"},
		{name: "missing log group", req: jsonRequest("Logs_20140328.FilterLogEvents", `{"logGroupName":"/nope"}`),
			status: 400, code: "ResourceNotFoundException"},
		{name: "costs in a reversed range", req: jsonRequest("AWSInsightsIndexService.GetCostAndUsage",
			`{"TimePeriod":{"Start":"2026-02-02","End":"2026-02-01"},"Granularity":"DAILY","Metrics":["UnblendedCost"]}`),
			status: 400, code: "ValidationException"},
		{name: "costs", req: jsonRequest("AWSInsightsIndexService.GetCostAndUsage",
			`{"TimePeriod":{"Start":"2026-02-01","End":"2026-02-02"},"Granularity":"DAILY","Metrics":["UnblendedCost"]}`),
			status: 200, body: `"Total":{"UnblendedCost":{"Amount":"0","Unit":"USD"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := send(t, f.URL(), tt.req)
			if resp.status != tt.status {
				t.Fatalf("status = %d, want %d (%s)", resp.status, tt.status, resp.body)
			}
			if ct := resp.header.Get("Content-Type"); ct != "application/x-amz-json-1.1" {
				t.Errorf("Content-Type = %q", ct)
			}
			if tt.code != "" {
				if got := errorCode(t, resp); got != tt.code {
					t.Errorf("code = %q, want %q", got, tt.code)
				}
				var e map[string]string
				if err := json.Unmarshal(resp.body, &e); err != nil || e["message"] == "" {
					t.Errorf("error body = %s, want __type and message", resp.body)
				}
				return
			}
			if !bytes.Contains(resp.body, []byte(tt.body)) {
				t.Errorf("body = %s, want it to contain %s", resp.body, tt.body)
			}
		})
	}
}

func TestRESTProtocol(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Account(account).
		Function(fakeaws.Function{Name: "echo", Handle: func(p []byte) fakeaws.InvokeResult {
			return fakeaws.InvokeResult{Payload: p, LogTail: "tail"}
		}}).
		App(fakeaws.App{ID: "d1", Branches: []fakeaws.Branch{{Name: "feature/x"}}})
	invoke := func(name string, header map[string]string, body string) request {
		return request{method: http.MethodPost, path: "/2015-03-31/functions/" + url.PathEscape(name) + "/invocations", service: "lambda", header: header, body: body}
	}
	tests := []struct {
		name   string
		req    request
		status int
		code   string
		header map[string]string
		body   string
	}{
		{
			name: "invoke", req: invoke("echo", map[string]string{"X-Amz-Log-Type": "Tail"}, `{"a":1}`), status: 200, body: `{"a":1}`,
			header: map[string]string{"X-Amz-Log-Result": "dGFpbA==", "X-Amz-Executed-Version": "$LATEST"},
		},
		{name: "invoke by ARN", req: invoke("arn:aws:lambda:"+region+":"+account+":function:echo", nil, `1`), status: 200, body: `1`},
		{name: "dry run", req: invoke("echo", map[string]string{"X-Amz-Invocation-Type": "DryRun"}, ``), status: 204},
		{name: "payload that is not JSON", req: invoke("echo", nil, `{`), status: 400, code: "InvalidRequestContentException"},
		{name: "missing function", req: invoke("ghost", nil, `{}`), status: 404, code: "ResourceNotFoundException"},
		{
			name: "branch with a slash", status: 200, body: `"branchName":"feature/x"`,
			req: request{method: http.MethodGet, path: "/apps/d1/branches", service: "amplify"},
		},
		{
			name: "job of a branch with a slash", status: 200, body: `"jobType":"RELEASE"`,
			req: request{method: http.MethodPost, path: "/apps/d1/branches/feature%2Fx/jobs", service: "amplify", body: `{"jobType":"RELEASE"}`,
				header: map[string]string{"Content-Type": "application/json"}},
		},
		{name: "missing app", req: request{method: http.MethodGet, path: "/apps/d9/branches", service: "amplify"}, status: 404, code: "NotFoundException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := send(t, f.URL(), tt.req)
			if resp.status != tt.status {
				t.Fatalf("status = %d, want %d (%s)", resp.status, tt.status, resp.body)
			}
			if tt.code != "" {
				if got := resp.header.Get("X-Amzn-Errortype"); got != tt.code {
					t.Errorf("X-Amzn-ErrorType = %q, want %q", got, tt.code)
				}
				var e map[string]string
				if err := json.Unmarshal(resp.body, &e); err != nil || e["message"] == "" {
					t.Errorf("error body = %s, want a message", resp.body)
				}
				return
			}
			for k, v := range tt.header {
				if got := resp.header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if !bytes.Contains(resp.body, []byte(tt.body)) {
				t.Errorf("body = %s, want it to contain %s", resp.body, tt.body)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Inject(fakeaws.ServiceECS, "ListClusters", fakeaws.Throttling().Times(2))
	f.Inject(fakeaws.ServiceLambda, "", fakeaws.Throttling().WithRetryAfter(3*time.Second).Times(1))
	req := jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", `{}`)
	var codes []string
	for attempt := 1; attempt <= 3; attempt++ {
		r := req
		r.header = map[string]string{"Amz-Sdk-Request": "attempt=" + strconv.Itoa(attempt) + "; max=3"}
		for k, v := range req.header {
			r.header[k] = v
		}
		resp := send(t, f.URL(), r)
		code := ""
		if resp.status != 200 {
			code = errorCode(t, resp)
		}
		codes = append(codes, code)
	}
	if strings.Join(codes, ",") != "ThrottlingException,ThrottlingException," {
		t.Errorf("answers = %q, want two throttles then success", codes)
	}
	for i, c := range f.CallsTo(fakeaws.ServiceECS, "ListClusters") {
		if c.Attempt != i+1 {
			t.Errorf("call %d Attempt = %d", i, c.Attempt)
		}
	}

	resp := send(t, f.URL(), request{method: http.MethodGet, path: "/2015-03-31/functions", service: "lambda"})
	if resp.status != 429 || resp.header.Get("Retry-After") != "3" || resp.header.Get("X-Amzn-Errortype") != "TooManyRequestsException" {
		t.Errorf("Lambda answer = %d %v", resp.status, resp.header)
	}
	if resp := send(t, f.URL(), request{method: http.MethodGet, path: "/2015-03-31/functions", service: "lambda"}); resp.status != 200 {
		t.Errorf("Lambda after the fault = %d", resp.status)
	}
}

func TestHangReleasesWhenTheClientGivesUp(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Inject(fakeaws.ServiceECS, "", fakeaws.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := jsonRequest("AmazonEC2ContainerServiceV20141113.ListClusters", `{}`)
	req, _ := http.NewRequestWithContext(ctx, r.method, f.URL()+"/", strings.NewReader(r.body))
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	sum := sha256.Sum256([]byte(r.body))
	if err := v4.NewSigner().SignHTTP(ctx, sdkaws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}, req, hex.EncodeToString(sum[:]), "ecs", region, time.Now()); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a hung request was answered %d", resp.StatusCode)
	}
}

func TestBuildLogURLs(t *testing.T) {
	t.Parallel()
	f := fakeaws.NewHandler()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	t.Cleanup(f.Close)
	if f.URL() != "" {
		t.Errorf("URL of a handler = %q, want empty", f.URL())
	}
	f.Account(account).User("tester", keyID, secret).App(fakeaws.App{ID: "d1", Branches: []fakeaws.Branch{{
		Name: "main", Jobs: []fakeaws.Job{{ID: "4", Steps: []fakeaws.Step{{Name: "BUILD", Log: "line 1\nline 2\n"}}}},
	}}})
	resp := send(t, srv.URL, request{method: http.MethodGet, path: "/apps/d1/branches/main/jobs/4", service: "amplify"})
	var out struct {
		Job struct {
			Steps []struct {
				StepName string `json:"stepName"`
				LogURL   string `json:"logUrl"`
			} `json:"steps"`
		} `json:"job"`
	}
	if err := json.Unmarshal(resp.body, &out); err != nil || len(out.Job.Steps) != 1 {
		t.Fatalf("GetJob = %d %s (%v)", resp.status, resp.body, err)
	}
	logURL := out.Job.Steps[0].LogURL
	if !strings.HasPrefix(logURL, srv.URL+"/") {
		t.Fatalf("logUrl = %q, want it under %s", logURL, srv.URL)
	}
	got, err := http.Get(logURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if got.StatusCode != 200 || string(body) != "line 1\nline 2\n" {
		t.Errorf("log = %d %q", got.StatusCode, body)
	}
	if n := len(f.Calls()); n != 1 {
		t.Errorf("calls = %d, want only GetJob (log downloads are not API calls)", n)
	}
	missing, err := http.Get(strings.TrimSuffix(logURL, "0") + "5")
	if err != nil {
		t.Fatal(err)
	}
	missing.Body.Close()
	if missing.StatusCode != 404 {
		t.Errorf("a missing step's log = %d, want 404", missing.StatusCode)
	}
}
