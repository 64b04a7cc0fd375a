package cloud_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
)

// TestAccountIsOptional: a request without account_id acts on the
// organisation's only account; with none or several it is malformed, naming
// the accounts (ids and names).
func TestAccountIsOptional(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		accounts []string
		kind     ports.Kind
	}{
		{"no account", nil, ports.KindMalformed},
		{"one account", []string{"Production"}, ""},
		{"two accounts", []string{"Production", "Staging"}, ports.KindMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			var ids []string
			for _, name := range tt.accounts {
				ids = append(ids, e.add(keyAccount(name)))
			}
			if tt.kind == "" {
				e.prov.EXPECT().ListClusters(gomock.Any(), gomock.Any()).Return([]ports.Cluster{{Name: "prod"}}, nil)
				e.prov.EXPECT().ListFunctions(gomock.Any(), gomock.Any()).Return(nil, nil)
			}
			for _, call := range []func() error{
				func() error { return errOf(e.svc.ListClusters(as(alice), "")) },
				func() error { return errOf(e.svc.ListFunctions(as(alice), "")) },
			} {
				err := call()
				if ports.KindOf(err) != tt.kind {
					t.Fatalf("error %v, want %q", err, tt.kind)
				}
				if err == nil {
					continue
				}
				if !slices.Equal(fieldsOf(err), []string{"account_id"}) {
					t.Errorf("fields %v, want account_id", fieldsOf(err))
				}
				pe, _ := ports.AsError(err)
				for i, id := range ids {
					label := id + " (" + tt.accounts[i] + ")"
					if !strings.Contains(pe.Message, label) || !strings.Contains(pe.Fields[0].Reason, label) {
						t.Errorf("%v does not name %s in its detail and errors[]", pe.Fields, label)
					}
				}
			}
		})
	}
}

// TestServiceIsLocated: a service's account and cluster are found when only
// one fits; when several do, the error names them.
func TestServiceIsLocated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	prod, staging := keyAccount("Production"), keyAccount("Staging")
	staging.Auth.AccessKeyID = "AKIAIOSFODNN7STAGING"
	prodID, stagingID := e.add(prod), e.add(staging)
	pc, sc := creds(prod), creds(staging)
	e.prov.EXPECT().ListClusters(gomock.Any(), pc).AnyTimes().Return([]ports.Cluster{{Name: "blue"}, {Name: "green"}}, nil)
	e.prov.EXPECT().ListClusters(gomock.Any(), sc).AnyTimes().Return([]ports.Cluster{{Name: "main"}}, nil)
	e.prov.EXPECT().ListServices(gomock.Any(), pc, "blue").AnyTimes().Return([]ports.ContainerService{{Name: "web"}, {Name: "api"}}, nil)
	e.prov.EXPECT().ListServices(gomock.Any(), pc, "green").AnyTimes().Return([]ports.ContainerService{{Name: "web"}}, nil)
	e.prov.EXPECT().ListServices(gomock.Any(), sc, "main").AnyTimes().Return([]ports.ContainerService{{Name: "worker", ARN: "arn:worker"}, {Name: "web"}}, nil)
	e.prov.EXPECT().ListServices(gomock.Any(), sc, "blue").AnyTimes().Return(nil, ports.NotFound("cluster", "blue"))
	e.prov.EXPECT().ListServices(gomock.Any(), pc, "main").AnyTimes().Return(nil, ports.NotFound("cluster", "main"))
	e.prov.EXPECT().ServiceLogs(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ any, c ports.CloudCredentials, cluster, service string, _ ports.LogQuery) ([]ports.LogEvent, error) {
			return []ports.LogEvent{{Message: c.AccessKeyID + "/" + cluster + "/" + service}}, nil
		})
	tests := []struct {
		name   string
		ref    cloud.ServiceRef
		want   string
		kind   ports.Kind
		fields []string
	}{
		{"in one cluster of one account", cloud.ServiceRef{Service: "api"}, prod.Auth.AccessKeyID + "/blue/api", "", nil},
		{"by ARN", cloud.ServiceRef{Service: "arn:worker"}, staging.Auth.AccessKeyID + "/main/arn:worker", "", nil},
		{"in two clusters of one account", cloud.ServiceRef{AccountID: prodID, Service: "web"}, "", ports.KindMalformed, []string{"cluster"}},
		{"in three clusters of two accounts", cloud.ServiceRef{Service: "web"}, "", ports.KindMalformed, []string{"account_id", "cluster"}},
		{"the cluster settles it", cloud.ServiceRef{Cluster: "main", Service: "web"}, staging.Auth.AccessKeyID + "/main/web", "", nil},
		{"the account settles it", cloud.ServiceRef{AccountID: stagingID, Service: "web"}, staging.Auth.AccessKeyID + "/main/web", "", nil},
		{"nowhere", cloud.ServiceRef{Service: "nope"}, "", ports.KindNotFound, nil},
	}
	for _, tt := range tests {
		got, err := e.svc.ServiceLogs(as(alice), tt.ref, cloud.LogsInput{})
		if ports.KindOf(err) != tt.kind || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("%s: %v (fields %v), want %q %v", tt.name, err, fieldsOf(err), tt.kind, tt.fields)
			continue
		}
		if tt.kind == "" && (len(got) != 1 || got[0].Message != tt.want) {
			t.Errorf("%s: logs %+v, want from %s", tt.name, got, tt.want)
		}
		if tt.kind == ports.KindMalformed && !strings.Contains(err.Error(), "cluster green of account "+prodID+" (Production)") {
			t.Errorf("%s: %v does not name the places", tt.name, err)
		}
	}
}

