package scm_test

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// TestReceiveWebhookForm receives deliveries as GitHub sends them for a
// webhook of content type application/x-www-form-urlencoded: the signature
// covers the form, and the JSON of its payload field is what is stored.
func TestReceiveWebhookForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	body := payload(t, "push")
	form := []byte(url.Values{"payload": {string(body)}}.Encode())
	tests := []struct {
		name, contentType, sig string
		body                   []byte
		kind                   ports.Kind // "" when stored
	}{
		{"form", "application/x-www-form-urlencoded", sign(secret, form), form, ""},
		{"form with a charset", "application/x-www-form-urlencoded; charset=utf-8", sign(secret, form), form, ""},
		{"JSON with a charset", "application/json; charset=utf-8", sign(secret, body), body, ""},
		{"form signed as its JSON", "application/x-www-form-urlencoded", sign(secret, body), form, ports.KindUnauthenticated},
		{"form without payload", "application/x-www-form-urlencoded", sign(secret, []byte("x=1")), []byte("x=1"), ports.KindMalformed},
		{"form with two payloads", "application/x-www-form-urlencoded", sign(secret, append(form[:len(form):len(form)], "&payload=%7B%7D"...)),
			append(form[:len(form):len(form)], "&payload=%7B%7D"...), ports.KindMalformed},
		{"form of not JSON", "application/x-www-form-urlencoded", sign(secret, []byte("payload=%7B")), []byte("payload=%7B"), ports.KindMalformed},
		{"not a form", "application/x-www-form-urlencoded", sign(secret, []byte("%zz")), []byte("%zz"), ports.KindMalformed},
		{"JSON sent as a form", "application/x-www-form-urlencoded", sign(secret, body), body, ports.KindMalformed},
		{"XML", "application/xml", sign(secret, body), body, ports.KindUnsupportedMedia},
		{"a bad media type", "application/", sign(secret, body), body, ports.KindUnsupportedMedia},
	}
	for i, tt := range tests {
		id := "form-" + string(rune('a'+i))
		_, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "push", DeliveryID: id,
			Signature: tt.sig, ContentType: tt.contentType, Body: bytes.NewReader(tt.body)})
		d, stored := e.delivery(id)
		if tt.kind != "" {
			wantErr(t, tt.name, err, tt.kind, "")
			if stored {
				t.Errorf("%s: stored", tt.name)
			}
			continue
		}
		if err != nil || !stored || !bytes.Equal(d.Payload, body) {
			t.Errorf("%s: %v; stored %v %.40q", tt.name, err, stored, d.Payload)
		}
		// Each stored delivery is the same event and payload, but a form and
		// JSON, or another Content-Type parameter, are other raw bodies
		// only for the first two; the third body repeats none of them.
		e.clock.Advance(scm.DefaultReplayWindow + time.Second)
	}
	if err := e.svc.ProcessDelivery(context.Background(), "form-a"); err != nil {
		t.Fatal(err)
	}
	if a := e.activity(); len(a) != 1 || a[0].Kind != "push" || a[0].SHA == "" {
		t.Errorf("activity of a form delivery: %+v", a)
	}
}

// TestReceiveWebhookReplay sends one signed body under several delivery
// ids: only the first is stored and processed; after the replay window it
// is new again. The signature covers the body, not the event's name, so the
// same body under another X-GitHub-Event is a replay too (issue 30).
func TestReceiveWebhookReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{ReplayWindow: time.Hour})
	body := payload(t, "push")
	for _, tc := range []struct {
		id, event string
		advance   time.Duration
		dup       bool
	}{
		{"first", "push", 0, false},
		{"first", "push", 0, true},              // GitHub's redelivery
		{"replayed", "push", time.Minute, true}, // a new id, within the window
		{"other-event", "create", 0, true},
		{"after-window", "push", time.Hour, false},
		{"replayed-again", "push", time.Minute, true},
		{"replayed-as-release", "release", 0, true},
	} {
		e.clock.Advance(tc.advance)
		dup, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: tc.event, DeliveryID: tc.id,
			Signature: sign(secret, body), Body: bytes.NewReader(body)})
		if err != nil || dup != tc.dup {
			t.Errorf("%s: duplicate %v, %v; want %v", tc.id, dup, err, tc.dup)
		}
		if _, stored := e.delivery(tc.id); !stored && !tc.dup {
			t.Errorf("%s: not stored", tc.id)
		}
	}
	for _, id := range []string{"replayed", "other-event", "replayed-again", "replayed-as-release"} {
		if _, stored := e.delivery(id); stored {
			t.Errorf("the replay %s was stored", id)
		}
	}
	if got := jobIDs(e); strings.Join(got, ",") != "after-window,first" {
		t.Errorf("jobs %v", got)
	}
	e.scm.mu.Lock()
	defer e.scm.mu.Unlock()
	if n := len(e.scm.claims); n == 0 || !e.scm.claims[n-1].Equal(e.clock.Now().Add(-time.Hour)) {
		t.Errorf("claims since %v, want the last an hour before now", e.scm.claims)
	}
}

