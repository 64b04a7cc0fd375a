package assistant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// ConfirmInput is a human's decision on a confirmation.
type ConfirmInput struct {
	SessionID      string
	ConfirmationID string
	Approved       bool
	Reason         string
}

// ConfirmResult is a decided confirmation and, for an approval, what running
// the tool gave (also in Confirmation.Outcome).
type ConfirmResult struct {
	Confirmation ports.Confirmation
	Outcome      *ports.ToolOutcome
}

// Confirm decides a confirmation of the caller's session, exactly once among
// any number of concurrent calls. Approved, the tool runs (to the end even if
// ctx is cancelled, so its outcome is always recorded); rejected, nothing
// runs. Either way the answer is appended to the session as a tool message,
// so the model sees it next turn; the turn itself is not continued (see
// Continue). Errors: invalid (fields session_id, confirmation_id, reason);
// not_found when the confirmation is absent, another's or of another session;
// conflict (already_decided, naming the recorded status); gone (expired),
// never run; forbidden (permission_denied) for an approval by a caller whose
// role the Guard refuses the tool, the confirmation left pending. With conflict and gone the result holds the confirmation as it
// stands.
func (s *Service) Confirm(ctx context.Context, in ConfirmInput) (ConfirmResult, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ConfirmResult{}, err
	}
	reason := strings.TrimSpace(in.Reason)
	var fields []ports.FieldError
	for _, f := range []*ports.FieldError{requireID("session_id", in.SessionID), requireID("confirmation_id", in.ConfirmationID)} {
		if f != nil {
			fields = append(fields, *f)
		}
	}
	if utf8.RuneCountInString(reason) > MaxReasonLen {
		fields = append(fields, ports.FieldError{Field: "reason", Reason: fmt.Sprintf("must be at most %d characters", MaxReasonLen)})
	}
	if err := invalid(fields); err != nil {
		return ConfirmResult{}, err
	}

	c, err := s.d.Confirmations.GetConfirmation(ctx, p.Owner(), in.ConfirmationID)
	if err != nil {
		return ConfirmResult{}, err
	}
	if c.SessionID != in.SessionID {
		return ConfirmResult{}, ports.NotFound("confirmation", in.ConfirmationID)
	}
	if c.Status != ports.ConfirmationPending { // decided already: spare the store the attempt
		return ConfirmResult{Confirmation: c}, decideError(c, nil)
	}
	// An approval runs the tool: the caller's token must allow it, and the
	// policy (which may have changed since the call was proposed) must let
	// their role run it. Either refusal leaves the confirmation pending.
	if in.Approved {
		if def, ok := s.registryOf(ctx, p.OrgID, c.ToolName).Lookup(c.ToolName); ok {
			if err := toolScopeError(p, def); err != nil {
				return ConfirmResult{Confirmation: c}, err
			}
		}
		if err := s.guard(ctx, c.ToolName); err != nil {
			return ConfirmResult{Confirmation: c}, err
		}
	}
	d := ports.Decision{Status: ports.ConfirmationRejected, By: p.UserID, Reason: reason, At: s.d.Clock.Now()}
	if in.Approved {
		d.Status = ports.ConfirmationApproved
	}
	// The decision commits on its own: from here on, this call alone runs the tool.
	c, err = s.d.Confirmations.DecideConfirmation(ctx, p.Owner(), c.ID, d)
	if err != nil {
		if errors.Is(err, ports.ErrGone) { // found pending above, expired now
			s.d.Observer.ConfirmationDecided(ports.ConfirmationExpired)
			s.d.Observer.ToolCall(s.toolName(c.ToolName), ports.ToolCallRejected)
		}
		return ConfirmResult{Confirmation: c}, decideError(c, err)
	}
	s.d.Observer.ConfirmationDecided(c.Status)

	ctx = context.WithoutCancel(ctx)
	var outcome ports.ToolOutcome
	if in.Approved {
		outcome = s.execute(ctx, c)
		s.d.Observer.ToolCall(s.toolName(c.ToolName), ranOutcome(outcome))
	} else {
		s.d.Observer.ToolCall(s.toolName(c.ToolName), ports.ToolCallRejected)
		outcome = failed("the user rejected this action")
		if reason != "" {
			outcome.Error += ": " + reason
		}
	}
	at := s.d.Clock.Now()
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if in.Approved {
			if err := s.d.Confirmations.RecordOutcome(ctx, c.ID, outcome, at); err != nil {
				return err
			}
		}
		answer := ports.ChatMessage{ID: s.d.IDs.NewID(), SessionID: c.SessionID, TurnID: c.TurnID, CreatedAt: at,
			Message: ports.Message{Role: ports.MessageTool, Content: tool.Content(outcome), ToolCallID: c.ToolCallID, Name: c.ToolName}}
		if err := s.d.Messages.AppendMessages(ctx, answer); err != nil {
			return err
		}
		return s.d.Sessions.TouchSession(ctx, c.SessionID, at)
	})
	res := ConfirmResult{Confirmation: c}
	if in.Approved {
		c.Outcome, c.ExecutedAt = &outcome, &at
		res = ConfirmResult{Confirmation: c, Outcome: &outcome}
	}
	if err != nil {
		s.log.Error("recording a decided confirmation", "confirmation_id", c.ID, "status", c.Status, "err", err)
		return res, err
	}
	return res, nil
}

