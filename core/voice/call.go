package voice

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// MaxOfferBytes is the largest SDP offer StartCall accepts: 64 KiB, many
// times a browser's offer (a few kilobytes).
const MaxOfferBytes = 64 << 10

// DefaultMaxCall bounds how long a call's usage is metered unless Config
// says otherwise: 60 minutes, the provider's longest realtime session.
const DefaultMaxCall = 60 * time.Minute

// CodeInvalidSDP (invalid) is the code of an offer that is not SDP text.
const CodeInvalidSDP = "invalid_sdp"

// MeterCallArgs is the background job that records the token usage of a
// realtime call: it watches the call from the server until the call ends,
// and charges every response's tokens to the organisation and user that
// started it, for the voice feature.
type MeterCallArgs struct {
	CallID    string    `json:"call_id"`
	OrgID     string    `json:"org_id"`
	UserID    string    `json:"user_id"`
	Model     string    `json:"model"`
	StartedAt time.Time `json:"started_at"`
}

// Kind names the job for the queue.
func (MeterCallArgs) Kind() string { return "voice.meter_call" }

// meterCallAttempts bounds the attempts of a metering job that fail (a
// sideband that cannot be joined, a store that fails); an attempt that
// reaches its deadline while the call goes on is not a failure (the worker
// snoozes it).
const meterCallAttempts = 10

// Call is a realtime call that has started: the provider's SDP answer, the
// call's id and model, and the chat session that records it.
type Call struct {
	ports.RealtimeCall
	SessionID string
}

// StartCall starts a realtime call for the caller from the browser's WebRTC
// SDP offer: the provider gets the offer and a session configured as
// StartSession's (the instructions, and every assistant tool), and its SDP
// answer is returned, for the browser to complete the connection with. The
// chat session that records the call is created, and a MeterCallArgs job
// that records the call's token usage is enqueued, in one transaction.
//
// Errors: unauthenticated; invalid (Code invalid_sdp, field sdp) for an
// offer that is empty, not UTF-8 text without control characters, or not
// SDP (v=0 first); payload_too_large past MaxOfferBytes; budget_exceeded
// (rate_limited) from Deps.Budget, before the provider hears of it; the Realtime
// port's (rate_limited, unavailable, timeout, upstream, invalid); the
// stores' and the queue's.
func (s *Service) StartCall(ctx context.Context, offerSDP string) (Call, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Call{}, err
	}
	if err := checkOffer(offerSDP); err != nil {
		return Call{}, err
	}
	if s.d.Budget != nil {
		if err := s.d.Budget.Check(ctx, p.OrgID); err != nil {
			return Call{}, err
		}
	}
	instructions, err := s.d.Assistant.Instructions(ctx, s.cfg.Instructions)
	if err != nil {
		return Call{}, err
	}
	rc, err := s.d.Realtime.StartCall(ctx, offerSDP, ports.RealtimeSessionConfig{
		Model:        s.cfg.Model,
		Voice:        s.cfg.Voice,
		Instructions: instructions,
		Tools:        s.tools(nil),
	})
	if err != nil {
		return Call{}, err
	}
	sess := s.newSession(p)
	args := MeterCallArgs{CallID: rc.ID, OrgID: p.OrgID, UserID: p.UserID, Model: cmp.Or(rc.Model, s.cfg.Model), StartedAt: s.d.Clock.Now().UTC()}
	// The call runs at the provider already; when this fails, the browser
	// gets no answer, so it never connects and the provider drops the call.
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Sessions.CreateSession(ctx, sess); err != nil {
			return err
		}
		return s.d.Jobs.Enqueue(ctx, args, ports.EnqueueOptions{MaxAttempts: meterCallAttempts, UniqueByArgs: true})
	})
	if err != nil {
		return Call{}, err
	}
	s.d.Observer.VoiceCallStarted()
	return Call{RealtimeCall: rc, SessionID: sess.ID}, nil
}

// maxCallIDLen bounds a call id given to MeterOwnCall.
const maxCallIDLen = 128

