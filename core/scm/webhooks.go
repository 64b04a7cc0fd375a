package scm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// WebhookInput is one webhook delivery as received: the event kind
// (X-GitHub-Event), the delivery's id (X-GitHub-Delivery), the signature
// (X-Hub-Signature-256, "sha256=<hex>"), the Content-Type and the raw body,
// read once.
type WebhookInput struct {
	Event       string
	DeliveryID  string
	Signature   string
	ContentType string
	Body        io.Reader
	// Admit, when set, is called once the signature's form and the
	// Content-Type are accepted, before the body is read and before one of
	// Config.WebhookReaders is taken: its error refuses the delivery, its
	// body unread; otherwise release is called once the body has been read
	// and checked. The HTTP transport bounds there the bodies read at once
	// from one client address, which it alone knows.
	Admit func(ctx context.Context) (release func(), err error)
}

// ProcessDeliveryArgs is the background job that turns one stored webhook
// delivery into repository activity. ReceiveWebhook enqueues
// ProcessDeliveriesArgs instead; jobs of this kind enqueued by earlier
// versions are still worked, by ProcessDelivery.
type ProcessDeliveryArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind names the job for the queue.
func (ProcessDeliveryArgs) Kind() string { return "scm.process_delivery" }

// ProcessDeliveriesArgs is the background job that turns the webhook
// deliveries stored by one transaction into repository activity, together:
// ReceiveWebhook enqueues one for each batch it stores.
type ProcessDeliveriesArgs struct {
	DeliveryIDs []string `json:"delivery_ids"`
}

// Kind names the job for the queue.
func (ProcessDeliveriesArgs) Kind() string { return "scm.process_deliveries" }

// The bounds of a delivery, and the defaults of reading them.
const (
	MaxWebhookBody = 25 << 20
	maxEventLen    = 64
	maxDeliveryLen = 128
	// DefaultWebhookReaders bounds the bodies read at once: with
	// DefaultSpoolThreshold, at most 16 MiB of unauthenticated bodies in
	// memory.
	DefaultWebhookReaders = 16
	// DefaultWebhookReadWait is how long a delivery waits for a reader.
	DefaultWebhookReadWait = 2 * time.Second
	// DefaultSpoolThreshold is the most of one body held in memory before
	// its signature is verified.
	DefaultSpoolThreshold = 1 << 20
	// DefaultReplayWindow is how long a delivery's digest is remembered.
	DefaultReplayWindow = 24 * time.Hour
	// webhookRetryAfter is the RetryAfter of a delivery refused for want
	// of a reader.
	webhookRetryAfter = 5 * time.Second
)

