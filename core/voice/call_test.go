package voice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

const offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"

func TestStartCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{Voice: "verse"})
	e.realtime.EXPECT().StartCall(gomock.Any(), offer, gomock.Any()).DoAndReturn(
		func(_ context.Context, _ string, cfg ports.RealtimeSessionConfig) (ports.RealtimeCall, error) {
			if cfg.Voice != "verse" || !strings.HasPrefix(cfg.Instructions, voice.DefaultInstructions) || len(cfg.Tools) != 3 {
				t.Errorf("session config %+v", cfg)
			}
			return ports.RealtimeCall{ID: "rtc_1", AnswerSDP: "v=0 answer", Model: "gpt-realtime"}, nil
		})
	e.jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			if !withinTx(ctx) {
				t.Error("the metering job was enqueued outside the transaction")
			}
			want := voice.MeterCallArgs{CallID: "rtc_1", OrgID: alice.OrgID, UserID: alice.UserID, Model: "gpt-realtime", StartedAt: e.clock.Now().UTC()}
			if args != want || !opts.UniqueByArgs || opts.MaxAttempts == 0 {
				t.Errorf("job %+v %+v, want %+v, unique", args, opts, want)
			}
			return nil
		})
	call, err := e.svc.StartCall(as(alice), offer)
	if err != nil {
		t.Fatal(err)
	}
	if call.ID != "rtc_1" || call.AnswerSDP != "v=0 answer" || call.SessionID == "" {
		t.Errorf("call %+v", call)
	}
	if got := strings.Join(e.spy.writes, ","); got != "CreateSession (tx)" {
		t.Errorf("writes %s", got)
	}
	if ss := e.sessions(alice); len(ss) != 1 || ss[0].ID != call.SessionID || ss[0].Title != voice.SessionTitle {
		t.Errorf("sessions %+v", ss)
	}
}

func TestStartCallRefusesBadOffers(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		sdp  string
		kind ports.Kind
	}{
		"empty":     {"", ports.KindInvalid},
		"blank":     {" \r\n", ports.KindInvalid},
		"too large": {offer + strings.Repeat("a=x\r\n", voice.MaxOfferBytes/5), ports.KindPayloadTooLarge},
		"binary":    {"v=0\r\n\x00\x01\x02", ports.KindInvalid},
		"not utf-8": {"v=0\r\ns=\xff\xfe", ports.KindInvalid},
		"not sdp":   {`{"sdp":"v=0"}`, ports.KindInvalid},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			_, err := e.svc.StartCall(as(alice), tt.sdp)
			if ports.KindOf(err) != tt.kind {
				t.Fatalf("StartCall = %v, want %s", err, tt.kind)
			}
			if e, _ := ports.AsError(err); e.Code != voice.CodeInvalidSDP {
				t.Errorf("code %q", e.Code)
			}
		})
	}
	e := newEnv(t, voice.Config{})
	if _, err := e.svc.StartCall(context.Background(), offer); ports.KindOf(err) != ports.KindUnauthenticated {
		t.Errorf("without a principal: %v", err)
	}
}

func TestStartCallFailures(t *testing.T) {
	t.Parallel()
	t.Run("provider", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{})
		e.realtime.EXPECT().StartCall(gomock.Any(), offer, gomock.Any()).Return(ports.RealtimeCall{}, &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second})
		if _, err := e.svc.StartCall(as(alice), offer); ports.KindOf(err) != ports.KindRateLimited {
			t.Fatalf("StartCall = %v", err)
		}
		if ss := e.sessions(alice); len(ss) != 0 {
			t.Errorf("sessions %+v", ss)
		}
	})
	t.Run("queue", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{})
		e.realtime.EXPECT().StartCall(gomock.Any(), offer, gomock.Any()).Return(ports.RealtimeCall{ID: "rtc_1", AnswerSDP: "v=0"}, nil)
		e.jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.Errorf(ports.KindUnavailable, "queue down"))
		if _, err := e.svc.StartCall(as(alice), offer); ports.KindOf(err) != ports.KindUnavailable {
			t.Fatalf("StartCall = %v", err)
		}
		if ss := e.sessions(alice); len(ss) != 0 {
			t.Errorf("the session outlived the failed enqueue: %+v", ss)
		}
	})
}

