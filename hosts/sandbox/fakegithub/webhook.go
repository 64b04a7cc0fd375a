package fakegithub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"
)

// The headers of a webhook delivery.
const (
	HeaderEvent       = "X-GitHub-Event"
	HeaderDelivery    = "X-GitHub-Delivery"
	HeaderSignature   = "X-Hub-Signature-256"
	HeaderSignatureV1 = "X-Hub-Signature"
	HeaderHookID      = "X-GitHub-Hook-ID"
)

// HookshotUserAgent is the User-Agent GitHub sends webhook deliveries with.
const HookshotUserAgent = "GitHub-Hookshot/5a1c6ee"

// Sign returns the X-Hub-Signature-256 value GitHub sends with body when the
// webhook's secret is secret: "sha256=" and the lower-case hex HMAC-SHA256
// of the raw body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// signSHA1 is the legacy X-Hub-Signature value GitHub still sends.
func signSHA1(secret, body []byte) string {
	m := hmac.New(sha1.New, secret)
	m.Write(body)
	return "sha1=" + hex.EncodeToString(m.Sum(nil))
}

// Delivery is one webhook delivery: the headers and the raw body GitHub
// POSTs to a webhook's URL.
type Delivery struct {
	// ID is the X-GitHub-Delivery value, a UUID.
	ID     string
	Event  string
	Header http.Header
	Body   []byte
}

// HookID is the X-GitHub-Hook-ID of the deliveries NewDelivery builds.
const HookID int64 = 512367001

// NewDelivery builds an unsigned delivery of event (the X-GitHub-Event
// value, such as "push") whose body is payload as JSON: one of this
// package's event builders, any value encoding/json accepts, or raw JSON as
// []byte or json.RawMessage. The headers are GitHub's: X-GitHub-Event,
// X-GitHub-Delivery (a fresh UUID), X-GitHub-Hook-ID,
// X-GitHub-Hook-Installation-Target-ID and -Type, Content-Type
// application/json and User-Agent GitHub-Hookshot/…; Signed adds the
// signatures. It panics if payload cannot be encoded, as a test's mistake.
func NewDelivery(event string, payload any) Delivery {
	var body []byte
	switch p := payload.(type) {
	case []byte:
		body = p
	case json.RawMessage:
		body = p
	default:
		var err error
		if body, err = json.Marshal(payload); err != nil {
			panic(fmt.Sprintf("fakegithub: encoding the %s payload: %v", event, err))
		}
	}
	target := "0"
	var probe struct {
		Repository struct {
			ID int64 `json:"id"`
		} `json:"repository"`
	}
	if json.Unmarshal(body, &probe) == nil && probe.Repository.ID != 0 {
		target = strconv.FormatInt(probe.Repository.ID, 10)
	}
	id := uuid.NewString()
	h := http.Header{}
	h.Set("Accept", "*/*")
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", HookshotUserAgent)
	h.Set(HeaderEvent, event)
	h.Set(HeaderDelivery, id)
	h.Set(HeaderHookID, strconv.FormatInt(HookID, 10))
	h.Set("X-GitHub-Hook-Installation-Target-ID", target)
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	return Delivery{ID: id, Event: event, Header: h, Body: body}
}

// NewEventDelivery is NewDelivery of one of this package's event builders,
// named by its EventName.
func NewEventDelivery(e Event) Delivery { return NewDelivery(e.EventName(), e) }

// Signed returns a copy of the delivery carrying the X-Hub-Signature-256 and
// X-Hub-Signature headers GitHub computes with secret.
func (d Delivery) Signed(secret []byte) Delivery {
	d.Header = d.Header.Clone()
	d.Header.Set(HeaderSignature, Sign(secret, d.Body))
	d.Header.Set(HeaderSignatureV1, signSHA1(secret, d.Body))
	return d
}

// Form returns a copy of the delivery as GitHub sends it for a webhook
// whose content type is application/x-www-form-urlencoded (the default of a
// new webhook): the body is the form "payload=<the JSON, URL-encoded>", the
// Content-Type says so, and the signatures are dropped: sign the form with
// Signed, since GitHub signs the raw body.
func (d Delivery) Form() Delivery {
	d.Header = d.Header.Clone()
	d.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	d.Header.Del(HeaderSignature)
	d.Header.Del(HeaderSignatureV1)
	d.Body = []byte(url.Values{"payload": {string(d.Body)}}.Encode())
	return d
}

// WithID returns a copy of the delivery with another X-GitHub-Delivery id,
// as GitHub's "Redeliver" keeps the id and a new event gets a new one.
func (d Delivery) WithID(id string) Delivery {
	d.Header = d.Header.Clone()
	d.Header.Set(HeaderDelivery, id)
	d.ID = id
	return d
}

// Request returns the POST of the delivery to url, ready for an
// http.Client, or to hand to a handler's ServeHTTP.
func (d Delivery) Request(ctx context.Context, url string) (*http.Request, error) {
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(d.Body))
	if err != nil {
		return nil, err
	}
	r.Header = d.Header.Clone()
	return r, nil
}