// ReceiveWebhook verifies a delivery's signature while it reads the body,
// then stores the delivery, once, and enqueues its processing in the same
// transaction, and returns once that transaction committed. It reports
// duplicate when a delivery with the id was stored before (or by a
// concurrent call), or when the same body was received within
// Config.ReplayWindow (a signed body replayed under a new delivery id, or
// under another event's name: the signature covers the body alone); then
// nothing is enqueued. It decodes nothing beyond checking the payload is
// JSON, so it answers fast.
//
// The signature's form, the body's encodings (for GitHub: JSON, or a form
// whose "payload" field is the JSON) and the payloads are the provider's,
// read by Deps.Webhooks; the signature covers the raw body, and the JSON
// payload is what is stored. The body is read here, streamed through the
// provider's check: at most Config.WebhookReaders bodies are read at once, and
// of each at most Config.SpoolThreshold bytes are held in memory before its
// signature is verified (the rest in a temporary file, removed before
// ReceiveWebhook returns).
//
// Concurrent calls share transactions (a group commit): a delivery arriving
// while Config.WebhookWriters transactions are under way waits, with the
// others arriving meanwhile, and they are stored in one transaction of at
// most Config.WebhookBatch deliveries: one statement for the deliveries, one
// for the job processing them all (ProcessDeliveriesArgs), one commit. The
// transaction is ReceiveWebhook's own: it does not join one ctx carries.
// Should it fail, each of its deliveries is tried again in a transaction of
// its own, so one bad delivery fails only its own call. When ctx ends, ReceiveWebhook returns ctx's error at once,
// but a transaction already under way with the delivery still commits; a
// retry of the delivery is then a duplicate.
//
// Errors: unavailable when no webhook secret or Deps.Webhooks is
// configured, and (with RetryAfter) when no reader was free within Config.WebhookReadWait;
// WebhookInput.Admit's refusal, as it is;
// unauthenticated when the signature is missing or is not the HMAC-SHA256
// of the body with the secret; unsupported_media_type for a Content-Type
// other than JSON or a form; malformed when the event or delivery id is
// missing or odd, when the body cannot be read (wrapping the reader's
// error), or the payload is not JSON; payload_too_large above 25 MiB; the
// store's and the queue's errors; ctx's error. Nothing is stored when it
// fails, except as said when ctx ends. Each call is reported to
// Deps.Observer once, with how it was answered.
func (s *Service) ReceiveWebhook(ctx context.Context, in WebhookInput) (duplicate bool, err error) {
	defer func() { s.d.Observer.WebhookReceived(webhookOutcome(duplicate, err)) }()
	if len(s.cfg.WebhookSecret) == 0 || s.d.Webhooks == nil {
		return false, &ports.Error{Kind: ports.KindUnavailable, Message: "webhooks are not configured"}
	}
	check, err := s.d.Webhooks.CheckWebhook(in.Signature, in.ContentType, s.cfg.WebhookSecret)
	if err != nil {
		return false, err
	}
	body, digest, err := s.readSigned(ctx, check, in.Body, in.Admit)
	if err != nil {
		return false, err
	}
	var fields []ports.FieldError
	if !headerToken(in.Event, maxEventLen) {
		fields = append(fields, ports.FieldError{Field: "X-GitHub-Event", Reason: "required: an event name"})
	}
	if !headerToken(in.DeliveryID, maxDeliveryLen) {
		fields = append(fields, ports.FieldError{Field: "X-GitHub-Delivery", Reason: "required: a delivery id of at most 128 letters, digits or -_."})
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return false, err
	}
	payload, err := check.Payload(body)
	if err != nil {
		return false, err
	}
	d := ports.WebhookDelivery{ID: in.DeliveryID, Event: in.Event, Payload: payload, Status: ports.DeliveryPending, ReceivedAt: s.d.Clock.Now()}
	stored, err := s.ingest.Do(ctx, pendingDelivery{WebhookDelivery: d, digest: digest})
	if err != nil {
		return false, err
	}
	return !stored, nil
}

// webhookOutcome is how ReceiveWebhook answered a delivery.
func webhookOutcome(duplicate bool, err error) ports.WebhookOutcome {
	switch {
	case errors.Is(err, ports.ErrUnauthenticated):
		return ports.WebhookBadSignature
	case err != nil:
		return ports.WebhookRefused
	case duplicate:
		return ports.WebhookDuplicate
	}
	return ports.WebhookAccepted
}

// readSigned reads a delivery's body, once admit (when not nil) lets it
// and a reader is free, writing it to check (the provider's signature
// check) as it goes, and returns it when check verifies it, with the hex
// SHA-256 of the raw body: what the signature covers, so that whatever else
// a replay changes (the delivery id, the event's name) it has the same
// digest. What it holds of the body before that is known stays within
// Config.SpoolThreshold in memory; the rest is in a temporary file, removed
// before it returns.
//
// The provider's adapter knows the signature's form and how the body
// encodes the payload; the reading stays here, streamed through the check,
// so that the bound on unauthenticated bytes in memory and the bound on
// bodies read at once (Config.WebhookReaders) hold whatever the provider:
// go-github's ValidatePayload would read the whole body into memory first.
func (s *Service) readSigned(ctx context.Context, check ports.SCMWebhookCheck, body io.Reader,
	admit func(context.Context) (func(), error)) ([]byte, string, error) {
	if admit != nil {
		admitted, err := admit(ctx)
		if err != nil {
			return nil, "", err
		}
		defer admitted()
	}
	release, err := s.acquireReader(ctx)
	if err != nil {
		return nil, "", err
	}
	defer release()
	if body == nil {
		body = strings.NewReader("")
	}
	dig := sha256.New()
	sp := newSpool(s.cfg.SpoolThreshold, s.cfg.SpoolDir, s.buffered)
	defer sp.Close()
	n, err := io.Copy(io.MultiWriter(check, dig, sp), io.LimitReader(body, MaxWebhookBody+1))
	if err != nil {
		if _, ok := ports.AsError(err); ok {
			return nil, "", err // the spool's
		}
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		return nil, "", ports.Wrap(ports.KindMalformed, err, "reading the webhook body")
	}
	if n > MaxWebhookBody {
		return nil, "", &ports.Error{Kind: ports.KindPayloadTooLarge, Message: "a webhook delivery may be at most 25 MiB"}
	}
	if err := check.Verify(); err != nil {
		return nil, "", err
	}
	b, err := sp.Bytes()
	if err != nil {
		return nil, "", err
	}
	return b, hex.EncodeToString(dig.Sum(nil)), nil
}

