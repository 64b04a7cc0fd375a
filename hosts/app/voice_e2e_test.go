package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func TestVoiceEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			alice, bob := st.token("alice@example.com"), st.token("bob@example.com")

			const pref = "Answer in British English."
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/memory/preferences", map[string]any{"preferences": []map[string]string{{"instruction": pref}}}); code != 200 {
				t.Fatalf("preferences: %d %s", code, body)
			}

			// The session: a token and its expiry; the provider got every tool and the preferences.
			code, body, _ := st.call(alice, "POST", "/api/v1/voice/session", nil)
			var sess struct {
				Token     string
				ExpiresAt time.Time `json:"expires_at"`
				Model     string
				SessionID string `json:"session_id"`
			}
			if err := json.Unmarshal(body, &sess); code != 200 || err != nil || sess.Token == "" || sess.Model == "" || sess.SessionID == "" {
				t.Fatalf("voice session: %d %s", code, body)
			}
			if left := time.Until(sess.ExpiresAt); left < 9*time.Minute || left > 11*time.Minute {
				t.Fatalf("token expires in %v, want about 10 minutes", left)
			}
			reqs := st.model.RealtimeRequests()
			if len(reqs) != 1 || !strings.Contains(reqs[0].Instructions, pref) {
				t.Fatalf("realtime requests: %+v", reqs)
			}
			var sent []string
			for _, tl := range reqs[0].Tools {
				if len(tl.Parameters) == 0 {
					t.Errorf("tool %s sent without a schema", tl.Name)
				}
				sent = append(sent, tl.Name)
			}
			// Without a page, every assistant tool (docs/api.md, "Voice and audio").
			var want []string
			for _, def := range st.reg.Definitions() {
				want = append(want, def.Name)
			}
			slices.Sort(sent)
			slices.Sort(want)
			if !slices.Equal(sent, want) || !slices.Contains(sent, "list_widgets") {
				t.Fatalf("tools sent %v, want every tool %v", sent, want)
			}

			// On a page, the tools the chat routes there (issue 20, item 7).
			if code, body, _ := st.call(alice, "POST", "/api/v1/voice/session", map[string]any{"context": map[string]string{"current_page": "/cloud"}}); code != 200 {
				t.Fatalf("voice session on a page: %d %s", code, body)
			}
			reqs = st.model.RealtimeRequests()
			var onPage []string
			for _, tl := range reqs[len(reqs)-1].Tools {
				onPage = append(onPage, tl.Name)
			}
			var routed []string
			for _, def := range st.reg.Route(&tool.PageContext{CurrentPage: "/cloud"}, "", 0) {
				routed = append(routed, def.Name)
			}
			slices.Sort(onPage)
			slices.Sort(routed)
			if !slices.Equal(onPage, routed) || len(onPage) > 20 {
				t.Fatalf("tools sent on /cloud %v, routed %v", onPage, routed)
			}

			// A read runs at once and returns its output.
			code, body, _ = st.call(alice, "POST", "/api/v1/voice/tool-calls", map[string]any{"name": "list_widgets", "arguments": "{}", "call_id": "call_read", "session_id": sess.SessionID})
			if code != 200 || !bytes.Contains(body, []byte(`"checkout"`)) || !bytes.Contains(body, []byte(`"output"`)) {
				t.Fatalf("read by voice: %d %s", code, body)
			}

			// Unknown tools and bad arguments are 422 and run nothing.
			for _, bad := range []map[string]any{
				{"name": "drop_tables", "arguments": "{}", "call_id": "call_x"},
				{"name": "resize_widget", "arguments": `{"service":"checkout","desired_count":-4}`, "call_id": "call_y"},
				{"name": "resize_widget", "arguments": `not json`, "call_id": "call_z"},
			} {
				if code, body, _ := st.call(alice, "POST", "/api/v1/voice/tool-calls", bad); code != 422 {
					t.Fatalf("%v: %d %s", bad, code, body)
				}
			}

			// A write is pending until confirmed, then runs exactly once.
			code, body, _ = st.call(alice, "POST", "/api/v1/voice/tool-calls", map[string]any{
				"name": "resize_widget", "arguments": `{"service":"checkout","desired_count":3}`, "call_id": "call_write", "session_id": sess.SessionID})
			var pending struct {
				ConfirmationID string `json:"confirmation_id"`
				Summary        string
				Status         string
			}
			if err := json.Unmarshal(body, &pending); code != 200 || err != nil || pending.Status != "pending" || pending.Summary != "Scale checkout to 3 tasks" {
				t.Fatalf("write by voice: %d %s", code, body)
			}
			if n := st.scales.Load(); n != 0 {
				t.Fatalf("the write ran %d times before approval", n)
			}
			confirm := map[string]any{"session_id": sess.SessionID, "confirmation_id": pending.ConfirmationID, "approved": true}
			if code, _, _ := st.call(bob, "POST", "/api/v1/agent/confirm", confirm); code != 404 {
				t.Fatalf("another user confirming: %d", code)
			}
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/confirm", confirm); code != 200 {
				t.Fatalf("confirm: %d %s", code, body)
			}
			if code, _, _ := st.call(alice, "POST", "/api/v1/agent/confirm", confirm); code != 409 {
				t.Fatalf("confirming twice: %d", code)
			}
			if n := st.scales.Load(); n != 1 {
				t.Fatalf("the write ran %d times, want once", n)
			}

			// The history shows what was done by voice.
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/sessions/"+sess.SessionID, nil)
			if code != 200 || !containsAll(body, "Voice session", "call_read", "call_write", "list_widgets", "resize_widget") {
				t.Fatalf("voice session history: %d %s", code, body)
			}
		})
	}
}

