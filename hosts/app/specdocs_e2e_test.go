package app_test

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// TestSpecDocumentUploads: a PDF with a text layer and a Word document are
// uploaded to a session as text, with the PDF's page markers and the
// document's paragraph breaks, and that text reaches the model; a scanned
// PDF, a corrupt file and a truncated .docx are 422.
func TestSpecDocumentUploads(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			tok := st.token("doc@example.com")
			upload := func(path string, files ...[3]string) (int, []byte) {
				var buf bytes.Buffer
				mw := multipart.NewWriter(&buf)
				_ = mw.WriteField("name", "Docs")
				for _, f := range files {
					h := map[string][]string{
						"Content-Disposition": {`form-data; name="file"; filename="` + f[0] + `"`},
						"Content-Type":        {f[1]},
					}
					part, _ := mw.CreatePart(h)
					_, _ = part.Write([]byte(f[2]))
				}
				_ = mw.Close()
				req, _ := http.NewRequest("POST", st.base+path, &buf)
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", mw.FormDataContentType())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out bytes.Buffer
				_, _ = out.ReadFrom(resp.Body)
				st.conform(t, resp, out.Bytes())
				return resp.StatusCode, out.Bytes()
			}

			pdf := string(fixture.PDF("Checkout in one click", "Refunds within a day"))
			docx := string(fixture.DOCX("Goal: faster checkout", "Non-goal: loyalty points"))
			code, body := upload("/pse/sessions",
				[3]string{"brief.pdf", "application/pdf", pdf},
				[3]string{"notes.docx", "application/octet-stream", docx}) // by extension
			var v struct {
				ID     string
				Inputs []struct {
					Title       string
					ContentType string `json:"content_type"`
				}
			}
			if err := json.Unmarshal(body, &v); code != 201 || err != nil || len(v.Inputs) != 2 {
				t.Fatalf("create with a PDF and a docx: %d %s", code, body)
			}
			for _, in := range v.Inputs {
				if in.ContentType != "text/plain" {
					t.Errorf("input %q has content_type %q, want text/plain", in.Title, in.ContentType)
				}
			}
			st.model.Enqueue(stageOutput(t, "scope"))
			if code, body, _ := st.call(tok, "POST", "/pse/sessions/"+v.ID+"/generate", nil); code != 202 {
				t.Fatalf("generate: %d %s", code, body)
			}
			if got := st.waitReady(tok, v.ID); got.Status != "ready" {
				t.Fatalf("after generate: %+v", got)
			}
			var prompt string
			for _, req := range st.model.Requests() {
				for _, m := range req.Messages {
					prompt += m.Content
				}
			}
			for _, want := range []string{"[page 1]\nCheckout in one click\n\n[page 2]\nRefunds within a day", "[paragraph 1] Goal: faster checkout\n\n[paragraph 2] Non-goal: loyalty points"} {
				if !strings.Contains(prompt, want) {
					t.Errorf("the model's prompt lacks %q", want)
				}
			}

			bad := []struct {
				name string
				file [3]string
				code int
				msg  string
			}{
				{"scanned pdf", [3]string{"scan.pdf", "application/pdf", string(fixture.PDF("", ""))}, 422, "no text layer"},
				{"corrupt pdf", [3]string{"broken.pdf", "application/pdf", pdf[:len(pdf)/2]}, 422, "not a readable PDF"},
				{"truncated docx", [3]string{"cut.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", docx[:len(docx)-30]}, 422, "not a readable Word document"},
			}
			for _, tt := range bad {
				if code, body := upload("/pse/sessions/"+v.ID+"/inputs", tt.file); code != tt.code || !bytes.Contains(body, []byte(tt.msg)) {
					t.Errorf("%s: %d %s, want %d %q", tt.name, code, body, tt.code, tt.msg)
				}
			}
			// One more document, added as an input: 201.
			if code, body := upload("/pse/sessions/"+v.ID+"/inputs", [3]string{"more.docx", "", string(fixture.DOCX("Later"))}); code != 201 {
				t.Errorf("add a docx input: %d %s", code, body)
			}
		})
	}
}
