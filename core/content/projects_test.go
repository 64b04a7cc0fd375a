package content_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

func checkCode(t *testing.T, what string, err error, kind ports.Kind, code string) {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != kind || e.Code != code {
		t.Errorf("%s: %v, want %s (code %q)", what, err, kind, code)
	}
}

func TestProjects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	ctx := as(alice)
	p, err := e.svc.CreateProject(ctx, content.ProjectInput{Name: "  Spring launch ", Description: "Posts for the\nlaunch "})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Spring launch" || p.Description != "Posts for the\nlaunch" || p.CreatedBy != alice.UserID || p.Version != 1 || !ports.IsID(p.ID) {
		t.Errorf("CreateProject = %+v", p)
	}
	_, err = e.svc.CreateProject(ctx, content.ProjectInput{Name: "SPRING LAUNCH"})
	checkCode(t, "CreateProject(same name, other case)", err, ports.KindConflict, content.CodeNameTaken)
	// Another org may use the name.
	if _, err := e.svc.CreateProject(as(olga), content.ProjectInput{Name: "Spring launch"}); err != nil {
		t.Errorf("CreateProject(another org, same name): %v", err)
	}
	_, err = e.svc.Project(as(olga), p.ID)
	checkCode(t, "Project(another org's)", err, ports.KindNotFound, "")
	_, err = e.svc.Project(ctx, "no such/project")
	checkCode(t, "Project(bad id)", err, ports.KindNotFound, "")

	q, err := e.svc.CreateProject(ctx, content.ProjectInput{Name: "autumn"})
	if err != nil {
		t.Fatal(err)
	}
	list, next, err := e.svc.ListProjects(ctx, ports.Page{})
	if err != nil || next != "" || len(list) != 2 || list[0].ID != q.ID || list[1].ID != p.ID {
		t.Errorf("ListProjects = %+v, %q, %v; want autumn then Spring launch", list, next, err)
	}

	renamed, err := e.svc.UpdateProject(ctx, p.ID, content.ProjectPatch{Name: new("Summer launch")})
	if err != nil || renamed.Name != "Summer launch" || renamed.Description != p.Description || renamed.Version != 2 {
		t.Errorf("UpdateProject(name) = %+v, %v", renamed, err)
	}
	_, err = e.svc.UpdateProject(ctx, p.ID, content.ProjectPatch{Name: new("Autumn")})
	checkCode(t, "UpdateProject(taken name)", err, ports.KindConflict, content.CodeNameTaken)
	_, err = e.svc.UpdateProject(ctx, p.ID, content.ProjectPatch{Description: new(""), IfVersion: new(1)})
	checkCode(t, "UpdateProject(stale version)", err, ports.KindPreconditionFailed, content.CodeStaleVersion)
	got, err := e.svc.UpdateProject(ctx, p.ID, content.ProjectPatch{Description: new(""), IfVersion: new(2)})
	if err != nil || got.Description != "" || got.Name != "Summer launch" || got.Version != 3 {
		t.Errorf("UpdateProject(description) = %+v, %v", got, err)
	}
	_, err = e.svc.UpdateProject(as(olga), p.ID, content.ProjectPatch{Name: new("Mine")})
	checkCode(t, "UpdateProject(another org's)", err, ports.KindNotFound, "")
}

func TestProjectNamesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	ctx := as(alice)
	for name, in := range map[string]content.ProjectInput{
		"empty":            {Name: "  "},
		"line break":       {Name: "a\nb"},
		"tab":              {Name: "a\tb"},
		"NUL":              {Name: "a\x00b"},
		"invalid UTF-8":    {Name: "a\xffb"},
		"bidi override":    {Name: "a\u202eb"},
		"too long":         {Name: strings.Repeat("é", content.MaxProjectNameLen+1)},
		"description NUL":  {Name: "ok", Description: "a\x00"},
		"description long": {Name: "ok", Description: strings.Repeat("x", content.MaxProjectDescriptionLen+1)},
	} {
		_, err := e.svc.CreateProject(ctx, in)
		if !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("CreateProject(%s) = %v, want invalid", name, err)
		}
	}
	p, err := e.svc.CreateProject(ctx, content.ProjectInput{Name: strings.Repeat("é", content.MaxProjectNameLen)})
	if err != nil {
		t.Fatalf("CreateProject(longest name): %v", err)
	}
	_, err = e.svc.UpdateProject(ctx, p.ID, content.ProjectPatch{Name: new("x\ry")})
	if !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("UpdateProject(carriage return) = %v, want invalid", err)
	}
	if list, _, _ := e.svc.ListProjects(ctx, ports.Page{}); len(list) != 1 {
		t.Errorf("ListProjects after refused creates = %+v", list)
	}
}

// A project id used by a write without a project record gets one named
// after the id; a name taken by another project gets a suffix.
func TestProjectIDsKeepWorking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, content.Config{})
	ctx := as(alice)
	e.putBrand(alice, content.BrandInput{Name: "Site"})
	p, err := e.svc.Project(ctx, project)
	if err != nil || p.Name != project || p.CreatedBy != alice.UserID {
		t.Fatalf("Project(%s) after PutBrand = %+v, %v", project, p, err)
	}
	// Saving again keeps the record, renamed or not.
	if _, err := e.svc.UpdateProject(ctx, project, content.ProjectPatch{Name: new("Web site")}); err != nil {
		t.Fatal(err)
	}
	e.putBrand(alice, content.BrandInput{Name: "Site 2"})
	if p, _ := e.svc.Project(ctx, project); p.Name != "Web site" {
		t.Errorf("Project after a second PutBrand = %+v, want its new name kept", p)
	}

	// A brief's project id works the same; its id is taken as a name.
	if _, err := e.svc.CreateProject(ctx, content.ProjectInput{Name: "newsletter"}); err != nil {
		t.Fatal(err)
	}
	e.newBrief(alice, content.BriefInput{ProjectID: "newsletter", Title: "Issue 1"})
	p, err = e.svc.Project(ctx, "newsletter")
	if err != nil || !strings.HasPrefix(p.Name, "newsletter (") {
		t.Errorf("Project(newsletter) after CreateBrief = %+v, %v; want a suffixed name", p, err)
	}
	list, _, _ := e.svc.ListProjects(ctx, ports.Page{})
	if len(list) != 3 {
		t.Errorf("ListProjects = %+v, want 3", list)
	}
	// Reads never create a record.
	if _, err := e.svc.Brand(ctx, "read-only"); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Project(ctx, "read-only")
	checkCode(t, "Project after a read", err, ports.KindNotFound, "")
}
