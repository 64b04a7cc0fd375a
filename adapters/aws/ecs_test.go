package aws_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestListClusters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acct := e.fake.Account(userAccount)
	for i := range 150 {
		acct.Cluster(fmt.Sprintf("c%03d", i))
	}
	acct.Cluster("c007",
		fakeaws.Service{Name: "api", Desired: 3, Running: 2, Pending: 1},
		fakeaws.Service{Name: "worker", Desired: 1, Running: 1},
		fakeaws.Service{Name: "old", Status: "DRAINING"})

	clusters, err := e.p.ListClusters(context.Background(), keyCreds())
	if err != nil {
		t.Fatalf("ListClusters: %v", err)
	}
	if len(clusters) != 150 {
		t.Fatalf("clusters = %d, want 150", len(clusters))
	}
	want := ports.Cluster{
		Name: "c007", ARN: "arn:aws:ecs:" + region + ":" + userAccount + ":cluster/c007", Status: "ACTIVE",
		ActiveServices: 2, RunningTasks: 3, PendingTasks: 1,
	}
	if clusters[7] != want {
		t.Errorf("clusters[7] = %+v, want %+v", clusters[7], want)
	}
	if n := len(e.fake.CallsTo(fakeaws.ServiceECS, "ListClusters")); n != 2 {
		for _, c := range e.fake.Calls() {
			t.Logf("%s attempt %d: %d %s %v", c.Operation, c.Attempt, c.Status, c.ErrorCode, c.Input["nextToken"])
		}
		t.Errorf("ListClusters calls = %d, want 2 pages", n)
	}
	var sizes []int
	for _, c := range e.fake.CallsTo(fakeaws.ServiceECS, "DescribeClusters") {
		sizes = append(sizes, len(c.Input["clusters"].([]any)))
	}
	if !reflect.DeepEqual(sizes, []int{100, 50}) {
		t.Errorf("DescribeClusters batch sizes = %v, want [100 50]; calls %+v", sizes, e.fake.CallsTo(fakeaws.ServiceECS, "DescribeClusters"))
	}
}

func TestListServices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	created := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var services []fakeaws.Service
	for i := range 23 {
		services = append(services, fakeaws.Service{Name: fmt.Sprintf("svc-%02d", i), TaskDefinition: "web:1", Desired: i, Running: i})
	}
	services[4].Deployments = []fakeaws.Deployment{
		{ID: "ecs-svc/2", Status: "PRIMARY", RolloutState: "IN_PROGRESS", TaskDefinition: "web:2", Desired: 4, Pending: 4, CreatedAt: created},
		{ID: "ecs-svc/1", Status: "ACTIVE", RolloutState: "COMPLETED", TaskDefinition: "web:1", Desired: 4, Running: 4, CreatedAt: created.Add(-time.Hour)},
	}
	e.fake.Account(userAccount).Cluster("prod", services...)
	e.fake.MaxPageSize(10)

	got, err := e.p.ListServices(context.Background(), keyCreds(), "prod")
	if err != nil {
		t.Fatalf("ListServices: %v", err)
	}
	if len(got) != 23 {
		t.Fatalf("services = %d, want 23", len(got))
	}
	tdARN := func(td string) string { return "arn:aws:ecs:" + region + ":" + userAccount + ":task-definition/" + td }
	want := ports.ContainerService{
		Name: "svc-04", ARN: "arn:aws:ecs:" + region + ":" + userAccount + ":service/prod/svc-04", Cluster: "prod",
		Status: "ACTIVE", TaskDefinition: tdARN("web:1"), Desired: 4, Running: 4,
		Deployments: []ports.ServiceDeployment{
			{ID: "ecs-svc/2", Status: "PRIMARY", RolloutState: "IN_PROGRESS", TaskDefinition: tdARN("web:2"), Desired: 4, Pending: 4, CreatedAt: created},
			{ID: "ecs-svc/1", Status: "ACTIVE", RolloutState: "COMPLETED", TaskDefinition: tdARN("web:1"), Desired: 4, Running: 4, CreatedAt: created.Add(-time.Hour)},
		},
	}
	if !reflect.DeepEqual(got[4], want) {
		t.Errorf("services[4] =\n%+v\nwant\n%+v", got[4], want)
	}
	if n := len(e.fake.CallsTo(fakeaws.ServiceECS, "ListServices")); n != 3 {
		t.Errorf("ListServices calls = %d, want 3 pages", n)
	}
	var sizes []int
	for _, c := range e.fake.CallsTo(fakeaws.ServiceECS, "DescribeServices") {
		sizes = append(sizes, len(c.Input["services"].([]any)))
		if c.Input["cluster"] != "prod" {
			t.Errorf("DescribeServices cluster = %v, want prod", c.Input["cluster"])
		}
	}
	if !reflect.DeepEqual(sizes, []int{10, 10, 3}) {
		t.Errorf("DescribeServices batch sizes = %v, want [10 10 3]", sizes)
	}
}

func TestListServicesOfAMissingCluster(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.p.ListServices(context.Background(), keyCreds(), "nope")
	if pe := wantKind(t, err, ports.KindNotFound); pe.Message != "cluster nope not found" {
		t.Errorf("message = %q", pe.Message)
	}
}

