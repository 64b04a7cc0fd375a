package app_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

const sdpOffer = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n" +
	"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:1\r\na=sctp-port:5000\r\n"

// offer posts body to /api/v1/voice/calls with the headers given (name,
// value, …) and returns the status, the headers and the body.
func (st *stack) offer(token string, body []byte, header ...string) (int, http.Header, []byte) {
	st.t.Helper()
	req, _ := http.NewRequest("POST", st.base+"/api/v1/voice/calls", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return st.send(req)
}

// waitUsage polls the usage by feature until its voice total is prompt and
// completion tokens, and fails the test when it is not within a minute.
func (st *stack) waitVoiceUsage(token string, prompt, completion int64) usageReport {
	st.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, r := st.usage(token, "?group_by=feature")
		if code != 200 {
			st.t.Fatalf("usage: %d", code)
		}
		if r.Total.PromptTokens == prompt && r.Total.CompletionTokens == completion {
			return r
		}
		if r.Total.PromptTokens > prompt || r.Total.CompletionTokens > completion || time.Now().After(deadline) {
			st.t.Fatalf("usage %+v, want %d prompt and %d completion tokens", r, prompt, completion)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestVoiceCallUsage: a realtime call started through the server is metered
// from its sideband: every response's tokens are in /api/v1/usage under
// voice, once, also when the sideband drops and is joined again.
func TestVoiceCallUsage(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, alice := st.admin("admin@example.com"), st.token("alice@example.com")
			// Two responses, the first reported twice.
			r1 := fakeopenai.RealtimeResponse{ID: "resp_1", InputTokens: 1000, OutputTokens: 200, InputAudioTokens: 900, OutputAudioTokens: 150}
			r2 := fakeopenai.RealtimeResponse{ID: "resp_2", InputTokens: 500, OutputTokens: 100}
			st.model.ScriptCalls(fakeopenai.CallScript{Hold: true, Responses: []fakeopenai.RealtimeResponse{r1, r2, r1}})

			code, h, body := st.offer(alice, []byte(sdpOffer), "Content-Type", "application/sdp")
			if code != 201 || string(body) != fakeopenai.AnswerSDP || h.Get("Content-Type") != "application/sdp" {
				t.Fatalf("start call: %d %s %s", code, h.Get("Content-Type"), body)
			}
			callID := h.Get("X-Devpilot-Call-Id")
			reqs := st.model.RealtimeCallRequests()
			if callID == "" || len(reqs) != 1 || reqs[0].CallID != callID || reqs[0].SDP != sdpOffer || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
				t.Fatalf("call %q, requests %+v", callID, reqs)
			}
			var sent []string
			for _, tl := range reqs[0].Tools {
				sent = append(sent, tl.Name)
			}
			if !slices.Contains(sent, "list_widgets") || !slices.Contains(sent, "resize_widget") || reqs[0].Instructions == "" {
				t.Errorf("session tools %v, instructions %q", sent, reqs[0].Instructions)
			}
			if sid := h.Get("X-Devpilot-Session-Id"); sid == "" {
				t.Error("no session id")
			}

			r := st.waitVoiceUsage(admin, 1500, 300)
			if len(r.Groups) != 1 || r.Groups[0] != (usageTotal{Key: "voice", PromptTokens: 1500, CompletionTokens: 300, TotalTokens: 1800, Calls: 2}) {
				t.Fatalf("usage by feature %+v", r)
			}
			if code, r := st.usage(admin, "?group_by=model"); code != 200 || len(r.Groups) != 1 || r.Groups[0].Key != fakeopenai.DefaultRealtimeModel {
				t.Fatalf("usage by model: %d %+v", code, r)
			}
			if code, r := st.usage(alice, "?group_by=user"); code != 200 || r.Total.TotalTokens != 1800 {
				t.Fatalf("alice's usage: %d %+v", code, r)
			}

			// The sideband drops; the job joins again and is told both
			// responses again, then a third: only the third is new.
			r3 := fakeopenai.RealtimeResponse{ID: "resp_3", InputTokens: 10, OutputTokens: 5}
			st.model.ScriptCall(callID, fakeopenai.CallScript{Hold: true, Responses: []fakeopenai.RealtimeResponse{r1, r2, r3}})
			if !st.model.DropSideband(callID) {
				t.Fatal("no sideband to drop")
			}
			r = st.waitVoiceUsage(admin, 1510, 305)
			if r.Groups[0].Calls != 3 {
				t.Fatalf("usage by feature %+v, want 3 calls", r)
			}
			if n := st.model.SidebandJoins(callID); n != 2 {
				t.Errorf("%d sideband joins, want 2", n)
			}
			st.model.EndCall(callID)

			// JSON on request.
			st.model.ScriptCalls(fakeopenai.CallScript{})
			code, h, body = st.offer(alice, []byte(sdpOffer), "Content-Type", "application/sdp", "Accept", "application/json")
			if code != 201 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !containsAll(body, `"call_id"`, `"sdp":"v=0`, `"session_id"`) {
				t.Fatalf("start call for JSON: %d %s", code, body)
			}

			// A retry with the same Idempotency-Key gets the same call.
			calls := len(st.model.RealtimeCallRequests())
			code, h1, body1 := st.offer(alice, []byte(sdpOffer), "Content-Type", "application/sdp", "Idempotency-Key", "call-1")
			code2, h2, body2 := st.offer(alice, []byte(sdpOffer), "Content-Type", "application/sdp", "Idempotency-Key", "call-1")
			if code != 201 || code2 != 201 || !bytes.Equal(body1, body2) || h1.Get("X-Devpilot-Call-Id") == "" ||
				h1.Get("X-Devpilot-Call-Id") != h2.Get("X-Devpilot-Call-Id") || h1.Get("X-Devpilot-Session-Id") != h2.Get("X-Devpilot-Session-Id") {
				t.Fatalf("idempotent call: %d %v, then %d %v", code, h1, code2, h2)
			}
			if n := len(st.model.RealtimeCallRequests()) - calls; n != 1 {
				t.Fatalf("the provider received %d calls for one Idempotency-Key", n)
			}

			// Over the budget, no call starts: the provider hears nothing.
			if code, _, raw := st.budget(admin, "PUT", map[string]any{"monthly_tokens": 1815}); code != 200 {
				t.Fatalf("budget: %d %s", code, raw)
			}
			calls = len(st.model.RealtimeCallRequests())
			if code, _, body := st.offer(alice, []byte(sdpOffer), "Content-Type", "application/sdp"); code != 429 || !containsAll(body, "budget_exceeded") {
				t.Fatalf("start call over the budget: %d %s", code, body)
			}
			if n := len(st.model.RealtimeCallRequests()); n != calls {
				t.Fatalf("the provider received %d calls over the budget", n-calls)
			}
		})
	}
}

