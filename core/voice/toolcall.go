package voice

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// MaxCallIDLen bounds ToolCallInput.CallID, in characters.
const MaxCallIDLen = 200

// recentSessions is how many of the caller's latest chat sessions ToolCall
// looks through for a voice session.
const recentSessions = 50

// ToolCallInput is a tool call a voice model made.
type ToolCallInput struct {
	// SessionID is the chat session to record the call in; "" is the
	// caller's latest session titled SessionTitle, or a new one.
	SessionID string
	// SessionTitle is the title of the session a call without SessionID is
	// recorded in: "" is a voice session (the package's SessionTitle); a
	// host that relays another client's calls (MCP) names its own.
	SessionTitle string
	Name         string
	// Arguments is a JSON object, or a JSON string holding one (the realtime
	// API sends arguments as a string); empty means {}.
	Arguments json.RawMessage
	// CallID is the provider's id of the call; "" gets one made up.
	CallID string
}

// ToolCallResult is what ToolCall did: for a read, its outcome; for a write
// (or a read the organisation marked always_confirm), the pending
// confirmation that waits for the user's decision.
type ToolCallResult struct {
	// SessionID is the chat session the call was recorded in.
	SessionID string
	// CallID is the call's id: the provider's, or the one made up for it.
	CallID string
	// Output is a read's outcome as the model sees it in chat:
	// {"ok":true,"result":…} or {"ok":false,"error":"…"} (a json.RawMessage);
	// nil for a call that waits for confirmation.
	Output any
	// Confirmation is the pending confirmation of a write, or of a read the
	// organisation marked always_confirm; nil for a read that ran.
	Confirmation *ports.Confirmation
	// Summary says what the call will do once approved; "" for a read that
	// ran.
	Summary string
}

// ToolCall carries out, as the caller, a tool call the voice model made: a
// read runs at once and its outcome is returned (a failing read is an
// outcome too, not an error); a write becomes a pending confirmation of the
// session, decided with the assistant's Confirm. The call, and a read's
// outcome, are recorded in the chat session as the chat loop records them.
// A read the caller's organisation marked always_confirm is treated as a
// write. A call refused for its name or arguments runs nothing and stores
// nothing. Errors: invalid (fields name, call_id, arguments: malformed, an
// unknown tool, or arguments that do not match the tool's schema, with the
// registry's explanation); forbidden (permission_denied, naming the
// permission) when the organisation's permission policy refuses the caller
// the tool, nothing stored and the refusal audited; not_found when SessionID
// is not the caller's chat session; the stores'.
func (s *Service) ToolCall(ctx context.Context, in ToolCallInput) (ToolCallResult, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ToolCallResult{}, err
	}
	call, def, err := s.validCall(ctx, in)
	if err != nil {
		s.d.Observer.ToolCall(def.Name, ports.ToolCallRefused) // def is zero for an unknown tool
		return ToolCallResult{}, err
	}
	// The permission policy is asked first, outside the write's
	// transaction, so that its refusal is refused before anything is
	// stored and stays in the audit log.
	if err := s.d.Assistant.CheckTool(ctx, def.Name); err != nil {
		s.d.Observer.ToolCall(def.Name, ports.ToolCallRefused)
		return ToolCallResult{}, err
	}
	sess, fresh, err := s.voiceSession(ctx, p, in.SessionID, in.SessionTitle)
	if err != nil {
		return ToolCallResult{}, err
	}
	// The policy is read once, here, and decides both the path taken and
	// what ExecuteToolUnder does; a write needs none.
	var pol tool.Policy
	if def.Effect == tool.EffectRead {
		if pol, err = s.d.Assistant.Policy(ctx); err != nil {
			return ToolCallResult{}, err
		}
	}
	if !pol.Confirms(def) {
		return s.read(ctx, sess, fresh, call, pol)
	}
	return s.write(ctx, sess, fresh, call, pol)
}

// validCall checks a call's fields, then its name and arguments against the
// registry, and returns it as the chat loop would have received it.
func (s *Service) validCall(ctx context.Context, in ToolCallInput) (ports.ToolCall, tool.Tool, error) {
	var fields []ports.FieldError
	if in.Name == "" {
		fields = append(fields, ports.FieldError{Field: "name", Reason: "required"})
	}
	if utf8.RuneCountInString(in.CallID) > MaxCallIDLen {
		fields = append(fields, ports.FieldError{Field: "call_id", Reason: fmt.Sprintf("must be at most %d characters", MaxCallIDLen)})
	}
	args, ok := normaliseArgs(in.Arguments)
	if !ok {
		fields = append(fields, ports.FieldError{Field: "arguments", Reason: "must be a JSON object, or a string holding one"})
	}
	if len(fields) > 0 {
		return ports.ToolCall{}, tool.Tool{}, ports.Invalid("invalid tool call", fields...)
	}
	call := ports.ToolCall{ID: in.CallID, Name: in.Name, Arguments: args}
	def, ok := s.d.Assistant.Registry().Lookup(in.Name)
	if !ok {
		return call, def, ports.Invalid(fmt.Sprintf("unknown tool %q", in.Name),
			ports.FieldError{Field: "name", Reason: fmt.Sprintf("unknown tool %q; call one of the tools you were given", in.Name)})
	}
	if _, _, problem := s.d.Assistant.Registry().Check(call); problem != "" {
		return call, def, ports.Invalid(fmt.Sprintf("invalid arguments for tool %q", in.Name),
			ports.FieldError{Field: "arguments", Reason: problem})
	}
	return call, def, nil
}