// TestReceiveWebhookSpools reads bodies larger than the spool threshold: no
// more than the threshold is ever held in memory before the signature is
// checked, the rest goes to a temporary file that is removed, and a body
// with a good signature is stored whole.
func TestReceiveWebhookSpools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const threshold = 64 << 10
	e := newEnv(t, scm.Config{SpoolThreshold: threshold, SpoolDir: dir})
	var mu sync.Mutex
	most := 0
	scm.OnWebhookBuffered(e.svc, func(n int) {
		mu.Lock()
		defer mu.Unlock()
		most = max(most, n)
	})
	spy := &spillSpy{dir: dir, after: threshold}
	big := []byte(`{"zen":"` + strings.Repeat("z", 5<<20) + `"}`)
	small := []byte(`{"zen":"small"}`)
	for _, tc := range []struct {
		name string
		body []byte
		sig  string
		kind ports.Kind
	}{
		{"a big body, badly signed", big, sign("guess", big), ports.KindUnauthenticated},
		{"a big body", big, sign(secret, big), ""},
		{"a small body", small, sign(secret, small), ""},
		{"a body over 25 MiB", bytes.Repeat([]byte(" "), scm.MaxWebhookBody+1), sign(secret, nil), ports.KindPayloadTooLarge},
	} {
		_, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: strings.ReplaceAll(tc.name, " ", "-")[:10] + "x",
			Signature: tc.sig, Body: spy.reading(bytes.NewReader(tc.body))})
		if tc.kind != "" {
			wantErr(t, tc.name, err, tc.kind, "")
		} else if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 0 {
			t.Errorf("%s: temporary files left: %v", tc.name, names)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most == 0 || most > threshold || !spy.sawFile {
		t.Errorf("at most %d bytes held in memory, want 1..%d; spilled to a file: %v", most, threshold, spy.sawFile)
	}
	stored := 0
	for _, id := range storedIDs(e) {
		if d, _ := e.delivery(id); bytes.Equal(d.Payload, big) {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("the big body stored %d times, want once, whole", stored)
	}
}

// blockingBody is a body whose first Read says so on reading, then waits
// for release.
type blockingBody struct {
	reading chan<- struct{}
	release <-chan struct{}
	once    sync.Once
	r       io.Reader
}

func (b *blockingBody) Read(p []byte) (int, error) {
	b.once.Do(func() {
		b.reading <- struct{}{}
		<-b.release
	})
	return b.r.Read(p)
}

// TestReceiveWebhookBoundsReaders holds as many bodies mid-read as there are
// readers: the next delivery waits, then is refused as unavailable with a
// RetryAfter without its body being read; once the readers are free,
// deliveries go through again.
func TestReceiveWebhookBoundsReaders(t *testing.T) {
	t.Parallel()
	const readers = 3
	e := newEnv(t, scm.Config{WebhookReaders: readers, WebhookReadWait: 20 * time.Millisecond})
	reading, release := make(chan struct{}), make(chan struct{})
	results := make(chan error, readers)
	for i := range readers {
		body := []byte(`{"n":` + string(rune('0'+i)) + `}`)
		go func() {
			_, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: "held-" + string(rune('0'+i)),
				Signature: sign(secret, body), Body: &blockingBody{reading: reading, release: release, r: bytes.NewReader(body)}})
			results <- err
		}()
	}
	for range readers {
		<-reading
	}
	extra := &countingReader{r: strings.NewReader(`{"n":9}`)}
	_, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: "extra",
		Signature: sign(secret, []byte(`{"n":9}`)), Body: extra})
	if pe := wantErr(t, "a delivery beyond the readers", err, ports.KindUnavailable, ""); pe.RetryAfter <= 0 {
		t.Errorf("RetryAfter %v", pe.RetryAfter)
	}
	if extra.reads != 0 {
		t.Errorf("the refused delivery's body was read")
	}
	// A caller that leaves while waiting gets its context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.svc.ReceiveWebhook(ctx, scm.WebhookInput{Event: "ping", DeliveryID: "gone", Signature: sign(secret, []byte(`{}`)), Body: strings.NewReader(`{}`)})
	if err != context.Canceled {
		t.Errorf("a caller gone while waiting: %v", err)
	}
	close(release)
	for range readers {
		if err := <-results; err != nil {
			t.Errorf("a held delivery: %v", err)
		}
	}
	if _, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: "extra",
		Signature: sign(secret, []byte(`{"n":9}`)), Body: strings.NewReader(`{"n":9}`)}); err != nil {
		t.Errorf("a delivery once the readers are free: %v", err)
	}
}

