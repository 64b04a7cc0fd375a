package fakeopenai_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

const offerSDP = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

// callForm is a multipart call request of the fields given (name, value, …).
func callForm(t *testing.T, fields ...string) (string, []byte) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		if err := mw.WriteField(fields[i], fields[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), b.Bytes()
}

func TestRealtimeCallValidates(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	auth := http.Header{"Authorization": {"Bearer sk-test"}}
	for _, tt := range []struct {
		name   string
		fields []string
		header http.Header
		status int
		param  string
	}{
		{"no key", []string{"sdp", offerSDP}, nil, 401, ""},
		{"no sdp", []string{"session", `{"type":"realtime"}`}, auth, 400, "sdp"},
		{"not sdp", []string{"sdp", "hello"}, auth, 400, "sdp"},
		{"session not JSON", []string{"sdp", offerSDP, "session", "{"}, auth, 400, "session"},
		{"session without type", []string{"sdp", offerSDP, "session", `{"model":"gpt-realtime"}`}, auth, 400, "session.type"},
		{"tool without name", []string{"sdp", offerSDP, "session", `{"type":"realtime","tools":[{"type":"function","parameters":{}}]}`}, auth, 400, "session.tools[0].name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := callForm(t, tt.fields...)
			code, _, raw := postTo(t, f.URL()+"/realtime/calls", ct, body, tt.header)
			if code != tt.status || !strings.Contains(string(raw), `"param":"`+tt.param) && tt.param != "" {
				t.Fatalf("%d %s, want %d naming %q", code, raw, tt.status, tt.param)
			}
		})
	}
	if code, _, raw := postTo(t, f.URL()+"/realtime/calls", "application/sdp", []byte(offerSDP), auth); code != 400 {
		t.Errorf("a body that is not a form: %d %s", code, raw)
	}

	ct, body := callForm(t, "sdp", offerSDP, "session", `{"type":"realtime","model":"gpt-realtime","instructions":"Hi."}`)
	code, h, raw := postTo(t, f.URL()+"/realtime/calls", ct, body, auth)
	reqs := f.RealtimeCallRequests()
	if code != 201 || string(raw) != fakeopenai.AnswerSDP || h.Get("Content-Type") != "application/sdp" ||
		h.Get("Location") != "/v1/realtime/calls/"+reqs[len(reqs)-1].CallID || reqs[len(reqs)-1].Instructions != "Hi." {
		t.Fatalf("call: %d %v %s; requests %+v", code, h, raw, reqs)
	}
}

func TestSidebandPlaysTheScript(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.ScriptCalls(fakeopenai.CallScript{Responses: []fakeopenai.RealtimeResponse{{ID: "resp_1", InputTokens: 7, OutputTokens: 3, OutputAudioTokens: 2}}})
	ct, body := callForm(t, "sdp", offerSDP)
	code, h, raw := postTo(t, f.URL()+"/realtime/calls", ct, body, http.Header{"Authorization": {"Bearer sk-test"}})
	if code != 201 {
		t.Fatalf("call: %d %s", code, raw)
	}
	id := strings.TrimPrefix(h.Get("Location"), "/v1/realtime/calls/")
	ws := "ws" + strings.TrimPrefix(f.URL(), "http") + "/realtime?call_id=" + id

	// Without the key, the join is refused.
	if _, resp, err := websocket.Dial(t.Context(), ws, nil); err == nil || resp == nil || resp.StatusCode != 401 {
		t.Fatalf("join without a key: %v %v", resp, err)
	}
	conn, _, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-test"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var types []string
	for {
		_, data, err := conn.Read(t.Context())
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("read: %v", err)
			}
			break
		}
		var ev struct {
			Type     string
			Response struct {
				ID    string
				Usage struct {
					InputTokens        int `json:"input_tokens"`
					OutputTokens       int `json:"output_tokens"`
					OutputTokenDetails struct {
						AudioTokens int `json:"audio_tokens"`
					} `json:"output_token_details"`
				}
			}
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type == "response.done" && (ev.Response.ID != "resp_1" || ev.Response.Usage.InputTokens != 7 ||
			ev.Response.Usage.OutputTokens != 3 || ev.Response.Usage.OutputTokenDetails.AudioTokens != 2) {
			t.Errorf("response.done %s", data)
		}
	}
	if strings.Join(types, ",") != "session.created,response.done" {
		t.Errorf("events %v", types)
	}
	// The call ended: a join now is 404.
	_, resp, err := websocket.Dial(t.Context(), ws, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer sk-test"}}})
	if err == nil || resp == nil || resp.StatusCode != 404 {
		t.Fatalf("join of an ended call: %v %v", resp, err)
	}
	if n := f.SidebandJoins(id); n != 1 {
		t.Errorf("%d joins", n)
	}
}
