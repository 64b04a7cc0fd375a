package cloud_test

import (
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
)

// A follow starts with the newest lines, then asks for the oldest after
// the last one it returned: an event of the same millisecond comes once,
// one with a later id comes, and a resume starts after its id.
func TestFollowLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	in := keyAccount("Production")
	id := e.add(in)
	c := creds(in)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(ms int, id, msg string) ports.LogEvent {
		return ports.LogEvent{Timestamp: t0.Add(time.Duration(ms) * time.Millisecond), ID: id, Message: msg}
	}
	a, b := ev(0, "01", "a"), ev(5, "02", "b")
	b2 := ev(5, "03", "b2") // the same millisecond as b, arrived later
	cc := ev(9, "04", "c")
	gomock.InOrder(
		e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Limit: 100, Filter: "ERROR"}).Return([]ports.LogEvent{a, b}, nil),
		e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Since: b.Timestamp, Limit: 1000, Filter: "ERROR", Oldest: true}).
			Return([]ports.LogEvent{b, b2, cc}, nil),
		e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Since: cc.Timestamp, Limit: 1000, Filter: "ERROR", Oldest: true}).
			Return([]ports.LogEvent{cc}, nil),
		// Resumed after b: b is not sent again, b2 is.
		e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Since: b.Timestamp, Limit: 1000, Oldest: true}).
			Return([]ports.LogEvent{b, b2}, nil),
	)
	ctx := as(alice)
	ref := cloud.ServiceRef{AccountID: id, Cluster: "prod", Service: "checkout"}
	f, err := e.svc.FollowLogs(ctx, cloud.FollowInput{ServiceRef: ref, Filter: "ERROR"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]string{{"a", "b"}, {"b2", "c"}, {}} {
		got, err := f.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, e := range got {
			msgs = append(msgs, e.Message)
		}
		if len(msgs) != len(want) || (len(want) > 0 && (msgs[0] != want[0] || msgs[len(msgs)-1] != want[len(want)-1])) {
			t.Fatalf("poll %d: %v, want %v", i, msgs, want)
		}
	}
	f, err = e.svc.FollowLogs(ctx, cloud.FollowInput{ServiceRef: ref, After: cloud.FollowEventID(b)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Poll(ctx); err != nil || len(got) != 1 || got[0].Message != "b2" {
		t.Fatalf("resumed: %+v %v", got, err)
	}
	for _, bad := range []cloud.FollowInput{
		{ServiceRef: ref, After: "12-ab"},
		{ServiceRef: ref, Filter: "a\nb"},
		{ServiceRef: ref, Function: "resize"},
		{ServiceRef: cloud.ServiceRef{AccountID: id}},
	} {
		if _, err := e.svc.FollowLogs(ctx, bad); ports.KindOf(err) != ports.KindMalformed {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
