package scm

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// WebhookInput is one webhook delivery as received: the event kind
// (X-GitHub-Event), the delivery's id (X-GitHub-Delivery), the signature
// (X-Hub-Signature-256, "sha256=<hex>") and the raw body.
type WebhookInput struct {
	Event      string
	DeliveryID string
	Signature  string
	Body       []byte
}

// ProcessDeliveryArgs is the background job that turns one stored webhook
// delivery into repository activity.
type ProcessDeliveryArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job for the queue.
func (ProcessDeliveryArgs) Kind() string { return "scm.process_delivery" }

// The bounds of a delivery.
const (
	MaxWebhookBody  = 25 << 20
	maxEventLen     = 64
	maxDeliveryLen  = 128
	signaturePrefix = "sha256="
)

// ReceiveWebhook stores a delivery, once, and enqueues its processing in the
// same transaction, and returns once that transaction committed. It reports
// duplicate when a delivery with the id was stored before (or by a
// concurrent call), in which case nothing is enqueued. It reads nothing and
// decodes nothing beyond checking the body is JSON, so it answers fast.
//
// Concurrent calls share transactions (a group commit): a delivery arriving
// while Config.WebhookWriters transactions are under way waits, with the
// others arriving meanwhile, and they are stored in one transaction of at
// most Config.WebhookBatch deliveries: one statement for the deliveries, one
// for their jobs, one commit. The transaction is ReceiveWebhook's own: it
// does not join one ctx carries. Should it fail, each of its deliveries is
// tried again in a transaction of its own, so one bad delivery fails only
// its own call. When ctx ends, ReceiveWebhook returns ctx's error at once,
// but a transaction already under way with the delivery still commits; a
// retry of the delivery is then a duplicate.
//
// Errors: unavailable when no webhook secret is configured; unauthenticated
// when the signature is missing or is not the HMAC-SHA256 of the body with
// the secret; malformed when the event or delivery id is missing or odd, or
// the body is not JSON; payload_too_large above 25 MiB; the store's and the
// queue's errors; ctx's error. Nothing is stored when it fails, except as
// said when ctx ends.
func (s *Service) ReceiveWebhook(ctx context.Context, in WebhookInput) (duplicate bool, err error) {
	if len(s.cfg.WebhookSecret) == 0 {
		return false, &ports.Error{Kind: ports.KindUnavailable, Message: "webhooks are not configured"}
	}
	if len(in.Body) > MaxWebhookBody {
		return false, &ports.Error{Kind: ports.KindPayloadTooLarge, Message: "a webhook delivery may be at most 25 MiB"}
	}
	if in.Signature == "" {
		return false, &ports.Error{Kind: ports.KindUnauthenticated, Message: "the X-Hub-Signature-256 signature is missing"}
	}
	if !s.signed(in.Signature, in.Body) {
		return false, &ports.Error{Kind: ports.KindUnauthenticated, Message: "the X-Hub-Signature-256 signature does not match the body"}
	}
	var fields []ports.FieldError
	if !headerToken(in.Event, maxEventLen) {
		fields = append(fields, ports.FieldError{Field: "X-GitHub-Event", Reason: "required: an event name"})
	}
	if !headerToken(in.DeliveryID, maxDeliveryLen) {
		fields = append(fields, ports.FieldError{Field: "X-GitHub-Delivery", Reason: "required: a delivery id of at most 128 letters, digits or -_."})
	}
	if err := fieldsError(ports.KindMalformed, fields...); err != nil {
		return false, err
	}
	if !json.Valid(in.Body) {
		return false, &ports.Error{Kind: ports.KindMalformed, Message: "the webhook body is not JSON"}
	}
	d := ports.WebhookDelivery{ID: in.DeliveryID, Event: in.Event, Payload: in.Body, Status: ports.DeliveryPending, ReceivedAt: s.d.Clock.Now()}
	stored, err := s.ingest.Do(ctx, d)
	if err != nil {
		return false, err
	}
	return !stored, nil
}

// signed reports, in constant time, whether sig is "sha256=" and the hex
// HMAC-SHA256 of body with the webhook secret.
func (s *Service) signed(sig string, body []byte) bool {
	h, ok := strings.CutPrefix(sig, signaturePrefix)
	if !ok || len(h) != hex.EncodedLen(sha256.Size) {
		return false
	}
	got, err := hex.DecodeString(h)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, s.cfg.WebhookSecret)
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// headerToken reports whether v is 1..n letters, digits or -_. (event names
// and delivery GUIDs are).
func headerToken(v string, n int) bool {
	if v == "" || len(v) > n {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ProcessDelivery turns a stored delivery into repository activity; the
// worker calls it for each ProcessDeliveryArgs job. Push, pull_request,
// create, delete, release and issue_comment events become activity entries
// (delivery processed); other events, and actions of those that say nothing
// worth recording, are kept and marked ignored; a payload that lacks what
// its event needs is marked failed with the reason, and no error is
// returned, since running again would not help. Processing again adds no
// entry twice: their ids derive from the delivery's. Errors: the store's, so
// that the job runs again; a delivery that does not exist is logged and
// dropped.
func (s *Service) ProcessDelivery(ctx context.Context, deliveryID string) error {
	log := s.log.With("delivery_id", deliveryID)
	d, err := s.d.Store.GetDelivery(ctx, deliveryID)
	if errors.Is(err, ports.ErrNotFound) {
		log.WarnContext(ctx, "webhook delivery dropped: it is not stored")
		return nil
	}
	if err != nil {
		return err
	}
	entries, status, reason := activityOf(d)
	if len(entries) > 0 {
		if err := s.d.Store.AppendActivity(ctx, entries...); err != nil {
			return err
		}
	}
	if status == ports.DeliveryFailed {
		log.WarnContext(ctx, "webhook delivery failed", "event", d.Event, "reason", reason)
	}
	return s.d.Store.FinishDelivery(ctx, d.ID, status, reason, s.d.Clock.Now())
}
