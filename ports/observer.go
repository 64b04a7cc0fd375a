package ports

import "time"

// Observer hears what the cores do, for a host to count (as Prometheus
// metrics, say). Its methods are called where the work happens: they must
// be quick, must not block and must be safe for concurrent use. A core
// given no Observer uses NopObserver.
type Observer interface {
	// ToolCall is called once for each tool call the assistant handles, in
	// chat or by voice, when its outcome is known. tool is the registry's
	// name of the tool, or UnknownTool when the call named none the
	// registry has: a name the model made up never reaches an Observer. A
	// call that waits for confirmation is reported twice: pending when it
	// is asked for, and again (ok, failed or rejected) when a human decides
	// it, or when deciding it finds it expired; one the expiry sweep marks
	// expired is reported only as ConfirmationDecided(expired).
	ToolCall(tool string, outcome ToolCallOutcome)
	// ConfirmationDecided is called once for each confirmation that leaves
	// pending: approved, rejected, or expired (found so when decided, or
	// marked so by the expiry sweep).
	ConfirmationDecided(status ConfirmationStatus)
	// WebhookReceived is called once for each webhook delivery answered.
	WebhookReceived(outcome WebhookOutcome)
	// WebhookProcessed is called once for each delivery turned into
	// activity (or marked ignored or failed), lag after it was received;
	// processing a delivery again that was finished before is not reported.
	WebhookProcessed(lag time.Duration)
	// VoiceCallStarted is called once for each realtime call started through
	// the server, whose token usage is then metered.
	VoiceCallStarted()
	// SpecStageGenerated is called once for each specification artifact
	// stored: its stage, the repair turns its generation took, and the
	// findings left on it by kind (see SpecFindingKinds; a kind not among
	// them may be counted as SpecFindingOther).
	SpecStageGenerated(stage Stage, repairTurns int, findings map[string]int)
}

// SpecFindingKinds are the kinds of the findings the specification engine
// leaves on its artifacts (SpecGeneration.FindingsByKind): the bounded set
// an Observer may use as labels.
var SpecFindingKinds = []string{
	"unknown_id", "uncovered", "dependency", "compound_criterion", "oversized_story",
	"criteria_mismatch", "grounding_path", "grounding_command", "missing", "repository", "cross_prp",
}

// SpecFindingOther is the kind an Observer counts a finding under whose
// kind is not one of SpecFindingKinds.
const SpecFindingOther = "other"

// UnknownTool is the tool ToolCall is given for a call that named no tool
// of the registry.
const UnknownTool = ""

// ToolCallOutcome is how a tool call ended.
type ToolCallOutcome string

// The outcomes of a tool call.
const (
	ToolCallOK       ToolCallOutcome = "ok"       // ran and succeeded
	ToolCallFailed   ToolCallOutcome = "failed"   // ran and failed, or could not run (the reply was cancelled, the tool policy unreadable)
	ToolCallRefused  ToolCallOutcome = "refused"  // not run: unknown tool, arguments that fail its schema, or past the limit of tool rounds
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

// VoiceCallStarted does nothing.
func (NopObserver) VoiceCallStarted() {}

// SpecStageGenerated does nothing.
func (NopObserver) SpecStageGenerated(Stage, int, map[string]int) {}
