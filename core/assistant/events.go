package assistant

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Event is one SSE event of a chat stream: Seq is its per-session id, Name
// one of the Event* names, Data the JSON of the matching *Data type.
type Event = ports.StreamEvent

// The names of stream events (docs/api.md, "Assistant").
const (
	EventContent              = "content"
	EventToolCall             = "tool_call"
	EventToolResult           = "tool_result"
	EventConfirmationRequired = "confirmation_required"
	EventDone                 = "done"
	EventError                = "error"
)

// The finish reasons of a done event.
const (
	FinishStop                 = "stop"
	FinishConfirmationRequired = "confirmation_required"
	FinishError                = "error"
	FinishLength               = "length"
	// FinishStopped ends a turn a user stopped (Service.Stop), beside the
	// four usual finish reasons.
	FinishStopped = "stopped"
)

// Codes of error events and errors this package adds to the ports' kinds.
const (
	CodeToolLoopLimit     = "tool_loop_limit"     // the model kept calling tools
	CodeCancelled         = "cancelled"           // the turn was cancelled: its process shut down
	CodeContentFilter     = "content_filter"      // the provider filtered the answer
	CodeTurnRunning       = "turn_running"        // conflict: the session has a turn running
	CodeNothingToContinue = "nothing_to_continue" // conflict: no decided tool call waits for the model
	CodeAlreadyDecided    = "already_decided"     // conflict: the confirmation was decided before
	CodeExpired           = "expired"             // gone: the confirmation expired undecided
	CodeEmptySession      = "empty_session"       // conflict: nothing to name a session by
	CodeTurnLost          = "turn_lost"           // the process running the turn died
	CodeNoTurnRunning     = "no_turn_running"     // conflict: nothing to stop
)

// ContentData is the data of a content event: a piece of the assistant
// message MessageID.
type ContentData struct {
	SessionID string `json:"session_id"`
	MessageID string `json:"message_id"`
	Delta     string `json:"delta"`
}

// ToolCallData is the data of a tool_call event. Arguments is the parsed JSON
// when the model produced valid JSON, else the raw text as a JSON string.
type ToolCallData struct {
	SessionID  string          `json:"session_id"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
}

// ToolResultData is the data of a tool_result event.
type ToolResultData struct {
	SessionID  string          `json:"session_id"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	OK         bool            `json:"ok"`
	Result     json.RawMessage `json:"result"`
	Error      string          `json:"error,omitempty"`
}

// ConfirmationRequiredData is the data of a confirmation_required event.
type ConfirmationRequiredData struct {
	SessionID      string          `json:"session_id"`
	ConfirmationID string          `json:"confirmation_id"`
	ToolCallID     string          `json:"tool_call_id"`
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	Summary        string          `json:"summary"`
	ExpiresAt      time.Time       `json:"expires_at"`
}

// UsageData counts the tokens of a turn, summed over its model calls.
type UsageData struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// DoneData is the data of the done event that ends every stream. MessageID
// is the turn's last assistant message, "" when the model said nothing.
type DoneData struct {
	SessionID    string    `json:"session_id"`
	MessageID    string    `json:"message_id"`
	FinishReason string    `json:"finish_reason"`
	Usage        UsageData `json:"usage"`
}

// ErrorData is the data of an error event, sent just before done.
type ErrorData struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// errorFor turns a model or store error into the error event a client sees:
// what ports.Public says of it.
func errorFor(err error) ErrorData {
	pub := ports.Public(err)
	return ErrorData{Code: pub.Code, Message: pub.Message, Retryable: pub.Retryable}
}

// emitter numbers a turn's events, stores them and only then sends them.
// Content events are batched (up to batchMax, or for at most every) except
// that a delta arriving after a quiet spell of every (since the last flush
// ended) goes out at once, stored on its own (storeNow) rather than with
// other turns' batches, so the first token is never held back; any other
// event flushes the batch first, so order is kept. The events stored
// together are sent together, in one call of out. Sending stops when the
// client is gone; the turn and its storing go on. A store failure aborts the
// turn.
//
// send/content/finish may be called while a timer flushes from another
// goroutine: mu serialises everything, including calls of out.
type emitter struct {
	mu    sync.Mutex
	ctx   context.Context // never cancelled: what was said is kept
	store func(context.Context, []Event) error
	// storeNow stores a delta after a quiet spell (the first token, most
	// often) on its own, not waiting for the events of other turns.
	storeNow  func(context.Context, []Event) error
	clock     ports.Clock
	log       func() *slog.Logger
	sessionID string
	turnID    string
	seq       int64
	out       func([]Event) error
	abort     func()
	batchMax  int
	every     time.Duration

	pending   []Event
	flushedAt time.Time // real time the last flush ended, for the leading edge
	timer     *time.Timer
	gen       int
	gone      bool
	err       error
	closed    bool
}