// TestAppsOfEveryAccount: without account_id, apps of every account, each
// with its account's id; an account that fails is reported beside the
// others' apps; only when all fail is it an error.
func TestAppsOfEveryAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	prod, staging := keyAccount("Production"), keyAccount("Staging")
	staging.Auth.AccessKeyID = "AKIAIOSFODNN7STAGING"
	prodID, stagingID := e.add(prod), e.add(staging)
	denied := &ports.Error{Kind: ports.KindUpstream, Message: "amplify: AccessDeniedException"}
	e.prov.EXPECT().ListApps(gomock.Any(), creds(prod)).Return([]ports.App{{ID: "d1"}}, nil)
	e.prov.EXPECT().ListApps(gomock.Any(), creds(staging)).Return([]ports.App{{ID: "d2"}}, nil)
	got, err := e.svc.ListApps(as(alice), "")
	if err != nil || len(got.Items) != 2 || got.Items[0].AccountID != prodID || got.Items[1].AccountID != stagingID || len(got.Failed) != 0 {
		t.Errorf("ListApps = %+v, %v", got, err)
	}

	e.prov.EXPECT().ListApps(gomock.Any(), creds(prod)).Return([]ports.App{{ID: "d1"}}, nil)
	e.prov.EXPECT().ListApps(gomock.Any(), creds(staging)).Return(nil, denied)
	got, err = e.svc.ListApps(as(alice), "")
	if err != nil || len(got.Items) != 1 || len(got.Failed) != 1 || got.Failed[0].AccountID != stagingID ||
		got.Failed[0].Error != denied.Message || got.Failed[0].Kind != ports.KindUpstream {
		t.Errorf("ListApps with one account failing = %+v, %v", got, err)
	}

	e.prov.EXPECT().ListApps(gomock.Any(), gomock.Any()).Times(2).Return(nil, denied)
	if got, err := e.svc.ListApps(as(alice), ""); !errors.Is(err, ports.ErrUpstream) {
		t.Errorf("ListApps with every account failing = %+v, %v", got, err)
	}
	e.prov.EXPECT().ListApps(gomock.Any(), creds(staging)).Return(nil, denied)
	if _, err := e.svc.ListApps(as(alice), stagingID); err != denied {
		t.Errorf("ListApps of the failing account = %v", err)
	}
	if got, err := e.svc.ListApps(as(other), ""); err != nil || len(got.Items) != 0 {
		t.Errorf("ListApps of an org without accounts = %+v, %v", got, err)
	}
}