// normaliseArgs returns the arguments as the compact text of a JSON object:
// a string holding JSON is unwrapped, and nothing (or null, or a blank
// string) is {}. It reports false for anything else.
func normaliseArgs(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false
		}
		raw = bytes.TrimSpace([]byte(text))
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", true
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return "", false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", false
	}
	// The arguments are the realtime model's output, relayed: cleaned like
	// any model's (ports.CleanJSON), never refused for their characters.
	return string(ports.CleanJSON(b.Bytes())), true
}

// voiceSession picks the chat session a call is recorded in: the one named
// (whose owner ExecuteTool checks), else the caller's latest session titled
// title ("" is SessionTitle) among the most recently active ones, else a new
// one, which the caller must store (fresh).
func (s *Service) voiceSession(ctx context.Context, p ports.Principal, id, title string) (sess ports.ChatSession, fresh bool, err error) {
	if title == "" {
		title = SessionTitle
	}
	if id != "" {
		if !ports.IsID(id) {
			return ports.ChatSession{}, false, ports.NotFound("chat session", id)
		}
		return ports.ChatSession{ID: id}, false, nil
	}
	recent, _, err := s.d.Sessions.ListSessions(ctx, p.Owner(), ports.Page{Limit: recentSessions})
	if err != nil {
		return ports.ChatSession{}, false, err
	}
	for _, r := range recent { // most recently updated first
		if r.Title == title {
			return r, false, nil
		}
	}
	sess = s.newSession(p)
	sess.Title = title
	return sess, true, nil
}

// read runs a read call, then records it with its outcome.
func (s *Service) read(ctx context.Context, sess ports.ChatSession, fresh bool, call ports.ToolCall, pol tool.Policy) (ToolCallResult, error) {
	if fresh {
		if err := s.d.Sessions.CreateSession(ctx, sess); err != nil {
			return ToolCallResult{}, err
		}
	}
	// The tool runs outside any transaction, which would hold the one
	// writer (on SQLite) for as long as the tool takes.
	ex, err := s.d.Assistant.ExecuteToolUnder(ctx, sess.ID, call, pol)
	if err != nil {
		return ToolCallResult{}, err
	}
	if ex.Outcome == nil {
		return ToolCallResult{}, ports.Errorf(ports.KindInternal, "read tool %q gave no outcome", call.Name)
	}
	outcome := ports.ToolCallFailed
	if ex.Outcome.OK {
		outcome = ports.ToolCallOK
	}
	s.d.Observer.ToolCall(ex.Call.Name, outcome)
	content := tool.Content(*ex.Outcome)
	now := s.d.Clock.Now()
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		answer := ports.ChatMessage{ID: s.d.IDs.NewID(), SessionID: sess.ID, CreatedAt: now,
			Message: ports.Message{Role: ports.MessageTool, Content: content, ToolCallID: ex.Call.ID, Name: ex.Call.Name}}
		if err := s.d.Messages.AppendMessages(ctx, s.callMessage(sess.ID, ex.Call, now), answer); err != nil {
			return err
		}
		return s.d.Sessions.TouchSession(ctx, sess.ID, now)
	})
	if err != nil {
		s.log.Error("recording a voice tool call", "session_id", sess.ID, "tool", call.Name, "err", err)
		return ToolCallResult{}, err
	}
	return ToolCallResult{SessionID: sess.ID, CallID: ex.Call.ID, Output: json.RawMessage(content)}, nil
}

// write asks for a confirmation of a write call (or of a read marked
// always_confirm) and records the call, in one transaction.
func (s *Service) write(ctx context.Context, sess ports.ChatSession, fresh bool, call ports.ToolCall, pol tool.Policy) (ToolCallResult, error) {
	var (
		conf    *ports.Confirmation
		refused bool
	)
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if fresh {
			if err := s.d.Sessions.CreateSession(ctx, sess); err != nil {
				return err
			}
		}
		ex, err := s.d.Assistant.ExecuteToolUnder(ctx, sess.ID, call, pol)
		if err != nil {
			return err
		}
		if ex.Confirmation == nil { // refused after all: the registry changed under us
			refused = true
			problem := "the call was refused"
			if ex.Outcome != nil {
				problem = ex.Outcome.Error
			}
			return ports.Invalid(fmt.Sprintf("invalid arguments for tool %q", call.Name),
				ports.FieldError{Field: "arguments", Reason: problem})
		}
		conf = ex.Confirmation
		now := s.d.Clock.Now()
		if err := s.d.Messages.AppendMessages(ctx, s.callMessage(sess.ID, ex.Call, now)); err != nil {
			return err
		}
		return s.d.Sessions.TouchSession(ctx, sess.ID, now)
	})
	if refused {
		s.d.Observer.ToolCall(call.Name, ports.ToolCallRefused)
	}
	if err != nil {
		return ToolCallResult{}, err
	}
	s.d.Observer.ToolCall(call.Name, ports.ToolCallPending)
	return ToolCallResult{SessionID: sess.ID, CallID: conf.ToolCallID, Confirmation: conf, Summary: conf.Summary}, nil
}

// callMessage is the assistant message that makes call, as the chat loop
// stores one.
func (s *Service) callMessage(sessionID string, call ports.ToolCall, at time.Time) ports.ChatMessage {
	return ports.ChatMessage{ID: s.d.IDs.NewID(), SessionID: sessionID, CreatedAt: at,
		Message: ports.Message{Role: ports.MessageAssistant, ToolCalls: []ports.ToolCall{call}}}
}