// ranOutcome is how a tool call that ran ended.
func ranOutcome(o ports.ToolOutcome) ports.ToolCallOutcome {
	if o.OK {
		return ports.ToolCallOK
	}
	return ports.ToolCallFailed
}

// CheckTool is the Guard's verdict on the caller's running the tool named
// name (nil without a Guard), for a host that must ask before it opens a
// transaction: a refusal the Guard records (in the audit log) would be
// rolled back with the transaction that ExecuteToolUnder failed in.
func (s *Service) CheckTool(ctx context.Context, name string) error { return s.guard(ctx, name) }

// guard is the Guard's verdict on the caller's running the tool named name;
// nil without a Guard.
func (s *Service) guard(ctx context.Context, name string) error {
	if s.d.Guard == nil {
		return nil
	}
	return s.d.Guard.CheckTool(ctx, name)
}

// toolName is name as an Observer hears it: ports.UnknownTool unless the
// service's registry has it (a confirmation may outlive its tool, and an
// organisation's own tools, its MCP servers', are not named one by one, so
// that metrics keep a bounded set of labels).
func (s *Service) toolName(name string) string {
	if _, ok := s.d.Registry.Lookup(name); !ok {
		return ports.UnknownTool
	}
	return name
}

// decideError explains why c cannot be decided: err from the store, or nil
// when c's status says so.
func decideError(c ports.Confirmation, err error) error {
	switch {
	case err == nil && c.Status == ports.ConfirmationExpired, errors.Is(err, ports.ErrGone):
		return &ports.Error{Kind: ports.KindGone, Code: CodeExpired, Err: err,
			Message: fmt.Sprintf("confirmation %s expired at %s without a decision", c.ID, c.ExpiresAt.UTC().Format(time.RFC3339))}
	case err == nil, errors.Is(err, ports.ErrConflict):
		msg := fmt.Sprintf("confirmation %s is already %s", c.ID, c.Status)
		if c.Status == "" || c.Status == ports.ConfirmationPending {
			msg = fmt.Sprintf("confirmation %s has been decided already", c.ID)
		}
		return &ports.Error{Kind: ports.KindConflict, Code: CodeAlreadyDecided, Message: msg, Err: err}
	}
	return err
}

// execute runs an approved confirmation's tool, a write or a read that was
// marked always_confirm, checking its arguments again in case the tool
// changed since it was asked for.
func (s *Service) execute(ctx context.Context, c ports.Confirmation) ports.ToolOutcome {
	var orgID string
	if p, ok := ports.PrincipalFrom(ctx); ok {
		orgID = p.OrgID
	}
	args, def, problem := s.registryOf(ctx, orgID, c.ToolName).CheckWith(ports.ToolCall{ID: c.ToolCallID, Name: c.ToolName, Arguments: string(c.Arguments)}, tool.Known{})
	if problem != "" {
		return failed(problem)
	}
	return s.runTool(ctx, def, args)
}

// runTool runs a tool whose arguments passed its schema. A failure is what
// ports.Public tells of it; a panic, an error that is not a ports.Error and
// a result that does not encode are failures the model sees as
// ports.InternalMessage; their cause is logged.
func (s *Service) runTool(ctx context.Context, def tool.Tool, args json.RawMessage) (out ports.ToolOutcome) {
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("tool panicked", "tool", def.Name, "panic", v)
			out = failed(ports.InternalMessage)
		}
	}()
	if p, ok := ports.PrincipalFrom(ctx); ok {
		if err := toolScopeError(p, def); err != nil {
			return failed(ports.Public(err).Message)
		}
	}
	v, err := def.Run(ctx, args)
	if err != nil {
		pub := ports.Public(err)
		if pub.Kind == ports.KindInternal && ctx.Err() != nil {
			return failed("cancelled")
		}
		if pub.Kind == ports.KindInternal {
			s.log.Error("tool failed", "tool", def.Name, "err", err)
		}
		return failed(pub.Message)
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("encoding a tool result", "tool", def.Name, "err", err)
		return failed(ports.InternalMessage + ": the result could not be encoded")
	}
	return ports.ToolOutcome{OK: true, Result: b}
}