type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

// spillSpy reads a body and notes whether, once more than after bytes were
// read (and so written on), a temporary file is in dir.
type spillSpy struct {
	dir     string
	after   int
	n       int
	r       io.Reader
	sawFile bool
}

func (s *spillSpy) reading(r io.Reader) io.Reader { s.r, s.n = r, 0; return s }

func (s *spillSpy) Read(p []byte) (int, error) {
	if s.n > s.after {
		if names, _ := os.ReadDir(s.dir); len(names) > 0 {
			s.sawFile = true
		}
	}
	n, err := s.r.Read(p)
	s.n += n
	return n, err
}

// TestReceiveWebhookAdmit: WebhookInput.Admit is asked once the signature's
// form is accepted and before the body is read or a reader taken; its
// refusal is the delivery's answer, the body unread; what it admits is
// released once the body is read, before the delivery is answered.
func TestReceiveWebhookAdmit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookReaders: 1})
	var asked, released int
	admit := func(refuse error) func(context.Context) (func(), error) {
		return func(context.Context) (func(), error) {
			asked++
			if refuse != nil {
				return nil, refuse
			}
			return func() { released++ }, nil
		}
	}
	body := []byte(`{"zen":"admitted"}`)

	unsigned := &countingReader{r: bytes.NewReader(body)}
	_, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: "unsigned", Body: unsigned, Admit: admit(nil)})
	wantErr(t, "no signature", err, ports.KindUnauthenticated, "")
	if asked != 0 || unsigned.reads != 0 {
		t.Errorf("a delivery without a signature: admit asked %d times, body read %d times", asked, unsigned.reads)
	}

	refused := &countingReader{r: bytes.NewReader(body)}
	_, err = e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: "refused",
		Signature: sign(secret, body), Body: refused, Admit: admit(&ports.Error{Kind: ports.KindRateLimited, Message: "busy"})})
	wantErr(t, "refused by admit", err, ports.KindRateLimited, "")
	if _, stored := e.delivery("refused"); stored || refused.reads != 0 || released != 0 {
		t.Errorf("a refused delivery: stored %v, body read %d times, released %d", stored, refused.reads, released)
	}

	asked = 0
	for _, id := range []string{"admitted", "admitted-again"} { // the one reader was given back each time
		if _, err := e.svc.ReceiveWebhook(context.Background(), scm.WebhookInput{Event: "ping", DeliveryID: id,
			Signature: sign(secret, body), Body: bytes.NewReader(body), Admit: admit(nil)}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if _, stored := e.delivery("admitted"); !stored || asked != 2 || released != 2 {
		t.Errorf("admitted deliveries: stored %v, admit asked %d times, released %d", stored, asked, released)
	}
}
