package ports

import "time"

// Observer hears what the cores do, for a host to count (as Prometheus
// metrics, say). Its methods are called where the work happens: they must
// be quick, must not block and must be safe for concurrent use. A core
// given no Observer uses NopObserver.
type Observer interface {
	// ToolCall is called once for each tool call the assistant handles, in
	// chat or by voice, when its outcome is known.
	ToolCall(tool string, outcome ToolCallOutcome)
	// ConfirmationDecided is called when a confirmation leaves pending:
	// approved, rejected, or found expired.
	ConfirmationDecided(status ConfirmationStatus)
	// WebhookReceived is called for each webhook delivery answered.
	WebhookReceived(outcome WebhookOutcome)
	// WebhookProcessed is called when a delivery has been turned into
	// activity, lag after it was received.
	WebhookProcessed(lag time.Duration)
}

// ToolCallOutcome is how a tool call ended.
type ToolCallOutcome string

// The outcomes of a tool call.
const (
	ToolCallOK       ToolCallOutcome = "ok"       // ran and succeeded
	ToolCallFailed   ToolCallOutcome = "failed"   // ran and failed
	ToolCallRefused  ToolCallOutcome = "refused"  // not run: unknown tool or arguments that fail its schema
	ToolCallPending  ToolCallOutcome = "pending"  // waits for a human decision
	ToolCallRejected ToolCallOutcome = "rejected" // a human said no, or the confirmation expired
)

// WebhookOutcome is how a webhook delivery was answered.
type WebhookOutcome string

// The outcomes of a webhook delivery.
const (
	WebhookAccepted     WebhookOutcome = "accepted"      // new: queued for processing
	WebhookDuplicate    WebhookOutcome = "duplicate"     // seen before: answered, not queued again
	WebhookBadSignature WebhookOutcome = "bad_signature" // refused: no or a wrong signature
	WebhookRefused      WebhookOutcome = "refused"       // refused otherwise: malformed, too large, unknown repository, overloaded
)

// NopObserver is an Observer that hears nothing.
type NopObserver struct{}

// ToolCall implements Observer.
func (NopObserver) ToolCall(string, ToolCallOutcome) {}

// ConfirmationDecided implements Observer.
func (NopObserver) ConfirmationDecided(ConfirmationStatus) {}

// WebhookReceived implements Observer.
func (NopObserver) WebhookReceived(WebhookOutcome) {}

// WebhookProcessed implements Observer.
func (NopObserver) WebhookProcessed(time.Duration) {}
