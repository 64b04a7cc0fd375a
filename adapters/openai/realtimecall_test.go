package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

const testOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"

func TestStartCall(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	call, err := c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{
		Voice: "verse", Instructions: "Be brief.", Tools: voiceTools, ExpiresIn: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.RealtimeCallRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d call requests", len(reqs))
	}
	r := reqs[0]
	if call.ID == "" || call.ID != r.CallID || call.AnswerSDP != fakeopenai.AnswerSDP || call.Model != DefaultRealtimeModel {
		t.Errorf("call %+v, want id %q, the fake's answer and model %q", call, r.CallID, DefaultRealtimeModel)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("authorization %q", got)
	}
	if r.SDP != testOffer {
		t.Errorf("offer %q", r.SDP)
	}
	if r.SessionType != "realtime" || r.Model != DefaultRealtimeModel || r.Voice != "verse" || r.Instructions != "Be brief." ||
		string(r.ToolChoice) != `"auto"` || len(r.Tools) != len(voiceTools) || r.Tools[1].Name != "create_story" {
		t.Errorf("session %+v", r.RealtimeRequest)
	}
}

func TestStartCallErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		resp  *fakeopenai.Response
		offer string
		kind  ports.Kind
		code  string
	}{
		{name: "rate limited", resp: new(fakeopenai.RateLimited(time.Second)), offer: testOffer, kind: ports.KindRateLimited, code: "rate_limited"},
		{name: "bad key", resp: new(fakeopenai.Unauthorized()), offer: testOffer, kind: ports.KindUpstream, code: "upstream"},
		{name: "server error", resp: new(fakeopenai.ServerError()), offer: testOffer, kind: ports.KindUpstream, code: "upstream"},
		{name: "hangup", resp: new(fakeopenai.Hangup()), offer: testOffer, kind: ports.KindUpstream, code: "upstream"},
		{name: "offer refused", offer: "not sdp", kind: ports.KindInvalid, code: ports.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			if tt.resp != nil {
				f.EnqueueRealtimeCall(*tt.resp)
			}
			c, _ := newTestClient(t, f)
			_, err := c.StartCall(t.Context(), tt.offer, ports.RealtimeSessionConfig{})
			wantError(t, err, tt.kind, tt.code)
		})
	}
}