// upload is one multipart transcription request.
type upload struct {
	field, filename string
	data            []byte
	language        string
}

func (st *stack) transcribe(token string, u upload) (int, []byte) {
	st.t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if u.field != "" {
		fw, _ := mw.CreateFormFile(u.field, u.filename)
		_, _ = fw.Write(u.data)
	}
	if u.language != "" {
		_ = mw.WriteField("language", u.language)
	}
	_ = mw.Close()
	return st.post(token, "/audio/transcribe", mw.FormDataContentType(), &buf)
}

func (st *stack) post(token, path, contentType string, body io.Reader) (int, []byte) {
	st.t.Helper()
	req, _ := http.NewRequest("POST", st.base+path, body)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", contentType)
	code, _, raw := st.send(req)
	return code, raw
}

func TestTranscriptionEndToEnd(t *testing.T) {
	t.Parallel()
	st := startStack(t, string(sqlstoretest.Dialects()[0]))
	alice := st.token("alice@example.com")
	wav := fakeopenai.WAV(time.Second, 440)

	st.model.EnqueueTranscription(fakeopenai.Text("the checkout service is healthy").WithLanguage("english"))
	code, body := st.transcribe(alice, upload{field: "file", filename: "memo.wav", data: wav, language: "en"})
	var got struct {
		Text     string
		Language string
		Duration float64
	}
	if err := json.Unmarshal(body, &got); code != 200 || err != nil || got.Text != "the checkout service is healthy" || got.Language != "en" || math.Abs(got.Duration-1) > 0.05 {
		t.Fatalf("transcribe: %d %s", code, body)
	}
	reqs := st.model.TranscriptionRequests()
	if len(reqs) != 1 || reqs[0].Size != int64(len(wav)) || reqs[0].Language != "en" || reqs[0].Filename != "memo.wav" {
		t.Fatalf("the provider received %+v", reqs)
	}
	if code, body := st.transcribe(alice, upload{field: "audio", filename: "memo.wav", data: wav}); code != 200 {
		t.Fatalf("field audio: %d %s", code, body)
	}

	tests := []struct {
		name string
		u    upload
		want int
	}{
		{"no file", upload{language: "en"}, 400},
		{"empty file", upload{field: "file", filename: "memo.wav"}, 422},
		{"text renamed .mp3", upload{field: "file", filename: "notes.mp3", data: []byte("just some meeting notes, not audio at all\n")}, 415},
		{"unsupported extension", upload{field: "file", filename: "memo.txt", data: wav}, 415},
		{"bad language", upload{field: "file", filename: "memo.wav", data: wav, language: "English!"}, 422},
		{"25 MiB + 1 byte", upload{field: "file", filename: "big.wav", data: append(slices.Clone(wav), make([]byte, 25<<20+1-len(wav))...)}, 413},
	}
	for _, tt := range tests {
		if code, body := st.transcribe(alice, tt.u); code != tt.want || !bytes.Contains(body, []byte(`"status":`)) {
			t.Errorf("%s: %d %s, want %d problem", tt.name, code, body, tt.want)
		}
	}
	if code, body := st.post(alice, "/audio/transcribe", "multipart/form-data; boundary=xyz", strings.NewReader("--xyz\r\nbroken")); code != 400 {
		t.Errorf("malformed multipart: %d %s", code, body)
	}
	if code, body := st.post(alice, "/audio/transcribe", "application/json", strings.NewReader(`{}`)); code != 415 {
		t.Errorf("not multipart: %d %s", code, body)
	}

	// The provider failing is a 502 at once (a slow one is the adapter's
	// timeout, tested there).
	st.model.EnqueueTranscription(fakeopenai.ServerError())
	start := time.Now()
	if code, body := st.transcribe(alice, upload{field: "file", filename: "memo.wav", data: wav}); code != 502 {
		t.Errorf("provider down: %d %s", code, body)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("provider down took %v", took)
	}
}

// TestVoiceSessionOverBudget: with the organisation's budget at 0, no
// realtime client secret is minted: 429 budget_exceeded, and the provider
// hears nothing; with the budget lifted, a session starts again.
func TestVoiceSessionOverBudget(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, alice := st.admin("admin@example.com"), st.token("alice@example.com")
			if code, _, raw := st.budget(admin, "PUT", map[string]any{"monthly_tokens": 0}); code != 200 {
				t.Fatalf("budget: %d %s", code, raw)
			}
			minted := len(st.model.RealtimeRequests())
			resp := st.raw(alice, "POST", "/api/v1/voice/session", map[string]any{})
			var p struct{ Code, Token string }
			_ = json.NewDecoder(resp.Body).Decode(&p)
			resp.Body.Close()
			if resp.StatusCode != 429 || p.Code != "budget_exceeded" || p.Token != "" || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("voice session over the budget: %d %+v Retry-After %q", resp.StatusCode, p, resp.Header.Get("Retry-After"))
			}
			if n := len(st.model.RealtimeRequests()) - minted; n != 0 {
				t.Fatalf("the provider minted %d client secrets over the budget", n)
			}

			if code, _, raw := st.budget(admin, "PUT", map[string]any{"monthly_tokens": nil}); code != 200 {
				t.Fatalf("lifting the budget: %d %s", code, raw)
			}
			if code, body, _ := st.call(alice, "POST", "/api/v1/voice/session", map[string]any{}); code != 200 || !containsAll(body, `"token"`) {
				t.Fatalf("voice session within the budget: %d %s", code, body)
			}
		})
	}
}
