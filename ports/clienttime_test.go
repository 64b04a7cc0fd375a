package ports_test

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestParseClientTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"2030-01-02T15:04:05Z", want},
		{"2030-01-02T15:04:05.123456789Z", want.Add(123456789)},
		{"2030-01-02T15:04:05.5Z", want.Add(500 * time.Millisecond)},
		{"2030-01-02T17:04:05+02:00", want},
	} {
		got, err := ports.ParseClientTime("at", tt.in)
		if err != nil || !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("ParseClientTime(%q) = %v, %v; want %v in UTC", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "2030-01-02", "2030-01-02 15:04:05Z", "2030-01-02T15:04:05", "tomorrow", "2030-13-02T15:04:05Z"} {
		got, err := ports.ParseClientTime("since", in)
		if !got.IsZero() {
			t.Errorf("ParseClientTime(%q) = %v, want the zero time", in, got)
		}
		var e *ports.Error
		if !errors.As(err, &e) || e.Kind != ports.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "since" ||
			e.Fields[0].Reason != ports.ClientTimeReason {
			t.Errorf("ParseClientTime(%q) error = %#v, want invalid naming since", in, err)
		}
	}
}
