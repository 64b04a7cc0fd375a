package scm_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// obsRecorder is an Observer that records the webhooks it hears.
type obsRecorder struct {
	ports.NopObserver
	mu    sync.Mutex
	heard []string
	lags  []time.Duration
}

func (r *obsRecorder) WebhookReceived(o ports.WebhookOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, string(o))
}

func (r *obsRecorder) WebhookProcessed(lag time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lags = append(r.lags, lag)
}

func (r *obsRecorder) got() ([]string, []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.heard), slices.Clone(r.lags)
}

func TestObserverHearsEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	obs := &obsRecorder{}
	d := e.deps
	d.Observer = obs
	svc := scm.New(scm.Config{PublicURL: publicURL, WebhookSecret: []byte(secret)}, d)
	receive := func(id string, body []byte, signature string) {
		t.Helper()
		_, _ = svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "push", DeliveryID: id, Signature: signature, Body: bytes.NewReader(body)})
	}
	body := payload(t, "push")
	good := sign(secret, body)
	receive("d1", body, good)
	receive("d1", body, good)                         // the same delivery again
	receive("d2", body, good)                         // the same body under another id: a replay
	receive("d3", body, sign("not the secret", body)) // forged
	receive("d4", body, "")                           // unsigned
	receive("not a delivery id!", body, good)         // malformed
	receive("d5", []byte("not json"), sign(secret, []byte("not json")))
	heard, _ := obs.got()
	want := []string{"accepted", "duplicate", "duplicate", "bad_signature", "bad_signature", "refused", "refused"}
	if !slices.Equal(heard, want) {
		t.Errorf("heard %q, want %q", heard, want)
	}

	e.clock.Advance(3 * time.Second)
	for range 2 { // a job that runs again after it finished is not a second completion
		if err := svc.ProcessDelivery(context.Background(), "d1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.ProcessDelivery(context.Background(), "absent"); err != nil {
		t.Fatal(err)
	}
	if _, lags := obs.got(); !slices.Equal(lags, []time.Duration{3 * time.Second}) {
		t.Errorf("lags %v, want [3s]", lags)
	}
}
