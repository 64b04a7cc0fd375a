package spec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

func TestStandards(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	in := spec.StandardInput{Title: " Requirements ", Body: " Every requirement is testable. ", AppliesTo: []ports.Stage{ports.StageStories, ports.StagePRD, ports.StagePRD}}
	std, err := e.svc.CreateStandard(as(admin), in)
	if err != nil {
		t.Fatal(err)
	}
	if std.ID == "" || std.OrgID != admin.OrgID || std.Title != "Requirements" || std.Body != "Every requirement is testable." ||
		!slices.Equal(std.AppliesTo, []ports.Stage{ports.StagePRD, ports.StageStories}) || std.CreatedAt.IsZero() {
		t.Errorf("standard %+v", std)
	}

	// Members read; another org does not see it.
	list, err := e.svc.ListStandards(as(alice))
	if err != nil || len(list) != 1 || list[0].ID != std.ID {
		t.Errorf("member list = %+v, %v", list, err)
	}
	if got, err := e.svc.GetStandard(as(alice), std.ID); err != nil || got.Title != "Requirements" {
		t.Errorf("member get = %+v, %v", got, err)
	}
	if list, _ := e.svc.ListStandards(as(other)); len(list) != 0 {
		t.Errorf("another org lists %+v", list)
	}
	if _, err := e.svc.GetStandard(as(other), std.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org gets: %v", err)
	}
	if _, err := e.svc.GetStandard(as(alice), "x"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a malformed id: %v", err)
	}

	// Members may not write, whatever they send.
	if _, err := e.svc.CreateStandard(as(alice), in); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member create: %v", err)
	}
	if _, err := e.svc.CreateStandard(as(alice), spec.StandardInput{}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member create of an invalid standard: %v", err)
	}
	if _, err := e.svc.UpdateStandard(as(alice), std.ID, in); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member update: %v", err)
	}
	if err := e.svc.DeleteStandard(as(alice), std.ID); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("member delete: %v", err)
	}

	e.clock.Advance(60e9)
	up, err := e.svc.UpdateStandard(as(admin), std.ID, spec.StandardInput{Title: "Reqs", Body: "Testable.", AppliesTo: []ports.Stage{ports.StageScope}})
	if err != nil {
		t.Fatal(err)
	}
	if up.ID != std.ID || up.Title != "Reqs" || !up.CreatedAt.Equal(std.CreatedAt) || !up.UpdatedAt.After(std.UpdatedAt) || !slices.Equal(up.AppliesTo, []ports.Stage{ports.StageScope}) {
		t.Errorf("updated %+v", up)
	}
	if got, _ := e.svc.GetStandard(as(alice), std.ID); got.Title != "Reqs" {
		t.Errorf("stored %+v", got)
	}
	if _, err := e.svc.UpdateStandard(as(other), std.ID, in); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's admin updates: %v", err)
	}
	if err := e.svc.DeleteStandard(as(other), std.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's admin deletes: %v", err)
	}
	if err := e.svc.DeleteStandard(as(admin), std.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteStandard(as(admin), std.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if _, err := e.svc.UpdateStandard(as(admin), std.ID, in); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("update a deleted standard: %v", err)
	}
}

func TestStandardInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     spec.StandardInput
		fields []string
	}{
		{"empty", spec.StandardInput{}, []string{"title", "body", "applies_to"}},
		{"title too long", spec.StandardInput{Title: strings.Repeat("t", 201), Body: "b", AppliesTo: []ports.Stage{ports.StagePRD}}, []string{"title"}},
		{"body too long", spec.StandardInput{Title: "t", Body: strings.Repeat("b", 20001), AppliesTo: []ports.Stage{ports.StagePRD}}, []string{"body"}},
		{"unknown stage", spec.StandardInput{Title: "t", Body: "b", AppliesTo: []ports.Stage{ports.StagePRD, "design"}}, []string{"applies_to[1]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			_, err := e.svc.CreateStandard(as(admin), tt.in)
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != ports.KindInvalid {
				t.Fatalf("err = %v", err)
			}
			var got []string
			for _, f := range pe.Fields {
				got = append(got, f.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Errorf("fields %v, want %v", got, tt.fields)
			}
			if _, err := e.svc.UpdateStandard(as(admin), "00000000-0000-7000-8000-000000000001", tt.in); !errors.Is(err, ports.ErrInvalid) {
				t.Errorf("update: %v", err)
			}
		})
	}
	e := newEnv(t, spec.Config{})
	ok := spec.StandardInput{Title: strings.Repeat("t", 200), Body: strings.Repeat("b", 20000), AppliesTo: ports.Stages}
	if _, err := e.svc.CreateStandard(as(admin), ok); err != nil {
		t.Errorf("at the limits: %v", err)
	}
}
