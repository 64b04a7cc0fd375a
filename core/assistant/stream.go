package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// errStopped aborts a model call from its delta callback.
var errStopped = errors.New("the turn was stopped")

// Stream runs the turn, calling emit with each event once it is stored, so
// every id a client saw can be replayed. It is StreamBatches one event at a
// time: emit's error stops the batch it is in.
func (r *Run) Stream(ctx context.Context, emit func(Event) error) error {
	return r.StreamBatches(ctx, func(evs []Event) error {
		for _, ev := range evs {
			if err := emit(ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// StreamBatches runs the turn, calling emit with the events stored together
// (one or more, in order) once they are stored, so every id a client saw can
// be replayed; a transport sends each batch in one write. emit may keep evs.
// emit is never called concurrently nor after StreamBatches returns, but it
// may be called from another goroutine (a timer flushes batched content). An
// emit error means the client is gone: emitting stops, but the turn runs to
// its end (bounded by its own timeout), storing every event, so the client
// can resume it through ReplayBatches on any replica. ctx ending cancels the
// model call, and the turn is wound up and stored as cancelled; a transport
// passes a ctx that outlives its request (context.WithoutCancel) and ends
// only when the process stops.
// StreamBatches returns after done, which always ends the stream (after an
// error event when the turn failed). It returns an internal error when the
// turn could not be fully stored, and a conflict when called a second time
// (by either form); never the turn's own failure, which the events tell.
func (r *Run) StreamBatches(ctx context.Context, emit func([]Event) error) error {
	if !r.streamed.CompareAndSwap(false, true) {
		return ports.Errorf(ports.KindConflict, "turn %s has been streamed already", r.turn.ID)
	}
	s := r.s
	// A turn never outlives its claim on the session: past TurnStaleAfter
	// another may take the session over.
	// The model calls of the turn are charged to its user, as chat.
	mctx := ports.WithAttribution(ctx, ports.Attribution{OrgID: r.p.OrgID, UserID: r.p.UserID, Feature: ports.FeatureChat})
	mctx, stop := context.WithCancelCause(mctx)
	defer stop(nil)
	mctx, cancelTimeout := context.WithTimeout(mctx, s.cfg.TurnStaleAfter*9/10)
	defer cancelTimeout()
	cancel := func() { stop(nil) }
	defer s.watch(context.WithoutCancel(ctx), r.turn.ID, stop)()
	log := sync.OnceValue(func() *slog.Logger { // most turns log nothing
		return s.log.With("session_id", r.session.ID, "turn_id", r.turn.ID)
	})
	t := &turnRun{
		Run:    r,
		ctx:    mctx,
		store:  context.WithoutCancel(ctx),
		log:    log,
		budget: s.cfg.HistoryTokens,
	}
	t.reg, t.notes = s.registryFor(mctx, r.p.OrgID)
	t.em = &emitter{
		ctx: t.store, store: s.appendEvents, storeNow: s.appendEventsNow, clock: s.d.Clock, log: log,
		sessionID: r.session.ID, turnID: r.turn.ID, seq: r.lastSeq,
		out: emit, abort: cancel, batchMax: s.cfg.ContentBatch, every: s.cfg.ContentFlush,
	}

	t.wind(t.loop())
	if err := t.em.failure(); err != nil {
		return ports.Wrap(ports.KindInternal, err, "recording the chat turn")
	}
	s.titleAfterTurn(ctx, r, t.lastMessageID)
	return nil
}

// wind ends the turn: its closing events are stored with the turn's end,
// then sent.
func (t *turnRun) wind(end ending) {
	if t.em.failure() != nil {
		e := errorFor(ports.ErrInternal) // whatever the store said, it is our fault
		end = ending{reason: FinishError, err: &e}
	}
	if end.err != nil {
		t.log().Info("chat turn failed", "code", end.err.Code, "message", end.err.Message)
	}
	s := t.s
	done := DoneData{SessionID: t.session.ID, MessageID: t.lastMessageID, FinishReason: end.reason,
		Usage: UsageData{PromptTokens: t.usage.PromptTokens, CompletionTokens: t.usage.CompletionTokens}}
	t.em.finish(end.err, done, func() { // runs under the emitter's lock
		if err := s.d.Turns.EndTurn(t.store, t.turn.ID, s.d.Clock.Now()); err != nil {
			t.em.failLocked(err)
		}
	})
}

// turnRun is the state of one streamed turn.
type turnRun struct {
	*Run
	ctx           context.Context // the model's and the read tools': ends with the client
	store         context.Context // for storing: never cancelled, so what was said is kept
	em            *emitter
	log           func() *slog.Logger
	usage         ports.Usage
	lastMessageID string
	callIDs       map[string]bool
	budget        int // of each model call's prompt, in estimated tokens
	// policy is the organisation's tool policy, read at the first read call
	// of the turn (policyRead) and kept for the rest of it, failure included.
	policy     tool.Policy
	policyErr  error
	policyRead bool
	// reg is the registry of the turn: the service's with the
	// organisation's extra tools; notes say which were left out.
	reg   *tool.Registry
	notes []string
}

// ending is how a turn ends: done's finish reason and the error event before
// it, if any.
type ending struct {
	reason string
	err    *ErrorData
}

// loop runs the turn's model calls and tool rounds. While a stream waits for
// the model, the frames of loop and callModel are on its goroutine's stack,
// so their cold paths are functions of their own: a parked goroutine's stack
// is shrunk only when less than a quarter of it is in use.
func (t *turnRun) loop() ending {
	t.reportPrologue()
	if t.awaiting {
		return ending{reason: FinishConfirmationRequired}
	}
	t.callIDs = map[string]bool{}
	for _, m := range t.history {
		for _, c := range m.ToolCalls {
			t.callIDs[c.ID] = true
		}
	}
	for rounds := 0; ; {
		calls, finish, err := t.callModel()
		switch {
		case t.em.failure() != nil:
			return ending{} // Stream reports it
		case err != nil:
			return t.modelFailed(err)
		case len(calls) == 0:
			return finished(finish)
		case rounds == t.s.cfg.MaxToolRounds:
			return t.tooManyRounds(calls, rounds)
		}
		rounds++
		asked := t.runCalls(calls)
		switch {
		case t.em.failure() != nil:
			return ending{}
		case asked > 0:
			return ending{reason: FinishConfirmationRequired}
		case t.ctx.Err() != nil:
			return t.modelFailed(t.ctx.Err())
		}
	}
}

// reportPrologue sends the tool results a continued turn starts with.
func (t *turnRun) reportPrologue() {
	for _, m := range t.prologue {
		o := tool.Outcome(m.Content)
		t.em.send(EventToolResult, ToolResultData{SessionID: t.session.ID, ToolCallID: m.ToolCallID, Name: m.Name,
			OK: o.OK, Result: o.Result, Error: o.Error})
	}
}

// tooManyRounds answers calls made past the limit of tool rounds without
// running them, and ends the turn.
func (t *turnRun) tooManyRounds(calls []ports.ToolCall, rounds int) ending {
	reason := fmt.Sprintf("not run: the limit of %d tool rounds in one reply was reached", rounds)
	for _, c := range calls {
		args, def, _ := t.reg.CheckWith(c, t.known())
		t.announce(c, args)
		t.answer(c, failed(reason))
		t.s.d.Observer.ToolCall(t.s.toolName(def.Name), ports.ToolCallRefused)
	}
	return ending{reason: FinishError, err: &ErrorData{Code: CodeToolLoopLimit,
		Message: fmt.Sprintf("the assistant called tools %d times in a row without answering; ask again or narrow the request", rounds)}}
}

func finished(reason ports.FinishReason) ending {
	switch reason {
	case ports.FinishLength:
		return ending{reason: FinishLength}
	case ports.FinishContentFilter:
		return ending{reason: FinishError, err: &ErrorData{Code: CodeContentFilter, Message: "the answer was stopped by the provider's content filter"}}
	}
	return ending{reason: FinishStop}
}

// stoppedByUser reports whether a user stopped the turn (Service.Stop).
func (t *turnRun) stoppedByUser() bool {
	return errors.Is(context.Cause(t.ctx), errStopRequested)
}

// notRun is the failed result of a tool call the turn did not start
// because it was cancelled or stopped.
func (t *turnRun) notRun() ports.ToolOutcome {
	if t.stoppedByUser() {
		return failed("not run: the user stopped the reply")
	}
	return failed("not run: the reply was cancelled")
}

// modelFailed ends a turn whose model call failed, or that was stopped or
// cancelled.
func (t *turnRun) modelFailed(err error) ending {
	if t.stoppedByUser() {
		return ending{reason: FinishStopped}
	}
	if cerr := t.ctx.Err(); cerr != nil || errors.Is(err, errStopped) {
		if errors.Is(cerr, context.DeadlineExceeded) {
			e := errorFor(&ports.Error{Kind: ports.KindTimeout, Message: "the reply took too long"})
			return ending{reason: FinishError, err: &e}
		}
		// Asking again for a cancelled reply is asking for it anew.
		return ending{reason: FinishError, err: &ErrorData{Code: CodeCancelled, Message: "the reply was cancelled before it was finished", Retryable: true}}
	}
	t.log().Warn("model call failed", "err", err)
	e := errorFor(err)
	return ending{reason: FinishError, err: &e}
}

// callModel runs one model call, streaming its text, and stores the assistant
// message: complete, or as far as it got when the call failed. It returns
// the tool calls the model made and why it stopped. A provider's
// context-length error before any text is tried once more with the history
// trimmed to half of what was sent.
func (t *turnRun) callModel() ([]ports.ToolCall, ports.FinishReason, error) {
	msgID := t.s.d.IDs.NewID()
	var streamed strings.Builder
	onDelta := func(delta string) error {
		if delta == "" {
			return nil
		}
		streamed.WriteString(delta)
		t.em.content(ContentData{SessionID: t.session.ID, MessageID: msgID, Delta: delta})
		if t.em.stopped() {
			return errStopped
		}
		return nil
	}
	req, size := t.request(t.budget)
	res, err := t.s.d.LLM.Chat(t.ctx, req, onDelta)
	if errors.Is(err, ports.ErrContextLength) && streamed.Len() == 0 && t.ctx.Err() == nil {
		t.budget = max(size/2, 1)
		t.log().Info("the model's context was exceeded; trying once more with a shorter history", "estimated_tokens", size, "budget", t.budget)
		req, _ = t.request(t.budget)
		res, err = t.s.d.LLM.Chat(t.ctx, req, onDelta)
	}
	return t.reply(msgID, streamed.String(), &res, err)
}

// request is what the model is asked next, with the tools routed for where
// the user is, what they ask and what the conversation did lately, and the history trimmed to budget tokens; it returns the
// request's estimated size in tokens too.
func (t *turnRun) request(budget int) (ports.ChatRequest, int) {
	s := t.s
	tools := t.reg.RouteFollowing(t.page, lastUserText(t.history), recentTools(t.history, t.confs), s.cfg.MaxTools)
	msgs := buildMessages(systemPrompt(s.cfg.SystemPrompt, t.prefs, t.turn.StartedAt.In(s.cfg.Location))+"\n\n"+ContextRule+notesBlock(t.notes),
		t.history, t.confs, s.d.Clock.Now())
	withContext(msgs, t.page, t.turn.StartedAt.In(s.cfg.Location))
	msgs, trimmed := fitHistory(msgs, tools, budget)
	if trimmed {
		t.log().Info("the history was trimmed to fit the budget", "budget", budget)
	}
	return ports.ChatRequest{
		Model:     s.cfg.Model,
		Messages:  msgs,
		Tools:     tools,
		MaxTokens: s.cfg.MaxTokens,
	}, EstimateTokens(msgs, tools)
}

// lastUserText is the latest user message of a history, "" when none.
func lastUserText(history []ports.ChatMessage) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == ports.MessageUser {
			return history[i].Content
		}
	}
	return ""
}

// known are the arguments code fills in for the model this turn.
func (t *turnRun) known() tool.Known {
	if t.page == nil {
		return tool.Known{}
	}
	return tool.Known{ProjectID: t.page.SelectedProjectID}
}

// reply records the outcome of a model call whose streamed text is text.
func (t *turnRun) reply(msgID, text string, res *ports.ChatResult, err error) ([]ports.ToolCall, ports.FinishReason, error) {
	t.usage.PromptTokens += res.Usage.PromptTokens
	t.usage.CompletionTokens += res.Usage.CompletionTokens
	if err == nil && text == "" && res.Content != "" { // an adapter that did not stream
		text = res.Content
		t.em.content(ContentData{SessionID: t.session.ID, MessageID: msgID, Delta: text})
	}
	var calls []ports.ToolCall
	if err == nil { // only a finished call's tool calls are complete
		calls = res.ToolCalls
	}
	calls = t.uniqueIDs(calls)
	if text != "" || len(calls) > 0 {
		t.append(ports.ChatMessage{ID: msgID, SessionID: t.session.ID, TurnID: t.turn.ID,
			Message: ports.Message{Role: ports.MessageAssistant, Content: text, ToolCalls: calls}, CreatedAt: t.s.d.Clock.Now()})
		t.lastMessageID = msgID
	}
	return calls, res.FinishReason, err
}

// uniqueIDs gives calls without an id, or with one used before in the
// session, a fresh id, so every answer finds its call.
func (t *turnRun) uniqueIDs(calls []ports.ToolCall) []ports.ToolCall {
	out := make([]ports.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || t.callIDs[c.ID] {
			c.ID = "call_" + t.s.d.IDs.NewID()
		}
		t.callIDs[c.ID] = true
		out[i] = c
	}
	return out
}

// append stores a message and adds it to the history the model sees.
func (t *turnRun) append(m ports.ChatMessage) {
	if err := t.s.d.Messages.AppendMessages(t.store, m); err != nil {
		t.em.fail(err)
		return
	}
	t.history = append(t.history, m)
}

// runCalls announces each call, runs reads, asks for confirmation of writes
// and of reads the organisation marked always_confirm, and returns how many
// confirmations it asked for.
func (t *turnRun) runCalls(calls []ports.ToolCall) (asked int) {
	for _, c := range calls {
		args, def, problem := t.reg.CheckWith(c, t.known())
		checked := problem != "" // refused by the registry: unknown, or bad arguments
		t.announce(c, args)
		if problem == "" && !t.em.stopped() && t.ctx.Err() == nil {
			problem = t.readPolicy(def)
		}
		if problem == "" && !t.em.stopped() && t.ctx.Err() == nil {
			if err := t.s.guard(t.ctx, def.Name); err != nil {
				problem, checked = "refused: "+ports.Public(err).Message, true
			}
		}
		obs := t.s.d.Observer
		switch {
		case problem != "":
			t.log().Info("tool call refused", "tool", c.Name, "problem", problem)
			t.answer(c, failed(problem))
			if checked {
				obs.ToolCall(t.s.toolName(def.Name), ports.ToolCallRefused)
			} else { // the policy could not be read, or the reply was cancelled meanwhile
				obs.ToolCall(t.s.toolName(def.Name), ports.ToolCallFailed)
			}
		case t.em.stopped() || t.ctx.Err() != nil:
			t.answer(c, t.notRun())
			obs.ToolCall(t.s.toolName(def.Name), ports.ToolCallFailed)
		case !t.policy.Confirms(def):
			o := t.s.runTool(t.ctx, def, args)
			t.answer(c, o)
			obs.ToolCall(t.s.toolName(def.Name), ranOutcome(o))
		default:
			if t.askConfirmation(c, def, args) {
				asked++
				obs.ToolCall(t.s.toolName(def.Name), ports.ToolCallPending)
			}
		}
	}
	return asked
}

// readPolicy reads the organisation's tool policy once per turn, when a read
// tool is first called (a write needs no policy: it is always confirmed).
// It returns the problem, worded for the model, when the policy cannot be
// read: the read then does not run, since it may be one that must wait.
func (t *turnRun) readPolicy(def tool.Tool) (problem string) {
	if def.Effect != tool.EffectRead {
		return ""
	}
	if !t.policyRead {
		t.policyRead = true
		t.policy, t.policyErr = t.s.policy(t.ctx, t.p.OrgID)
		if t.policyErr != nil && t.ctx.Err() == nil {
			t.log().Error("reading the tool policy", "err", t.policyErr)
		}
	}
	switch {
	case t.policyErr == nil:
		return ""
	case t.ctx.Err() != nil:
		return t.notRun().Error
	}
	return "not run: the organisation's tool policy could not be read; try again later"
}

func (t *turnRun) announce(c ports.ToolCall, args json.RawMessage) {
	t.em.send(EventToolCall, ToolCallData{SessionID: t.session.ID, ToolCallID: c.ID, Name: c.Name, Arguments: eventArgs(c, args)})
}

// eventArgs is the arguments as a client sees them: the JSON when it
// parses, else the model's text as a string.
func eventArgs(c ports.ToolCall, args json.RawMessage) json.RawMessage {
	if args != nil {
		return args
	}
	b, _ := json.Marshal(c.Arguments) // a string always encodes
	return b
}

// answer stores a call's result for the model and reports it.
func (t *turnRun) answer(c ports.ToolCall, o ports.ToolOutcome) {
	t.append(ports.ChatMessage{ID: t.s.d.IDs.NewID(), SessionID: t.session.ID, TurnID: t.turn.ID,
		Message:   ports.Message{Role: ports.MessageTool, Content: tool.Content(o), ToolCallID: c.ID, Name: c.Name},
		CreatedAt: t.s.d.Clock.Now()})
	t.em.send(EventToolResult, ToolResultData{SessionID: t.session.ID, ToolCallID: c.ID, Name: c.Name,
		OK: o.OK, Result: o.Result, Error: o.Error})
}

func (t *turnRun) askConfirmation(c ports.ToolCall, def tool.Tool, args json.RawMessage) bool {
	conf := t.s.newConfirmation(t.ctx, t.p, t.session.ID, t.turn.ID, c, def, args)
	if err := t.s.d.Confirmations.CreateConfirmation(t.store, conf); err != nil {
		t.em.fail(err)
		return false
	}
	t.confs = append(t.confs, conf)
	t.em.send(EventConfirmationRequired, ConfirmationRequiredData{SessionID: t.session.ID, ConfirmationID: conf.ID,
		ToolCallID: c.ID, Name: c.Name, Arguments: args, Summary: conf.Summary, ExpiresAt: conf.ExpiresAt})
	return true
}
