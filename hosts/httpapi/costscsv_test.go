package httpapi

import (
	"net/http/httptest"
	"testing"
)

// A text cell a spreadsheet would read as a formula is written quoted; an
// amount (a credit is negative) is written as it is.
func TestCSVText(t *testing.T) {
	for in, want := range map[string]string{
		"eu-west-1": "eu-west-1", "": "", "=HYPERLINK(\"x\")": "'=HYPERLINK(\"x\")", "+1": "'+1", "-2": "'-2", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx",
	} {
		if got := csvText(in); got != want {
			t.Errorf("csvText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWantsCSV(t *testing.T) {
	for _, tc := range []struct {
		query, accept string
		csv, err      bool
	}{
		{"", "", false, false},
		{"format=csv", "", true, false},
		{"format=json", "text/csv", false, false},
		{"", "text/csv;q=0.9, application/json", true, false},
		{"", "application/json", false, false},
		{"format=xml", "", false, true},
	} {
		r := httptest.NewRequest("GET", "/cloud/costs?"+tc.query, nil)
		r.Header.Set("Accept", tc.accept)
		got, err := wantsCSV(r)
		if got != tc.csv || (err != nil) != tc.err {
			t.Errorf("%q, Accept %q: %v %v", tc.query, tc.accept, got, err)
		}
	}
}