// TestDeployAppBranch: without a branch, the app's only branch, or its only
// production branch; otherwise the error names the branches.
func TestDeployAppBranch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		branches []ports.AppBranch
		want     string
		kind     ports.Kind
	}{
		{"the only branch", []ports.AppBranch{{Name: "dev", Stage: "DEVELOPMENT"}}, "dev", ""},
		{"the production branch", []ports.AppBranch{{Name: "dev", Stage: "DEVELOPMENT"}, {Name: "main", Stage: "PRODUCTION"}}, "main", ""},
		{"two production branches", []ports.AppBranch{{Name: "main", Stage: "PRODUCTION"}, {Name: "prod", Stage: "PRODUCTION"}}, "", ports.KindMalformed},
		{"no production branch", []ports.AppBranch{{Name: "a", Stage: "BETA"}, {Name: "b", Stage: "BETA"}}, "", ports.KindMalformed},
		{"no branch", nil, "", ports.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			id := e.add(keyAccount("Production"))
			e.prov.EXPECT().ListBranches(gomock.Any(), gomock.Any(), "d1").Return(tt.branches, nil)
			if tt.want != "" {
				e.prov.EXPECT().DeployApp(gomock.Any(), gomock.Any(), "d1", tt.want).Return(ports.Build{ID: "3", Status: "PENDING"}, nil)
			}
			b, err := e.svc.DeployApp(as(alice), cloud.AppDeployInput{AppID: "d1"})
			if ports.KindOf(err) != tt.kind {
				t.Fatalf("DeployApp = %+v, %v; want %q", b, err, tt.kind)
			}
			if tt.kind == ports.KindMalformed {
				if !slices.Equal(fieldsOf(err), []string{"branch"}) || !strings.Contains(err.Error(), tt.branches[1].Name) {
					t.Errorf("error %v (fields %v), want the branches named", err, fieldsOf(err))
				}
				return
			}
			if tt.kind == "" && (b.Branch != tt.want || b.AccountID != id || b.JobID != "3" || b.ID == b.JobID) {
				t.Errorf("DeployApp = %+v", b)
			}
		})
	}
}

// TestBuildLogsByBuildIDAlone: the id DeployApp returned finds the build's
// account, app, branch and job; a provider job id is looked for in the
// app's branches.
func TestBuildLogsByBuildIDAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	prod, staging := keyAccount("Production"), keyAccount("Staging")
	staging.Auth.AccessKeyID = "AKIAIOSFODNN7STAGING"
	e.add(prod)
	stagingID := e.add(staging)
	sc := creds(staging)
	e.prov.EXPECT().ListBranches(gomock.Any(), creds(prod), "d1").AnyTimes().Return(nil, ports.NotFound("app", "d1"))
	e.prov.EXPECT().ListBranches(gomock.Any(), sc, "d1").AnyTimes().Return([]ports.AppBranch{{Name: "dev"}, {Name: "main"}}, nil)
	e.prov.EXPECT().DeployApp(gomock.Any(), sc, "d1", "dev").Return(ports.Build{ID: "5", Status: "PENDING"}, nil)
	e.prov.EXPECT().BuildLogs(gomock.Any(), sc, "d1", gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ any, _ ports.CloudCredentials, app, branch, job string) (ports.Build, error) {
			if job == "5" || (job == "9" && branch == "main") {
				return ports.Build{ID: job, AppID: app, Branch: branch, Status: "SUCCEED"}, nil
			}
			return ports.Build{}, ports.NotFound("build", job)
		})

	started, err := e.svc.DeployApp(as(alice), cloud.AppDeployInput{AppID: "d1", Branch: "dev"})
	if err != nil || started.AccountID != stagingID || started.JobID != "5" {
		t.Fatalf("DeployApp = %+v, %v", started, err)
	}
	tests := []struct {
		name   string
		q      cloud.BuildQuery
		branch string
		kind   ports.Kind
		fields []string
	}{
		{"devpilot's id alone", cloud.BuildQuery{AppID: "d1", BuildID: started.ID}, "dev", "", nil},
		{"devpilot's id under another app", cloud.BuildQuery{AppID: "d2", BuildID: started.ID}, "", ports.KindNotFound, nil},
		{"a job id on one branch", cloud.BuildQuery{AppID: "d1", BuildID: "9"}, "main", "", nil},
		{"a job id on two branches", cloud.BuildQuery{AppID: "d1", BuildID: "5"}, "", ports.KindMalformed, []string{"branch"}},
		{"a job id on two branches, one named", cloud.BuildQuery{AppID: "d1", BuildID: "5", Branch: "main"}, "main", "", nil},
		{"a job id nowhere", cloud.BuildQuery{AppID: "d1", BuildID: "77"}, "", ports.KindNotFound, nil},
		{"another org", cloud.BuildQuery{AppID: "d1", BuildID: started.ID}, "", ports.KindNotFound, nil},
	}
	for _, tt := range tests {
		who := alice
		if tt.name == "another org" {
			who = other
		}
		b, err := e.svc.BuildLogs(as(who), tt.q)
		if ports.KindOf(err) != tt.kind || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("%s: %+v, %v (fields %v); want %q %v", tt.name, b, err, fieldsOf(err), tt.kind, tt.fields)
			continue
		}
		if tt.kind == "" && (b.Branch != tt.branch || b.Status != "SUCCEED") {
			t.Errorf("%s: %+v, want from branch %s", tt.name, b, tt.branch)
		}
	}
}