// usageByFeature is the org's usage of the env's day, by feature.
func (e *env) usageByFeature() []ports.UsageTotal {
	e.t.Helper()
	got, err := e.store.SumUsage(context.Background(), ports.UsageQuery{OrgID: alice.OrgID, From: e.clock.Now(), To: e.clock.Now(), GroupBy: ports.UsageByFeature})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// replay makes WatchCall report each of us, then return err.
func replay(err error, us ...ports.RealtimeUsage) func(context.Context, string, func(ports.RealtimeUsage) error) error {
	return func(_ context.Context, _ string, on func(ports.RealtimeUsage) error) error {
		for _, u := range us {
			if err := on(u); err != nil {
				return err
			}
		}
		return err
	}
}

func TestMeterCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	args := voice.MeterCallArgs{CallID: "rtc_1", OrgID: alice.OrgID, UserID: alice.UserID, Model: "gpt-realtime", StartedAt: e.clock.Now()}
	r1 := ports.RealtimeUsage{ResponseID: "resp_1", InputTokens: 100, OutputTokens: 30}
	r2 := ports.RealtimeUsage{ResponseID: "resp_2", InputTokens: 50, OutputTokens: 20}
	none := ports.RealtimeUsage{ResponseID: "resp_0"}
	// The first attempt sees r1 twice and drops; the next one sees everything again.
	drop := &ports.Error{Kind: ports.KindUnavailable, Message: "dropped"}
	e.realtime.EXPECT().WatchCall(gomock.Any(), "rtc_1", gomock.Any()).DoAndReturn(replay(drop, r1, r1, none))
	e.realtime.EXPECT().WatchCall(gomock.Any(), "rtc_1", gomock.Any()).DoAndReturn(replay(nil, r1, r2))
	if err := e.svc.MeterCall(context.Background(), args); !errors.Is(err, drop) {
		t.Fatalf("first attempt: %v", err)
	}
	if err := e.svc.MeterCall(context.Background(), args); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	got := e.usageByFeature()
	if len(got) != 1 || got[0] != (ports.UsageTotal{Key: "voice", PromptTokens: 150, CompletionTokens: 50, Calls: 2}) {
		t.Errorf("usage %+v, want r1 and r2 once each", got)
	}
	byModel, _ := e.store.SumUsage(context.Background(), ports.UsageQuery{OrgID: alice.OrgID, UserID: alice.UserID, From: e.clock.Now(), To: e.clock.Now(), GroupBy: ports.UsageByModel})
	if len(byModel) != 1 || byModel[0].Key != "gpt-realtime" {
		t.Errorf("by model %+v", byModel)
	}
}

func TestMeterCallBounds(t *testing.T) {
	t.Parallel()
	t.Run("past its longest life", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxCall: time.Hour})
		args := voice.MeterCallArgs{CallID: "rtc_1", OrgID: alice.OrgID, Model: "m", StartedAt: e.clock.Now().Add(-time.Hour)}
		if err := e.svc.MeterCall(context.Background(), args); err != nil {
			t.Fatalf("MeterCall = %v, want nil without watching", err)
		}
	})
	t.Run("reaches its longest life", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{MaxCall: 20 * time.Millisecond})
		args := voice.MeterCallArgs{CallID: "rtc_1", OrgID: alice.OrgID, Model: "m", StartedAt: e.clock.Now()}
		e.realtime.EXPECT().WatchCall(gomock.Any(), "rtc_1", gomock.Any()).DoAndReturn(
			func(ctx context.Context, _ string, _ func(ports.RealtimeUsage) error) error {
				<-ctx.Done()
				return ctx.Err()
			})
		if err := e.svc.MeterCall(context.Background(), args); err != nil {
			t.Fatalf("MeterCall = %v, want nil", err)
		}
	})
	t.Run("the caller's context ends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{})
		args := voice.MeterCallArgs{CallID: "rtc_1", OrgID: alice.OrgID, Model: "m", StartedAt: e.clock.Now()}
		ctx, cancel := context.WithCancel(context.Background())
		e.realtime.EXPECT().WatchCall(gomock.Any(), "rtc_1", gomock.Any()).DoAndReturn(
			func(ctx context.Context, _ string, _ func(ports.RealtimeUsage) error) error {
				cancel()
				<-ctx.Done()
				return ctx.Err()
			})
		if err := e.svc.MeterCall(ctx, args); !errors.Is(err, context.Canceled) {
			t.Fatalf("MeterCall = %v, want context.Canceled", err)
		}
	})
	t.Run("a store that fails", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{})
		args := voice.MeterCallArgs{CallID: "rtc_1", OrgID: "", Model: "m", StartedAt: e.clock.Now()}
		e.realtime.EXPECT().WatchCall(gomock.Any(), "rtc_1", gomock.Any()).DoAndReturn(replay(nil, ports.RealtimeUsage{ResponseID: "r", InputTokens: 1}))
		if err := e.svc.MeterCall(context.Background(), args); ports.KindOf(err) != ports.KindInvalid {
			t.Fatalf("MeterCall = %v, want the store's invalid", err)
		}
	})
	t.Run("long ids", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, voice.Config{})
		args := voice.MeterCallArgs{CallID: strings.Repeat("c", 300), OrgID: alice.OrgID, Model: "m", StartedAt: e.clock.Now()}
		u := ports.RealtimeUsage{ResponseID: strings.Repeat("r", 300), InputTokens: 3, OutputTokens: 4}
		e.realtime.EXPECT().WatchCall(gomock.Any(), args.CallID, gomock.Any()).DoAndReturn(replay(nil, u, u)).Times(2)
		for range 2 {
			if err := e.svc.MeterCall(context.Background(), args); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.usageByFeature(); len(got) != 1 || got[0].Calls != 1 || got[0].PromptTokens != 3 {
			t.Errorf("usage %+v", got)
		}
	})
}

