package httpapi

import "testing"

// Every handler of the content dispatcher has its documented route, which
// the metrics, logs and traces name.
func TestContentPatternsNameEveryHandler(t *testing.T) {
	s := &Server{}
	for key := range s.contentTable() {
		if contentPatterns[key] == "" {
			t.Errorf("no documented route for %+v", key)
		}
	}
}
