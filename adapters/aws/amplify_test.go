package aws_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

const marker = "\n[log truncated]"

var updated = time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)

func TestListApps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(userAccount).
		App(fakeaws.App{ID: "d1", Name: "site", Repository: "https://github.com/acme/site", UpdatedAt: updated,
			Branches: []fakeaws.Branch{{Name: "main"}, {Name: "dev"}, {Name: "feature/x"}}}).
		App(fakeaws.App{ID: "d2", Name: "docs", Platform: "WEB_COMPUTE", Branches: []fakeaws.Branch{{Name: "main"}}}).
		App(fakeaws.App{ID: "d3", Name: "empty"})
	e.fake.MaxPageSize(2)

	apps, err := e.p.ListApps(context.Background(), keyCreds())
	if err != nil {
		t.Fatalf("ListApps: %v", err)
	}
	want := []ports.App{
		{
			ID: "d1", Name: "site", ARN: "arn:aws:amplify:" + region + ":" + userAccount + ":apps/d1", Platform: "WEB",
			DefaultDomain: "d1.amplifyapp.com", Repository: "https://github.com/acme/site",
			Branches: []string{"dev", "feature/x", "main"}, UpdatedAt: updated,
		},
		{
			ID: "d2", Name: "docs", ARN: "arn:aws:amplify:" + region + ":" + userAccount + ":apps/d2", Platform: "WEB_COMPUTE",
			DefaultDomain: "d2.amplifyapp.com", Branches: []string{"main"}, UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		},
	}
	if len(apps) != 3 || !reflect.DeepEqual(apps[:2], want) || len(apps[2].Branches) != 0 {
		t.Errorf("ListApps =\n%+v\nwant\n%+v and d3 without branches", apps, want)
	}
	if n := len(e.fake.CallsTo(fakeaws.ServiceAmplify, "ListApps")); n != 2 {
		t.Errorf("ListApps calls = %d, want 2 pages", n)
	}
	perApp := map[string]int{}
	for _, c := range e.fake.CallsTo(fakeaws.ServiceAmplify, "ListBranches") {
		perApp[c.Input["appId"].(string)]++
	}
	if !reflect.DeepEqual(perApp, map[string]int{"d1": 2, "d2": 1, "d3": 1}) {
		t.Errorf("ListBranches calls per app = %v", perApp)
	}
}

func TestListBranches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(userAccount).App(fakeaws.App{ID: "d1", Name: "site",
		Branches: []fakeaws.Branch{{Name: "main"}, {Name: "dev", Stage: "DEVELOPMENT"}, {Name: "feature/x", Stage: "EXPERIMENTAL"}}})
	e.fake.MaxPageSize(2)
	tests := []struct {
		name, app string
		want      []ports.AppBranch
		kind      ports.Kind
	}{
		{name: "every page, with stages", app: "d1", want: []ports.AppBranch{
			{Name: "dev", Stage: "DEVELOPMENT"}, {Name: "feature/x", Stage: "EXPERIMENTAL"}, {Name: "main", Stage: ports.BranchStageProduction}}},
		{name: "a missing app", app: "nope", kind: ports.KindNotFound},
		{name: "no app id", app: "", kind: ports.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.p.ListBranches(context.Background(), keyCreds(), tt.app)
			if tt.kind != "" {
				if !ports.IsKind(err, tt.kind) {
					t.Fatalf("ListBranches(%q) = %v, %v; want %s", tt.app, got, err, tt.kind)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ListBranches = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDeployApp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, branch string
		want         ports.Build
		kind         ports.Kind
		message      string
	}{
		{name: "release", branch: "main", want: ports.Build{ID: "3", AppID: "d1", Branch: "main", Status: "PENDING", Steps: []ports.BuildStep{}}},
		{name: "branch with a slash", branch: "feature/x", want: ports.Build{ID: "1", AppID: "d1", Branch: "feature/x", Status: "PENDING", Steps: []ports.BuildStep{}}},
		{name: "missing branch", branch: "nope", kind: ports.KindNotFound, message: "branch nope of app d1 not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.Account(userAccount).App(fakeaws.App{ID: "d1", Name: "site", Branches: []fakeaws.Branch{
				{Name: "main", Jobs: []fakeaws.Job{{ID: "1"}, {ID: "2"}}},
				{Name: "feature/x"},
			}})
			b, err := e.p.DeployApp(context.Background(), keyCreds(), "d1", tt.branch)
			if tt.kind != "" {
				if pe := wantKind(t, err, tt.kind); pe.Message != tt.message {
					t.Errorf("message = %q, want %q", pe.Message, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatalf("DeployApp: %v", err)
			}
			if !reflect.DeepEqual(b, tt.want) {
				t.Errorf("DeployApp = %+v, want %+v", b, tt.want)
			}
			calls := e.fake.CallsTo(fakeaws.ServiceAmplify, "StartJob")
			if len(calls) != 1 || calls[0].Input["jobType"] != "RELEASE" || calls[0].Input["branchName"] != tt.branch {
				t.Errorf("StartJob calls = %+v", calls)
			}
			got, err := e.p.BuildLogs(context.Background(), keyCreds(), "d1", tt.branch, b.ID)
			if err != nil || got.Status != "PENDING" {
				t.Errorf("BuildLogs of the new build = %+v, %v", got, err)
			}
		})
	}
}