// acquireReader takes one of Config.WebhookReaders, waiting at most
// Config.WebhookReadWait, and returns its release.
func (s *Service) acquireReader(ctx context.Context) (func(), error) {
	release := func() { <-s.readers }
	select {
	case s.readers <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(s.cfg.WebhookReadWait)
	defer t.Stop()
	select {
	case s.readers <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, &ports.Error{Kind: ports.KindUnavailable, RetryAfter: webhookRetryAfter,
			Message: "too many webhook deliveries are being received at once; retry shortly"}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
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
// worker calls it for each ProcessDeliveryArgs job. It is ProcessDeliveries
// of the one delivery.
func (s *Service) ProcessDelivery(ctx context.Context, deliveryID string) error {
	return s.ProcessDeliveries(ctx, []string{deliveryID})
}

// ProcessDeliveries turns stored deliveries into repository activity; the
// worker calls it for each ProcessDeliveriesArgs job. Push, pull_request,
// create, delete, release and issue_comment events become activity entries
// (delivery processed); other events, and actions of those that say nothing
// worth recording, are kept and marked ignored; a payload that lacks what
// its event needs is marked failed with the reason, without failing the
// others, since running again would not help. The payloads are read by
// Deps.Webhooks into typed events; the mapping to activity is this
// package's. The deliveries are read with one store call, and their
// activity appended and their outcomes recorded in one transaction, so the
// batch is processed all or nothing. Processing again adds no entry twice:
// their ids derive from the delivery's.
//
// Errors: unavailable without Deps.Webhooks; the store's, and Deps.Webhooks'
// other than malformed, so that the whole batch runs again. A delivery that
// does not exist is logged and dropped. Finishing a delivery that was
// pending is reported to Deps.Observer with the lag since it was received;
// one finished by an earlier run is not reported again.
func (s *Service) ProcessDeliveries(ctx context.Context, deliveryIDs []string) error {
	if len(deliveryIDs) == 0 {
		return nil
	}
	ds, err := s.d.Store.GetDeliveries(ctx, deliveryIDs)
	if err != nil {
		return err
	}
	if len(ds) < len(deliveryIDs) {
		s.dropMissing(ctx, deliveryIDs, ds)
	}
	if len(ds) == 0 {
		return nil
	}
	if s.d.Webhooks == nil {
		return &ports.Error{Kind: ports.KindUnavailable, Message: "webhooks are not configured"}
	}
	var entries []ports.SCMActivity
	finishes := make([]ports.DeliveryFinish, len(ds))
	for i, d := range ds {
		es, status, reason, err := s.activityOf(d)
		if err != nil {
			return err
		}
		entries = append(entries, es...)
		finishes[i] = ports.DeliveryFinish{ID: d.ID, Status: status, Error: reason}
	}
	now := s.d.Clock.Now()
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if len(entries) > 0 {
			if err := s.d.Store.AppendActivity(ctx, entries...); err != nil {
				return err
			}
		}
		return s.d.Store.FinishDeliveries(ctx, finishes, now)
	})
	if err != nil {
		return err
	}
	for i, d := range ds {
		if d.Status != ports.DeliveryPending { // finished by an earlier run
			continue
		}
		s.d.Observer.WebhookProcessed(now.Sub(d.ReceivedAt))
		if f := finishes[i]; f.Status == ports.DeliveryFailed {
			s.log.WarnContext(ctx, "webhook delivery failed", "delivery_id", d.ID, "event", d.Event, "reason", f.Error)
		}
	}
	return nil
}

// dropMissing logs each of ids that ds (the deliveries read of them) lacks.
func (s *Service) dropMissing(ctx context.Context, ids []string, ds []ports.WebhookDelivery) {
	found := make(map[string]bool, len(ds))
	for _, d := range ds {
		found[d.ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			found[id] = true // once
			s.log.WarnContext(ctx, "webhook delivery dropped: it is not stored", "delivery_id", id)
		}
	}
}