func TestDeployService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		cluster, service string
		kind             ports.Kind
		message          string
	}{
		{name: "deployed", cluster: "prod", service: "web"},
		{name: "missing service", cluster: "prod", service: "ghost", kind: ports.KindNotFound, message: "service ghost in cluster prod not found"},
		{name: "missing cluster", cluster: "nope", service: "web", kind: ports.KindNotFound, message: "cluster nope not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.Account(userAccount).Cluster("prod", fakeaws.Service{Name: "web", TaskDefinition: "web:1", Desired: 2, Running: 2})
			d, err := e.p.DeployService(context.Background(), keyCreds(), tt.cluster, tt.service)
			if tt.kind != "" {
				if pe := wantKind(t, err, tt.kind); pe.Message != tt.message {
					t.Errorf("message = %q, want %q", pe.Message, tt.message)
				}
				return
			}
			if err != nil {
				t.Fatalf("DeployService: %v", err)
			}
			if !strings.HasPrefix(d.ID, "ecs-svc/") || d.Status != "IN_PROGRESS" {
				t.Errorf("DeployService = %+v, want a new ecs-svc deployment IN_PROGRESS", d)
			}
			calls := e.fake.CallsTo(fakeaws.ServiceECS, "UpdateService")
			if len(calls) != 1 || calls[0].Input["forceNewDeployment"] != true || calls[0].Input["desiredCount"] != nil {
				t.Errorf("UpdateService calls = %+v, want one forcing a new deployment", calls)
			}
			services, err := e.p.ListServices(context.Background(), keyCreds(), "prod")
			if err != nil {
				t.Fatal(err)
			}
			if deps := services[0].Deployments; len(deps) != 2 || deps[0].ID != d.ID || deps[0].Status != "PRIMARY" || deps[1].Status != "ACTIVE" {
				t.Errorf("deployments after the deploy = %+v", deps)
			}
		})
	}
}

func TestScaleService(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		service string
		desired int
		kind    ports.Kind
		calls   int
	}{
		{name: "scaled up", service: "web", desired: 5, calls: 1},
		{name: "scaled to zero", service: "web", desired: 0, calls: 1},
		{name: "negative", service: "web", desired: -1, kind: ports.KindInvalid},
		{name: "missing service", service: "ghost", desired: 1, kind: ports.KindNotFound, calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fake.Account(userAccount).Cluster("prod", fakeaws.Service{Name: "web", TaskDefinition: "web:1", Desired: 2, Running: 2})
			svc, err := e.p.ScaleService(context.Background(), keyCreds(), "prod", tt.service, tt.desired)
			calls := e.fake.CallsTo(fakeaws.ServiceECS, "UpdateService")
			if len(calls) != tt.calls {
				t.Errorf("UpdateService calls = %d, want %d", len(calls), tt.calls)
			}
			if tt.kind != "" {
				wantKind(t, err, tt.kind)
				return
			}
			if err != nil {
				t.Fatalf("ScaleService: %v", err)
			}
			if svc.Name != "web" || svc.Cluster != "prod" || svc.Desired != tt.desired || svc.Running != 2 {
				t.Errorf("ScaleService = %+v, want web with desired %d", svc, tt.desired)
			}
			if calls[0].Input["desiredCount"] != float64(tt.desired) || calls[0].Input["forceNewDeployment"] == true {
				t.Errorf("UpdateService input = %v", calls[0].Input)
			}
		})
	}
}

// seedServiceLogs seeds a service "web" logging with awslogs to /ecs/web
// (prefix "web") from its second container, and a service "quiet" that logs
// nowhere.
func seedServiceLogs(f *fakeaws.Server, withEvents bool) {
	now := fixture.Epoch
	acct := f.Account(userAccount).
		TaskDefinition(fakeaws.TaskDefinition{Family: "web", Revision: 3, Containers: []fakeaws.Container{
			{Name: "proxy", Image: "envoy"},
			{Name: "app", Image: "web", LogConfiguration: fakeaws.AWSLogs("/ecs/web", "web")},
		}}).
		TaskDefinition(fakeaws.TaskDefinition{Family: "quiet", Containers: []fakeaws.Container{
			{Name: "app", Image: "quiet", LogConfiguration: &fakeaws.LogConfiguration{LogDriver: "json-file"}},
		}}).
		Cluster("prod",
			fakeaws.Service{Name: "web", TaskDefinition: "web:3", Desired: 1, Running: 1},
			fakeaws.Service{Name: "quiet", TaskDefinition: "quiet:1"})
	if !withEvents {
		return
	}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	acct.LogEvents("/ecs/web", "web/app/task1",
		fakeaws.LogEvent{Timestamp: ago(2 * time.Hour), Message: "old"},
		fakeaws.LogEvent{Timestamp: ago(50 * time.Minute), Message: "a1"},
		fakeaws.LogEvent{Timestamp: ago(30 * time.Minute), Message: "a2"},
		fakeaws.LogEvent{Timestamp: ago(10 * time.Minute), Message: "a3"}).
		LogEvents("/ecs/web", "web/app/task2",
			fakeaws.LogEvent{Timestamp: ago(40 * time.Minute), Message: "b1"},
			fakeaws.LogEvent{Timestamp: ago(20 * time.Minute), Message: "b2"}).
		LogEvents("/ecs/web", "other/app/task3",
			fakeaws.LogEvent{Timestamp: ago(5 * time.Minute), Message: "not this service's"})
}