// MeterOwnCall meters a realtime call the caller started themselves, with
// the client secret of a StartSession (the browser posted its offer to the
// provider and read the call's id from the answer's Location): a
// MeterCallArgs job watches the call from the server, as for StartCall's
// calls, and charges each response's tokens to the caller. Registering a
// call twice charges nothing twice (each response is recorded once); a call
// id the provider does not know ends the job at once.
//
// Errors: unauthenticated; invalid (field call_id) for an id that is not 1
// to 128 letters, digits, '_' or '-'; the queue's.
func (s *Service) MeterOwnCall(ctx context.Context, callID string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if callID == "" || len(callID) > maxCallIDLen || strings.ContainsFunc(callID, func(r rune) bool {
		return !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}) {
		return ports.Invalid("invalid call id", ports.FieldError{Field: "call_id", Reason: "must be 1 to 128 letters, digits, '_' or '-'"})
	}
	args := MeterCallArgs{CallID: callID, OrgID: p.OrgID, UserID: p.UserID, Model: s.cfg.Model, StartedAt: s.d.Clock.Now().UTC()}
	if err := s.d.Jobs.Enqueue(ctx, args, ports.EnqueueOptions{MaxAttempts: meterCallAttempts, UniqueByArgs: true}); err != nil {
		return err
	}
	s.d.Observer.VoiceCallStarted()
	return nil
}

// checkOffer is StartCall's rule for an offer.
func checkOffer(sdp string) error {
	bad := func(reason string) error {
		return &ports.Error{Kind: ports.KindInvalid, Code: CodeInvalidSDP, Message: "the body must be a WebRTC SDP offer",
			Fields: []ports.FieldError{{Field: "sdp", Reason: reason}}}
	}
	switch {
	case strings.TrimSpace(sdp) == "":
		return bad("required")
	case len(sdp) > MaxOfferBytes:
		return &ports.Error{Kind: ports.KindPayloadTooLarge, Code: CodeInvalidSDP, Message: "the SDP offer is larger than 64 KiB"}
	case !utf8.ValidString(sdp) || strings.ContainsFunc(sdp, isControl):
		return bad("must be UTF-8 text without control characters")
	case !strings.HasPrefix(sdp, "v=0"):
		return bad("must be an SDP session description, starting with v=0")
	}
	return nil
}

func isControl(r rune) bool { return (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f }

// errCallOver is the cause of a metering context that reached the call's
// longest life.
var errCallOver = errors.New("voice: the call reached its longest life")

// MeterCall records the token usage of the call a: it watches the call
// until it ends (or ctx ends, or the call has lasted Config.MaxCall since
// a.StartedAt) and adds each response's input and output tokens to the usage
// of a's organisation and user, for the voice feature and a's model. Each
// response is recorded once, under the usage key voice:<call>:<response>,
// however often it is watched (a job taken up again after its process died
// joins the call again). A call that ended, or reached Config.MaxCall, is
// done: nil.
//
// Errors: ctx's error when ctx ends first (the worker takes the call up
// again); the Realtime port's WatchCall errors (unavailable, timeout,
// upstream); the usage store's.
func (s *Service) MeterCall(ctx context.Context, a MeterCallArgs) error {
	end := a.StartedAt.Add(s.cfg.MaxCall)
	log := s.log.With("call_id", a.CallID, "org_id", a.OrgID)
	if !s.d.Clock.Now().Before(end) {
		log.WarnContext(ctx, "a realtime call's metering was given up: the call reached its longest life", "max_call", s.cfg.MaxCall)
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, end.Sub(s.d.Clock.Now()), errCallOver)
	defer cancel()
	responses := 0
	err := s.d.Realtime.WatchCall(ctx, a.CallID, func(u ports.RealtimeUsage) error {
		if u.InputTokens == 0 && u.OutputTokens == 0 {
			return nil
		}
		r := ports.UsageRecord{
			Attribution: ports.Attribution{OrgID: a.OrgID, UserID: a.UserID, Feature: ports.FeatureVoice},
			Model:       cmp.Or(a.Model, "unknown"), Day: s.d.Clock.Now(),
			PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, Calls: 1,
			Key: usageKey(a.CallID, u.ResponseID),
		}
		// The response happened whatever becomes of ctx now.
		if err := s.d.Usage.AddUsage(context.WithoutCancel(ctx), r); err != nil {
			return err
		}
		responses++
		return nil
	})
	if err != nil && errors.Is(context.Cause(ctx), errCallOver) {
		log.WarnContext(ctx, "a realtime call's metering stopped: the call reached its longest life", "max_call", s.cfg.MaxCall)
		return nil
	}
	if err == nil {
		log.InfoContext(ctx, "a realtime call ended", slog.Int("responses", responses))
	}
	return err
}

// usageKey is the usage key of a response of a call; a hash when the ids
// are too long for one.
func usageKey(callID, responseID string) string {
	k := "voice:" + callID + ":" + responseID
	if len(k) <= ports.MaxUsageKeyLen {
		return k
	}
	sum := sha256.Sum256([]byte(callID + "\x00" + responseID))
	return "voice:sha256:" + hex.EncodeToString(sum[:])
}
