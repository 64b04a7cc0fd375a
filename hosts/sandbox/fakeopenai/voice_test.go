package fakeopenai_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// postTo sends body to path under the server's /v1 with the given headers
// and returns the status and the body of the response.
func postTo(t *testing.T, url, contentType string, body []byte, header http.Header) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

var bearer = http.Header{"Authorization": {"Bearer sk-test"}}

// apiError decodes an OpenAI error body.
func apiError(t *testing.T, b []byte) (typ, param, message string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil {
		t.Fatalf("not an OpenAI error: %s (%v)", b, err)
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	return e.Error.Type, param, e.Error.Message
}

const realtimeBody = `{"expires_after":{"anchor":"created_at","seconds":120},"session":{"type":"realtime","model":"gpt-realtime",` +
	`"instructions":"Be brief.","audio":{"output":{"voice":"verse"}},"tool_choice":"auto","tools":[` +
	`{"type":"function","name":"list_projects","description":"Lists projects.","parameters":{"type":"object","properties":{}}},` +
	`{"type":"function","name":"get_story","parameters":{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}}]}}`

func TestRealtimeClientSecret(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	before := time.Now().Unix()
	status, _, b := postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	var got struct {
		Value     string `json:"value"`
		ExpiresAt int64  `json:"expires_at"`
		Session   struct {
			Type  string `json:"type"`
			Model string `json:"model"`
			Audio struct {
				Output struct {
					Voice string `json:"voice"`
				} `json:"output"`
			} `json:"audio"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"session"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Value, "ek_") || len(got.Value) < 20 {
		t.Errorf("value %q", got.Value)
	}
	if got.ExpiresAt < before+120 || got.ExpiresAt > time.Now().Unix()+120 {
		t.Errorf("expires at %d, want %d", got.ExpiresAt, before+120)
	}
	if got.Session.Type != "realtime" || got.Session.Model != "gpt-realtime" || got.Session.Audio.Output.Voice != "verse" || len(got.Session.Tools) != 2 {
		t.Errorf("session %+v", got.Session)
	}

	reqs := f.RealtimeRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.SessionType != "realtime" || r.Model != "gpt-realtime" || r.Instructions != "Be brief." || r.Voice != "verse" ||
		string(r.ToolChoice) != `"auto"` || r.ExpiresAfterAnchor != "created_at" || r.ExpiresAfterSeconds != 120 ||
		r.Header.Get("Authorization") != "Bearer sk-test" || string(r.Body) != realtimeBody {
		t.Errorf("recorded %+v", r)
	}
	if len(r.Tools) != 2 || r.Tools[0].Name != "list_projects" || r.Tools[0].Description != "Lists projects." ||
		r.Tools[1].Name != "get_story" || !strings.Contains(string(r.Tools[1].Parameters), `"required":["id"]`) {
		t.Errorf("tools %+v", r.Tools)
	}
	if len(f.Requests()) != 0 {
		t.Errorf("realtime request recorded as a chat request")
	}

	// A second secret is a new one; with no expiry it lives 10 minutes and
	// names the default model.
	status, _, b = postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(`{"session":{"type":"realtime"}}`), bearer)
	var again struct {
		Value     string `json:"value"`
		ExpiresAt int64  `json:"expires_at"`
		Session   struct {
			Model string `json:"model"`
		} `json:"session"`
	}
	if err := json.Unmarshal(b, &again); err != nil || status != http.StatusOK {
		t.Fatalf("status %d: %s (%v)", status, b, err)
	}
	if again.Value == got.Value || again.ExpiresAt < before+600 || again.Session.Model != fakeopenai.DefaultRealtimeModel {
		t.Errorf("second secret %+v", again)
	}
}

func TestRealtimeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		header http.Header
		status int
		param  string
	}{
		{"no key", realtimeBody, nil, http.StatusUnauthorized, ""},
		{"empty bearer", realtimeBody, http.Header{"Authorization": {"Bearer "}}, http.StatusUnauthorized, ""},
		{"not JSON", `{"session":`, bearer, http.StatusBadRequest, ""},
		{"no session", `{}`, bearer, http.StatusBadRequest, "session.type"},
		{"session without type", `{"session":{"model":"gpt-realtime"}}`, bearer, http.StatusBadRequest, "session.type"},
		{"transcription session", `{"session":{"type":"transcription"}}`, bearer, http.StatusBadRequest, "session.type"},
		{"anchor", `{"expires_after":{"anchor":"now","seconds":60},"session":{"type":"realtime"}}`, bearer, http.StatusBadRequest, "expires_after.anchor"},
		{"expiry too short", `{"expires_after":{"anchor":"created_at","seconds":5},"session":{"type":"realtime"}}`, bearer, http.StatusBadRequest, "expires_after.seconds"},
		{"expiry too long", `{"expires_after":{"anchor":"created_at","seconds":7201},"session":{"type":"realtime"}}`, bearer, http.StatusBadRequest, "expires_after.seconds"},
		{"chat-shaped tool", `{"session":{"type":"realtime","tools":[{"type":"function","function":{"name":"x","parameters":{}}}]}}`, bearer, http.StatusBadRequest, "session.tools[0].name"},
		{"tool type", `{"session":{"type":"realtime","tools":[{"type":"web_search","name":"x","parameters":{}}]}}`, bearer, http.StatusBadRequest, "session.tools[0].type"},
		{"tool without parameters", `{"session":{"type":"realtime","tools":[{"type":"function","name":"x"}]}}`, bearer, http.StatusBadRequest, "session.tools[0].parameters"},
		{"parameters not an object", `{"session":{"type":"realtime","tools":[{"type":"function","name":"x","parameters":[]}]}}`, bearer, http.StatusBadRequest, "session.tools[0].parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.EnqueueRealtime(fakeopenai.ServerError()) // not consumed by a rejected request
			status, _, b := postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(tt.body), tt.header)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, b)
			}
			typ, param, msg := apiError(t, b)
			if typ != "invalid_request_error" || param != tt.param || msg == "" {
				t.Errorf("error type %q param %q message %q, want param %q", typ, param, msg, tt.param)
			}
			if n := len(f.RealtimeRequests()); n != 1 {
				t.Errorf("%d requests recorded", n)
			}
			status, _, _ = postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
			if status != http.StatusInternalServerError {
				t.Errorf("scripted response: status %d", status)
			}
		})
	}
}

func TestRealtimeScript(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.EnqueueRealtime(
		fakeopenai.RateLimited(1500*time.Millisecond),
		fakeopenai.ClientSecret("ek_scripted").WithModel("gpt-realtime-2025-08-28").WithResponseDelay(20*time.Millisecond),
		fakeopenai.ClientSecret("").MalformedAfter(0),
	)
	status, h, b := postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "2" {
		t.Errorf("status %d retry-after %q: %s", status, h.Get("Retry-After"), b)
	}
	start := time.Now()
	status, _, b = postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
	if time.Since(start) < 20*time.Millisecond {
		t.Errorf("answered before its delay")
	}
	var got struct {
		Value   string `json:"value"`
		Session struct {
			Model string `json:"model"`
		} `json:"session"`
	}
	if err := json.Unmarshal(b, &got); err != nil || status != http.StatusOK || got.Value != "ek_scripted" || got.Session.Model != "gpt-realtime-2025-08-28" {
		t.Errorf("status %d %s (%v)", status, b, err)
	}
	status, _, b = postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
	if status != http.StatusOK || json.Valid(b) {
		t.Errorf("status %d, body %s, want 200 and not JSON", status, b)
	}
	// The script is used up: the normal answer.
	status, _, b = postTo(t, f.URL()+"/realtime/client_secrets", "application/json", []byte(realtimeBody), bearer)
	if status != http.StatusOK || !strings.Contains(string(b), `"value":"ek_`) {
		t.Errorf("status %d %s", status, b)
	}
}

// form builds a multipart body: file (when filename is not "") and fields.
func form(t *testing.T, filename string, audio []byte, fields ...string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if filename != "" {
		fw, err := w.CreateFormFile("file", filename)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(audio)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if err := w.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.Bytes()
}

type verbose struct {
	Task     string  `json:"task"`
	Language string  `json:"language"`
	Duration float64 `json:"duration"`
	Text     string  `json:"text"`
	Segments []struct {
		Start float64 `json:"start"`
		End   float64 `json:"end"`
		Text  string  `json:"text"`
	} `json:"segments"`
}

func TestTranscription(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	wav := fakeopenai.WAV(1500*time.Millisecond, 440)
	ct, body := form(t, "memo.wav", wav, "model", "whisper-1", "response_format", "verbose_json")
	status, h, b := postTo(t, f.URL()+"/audio/transcriptions", ct, body, bearer)
	if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d content type %q: %s", status, h.Get("Content-Type"), b)
	}
	var got verbose
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Task != "transcribe" || got.Language != "english" || got.Duration != 1.5 || got.Text != fakeopenai.DefaultTranscript ||
		len(got.Segments) != 1 || got.Segments[0].End != 1.5 || strings.TrimSpace(got.Segments[0].Text) != got.Text {
		t.Errorf("answer %+v", got)
	}

	reqs := f.TranscriptionRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	sum := sha256.Sum256(wav)
	if r.Path != "/v1/audio/transcriptions" || r.Model != "whisper-1" || r.ResponseFormat != "verbose_json" || r.Language != "" ||
		r.Filename != "memo.wav" || r.FileContentType != "application/octet-stream" || r.Size != int64(len(wav)) ||
		r.SHA256 != hex.EncodeToString(sum[:]) || !bytes.Equal(r.Head, wav[:64]) || r.Duration != 1500*time.Millisecond ||
		r.Fields.Get("model") != "whisper-1" {
		t.Errorf("recorded %+v", r)
	}
	if len(f.Requests()) != 0 {
		t.Errorf("transcription recorded as a chat request")
	}
}

func TestTranscriptionFormats(t *testing.T) {
	t.Parallel()
	wav := fakeopenai.WAV(time.Second, 440)
	tests := []struct {
		name        string
		script      []fakeopenai.Response
		fields      []string
		contentType string
		want        string
	}{
		{"default json", nil, []string{"model", "whisper-1"}, "application/json", `{"text":"hello from devpilot","usage":{"seconds":1,"type":"duration"}}`},
		{"json", []fakeopenai.Response{fakeopenai.Text("Hola")}, []string{"model", "gpt-4o-transcribe", "response_format", "json"}, "application/json", `{"text":"Hola","usage":{"input_token_details":{"audio_tokens":10,"text_tokens":0},"input_tokens":10,"output_tokens":2,"total_tokens":12,"type":"tokens"}}`},
		{"text", []fakeopenai.Response{fakeopenai.Text("plain words")}, []string{"model", "whisper-1", "response_format", "text"}, "text/plain", "plain words\n"},
		{"srt", nil, []string{"model", "whisper-1", "response_format", "srt"}, "text/plain", "1\n00:00:00,000 --> 00:00:01,000\nhello from devpilot\n\n"},
		{"vtt", nil, []string{"model", "whisper-1", "response_format", "vtt"}, "text/vtt", "WEBVTT\n\n00:00:00.000 --> 00:00:01.000\nhello from devpilot\n\n"},
		{"language hint", nil, []string{"model", "whisper-1", "response_format", "verbose_json", "language", "de"}, "application/json", `"language":"german"`},
		{"scripted language", []fakeopenai.Response{fakeopenai.Text("Bonjour").WithLanguage("french")}, []string{"model", "whisper-1", "response_format", "verbose_json"}, "application/json", `"language":"french"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.EnqueueTranscription(tt.script...)
			ct, body := form(t, "a.wav", wav, tt.fields...)
			status, h, b := postTo(t, f.URL()+"/audio/transcriptions", ct, body, bearer)
			if status != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), tt.contentType) {
				t.Fatalf("status %d content type %q: %s", status, h.Get("Content-Type"), b)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("body %q, want %q in it", b, tt.want)
			}
		})
	}
}

func TestTranscriptionRejects(t *testing.T) {
	t.Parallel()
	wav := fakeopenai.WAV(time.Second, 440)
	tests := []struct {
		name     string
		filename string
		audio    []byte
		fields   []string
		header   http.Header
		json     bool // send JSON instead of a form
		status   int
		param    string
	}{
		{name: "no key", filename: "a.wav", audio: wav, fields: []string{"model", "whisper-1"}, status: http.StatusUnauthorized},
		{name: "not a form", json: true, header: bearer, status: http.StatusBadRequest},
		{name: "no file", fields: []string{"model", "whisper-1"}, header: bearer, status: http.StatusBadRequest, param: "file"},
		{name: "no model", filename: "a.wav", audio: wav, header: bearer, status: http.StatusBadRequest, param: "model"},
		{name: "format", filename: "a.txt", audio: wav, fields: []string{"model", "whisper-1"}, header: bearer, status: http.StatusBadRequest, param: "file"},
		{name: "empty file", filename: "a.wav", fields: []string{"model", "whisper-1"}, header: bearer, status: http.StatusBadRequest, param: "file"},
		{name: "too short", filename: "a.wav", audio: fakeopenai.WAV(50*time.Millisecond, 440), fields: []string{"model", "whisper-1"}, header: bearer, status: http.StatusBadRequest, param: "file"},
		{name: "response format", filename: "a.wav", audio: wav, fields: []string{"model", "whisper-1", "response_format", "xml"}, header: bearer, status: http.StatusBadRequest, param: "response_format"},
		{name: "verbose json on gpt-4o", filename: "a.wav", audio: wav, fields: []string{"model", "gpt-4o-transcribe", "response_format", "verbose_json"}, header: bearer, status: http.StatusBadRequest, param: "response_format"},
		{name: "language", filename: "a.wav", audio: wav, fields: []string{"model", "whisper-1", "language", "english"}, header: bearer, status: http.StatusBadRequest, param: "language"},
		{name: "too large", filename: "a.mp3", audio: make([]byte, fakeopenai.MaxAudioSize+1), fields: []string{"model", "whisper-1"}, header: bearer, status: http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.EnqueueTranscription(fakeopenai.ServerError()) // not consumed by a rejected request
			ct, body := form(t, tt.filename, tt.audio, tt.fields...)
			if tt.json {
				ct, body = "application/json", []byte(`{"model":"whisper-1"}`)
			}
			status, _, b := postTo(t, f.URL()+"/audio/transcriptions", ct, body, tt.header)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, b)
			}
			_, param, msg := apiError(t, b)
			if param != tt.param || msg == "" {
				t.Errorf("param %q message %q, want param %q", param, msg, tt.param)
			}
			if n := len(f.TranscriptionRequests()); n != 1 {
				t.Errorf("%d requests recorded", n)
			}
			ct, body = form(t, "a.wav", wav, "model", "whisper-1")
			if status, _, _ := postTo(t, f.URL()+"/audio/transcriptions", ct, body, bearer); status != http.StatusInternalServerError {
				t.Errorf("scripted response: status %d", status)
			}
		})
	}
}

func TestTranscriptionAzure(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.EnqueueTranscription(fakeopenai.Text("from azure"))
	ct, body := form(t, "a.ogg", []byte("OggS not really"), "model", "whisper")
	status, _, b := postTo(t, f.AzureURL()+"/openai/deployments/whisper/audio/transcriptions?api-version=2024-10-21", ct, body,
		http.Header{"Api-Key": {"azure-key"}})
	if status != http.StatusOK || !strings.Contains(string(b), `"text":"from azure"`) {
		t.Fatalf("status %d: %s", status, b)
	}
	r := f.TranscriptionRequests()[0]
	if r.Path != "/openai/deployments/whisper/audio/transcriptions" || r.Duration != time.Second {
		t.Errorf("path %q duration %v (not a WAV: one second)", r.Path, r.Duration)
	}
}

func TestWAV(t *testing.T) {
	t.Parallel()
	wav := fakeopenai.WAV(time.Second, 440)
	if len(wav) != 44+32000 {
		t.Fatalf("%d bytes, want 44 + 16000 samples of 2 bytes", len(wav))
	}
	le := binary.LittleEndian
	if string(wav[:4]) != "RIFF" || le.Uint32(wav[4:]) != uint32(len(wav)-8) || string(wav[8:16]) != "WAVEfmt " ||
		le.Uint16(wav[20:]) != 1 || le.Uint16(wav[22:]) != 1 || le.Uint32(wav[24:]) != 16000 || le.Uint32(wav[28:]) != 32000 ||
		le.Uint16(wav[32:]) != 2 || le.Uint16(wav[34:]) != 16 || string(wav[36:40]) != "data" || le.Uint32(wav[40:]) != 32000 {
		t.Errorf("header % x", wav[:44])
	}
	// A 440 Hz tone at half scale: the samples swing to about ±16383 and
	// cross zero 880 times a second.
	var peak int16
	crossings := 0
	prev := int16(0)
	for i := 44; i+1 < len(wav); i += 2 {
		s := int16(le.Uint16(wav[i:]))
		peak = max(peak, s)
		if (prev < 0) != (s < 0) && i > 44 {
			crossings++
		}
		prev = s
	}
	if peak < 16000 || peak > 16384 || crossings < 870 || crossings > 890 {
		t.Errorf("peak %d, %d zero crossings", peak, crossings)
	}
	if n := len(fakeopenai.WAV(0, 440)); n != 44 {
		t.Errorf("empty WAV has %d bytes", n)
	}
}