func messages(events []ports.LogEvent) []string {
	out := []string{}
	for _, ev := range events {
		out = append(out, ev.Message)
	}
	return out
}

func TestServiceLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		q         ports.LogQuery
		pageSize  int
		want      []string
		startTime time.Time
	}{
		{name: "the last hour", want: []string{"a1", "b1", "a2", "b2", "a3"}, startTime: fixture.Epoch.Add(-time.Hour)},
		{name: "newest two", q: ports.LogQuery{Limit: 2}, want: []string{"b2", "a3"}, startTime: fixture.Epoch.Add(-time.Hour)},
		{
			name: "newest two over pages", q: ports.LogQuery{Limit: 2}, pageSize: 1,
			want: []string{"b2", "a3"}, startTime: fixture.Epoch.Add(-time.Hour),
		},
		{
			name: "since", q: ports.LogQuery{Since: fixture.Epoch.Add(-35 * time.Minute)},
			want: []string{"a2", "b2", "a3"}, startTime: fixture.Epoch.Add(-35 * time.Minute),
		},
		{
			name: "since long ago", q: ports.LogQuery{Since: fixture.Epoch.Add(-3 * time.Hour), Limit: 10},
			want: []string{"old", "a1", "b1", "a2", "b2", "a3"}, startTime: fixture.Epoch.Add(-3 * time.Hour),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedServiceLogs(e.fake, true)
			e.fake.MaxPageSize(tt.pageSize)
			events, err := e.p.ServiceLogs(context.Background(), keyCreds(), "prod", "web", tt.q)
			if err != nil {
				t.Fatalf("ServiceLogs: %v", err)
			}
			if got := messages(events); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("messages = %v, want %v", got, tt.want)
			}
			for i := 1; i < len(events); i++ {
				if events[i].Timestamp.Before(events[i-1].Timestamp) {
					t.Errorf("events are not oldest first: %+v", events)
				}
			}
			if len(events) > 0 && (events[len(events)-1].Stream != "web/app/task1" || !events[len(events)-1].Timestamp.Equal(fixture.Epoch.Add(-10*time.Minute))) {
				t.Errorf("last event = %+v", events[len(events)-1])
			}
			calls := e.fake.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents")
			if len(calls) == 0 {
				t.Fatal("no FilterLogEvents call")
			}
			in := calls[0].Input
			if in["logGroupName"] != "/ecs/web" || in["logStreamNamePrefix"] != "web/" || in["startTime"] != float64(tt.startTime.UnixMilli()) {
				t.Errorf("FilterLogEvents input = %v", in)
			}
		})
	}
}

func TestServiceLogsFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		service    string
		withEvents bool
		kind       ports.Kind
		message    string
	}{
		{name: "no awslogs", service: "quiet", withEvents: true, kind: ports.KindInvalid, message: "no awslogs log configuration"},
		{name: "missing service", service: "ghost", withEvents: true, kind: ports.KindNotFound, message: "service ghost in cluster prod not found"},
		{name: "missing log group", service: "web", kind: ports.KindNotFound, message: "log group /ecs/web not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedServiceLogs(e.fake, tt.withEvents)
			_, err := e.p.ServiceLogs(context.Background(), keyCreds(), "prod", tt.service, ports.LogQuery{})
			if pe := wantKind(t, err, tt.kind); !strings.Contains(pe.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", pe.Message, tt.message)
			}
		})
	}
}

func TestServiceLogsReadTheLogConfigurationsRegion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lc := fakeaws.AWSLogs("/ecs/api", "api")
	lc.Options["awslogs-region"] = "us-east-1"
	e.fake.Account(userAccount).
		TaskDefinition(fakeaws.TaskDefinition{Family: "api", Containers: []fakeaws.Container{{Name: "app", LogConfiguration: lc}}}).
		Cluster("prod", fakeaws.Service{Name: "api", TaskDefinition: "api:1"}).
		LogEvents("/ecs/api", "api/app/t1", fakeaws.LogEvent{Timestamp: fixture.Epoch.Add(-time.Minute), Message: "hello"})
	events, err := e.p.ServiceLogs(context.Background(), keyCreds(), "prod", "api", ports.LogQuery{})
	if err != nil || len(events) != 1 {
		t.Fatalf("ServiceLogs = %+v, %v", events, err)
	}
	calls := e.fake.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents")
	if len(calls) != 1 || calls[0].Region != "us-east-1" {
		t.Errorf("FilterLogEvents calls = %+v, want one in us-east-1", calls)
	}
	if ecsCalls := e.fake.CallsTo(fakeaws.ServiceECS, ""); ecsCalls[0].Region != region {
		t.Errorf("ECS calls made in %s, want %s", ecsCalls[0].Region, region)
	}
}
