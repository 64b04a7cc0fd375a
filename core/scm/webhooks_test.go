package scm_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func sign(key string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func payload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// patch returns body changed by fn, which edits it decoded.
func patch(t *testing.T, body []byte, fn func(map[string]any)) []byte {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	fn(v)
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func obj(v any) map[string]any { return v.(map[string]any) }

func (e *env) receive(event, id string, body []byte) (bool, error) {
	return e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: event, DeliveryID: id, Signature: sign(secret, body), Body: bytes.NewReader(body)})
}

func TestReceiveWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	body := payload(t, "push")
	dup, err := e.receive("push", "72d3162e-cc78-11e3-81ab-4c9367dc0958", body)
	if err != nil || dup {
		t.Fatalf("ReceiveWebhook = %v, %v", dup, err)
	}
	d, ok := e.delivery("72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if !ok || d.Event != "push" || d.Status != ports.DeliveryPending || !bytes.Equal(d.Payload, body) || !d.ReceivedAt.Equal(fixture.Epoch) {
		t.Errorf("stored %+v", d)
	}
	jobs := e.jobs()
	if len(jobs) != 1 {
		t.Fatalf("jobs %+v", jobs)
	}
	if args, ok := jobs[0].args.(scm.ProcessDeliveriesArgs); !ok || !slices.Equal(args.DeliveryIDs, []string{d.ID}) || args.Kind() != "scm.process_deliveries" {
		t.Fatalf("jobs %+v", jobs)
	}
	if !jobs[0].inTx || !e.scm.recordInTx {
		t.Errorf("stored in a transaction: %v; enqueued in it: %v", e.scm.recordInTx, jobs[0].inTx)
	}

	// A repeat is acknowledged, and neither stored nor processed again.
	e.clock.Advance(time.Minute)
	dup, err = e.receive("push", d.ID, body)
	if err != nil || !dup {
		t.Errorf("repeat = %v, %v", dup, err)
	}
	if again, _ := e.delivery(d.ID); !again.ReceivedAt.Equal(d.ReceivedAt) || len(e.jobs()) != 1 {
		t.Errorf("the repeat changed %+v or enqueued %+v", again, e.jobs())
	}

	// The job's arguments encode as the queue stores them.
	if b, _ := json.Marshal(jobs[0].args); string(b) != `{"delivery_ids":["72d3162e-cc78-11e3-81ab-4c9367dc0958"]}` {
		t.Errorf("job args %s", b)
	}
}

