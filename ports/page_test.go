package ports_test

import (
	"errors"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestPageChecked(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want ports.Page
		ok       bool
	}{
		{ports.Page{}, ports.Page{Limit: ports.DefaultPageLimit}, true},
		{ports.Page{Limit: 1, Cursor: "c"}, ports.Page{Limit: 1, Cursor: "c"}, true},
		{ports.Page{Limit: ports.MaxPageLimit}, ports.Page{Limit: ports.MaxPageLimit}, true},
		{ports.Page{Limit: ports.MaxPageLimit + 1}, ports.Page{}, false},
		{ports.Page{Limit: -1}, ports.Page{}, false},
	} {
		got, err := tt.in.Checked()
		if tt.ok != (err == nil) || (tt.ok && got != tt.want) {
			t.Errorf("%+v.Checked() = %+v, %v", tt.in, got, err)
		}
		if pe, ok := ports.AsError(err); err != nil && (!ok || !errors.Is(err, ports.ErrInvalid) || len(pe.Fields) != 1 || pe.Fields[0].Field != "limit") {
			t.Errorf("%+v.Checked() error %#v, want invalid naming limit", tt.in, err)
		}
	}
}

func TestPageSize(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ limit, want int }{
		{0, ports.DefaultPageLimit}, {-5, ports.DefaultPageLimit}, {1, 1}, {ports.MaxPageLimit, ports.MaxPageLimit},
		{ports.MaxPageLimit + 1, ports.MaxPageLimit},
	} {
		if got := (ports.Page{Limit: tt.limit}).Size(); got != tt.want {
			t.Errorf("Page{Limit: %d}.Size() = %d, want %d", tt.limit, got, tt.want)
		}
	}
	for _, tt := range []struct{ limit, want int }{
		{0, ports.MaxEventPage}, {-1, ports.MaxEventPage}, {1, 1}, {ports.MaxEventPage, ports.MaxEventPage},
		{ports.MaxEventPage + 1, ports.MaxEventPage},
	} {
		if got := ports.EventPageSize(tt.limit); got != tt.want {
			t.Errorf("EventPageSize(%d) = %d, want %d", tt.limit, got, tt.want)
		}
	}
}
