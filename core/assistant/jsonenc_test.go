package assistant

import (
	"encoding/json"
	"testing"
)

var contentSeeds = []string{
	"", " tok", "hello, world", `say "hi" \ back`, "<b>&amp;</b>", "line\nbreak\r\ttab\b\f\x00\x01\x1f\x7f",
	"été 日本 😀", "\u2028\u2029", "bad \xff\xfe utf8 \xe2\x82", "\ufeff\u202e",
}

// appendContentData writes what json.Marshal writes.
func TestAppendContentDataMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range contentSeeds {
		checkContentData(t, ContentData{SessionID: "s-" + s, MessageID: "m", Delta: s})
	}
}

func FuzzAppendContentData(f *testing.F) {
	for _, s := range contentSeeds {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, id, delta string) {
		checkContentData(t, ContentData{SessionID: id, MessageID: id, Delta: delta})
	})
}

func checkContentData(t *testing.T, d ContentData) {
	t.Helper()
	want, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendContentData(nil, d); string(got) != string(want) {
		t.Errorf("%+v:\n got %s\nwant %s", d, got, want)
	}
}