// budgetFunc is a voice.Budget.
type budgetFunc func(ctx context.Context, orgID string) error

func (f budgetFunc) Check(ctx context.Context, orgID string) error { return f(ctx, orgID) }

func TestStartCallOverBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	d := e.deps
	d.Budget = budgetFunc(func(_ context.Context, orgID string) error {
		if orgID != alice.OrgID {
			t.Errorf("budget of %q", orgID)
		}
		return &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded, RetryAfter: time.Hour}
	})
	// No provider call and no job are expected (the mocks fail on one).
	_, err := voice.New(voice.Config{}, d).StartCall(as(alice), offer)
	if e, ok := ports.AsError(err); !ok || e.Code != ports.CodeBudgetExceeded {
		t.Fatalf("StartCall over the budget = %v", err)
	}
}

// TestStartSessionOverBudget: over the organisation's budget no realtime
// client secret is minted and no session created.
func TestStartSessionOverBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{})
	d := e.deps
	d.Budget = budgetFunc(func(_ context.Context, orgID string) error {
		if orgID != alice.OrgID {
			t.Errorf("budget of %q", orgID)
		}
		return &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded, RetryAfter: time.Hour}
	})
	// No provider call is expected (the mock fails on one).
	_, err := voice.New(voice.Config{}, d).StartSession(as(alice))
	if e, ok := ports.AsError(err); !ok || e.Code != ports.CodeBudgetExceeded {
		t.Fatalf("StartSession over the budget = %v", err)
	}
	if sessions, _, err := e.store.ListSessions(context.Background(), alice.Owner(), ports.Page{Limit: 10}); err != nil || len(sessions) != 0 {
		t.Errorf("sessions after a refused start: %v %v", sessions, err)
	}
}

// TestMeterOwnCall: a call the caller started with a session's client
// secret is metered as StartCall's are, charged to the caller; a bad id is
// refused before anything is queued.
func TestMeterOwnCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{Model: "gpt-realtime"})
	e.jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(_ context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			want := voice.MeterCallArgs{CallID: "rtc_own-1", OrgID: alice.OrgID, UserID: alice.UserID, Model: "gpt-realtime", StartedAt: e.clock.Now().UTC()}
			if args != want || !opts.UniqueByArgs || opts.MaxAttempts == 0 {
				t.Errorf("job %+v %+v, want %+v, unique", args, opts, want)
			}
			return nil
		})
	if err := e.svc.MeterOwnCall(as(alice), "rtc_own-1"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "rtc/../x", "rtc 1", "rtc\x00", strings.Repeat("a", 129), "rtc_é"} {
		if err := e.svc.MeterOwnCall(as(alice), bad); ports.KindOf(err) != ports.KindInvalid {
			t.Errorf("MeterOwnCall(%q) = %v, want invalid", bad, err)
		}
	}
	if err := e.svc.MeterOwnCall(context.Background(), "rtc_1"); ports.KindOf(err) != ports.KindUnauthenticated {
		t.Errorf("without a principal: %v", err)
	}
}