func TestReceiveWebhookRefuses(t *testing.T) {
	t.Parallel()
	body := payload(t, "ping")
	good := sign(secret, body)
	tests := []struct {
		name       string
		cfg        scm.Config
		in         scm.WebhookInput
		kind       ports.Kind
		recordErr  error
		enqueueErr error
	}{
		{name: "no signature", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "empty hex", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: "sha256=", Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "bare hex", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: strings.TrimPrefix(good, "sha256="), Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "sha1", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: "sha1=" + strings.TrimPrefix(good, "sha256="), Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "other secret", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: sign("guess", body), Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "other body", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: good, Body: bytes.NewReader(append(bytes.Clone(body), ' '))}, kind: ports.KindUnauthenticated},
		{name: "not hex", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: "sha256=" + strings.Repeat("zz", 32), Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "short", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: good[:len(good)-2], Body: bytes.NewReader(body)}, kind: ports.KindUnauthenticated},
		{name: "no secret", cfg: scm.Config{WebhookSecret: []byte{}}, in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindUnavailable},
		{name: "no event", in: scm.WebhookInput{DeliveryID: "d1", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindMalformed},
		{name: "no delivery", in: scm.WebhookInput{Event: "ping", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindMalformed},
		{name: "odd delivery", in: scm.WebhookInput{Event: "ping", DeliveryID: "d 1/../x", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindMalformed},
		{name: "not JSON", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: sign(secret, []byte("payload=%7B%7D")), Body: bytes.NewReader([]byte("payload=%7B%7D"))}, kind: ports.KindMalformed},
		{name: "cut JSON", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: sign(secret, body[:100]), Body: bytes.NewReader(body[:100])}, kind: ports.KindMalformed},
		{name: "store fails", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindUnavailable,
			recordErr: &ports.Error{Kind: ports.KindUnavailable, Message: "database is locked"}},
		{name: "queue fails", in: scm.WebhookInput{Event: "ping", DeliveryID: "d1", Signature: good, Body: bytes.NewReader(body)}, kind: ports.KindInternal,
			enqueueErr: errors.New("river: insert failed")},
	}
	for _, tt := range tests {
		e := newEnv(t, tt.cfg)
		e.scm.recordErr, e.enqueueErr = tt.recordErr, tt.enqueueErr
		dup, err := e.svc.ReceiveWebhook(context.Background(), tt.in)
		if dup {
			t.Errorf("%s: duplicate", tt.name)
		}
		if err == nil || ports.KindOf(err) != tt.kind {
			t.Errorf("%s: error %v, want %s", tt.name, err, tt.kind)
		}
		if stored := storedIDs(e); len(stored) != 0 || len(e.jobs()) != 0 {
			t.Errorf("%s: stored %v, enqueued %v", tt.name, stored, e.jobs())
		}
	}

	// Once the queue answers again, the delivery (which was rolled back) is
	// taken.
	e := newEnv(t, scm.Config{})
	e.enqueueErr = errors.New("river: insert failed")
	if _, err := e.receive("ping", "d1", body); err == nil {
		t.Fatal("no error")
	}
	if dup, err := e.receive("ping", "d1", body); err != nil || dup || len(e.jobs()) != 1 {
		t.Errorf("after the failure: %v, %v, %d jobs", dup, err, len(e.jobs()))
	}
}

// process stores a delivery as ReceiveWebhook does and processes it.
func (e *env) process(event, id string, body []byte) error {
	e.t.Helper()
	if _, err := e.receive(event, id, body); err != nil {
		e.t.Fatalf("receive %s: %v", event, err)
	}
	return e.svc.ProcessDelivery(context.Background(), id)
}

