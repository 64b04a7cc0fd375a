package fakeaws

import (
	"strings"
	"testing"
	"time"
)

// With BuildsFinishAfter, a started job runs, then succeeds with a BUILD and
// a DEPLOY step; without it, it stays PENDING.
func TestBuildsFinishAfter(t *testing.T) {
	t.Parallel()
	j := &Job{StartTime: time.Unix(1000, 0), Status: "PENDING", finishIn: 4 * time.Second}
	j.advance(j.StartTime.Add(time.Second), "main")
	if j.Status != "RUNNING" || len(j.Steps) != 1 || j.Steps[0].Status != "RUNNING" {
		t.Errorf("after 1s: %+v", j)
	}
	j.advance(j.StartTime.Add(3*time.Second), "main")
	if j.Status != "RUNNING" || len(j.Steps) != 2 || j.Steps[0].Status != "SUCCEED" || j.Steps[1].Status != "RUNNING" {
		t.Errorf("after 3s: %+v", j)
	}
	j.advance(j.StartTime.Add(5*time.Second), "main")
	if j.Status != "SUCCEED" || len(j.Steps) != 2 || j.Steps[1].Status != "SUCCEED" || !strings.Contains(j.Steps[1].Log, "deployed") {
		t.Errorf("after 5s: %+v", j)
	}
	idle := &Job{StartTime: time.Unix(1000, 0), Status: "PENDING"}
	idle.advance(idle.StartTime.Add(time.Hour), "main")
	if idle.Status != "PENDING" || len(idle.Steps) != 0 {
		t.Errorf("without a build time: %+v", idle)
	}
}