const maxSummaryLen = 500

// newConfirmation is a pending confirmation of a call: a write, or a read
// marked always_confirm.
// Its summary names resources as the tool's Describe looks them up in ctx.
func (s *Service) newConfirmation(ctx context.Context, p ports.Principal, sessionID, turnID string, call ports.ToolCall, def tool.Tool, args json.RawMessage) ports.Confirmation {
	sum := s.summarise(ctx, def, args)
	now := s.d.Clock.Now()
	return ports.Confirmation{
		ID: s.d.IDs.NewID(), SessionID: sessionID, OrgID: p.OrgID, UserID: p.UserID, TurnID: turnID,
		ToolCallID: call.ID, ToolName: def.Name, Arguments: args, Summary: sum,
		Status: ports.ConfirmationPending, CreatedAt: now, ExpiresAt: now.Add(s.cfg.ConfirmationTTL),
	}
}

// summarise is the one-line sentence a confirmation shows: the tool's
// Describe (names looked up in ctx), else its Summary, else the tool and
// its arguments.
func (s *Service) summarise(ctx context.Context, def tool.Tool, args json.RawMessage) (sum string) {
	if def.Summary == nil { // a read an organisation marked always_confirm
		return truncate(ports.OneLine(fmt.Sprintf("Run %s with %s.", def.Name, args)), maxSummaryLen, "…")
	}
	defer func() {
		if v := recover(); v != nil {
			s.log.Error("tool summary panicked", "tool", def.Name, "panic", v)
			sum = ""
		}
		if sum = ports.OneLine(sum); sum == "" {
			sum = fmt.Sprintf("Run %s with %s.", def.Name, args)
		}
		sum = truncate(sum, maxSummaryLen, "…")
	}()
	if def.Describe != nil {
		if sum := def.Describe(ctx, args); sum != "" {
			return sum
		}
	}
	return def.Summary(args)
}

// ExecuteTool carries out one tool call outside the chat loop (the voice
// host): the arguments are checked, a read runs at once, and a write, or a
// read the caller's organisation marked always_confirm, becomes a pending
// confirmation of the caller's session, decided with Confirm. The
// organisation's tool policy is read once, and only for a read. Nothing
// else is stored. Errors: not_found when the session is absent or another's;
// forbidden (permission_denied) when the Guard refuses the caller the tool;
// the stores' errors.
func (s *Service) ExecuteTool(ctx context.Context, sessionID string, call ports.ToolCall) (tool.Execution, error) {
	return s.ExecuteToolUnder(ctx, sessionID, call, tool.Policy{})
}

// ExecuteToolUnder is ExecuteTool under pol, the policy the caller read with
// Policy, for a host that must know beforehand whether the call will run or
// wait, and reads the policy once for both. A policy of another
// organisation, such as the zero Policy, is not used: the caller's is read
// instead.
func (s *Service) ExecuteToolUnder(ctx context.Context, sessionID string, call ports.ToolCall, pol tool.Policy) (tool.Execution, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return tool.Execution{}, err
	}
	if _, err := s.session(ctx, p.Owner(), sessionID); err != nil {
		return tool.Execution{}, err
	}
	if call.ID == "" {
		call.ID = "call_" + s.d.IDs.NewID()
	}
	args, def, problem := s.registryOf(ctx, p.OrgID, call.Name).CheckWith(call, tool.Known{})
	if problem == "" {
		if err := s.guard(ctx, def.Name); err != nil {
			return tool.Execution{}, err
		}
	}
	if problem == "" && def.Effect == tool.EffectRead && pol.OrgID() != p.OrgID {
		if pol, err = s.policy(ctx, p.OrgID); err != nil {
			return tool.Execution{}, err
		}
	}
	ex := tool.Execution{Call: call, Arguments: args}
	switch {
	case problem != "":
		o := failed(problem)
		ex.Outcome = &o
	case !pol.Confirms(def):
		o := s.runTool(ctx, def, args)
		ex.Outcome = &o
	default:
		conf := s.newConfirmation(ctx, p, sessionID, "", call, def, args)
		if err := s.d.Confirmations.CreateConfirmation(ctx, conf); err != nil {
			return tool.Execution{}, err
		}
		ex.Confirmation = &conf
	}
	return ex, nil
}