func TestStartCallAzure(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, err := New(Config{APIType: APITypeAzure, APIKey: testKey, BaseURL: f.AzureURL(), Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{})
	wantError(t, err, ports.KindUnavailable, CodeRealtimeUnsupported)
	err = c.WatchCall(t.Context(), "rtc_x", func(ports.RealtimeUsage) error { return nil })
	wantError(t, err, ports.KindUnavailable, CodeRealtimeUnsupported)
}

func TestCallIDOf(t *testing.T) {
	t.Parallel()
	for loc, want := range map[string]string{
		"/v1/realtime/calls/rtc_abc":                       "rtc_abc",
		"https://api.openai.com/v1/realtime/calls/rtc_abc": "rtc_abc",
		"/v1/realtime/calls/":                              "",
		"/v1/realtime/calls/rtc_abc/hangup":                "",
		"":                                                 "",
		"/v1/other/rtc_abc":                                "",
	} {
		if got := callIDOf(loc); got != want {
			t.Errorf("callIDOf(%q) = %q, want %q", loc, got, want)
		}
	}
}

// watch runs WatchCall and returns its error and the usage it reported.
func watch(ctx context.Context, c *Client, id string) ([]ports.RealtimeUsage, error) {
	var got []ports.RealtimeUsage
	err := c.WatchCall(ctx, id, func(u ports.RealtimeUsage) error {
		got = append(got, u)
		return nil
	})
	return got, err
}

func TestWatchCall(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.ScriptCalls(fakeopenai.CallScript{Responses: []fakeopenai.RealtimeResponse{
		{ID: "resp_1", InputTokens: 120, OutputTokens: 40, CachedTokens: 64, InputAudioTokens: 100, OutputAudioTokens: 30},
		{ID: "resp_2", InputTokens: 200, OutputTokens: 80},
	}})
	c, _ := newTestClient(t, f)
	call, err := c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := watch(t.Context(), c, call.ID)
	if err != nil {
		t.Fatalf("WatchCall: %v", err)
	}
	want := []ports.RealtimeUsage{
		{ResponseID: "resp_1", InputTokens: 120, OutputTokens: 40, CachedTokens: 64, InputAudioTokens: 100, OutputAudioTokens: 30},
		{ResponseID: "resp_2", InputTokens: 200, OutputTokens: 80},
	}
	if !slices.Equal(got, want) {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	// The call ended: joining again finds it gone (404), which is no error.
	got, err = watch(t.Context(), c, call.ID)
	if err != nil || got != nil {
		t.Errorf("WatchCall of an ended call = %v, %+v; want nil and nothing", err, got)
	}
	if n := f.SidebandJoins(call.ID); n != 1 {
		t.Errorf("%d joins, want 1", n)
	}
	if err := c.WatchCall(t.Context(), "rtc_unknown", func(ports.RealtimeUsage) error { return errors.New("called") }); err != nil {
		t.Errorf("WatchCall of an unknown call = %v, want nil", err)
	}
}

func TestWatchCallHeldAndDropped(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.ScriptCalls(fakeopenai.CallScript{Hold: true, Responses: []fakeopenai.RealtimeResponse{{ID: "resp_1", InputTokens: 5, OutputTokens: 6}}})
	c, _ := newTestClient(t, f)
	call, err := c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{})
	if err != nil {
		t.Fatal(err)
	}

	// A dropped connection is unavailable; the usage seen before it was reported.
	f.DropSideband(call.ID)
	got, err := watch(t.Context(), c, call.ID)
	wantError(t, err, ports.KindUnavailable, string(ports.KindUnavailable))
	if len(got) != 1 || got[0].ResponseID != "resp_1" {
		t.Errorf("usage before the drop %+v", got)
	}

	// The caller's context ends a held connection with its error.
	ctx, cancel := context.WithCancel(t.Context())
	err = c.WatchCall(ctx, call.ID, func(ports.RealtimeUsage) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("WatchCall after cancel = %v, want context.Canceled", err)
	}

	// onUsage's error ends the watch and is returned as it is.
	boom := errors.New("store down")
	if err := c.WatchCall(t.Context(), call.ID, func(ports.RealtimeUsage) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("WatchCall = %v, want onUsage's error", err)
	}

	// The call ends while held: a normal close, no error.
	done := make(chan error, 1)
	go func() {
		_, err := watch(t.Context(), c, call.ID)
		done <- err
	}()
	for f.SidebandJoins(call.ID) < 4 {
		select {
		case err := <-done:
			t.Fatalf("WatchCall returned %v before the call ended", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	f.EndCall(call.ID)
	if err := <-done; err != nil {
		t.Errorf("WatchCall of a call that ended = %v, want nil", err)
	}
}

func TestWatchCallClosedWithAnError(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.ScriptCalls(fakeopenai.CallScript{CloseCode: 1011, Responses: []fakeopenai.RealtimeResponse{{ID: "resp_1", InputTokens: 1, OutputTokens: 1}}})
	c, _ := newTestClient(t, f)
	call, err := c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Not the end of the call: unavailable, so that the caller joins again.
	got, err := watch(t.Context(), c, call.ID)
	wantError(t, err, ports.KindUnavailable, string(ports.KindUnavailable))
	if len(got) != 1 {
		t.Errorf("usage %+v", got)
	}
	f.ScriptCall(call.ID, fakeopenai.CallScript{})
	if _, err := watch(t.Context(), c, call.ID); err != nil {
		t.Errorf("WatchCall after the call ended normally = %v", err)
	}
}

func TestWatchCallRefused(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	call, err := c.StartCall(t.Context(), testOffer, ports.RealtimeSessionConfig{})
	if err != nil {
		t.Fatal(err)
	}
	noKey, err := New(Config{BaseURL: f.URL(), Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = watch(t.Context(), noKey, call.ID)
	e := wantError(t, err, ports.KindUpstream, "upstream")
	if !strings.Contains(e.Message, "credentials") {
		t.Errorf("message %q", e.Message)
	}

	// A server that does not answer the join in time.
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	slow, err := New(Config{APIKey: testKey, BaseURL: srv.URL + "/v1", Model: "gpt-test", RealtimeTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = watch(t.Context(), slow, call.ID)
	close(stall)
	wantError(t, err, ports.KindTimeout, string(ports.KindTimeout))
}
