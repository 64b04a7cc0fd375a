package aws

import (
	"io"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestDecimal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want string
	}{
		{[]string{"0.1", "0.2"}, "0.3"},
		{[]string{"1.0000000001", "2"}, "3.0000000001"},
		{[]string{"1.50", "2.50"}, "4"},
		{[]string{"-0.25", "0.1"}, "-0.15"},
		{[]string{"1e-12", "0"}, "0.000000000001"},
		{nil, "0"},
	}
	for _, tt := range tests {
		sum := new(big.Rat)
		for _, s := range tt.in {
			v, ok := new(big.Rat).SetString(s)
			if !ok {
				t.Fatalf("bad amount %q", s)
			}
			sum.Add(sum, v)
		}
		if got := decimal(sum); got != tt.want {
			t.Errorf("decimal(sum of %v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	c := ports.CloudCredentials{SecretAccessKey: "s3cr3t-value"}
	tests := []struct{ in, want string }{
		{"key s3cr3t-value leaked", "key [redacted] leaked"},
		{"other wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY here", "other [redacted] here"},
		{"arn:aws:iam::123456789012:role/devpilot-operator-with-a-long-name", "arn:aws:iam::123456789012:role/devpilot-operator-with-a-long-name"},
		{"/aws/lambda/AVeryLongFunctionNameThatIsNotASecretAtAll123", "/aws/lambda/AVeryLongFunctionNameThatIsNotASecretAtAll123"},
	}
	for _, tt := range tests {
		if got := redact(tt.in, c); got != tt.want {
			t.Errorf("redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestBatches(t *testing.T) {
	t.Parallel()
	var got [][]string
	for b := range batches([]string{"a", "b", "c", "d", "e"}, 2) {
		got = append(got, b)
	}
	if want := [][]string{{"a", "b"}, {"c", "d"}, {"e"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("batches = %v, want %v", got, want)
	}
}

// writerToBody is a request body like smithy-go's: its WriteTo fails with
// io.EOF once it is closed.
type writerToBody struct {
	io.Reader
	closed bool
}

func (b *writerToBody) Close() error { b.closed = true; return nil }

func (b *writerToBody) WriteTo(w io.Writer) (int64, error) {
	if b.closed {
		return 0, io.EOF
	}
	return io.Copy(w, b.Reader)
}

type recordingClient struct{ body io.ReadCloser }

func (c *recordingClient) Do(r *http.Request) (*http.Response, error) {
	c.body = r.Body
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
}

func TestPlainBodiesHideWriteTo(t *testing.T) {
	t.Parallel()
	body := &writerToBody{Reader: strings.NewReader(`{"a":1}`)}
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", body)
	if err != nil {
		t.Fatal(err)
	}
	next := &recordingClient{}
	if _, err := (plainBodies{next}).Do(req); err != nil {
		t.Fatal(err)
	}
	if _, ok := next.body.(io.WriterTo); ok {
		t.Fatal("the body sent still has WriteTo")
	}
	if b, err := io.ReadAll(next.body); err != nil || string(b) != `{"a":1}` {
		t.Fatalf("body = %q, %v", b, err)
	}
	if err := req.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, next.body); n != 0 || err != nil {
		t.Errorf("reading the closed body = %d, %v; want a clean end", n, err)
	}
}