func (e *emitter) event(name string, data any) Event {
	b, err := json.Marshal(data)
	if err != nil { // the *Data types always encode; keep the stream well-formed anyway
		e.log().Error("encoding a stream event", "event", name, "err", err)
		b = []byte("{}")
	}
	return e.encoded(name, b)
}

// encoded numbers an event whose data is already JSON.
func (e *emitter) encoded(name string, data []byte) Event {
	e.seq++
	return Event{SessionID: e.sessionID, Seq: e.seq, TurnID: e.turnID, Name: name, Data: data, CreatedAt: e.clock.Now()}
}

// content queues a content event.
func (e *emitter) content(d ContentData) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	data := appendContentData(make([]byte, 0, 48+len(d.SessionID)+len(d.MessageID)+len(d.Delta)), d)
	e.pending = append(e.pending, e.encoded(EventContent, data))
	if e.timer == nil && time.Since(e.flushedAt) >= e.every {
		e.flushWith(e.storeNow) // the leading edge: a reader waits for it
		return
	}
	if len(e.pending) >= e.batchMax {
		e.flushLocked()
		return
	}
	if e.timer == nil {
		e.gen++
		gen := e.gen
		e.timer = time.AfterFunc(e.every, func() { e.timed(gen) })
	}
}

func (e *emitter) timed(gen int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || gen != e.gen {
		return
	}
	e.timer = nil
	e.flushLocked()
}

// send stores and sends an event, after any queued content.
func (e *emitter) send(name string, data any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.pending = append(e.pending, e.event(name, data))
	e.flushLocked()
}

func (e *emitter) stopTimerLocked() {
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
		e.gen++
	}
}

func (e *emitter) flushLocked() { e.flushWith(e.store) }

// flushWith stores the queued events with store, then sends them; e.mu is
// held.
func (e *emitter) flushWith(store func(context.Context, []Event) error) {
	e.stopTimerLocked()
	if len(e.pending) == 0 {
		return
	}
	evs := e.pending
	e.pending = nil
	// The quiet spell of the leading edge is counted from the end of this
	// flush: a store or a client slower than every must not make every
	// other delta of a busy stream a leading edge, stored on its own.
	defer func() { e.flushedAt = time.Now() }()
	if err := store(e.ctx, evs); err != nil {
		e.failLocked(err) // unstored events are never sent
		return
	}
	e.deliverLocked(evs)
}

// deliverLocked sends stored events, all in one call of out, unless the
// client is gone.
func (e *emitter) deliverLocked(evs []Event) {
	if e.gone || len(evs) == 0 {
		return
	}
	if err := e.out(evs); err != nil {
		// The turn runs on without its client: it stores every event, so
		// the client can resume through the stream route.
		e.log().Debug("client gone; the turn runs on", "err", err)
		e.gone = true
	}
}

// fail records a store failure; the turn is aborted and ends in an error.
func (e *emitter) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failLocked(err)
}

func (e *emitter) failLocked(err error) {
	if e.err == nil {
		e.err = err
		e.log().Error("recording a chat turn", "err", err)
	}
	e.abort()
}

// stopped reports whether the turn must stop: it cannot be recorded. A
// client that is gone does not stop it.
func (e *emitter) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err != nil
}

func (e *emitter) failure() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// finish stores the closing events (an error, if any, then done), calls
// between (which ends the turn) and only then sends them, so a client that
// sees done may start the next turn at once. When they cannot be stored they
// are sent all the same, so the stream still ends with done.
func (e *emitter) finish(errData *ErrorData, done DoneData, between func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopTimerLocked()
	queued := e.pending
	e.pending = nil
	var final []Event
	if errData != nil {
		final = append(final, e.event(EventError, errData))
	}
	final = append(final, e.event(EventDone, done))
	all := append(queued, final...)
	err := e.store(e.ctx, all)
	if err != nil {
		e.failLocked(err)
	}
	between()
	if err == nil {
		e.deliverLocked(all)
	} else {
		e.deliverLocked(final)
	}
	e.closed = true
}
