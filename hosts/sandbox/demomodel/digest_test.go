package demomodel_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// TestSpecPipelineFromDigest: inputs over the specification engine's
// context budget are digested by the demo model (map and reduce calls)
// and every stage it writes from the digest passes the checks, reads like
// one written from the material (no citations in it), and names what the
// material says.
func TestSpecPipelineFromDigest(t *testing.T) {
	t.Parallel()
	c, fake := serve(t)
	store, jobs := newMemSpecs(), &jobList{}
	svc := spec.New(spec.Config{ContextBudget: 2000}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs,
		LLM: c, Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
	ctx := ports.WithPrincipal(context.Background(), alice)
	var long strings.Builder
	long.WriteString(expenseDoc + "\n")
	for i := 0; long.Len() < 30000; i++ {
		fmt.Fprintf(&long, "[00:%02d] Dana: Managers approve expenses from the mobile app, point %d.\n", i%60, i)
	}
	v, err := svc.CreateSession(ctx, "Demo", []spec.NewInput{{Kind: ports.InputTranscript, Title: "Workshop", Content: long.String()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ports.Stages {
		if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
			t.Fatal(err)
		}
		got, _ := svc.GetSession(ctx, v.Session.ID)
		if got.Session.Status != ports.SpecReady {
			t.Fatalf("after %s: %s %+v", st, got.Session.Status, got.Session.Error)
		}
		a := got.Artifacts[len(got.Artifacts)-1]
		if len(a.Checks) != 0 || strings.Contains(a.Content, "[inputs:") {
			t.Errorf("%s: checks %q\n%.800s", st, a.Checks, a.Content)
		}
		validate(t, string(st), a.Data)
		if st == ports.StageScope && (!strings.Contains(a.Content, "Expense approvals") || !strings.Contains(a.Content, "receipt")) {
			t.Errorf("the scope does not come from the material:\n%s", a.Content)
		}
	}
	maps, reduces := 0, 0
	for _, r := range fake.Requests() {
		switch r.ResponseSchemaName() {
		case spec.DigestMapSchema:
			maps++
		case spec.DigestReduceSchema:
			reduces++
		}
	}
	if maps < 2 || reduces < 1 {
		t.Errorf("%d map and %d reduce calls", maps, reduces)
	}
}