func TestProcessDelivery(t *testing.T) {
	t.Parallel()
	push := payload(t, "push")
	opened := payload(t, "pull_request_opened")
	merged := payload(t, "pull_request_merged")
	release := payload(t, "release_published")
	comment := payload(t, "issue_comment_created")
	create := payload(t, "create_branch")
	tests := []struct {
		name, event string
		body        []byte
		status      string
		reason      string // a part of the failure's reason
		want        *ports.SCMActivity
	}{
		{name: "push", event: "push", body: push, status: ports.DeliveryProcessed, want: &ports.SCMActivity{Kind: "push", Actor: "alice",
			Ref: "main", Summary: "alice pushed 3 commits to main", URL: "https://github.com/acme/web/compare/abc000...abc003", SHA: "0000000000000000000000000000000000abc003"}},
		{name: "push of one commit to a tag", event: "push", status: ports.DeliveryProcessed, body: patch(t, push, func(v map[string]any) {
			v["ref"], v["commits"] = "refs/tags/v1", v["commits"].([]any)[:1]
		}), want: &ports.SCMActivity{Kind: "push", Actor: "alice", Ref: "v1", Summary: "alice pushed 1 commit to tag v1",
			URL: "https://github.com/acme/web/compare/abc000...abc003", SHA: "0000000000000000000000000000000000abc003"}},
		{name: "forced push", event: "push", status: ports.DeliveryProcessed, body: patch(t, push, func(v map[string]any) {
			v["forced"], v["commits"], v["head_commit"] = true, []any{}, nil
		}), want: &ports.SCMActivity{Kind: "push", Action: "forced", Actor: "alice", Ref: "main", Summary: "alice force-pushed to main",
			URL: "https://github.com/acme/web/compare/abc000...abc003", SHA: "0000000000000000000000000000000000abc003"}},
		{name: "push with null commits", event: "push", status: ports.DeliveryProcessed, body: patch(t, push, func(v map[string]any) {
			v["commits"], v["compare"] = nil, nil
		}), want: &ports.SCMActivity{Kind: "push", Actor: "alice", Ref: "main", Summary: "alice pushed to main",
			URL: "https://github.com/acme/web/commit/0000000000000000000000000000000000abc003", SHA: "0000000000000000000000000000000000abc003"}},
		{name: "push deleting a branch", event: "push", status: ports.DeliveryIgnored, body: patch(t, push, func(v map[string]any) {
			v["deleted"], v["commits"], v["head_commit"] = true, []any{}, nil
		})},
		{name: "push creating a branch", event: "push", status: ports.DeliveryIgnored, body: patch(t, push, func(v map[string]any) {
			v["created"], v["commits"] = true, []any{}
		})},
		{name: "pull request opened", event: "pull_request", body: opened, status: ports.DeliveryProcessed, want: &ports.SCMActivity{
			Kind: "pull_request", Action: "opened", Actor: "alice", Ref: "feature-login", Summary: "alice opened pull request #12: Add login",
			URL: "https://github.com/acme/web/pull/12"}},
		{name: "pull request merged", event: "pull_request", body: merged, status: ports.DeliveryProcessed, want: &ports.SCMActivity{
			Kind: "pull_request", Action: "merged", Actor: "bob", Ref: "feature-login", Summary: "bob merged pull request #12",
			URL: "https://github.com/acme/web/pull/12"}},
		{name: "pull request closed", event: "pull_request", status: ports.DeliveryProcessed, body: patch(t, merged, func(v map[string]any) {
			obj(v["pull_request"])["merged"] = false
		}), want: &ports.SCMActivity{Kind: "pull_request", Action: "closed", Actor: "bob", Ref: "feature-login",
			Summary: "bob closed pull request #12", URL: "https://github.com/acme/web/pull/12"}},
		{name: "pull request reopened, title with a newline, null head", event: "pull_request", status: ports.DeliveryProcessed,
			body: patch(t, opened, func(v map[string]any) {
				v["action"], v["number"] = "reopened", nil
				obj(v["pull_request"])["title"], obj(v["pull_request"])["head"] = "Add\nlogin", nil
			}), want: &ports.SCMActivity{Kind: "pull_request", Action: "reopened", Actor: "alice", Summary: "alice reopened pull request #12",
				URL: "https://github.com/acme/web/pull/12"}},
		{name: "pull request labeled", event: "pull_request", status: ports.DeliveryIgnored, body: patch(t, opened, func(v map[string]any) {
			v["action"] = "labeled"
		})},
		{name: "branch created", event: "create", body: create, status: ports.DeliveryProcessed, want: &ports.SCMActivity{Kind: "create",
			Action: "branch", Actor: "alice", Ref: "feature-x", Summary: "alice created branch feature-x", URL: "https://github.com/acme/web/tree/feature-x"}},
		{name: "tag deleted", event: "delete", body: payload(t, "delete_tag"), status: ports.DeliveryProcessed, want: &ports.SCMActivity{
			Kind: "delete", Action: "tag", Actor: "alice", Ref: "v1", Summary: "alice deleted tag v1", URL: "https://github.com/acme/web"}},
		{name: "release published", event: "release", body: release, status: ports.DeliveryProcessed, want: &ports.SCMActivity{
			Kind: "release", Action: "published", Actor: "alice", Ref: "v1.2", Summary: "alice published release v1.2",
			URL: "https://github.com/acme/web/releases/tag/v1.2"}},
		{name: "release created", event: "release", status: ports.DeliveryIgnored, body: patch(t, release, func(v map[string]any) {
			v["action"] = "created"
		})},
		{name: "comment", event: "issue_comment", body: comment, status: ports.DeliveryProcessed, want: &ports.SCMActivity{
			Kind: "issue_comment", Action: "created", Actor: "alice", Summary: "alice commented on #7",
			URL: "https://github.com/acme/web/issues/7#issuecomment-5"}},
		{name: "comment deleted", event: "issue_comment", status: ports.DeliveryIgnored, body: patch(t, comment, func(v map[string]any) {
			v["action"] = "deleted"
		})},
		{name: "ping", event: "ping", body: payload(t, "ping"), status: ports.DeliveryIgnored},
		{name: "workflow run", event: "workflow_run", body: []byte(`{"action":"completed","workflow_run":{"id":1}}`), status: ports.DeliveryIgnored},

		{name: "push without repository", event: "push", status: ports.DeliveryFailed, reason: "push payload lacks repository.id",
			body: patch(t, push, func(v map[string]any) { delete(v, "repository") })},
		{name: "push without sender", event: "push", status: ports.DeliveryFailed, reason: "push payload lacks sender.login",
			body: patch(t, push, func(v map[string]any) { v["sender"] = nil })},
		{name: "push without ref", event: "push", status: ports.DeliveryFailed, reason: "push payload lacks ref",
			body: patch(t, push, func(v map[string]any) { delete(v, "ref") })},
		{name: "push as an array", event: "push", status: ports.DeliveryFailed, reason: "push payload cannot be read", body: []byte(`[1,2]`)},
		{name: "repository id as text", event: "push", status: ports.DeliveryFailed, reason: "push payload cannot be read",
			body: patch(t, push, func(v map[string]any) { obj(v["repository"])["id"] = "101" })},
		{name: "pull request without pull_request", event: "pull_request", status: ports.DeliveryFailed, reason: "lacks pull_request",
			body: patch(t, opened, func(v map[string]any) { delete(v, "pull_request") })},
		{name: "release without tag", event: "release", status: ports.DeliveryFailed, reason: "lacks release.tag_name",
			body: patch(t, release, func(v map[string]any) { v["release"] = nil })},
		{name: "comment without issue", event: "issue_comment", status: ports.DeliveryFailed, reason: "lacks issue.number",
			body: patch(t, comment, func(v map[string]any) { delete(v, "issue") })},
		{name: "create without ref_type", event: "create", status: ports.DeliveryFailed, reason: "create payload lacks ref_type",
			body: patch(t, create, func(v map[string]any) { delete(v, "ref_type") })},
		{name: "delete without ref", event: "delete", status: ports.DeliveryFailed, reason: "delete payload lacks ref",
			body: patch(t, create, func(v map[string]any) { v["ref"] = "" })},
		{name: "null body", event: "create", status: ports.DeliveryFailed, reason: "lacks ref_type", body: []byte(`null`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, scm.Config{})
			id := "d-" + strings.ReplaceAll(tt.name, " ", "-")
			id = strings.NewReplacer(",", "", "_", "-").Replace(id)
			if err := e.process(tt.event, id, tt.body); err != nil {
				t.Fatalf("ProcessDelivery: %v", err)
			}
			d, _ := e.delivery(id)
			if d.Status != tt.status || d.ProcessedAt == nil || !d.ProcessedAt.Equal(fixture.Epoch) {
				t.Errorf("delivery %s %q at %v, want %s", d.Status, d.Error, d.ProcessedAt, tt.status)
			}
			if tt.reason != "" && !strings.Contains(d.Error, tt.reason) || tt.reason == "" && d.Error != "" {
				t.Errorf("reason %q, want %q", d.Error, tt.reason)
			}
			got := e.activity()
			if tt.want == nil {
				if len(got) != 0 {
					t.Errorf("activity %+v", got)
				}
				return
			}
			want := *tt.want
			want.ID, want.RepoID, want.At, want.Source, want.DeliveryID = "delivery:"+id, 101, fixture.Epoch, "webhook", id
			if len(got) != 1 || got[0] != want {
				t.Errorf("activity %+v\nwant      %+v", got, want)
			}
		})
	}
}

func TestProcessDeliveryIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	if err := e.process("push", "d1", payload(t, "push")); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	if err := e.process("pull_request", "d2", payload(t, "pull_request_opened")); err != nil {
		t.Fatal(err)
	}
	first := e.activity()
	e.clock.Advance(time.Minute)
	for _, id := range []string{"d1", "d2", "d1"} {
		if err := e.svc.ProcessDelivery(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if again := e.activity(); len(again) != 2 || fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("activity after processing again %+v\nfirst %+v", again, first)
	}
	if e.scm.finishes != 5 {
		t.Errorf("%d finishes", e.scm.finishes)
	}

	// The activity reads back through the API, newest first.
	ids := e.seed(alice, "gho_alice", webRepo)
	e.prov.EXPECT().ListActivity(gomock.Any(), "gho_alice", "acme", "web", gomock.Any()).Return(nil, "", nil)
	list, _, err := e.svc.Activity(as(alice), ids[0], ports.Page{})
	if err != nil || len(list) != 2 || list[0].Kind != "pull_request" || list[1].Summary != "alice pushed 3 commits to main" {
		t.Errorf("Activity = %+v, %v", list, err)
	}
}

func TestProcessDeliveryStoreErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	if _, err := e.receive("push", "d1", payload(t, "push")); err != nil {
		t.Fatal(err)
	}
	fail := &ports.Error{Kind: ports.KindUnavailable, Message: "database is locked"}

	// Store errors are returned, so the job runs again, and the delivery
	// stays pending until it succeeds.
	e.scm.appendErr = fail
	if err := e.svc.ProcessDelivery(context.Background(), "d1"); !errors.Is(err, fail) {
		t.Errorf("append failure: %v", err)
	}
	e.scm.finishErr = fail
	if err := e.svc.ProcessDelivery(context.Background(), "d1"); !errors.Is(err, fail) {
		t.Errorf("finish failure: %v", err)
	}
	if d, _ := e.delivery("d1"); d.Status != ports.DeliveryPending {
		t.Errorf("status %s", d.Status)
	}
	if err := e.svc.ProcessDelivery(context.Background(), "d1"); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.delivery("d1"); d.Status != ports.DeliveryProcessed || len(e.activity()) != 1 {
		t.Errorf("status %s, activity %+v", d.Status, e.activity())
	}

	// A delivery that is not stored is dropped: running again cannot help.
	if err := e.svc.ProcessDelivery(context.Background(), "unknown"); err != nil {
		t.Errorf("unknown delivery: %v", err)
	}
}

