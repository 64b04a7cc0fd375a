package httpapi

import "testing"

func TestNoneMatch(t *testing.T) {
	t.Parallel()
	const etag = `"0123456789abcdef0123456789abcdef"`
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"", false},
		{etag, true},
		{"W/" + etag, true},
		{`"other", ` + etag, true},
		{"*", true},
		{`"other"`, false},
		{`0123456789abcdef0123456789abcdef`, false},
	} {
		if got := noneMatch(tc.header, etag); got != tc.want {
			t.Errorf("noneMatch(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