// TestVoiceCallRefusesBadOffers: what is not an SDP offer is refused with a
// problem, and never reaches the provider.
func TestVoiceCallRefusesBadOffers(t *testing.T) {
	st := startStack(t, string(sqlstoretest.Dialects()[0]))
	alice := st.token("alice@example.com")
	for _, tt := range []struct {
		name        string
		body        []byte
		contentType string
		status      int
	}{
		{"empty", nil, "application/sdp", 422},
		{"blank", []byte("\r\n \r\n"), "application/sdp", 422},
		{"too large", []byte(sdpOffer + strings.Repeat("a=x\r\n", 14000)), "application/sdp", 413},
		{"binary", []byte("v=0\r\n\x00\x01\x02\x03"), "application/sdp", 422},
		{"not utf-8", []byte("v=0\r\ns=\xff\xfe\r\n"), "application/sdp", 400},
		{"not sdp", []byte(`{"sdp":"v=0"}`), "application/sdp", 422},
		{"json", []byte(`{"sdp":"v=0"}`), "application/json", 415},
		{"no content type", []byte(sdpOffer), "", 415},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var header []string
			if tt.contentType != "" {
				header = []string{"Content-Type", tt.contentType}
			}
			code, h, body := st.offer(alice, tt.body, header...)
			if code != tt.status || !strings.HasPrefix(h.Get("Content-Type"), "application/problem+json") {
				t.Fatalf("%d %s %s, want %d problem+json", code, h.Get("Content-Type"), body, tt.status)
			}
		})
	}
	if n := len(st.model.RealtimeCallRequests()); n != 0 {
		t.Errorf("the provider received %d calls", n)
	}
}

// TestVoiceOwnCallUsage: a call the browser started itself, with a voice
// session's client secret, is metered once registered: its responses'
// tokens are charged to the caller under voice, once however often it is
// registered; an id the provider does not know charges nothing, and a
// malformed one is refused.
func TestVoiceOwnCallUsage(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, alice := st.admin("admin@example.com"), st.token("alice@example.com")
			code, body, _ := st.call(alice, "POST", "/api/v1/voice/session", map[string]any{})
			var sess struct{ Token string }
			if err := json.Unmarshal(body, &sess); code != 200 || err != nil || sess.Token == "" {
				t.Fatalf("voice session: %d %s", code, body)
			}

			// The browser posts its offer to the provider with the client
			// secret; the provider's answer names the call.
			st.model.ScriptCalls(fakeopenai.CallScript{Hold: true, Responses: []fakeopenai.RealtimeResponse{
				{ID: "resp_a", InputTokens: 40, OutputTokens: 8}, {ID: "resp_b", InputTokens: 60, OutputTokens: 12},
			}})
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			_ = mw.WriteField("sdp", sdpOffer)
			_ = mw.Close()
			req, _ := http.NewRequest("POST", st.model.URL()+"/realtime/calls", &form)
			req.Header.Set("Authorization", "Bearer "+sess.Token)
			req.Header.Set("Content-Type", mw.FormDataContentType())
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			callID := path.Base(resp.Header.Get("Location"))
			if resp.StatusCode != 201 || !strings.HasPrefix(resp.Header.Get("Location"), "/v1/realtime/calls/") {
				t.Fatalf("the browser's call: %d %s", resp.StatusCode, resp.Header.Get("Location"))
			}

			for range 2 { // registered twice: charged once
				if code, body, _ := st.call(alice, "POST", "/api/v1/voice/calls/"+callID+"/metering", nil); code != 202 || !containsAll(body, `"status":"metering"`) {
					t.Fatalf("meter the call: %d %s", code, body)
				}
			}
			st.waitVoiceUsage(admin, 100, 20)
			if code, r := st.usage(alice, "?group_by=user"); code != 200 || r.Total.TotalTokens != 120 {
				t.Fatalf("alice's usage: %d %+v", code, r)
			}
			st.model.EndCall(callID)

			if code, body, _ := st.call(alice, "POST", "/api/v1/voice/calls/rtc_unknown/metering", nil); code != 202 {
				t.Fatalf("meter an unknown call: %d %s", code, body)
			}
			for _, bad := range []string{"rtc%20x", "rtc%00", strings.Repeat("a", 129)} {
				if code, body, _ := st.call(alice, "POST", "/api/v1/voice/calls/"+bad+"/metering", nil); code != 422 {
					t.Errorf("meter call %q: %d %s, want 422", bad, code, body)
				}
			}
			time.Sleep(500 * time.Millisecond) // the unknown call's job has run by now
			st.waitVoiceUsage(admin, 100, 20)
		})
	}
}