func BenchmarkReceiveWebhook(b *testing.B) {
	e := newEnv(b, scm.Config{})
	body := payload(b, "push")
	sig := sign(secret, body)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	n := 0
	for b.Loop() {
		n++
		if _, err := e.svc.ReceiveWebhook(ctx, scm.WebhookInput{Event: "push", DeliveryID: fmt.Sprint("d", n), Signature: sig, Body: bytes.NewReader(body)}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "deliveries/s")
}

// TestProcessDeliveries processes the deliveries of one batch together: a
// malformed payload fails its own delivery only, a missing delivery is
// dropped, and the batch's activity and outcomes are written in one
// transaction.
func TestProcessDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	obs := &obsRecorder{}
	d := e.deps
	d.Observer = obs
	svc := scm.New(scm.Config{PublicURL: publicURL, WebhookSecret: []byte(secret)}, d)
	push := payload(t, "push")
	for _, in := range []struct{ event, id string }{{"push", "d1"}, {"pull_request", "d2"}, {"ping", "d3"}, {"push", "d4"}} {
		body := push
		switch in.id {
		case "d2":
			body = payload(t, "pull_request_opened")
		case "d3":
			body = payload(t, "ping")
		case "d4":
			body = patch(t, push, func(v map[string]any) { delete(v, "repository") })
		}
		if _, err := svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: in.event, DeliveryID: in.id, Signature: sign(secret, body), Body: bytes.NewReader(body)}); err != nil {
			t.Fatalf("receive %s: %v", in.id, err)
		}
	}
	e.clock.Advance(2 * time.Second)
	if err := svc.ProcessDeliveries(context.Background(), []string{"d1", "d2", "d3", "d4", "absent"}); err != nil {
		t.Fatalf("ProcessDeliveries: %v", err)
	}
	want := map[string]string{"d1": ports.DeliveryProcessed, "d2": ports.DeliveryProcessed, "d3": ports.DeliveryIgnored, "d4": ports.DeliveryFailed}
	for id, status := range want {
		got, _ := e.delivery(id)
		if got.Status != status || got.ProcessedAt == nil || !got.ProcessedAt.Equal(fixture.Epoch.Add(2*time.Second)) {
			t.Errorf("%s: %s %q at %v, want %s", id, got.Status, got.Error, got.ProcessedAt, status)
		}
	}
	if got, _ := e.delivery("d4"); !strings.Contains(got.Error, "lacks repository.id") {
		t.Errorf("d4's reason %q", got.Error)
	}
	first := e.activity()
	if len(first) != 2 || first[0].ID != "delivery:d2" || first[1].ID != "delivery:d1" {
		t.Errorf("activity %+v, want d2's and d1's", first)
	}
	if !e.scm.finishInTx {
		t.Error("the outcomes were not recorded in a transaction")
	}
	if _, lags := obs.got(); !slices.Equal(lags, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second}) {
		t.Errorf("lags %v, want four of 2s", lags)
	}

	// The batch run again (a retry after its commit) adds nothing twice and
	// reports nothing again; the old single-delivery job too.
	e.clock.Advance(time.Minute)
	if err := svc.ProcessDeliveries(context.Background(), []string{"d4", "d1", "d2", "d3"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.ProcessDelivery(context.Background(), "d1"); err != nil {
		t.Fatal(err)
	}
	if again := e.activity(); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Errorf("activity after processing again %+v\nfirst %+v", again, first)
	}
	if _, lags := obs.got(); len(lags) != 4 {
		t.Errorf("lags %v after processing again, want the first four only", lags)
	}
	if got, _ := e.delivery("d4"); got.Status != ports.DeliveryFailed {
		t.Errorf("d4 %s after processing again", got.Status)
	}
	if err := svc.ProcessDeliveries(context.Background(), nil); err != nil {
		t.Errorf("ProcessDeliveries of none: %v", err)
	}
}

