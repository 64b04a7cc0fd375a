package httpapi

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// A multipart PSE upload stops at the first file past the per-request cap,
// before it reads the rest.
func TestReadSpecFormCapsFiles(t *testing.T) {
	t.Parallel()
	upload := func(files int) *http.Request {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("name", "many files")
		for i := range files {
			fw, _ := mw.CreateFormFile("file", fmt.Sprintf("note-%d.md", i))
			_, _ = fmt.Fprintf(fw, "# Note %d\n", i)
		}
		_ = mw.Close()
		r := httptest.NewRequest(http.MethodPost, "/pse/sessions", &buf)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		return r
	}
	form, err := readSpecForm(upload(spec.MaxInputsPerRequest), nil)
	if err != nil || len(form.inputs) != spec.MaxInputsPerRequest {
		t.Fatalf("%d files: %d inputs, %v", spec.MaxInputsPerRequest, len(form.inputs), err)
	}
	_, err = readSpecForm(upload(spec.MaxInputsPerRequest+1), nil)
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "file" {
		t.Fatalf("%d files: %#v, want invalid naming file", spec.MaxInputsPerRequest+1, err)
	}
}