func TestBuildLogs(t *testing.T) {
	t.Parallel()
	big := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name  string
		steps []fakeaws.Step
		want  []ports.BuildStep
	}{
		{
			name:  "steps with logs",
			steps: []fakeaws.Step{{Name: "BUILD", Log: "building\n"}, {Name: "DEPLOY", Status: "RUNNING", Log: "deploying\n"}},
			want: []ports.BuildStep{
				{Name: "BUILD", Status: "SUCCEED", Log: "building\n"},
				{Name: "DEPLOY", Status: "RUNNING", Log: "deploying\n"},
			},
		},
		{
			name:  "a step log over 64 KiB",
			steps: []fakeaws.Step{{Name: "BUILD", Log: big(70 << 10)}},
			want:  []ports.BuildStep{{Name: "BUILD", Status: "SUCCEED", Log: big(64<<10) + marker}},
		},
		{
			name: "logs over 256 KiB in all",
			steps: []fakeaws.Step{
				{Name: "S1", Log: big(60 << 10)}, {Name: "S2", Log: big(60 << 10)}, {Name: "S3", Log: big(60 << 10)},
				{Name: "S4", Log: big(60 << 10)}, {Name: "S5", Log: big(60 << 10)}, {Name: "S6", Log: "never read"},
			},
			want: []ports.BuildStep{
				{Name: "S1", Status: "SUCCEED", Log: big(60 << 10)}, {Name: "S2", Status: "SUCCEED", Log: big(60 << 10)},
				{Name: "S3", Status: "SUCCEED", Log: big(60 << 10)}, {Name: "S4", Status: "SUCCEED", Log: big(60 << 10)},
				{Name: "S5", Status: "SUCCEED", Log: big(16<<10) + marker}, {Name: "S6", Status: "SUCCEED", Log: "[log truncated]"},
			},
		},
		{
			name:  "a cut inside a character",
			steps: []fakeaws.Step{{Name: "BUILD", Log: "x" + strings.Repeat("é", 40000)}},
			want:  []ports.BuildStep{{Name: "BUILD", Status: "SUCCEED", Log: "x" + strings.Repeat("é", 32767) + marker}},
		},
		{
			name:  "a log that cannot be read",
			steps: []fakeaws.Step{{Name: "BUILD", Log: "secret", LogStatus: 403}},
			want:  []ports.BuildStep{{Name: "BUILD", Status: "SUCCEED", Log: "[log unavailable: HTTP 403]"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.Account(userAccount).App(fakeaws.App{ID: "d1", Name: "site", Branches: []fakeaws.Branch{
				{Name: "main", Jobs: []fakeaws.Job{{ID: "7", Status: "FAILED", Steps: tt.steps}}},
			}})
			b, err := e.p.BuildLogs(context.Background(), keyCreds(), "d1", "main", "7")
			if err != nil {
				t.Fatalf("BuildLogs: %v", err)
			}
			if b.ID != "7" || b.AppID != "d1" || b.Branch != "main" || b.Status != "FAILED" {
				t.Errorf("BuildLogs = %+v", b)
			}
			if !reflect.DeepEqual(b.Steps, tt.want) {
				for i := range b.Steps {
					b.Steps[i].Log = summary(b.Steps[i].Log)
				}
				for i := range tt.want {
					tt.want[i].Log = summary(tt.want[i].Log)
				}
				t.Errorf("steps =\n%+v\nwant\n%+v", b.Steps, tt.want)
			}
			for _, st := range b.Steps {
				if !utf8.ValidString(st.Log) {
					t.Errorf("step %s log is not valid UTF-8", st.Name)
				}
			}
		})
	}
}

// summary shortens a long log for a failure message.
func summary(s string) string {
	if len(s) < 80 {
		return s
	}
	return fmt.Sprintf("%q…[%d bytes]…%q", s[:20], len(s), s[len(s)-20:])
}

func TestBuildLogsOfAMissingBuild(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(userAccount).App(fakeaws.App{ID: "d1", Branches: []fakeaws.Branch{{Name: "main"}}})
	_, err := e.p.BuildLogs(context.Background(), keyCreds(), "d1", "main", "9")
	if pe := wantKind(t, err, ports.KindNotFound); pe.Message != "build 9 of app d1 branch main not found" {
		t.Errorf("message = %q", pe.Message)
	}
}