// TestProcessDeliveriesStoreErrors fails a store call of a batch: the whole
// batch fails, so that its job runs again, and nothing of it is kept.
func TestProcessDeliveriesStoreErrors(t *testing.T) {
	t.Parallel()
	fail := &ports.Error{Kind: ports.KindUnavailable, Message: "database is locked"}
	for _, step := range []string{"get", "append", "finish"} {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, scm.Config{})
			obs := &obsRecorder{}
			d := e.deps
			d.Observer = obs
			svc := scm.New(scm.Config{PublicURL: publicURL, WebhookSecret: []byte(secret)}, d)
			ids := []string{"d1", "d2"}
			for i, id := range ids {
				body := payload(t, "push")
				if i == 1 {
					body = payload(t, "pull_request_opened")
				}
				event := map[int]string{0: "push", 1: "pull_request"}[i]
				if _, err := svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: event, DeliveryID: id, Signature: sign(secret, body), Body: bytes.NewReader(body)}); err != nil {
					t.Fatal(err)
				}
			}
			switch step {
			case "get":
				e.scm.getErr = fail
			case "append":
				e.scm.appendErr = fail
			case "finish":
				e.scm.finishErr = fail
			}
			if err := svc.ProcessDeliveries(context.Background(), ids); !errors.Is(err, fail) {
				t.Fatalf("ProcessDeliveries = %v, want the store's error", err)
			}
			for _, id := range ids {
				if got, _ := e.delivery(id); got.Status != ports.DeliveryPending {
					t.Errorf("%s: %s after the failure", id, got.Status)
				}
			}
			if got := e.activity(); len(got) != 0 {
				t.Errorf("activity %+v kept after the failure", got)
			}
			if _, lags := obs.got(); len(lags) != 0 {
				t.Errorf("lags %v reported for a failed batch", lags)
			}
			if err := svc.ProcessDeliveries(context.Background(), ids); err != nil {
				t.Fatalf("ProcessDeliveries again: %v", err)
			}
			if got := e.activity(); len(got) != 2 {
				t.Errorf("activity %+v after the retry, want 2 entries", got)
			}
			if _, lags := obs.got(); len(lags) != 2 {
				t.Errorf("lags %v after the retry, want 2", lags)
			}
		})
	}
}
