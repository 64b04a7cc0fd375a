package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// assistantStores are the assistant stores under test, the Transactor whose
// transactions they join, and the identity stores that seed the orgs and
// users owning their records.
type assistantStores struct {
	Sessions      ports.ChatSessionStore
	Messages      ports.ChatMessageStore
	Confirmations ports.ConfirmationStore
	Events        ports.StreamEventStore
	Turns         ports.TurnStore
	Preferences   ports.PreferenceStore
	Tx            ports.Transactor
	Identity      identityStores
	// Reopen returns new stores over the same data, as a restarted process
	// or another replica would open them; they may stay open until t ends.
	Reopen func(t *testing.T) assistantStores
}

// TestAssistant runs the contract of ports.ChatSessionStore,
// ports.ChatMessageStore, ports.ConfirmationStore, ports.StreamEventStore,
// ports.TurnStore, ports.PreferenceStore and their Transactor. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the ports leave a case open, the suite expects: a batch of messages
// or events is stored whole or not at all; CreateConfirmation and StartTurn
// in a missing session are not_found; a confirmation the sweep expired is
// gone when decided; RecordOutcome for a confirmation that is not approved
// is a conflict; EndTurn of a missing turn is not_found; a turn refused for
// the cap on a user's turns leaves nothing stored, and a turn that takes over
// its session's stale turn does not count that turn.
func TestAssistant(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.assistant, needAssistant), []suiteCase[assistantStores]{
		{"SessionRoundTrip", testSessionRoundTrip},
		{"SessionOwnerIsolation", testSessionOwnerIsolation},
		{"SessionCounts", testSessionCounts},
		{"ListSessionsPages", testListSessionsPages},
		{"ListSessionsLimits", testListSessionsLimits},
		{"ListSessionsMalformedCursor", testListSessionsMalformedCursor},
		{"SearchSessions", testSearchSessions},
		{"SetSessionTitle", testSetSessionTitle},
		{"TouchSession", testTouchSession},
		{"DeleteSessionCascades", testDeleteSessionCascades},
		{"MessagesRoundTrip", testMessagesRoundTrip},
		{"MessagesOrder", testMessagesOrder},
		{"MessagesErrors", testMessagesErrors},
		{"ConfirmationRoundTrip", testConfirmationRoundTrip},
		{"ListConfirmations", testListConfirmations},
		{"DecideConfirmation", testDecideConfirmation},
		{"DecideTwice", testDecideTwice},
		{"DecideExpired", testDecideExpired},
		{"ConfirmationOwnerIsolation", testConfirmationOwnerIsolation},
		{"ExpireConfirmations", testExpireConfirmations},
		{"CountPendingConfirmations", testCountPendingConfirmations},
		{"RecordOutcome", testRecordOutcome},
		{"RaceDecideConfirmation", testRaceDecideConfirmation},
		{"RaceRecordOutcome", testRaceRecordOutcome},
		{"DecideAfterRestart", testDecideAfterRestart},
		{"Events", testEvents},
		{"EventsErrors", testEventsErrors},
		{"EventsBigBatch", testEventsBigBatch},
		{"EventsText", testEventsText},
		{"StartSession", testStartSession},
		{"ContinueSession", testContinueSession},
		{"RaceContinueSession", testRaceContinueSession},
		{"ContinueSessionAsATurnEnds", testContinueSessionAsATurnEnds},
		{"RaceDeleteSession", testRaceDeleteSession},
		{"Turns", testTurns},
		{"StaleTurn", testStaleTurn},
		{"RaceStartTurn", testRaceStartTurn},
		{"TurnLeases", testTurnLeases},
		{"RaceEndLostTurn", testRaceEndLostTurn},
		{"TurnCap", testTurnCap},
		{"RaceTurnCap", testRaceTurnCap},
		{"Preferences", testPreferences},
		{"PreferencesOwnerIsolation", testPreferencesOwnerIsolation},
		{"TxJoins", testAssistantTxJoins},
	})
}

// The coded errors of DecideConfirmation, for errors.Is.
var (
	errAlreadyDecided = &ports.Error{Kind: ports.KindConflict, Code: "already_decided"}
	errExpired        = &ports.Error{Kind: ports.KindGone, Code: "expired"}
)

func newSession(owner ports.Owner) ports.ChatSession {
	return ports.ChatSession{
		ID: newID(), OrgID: owner.OrgID, UserID: owner.UserID, Title: "Deploy the api",
		CreatedAt: base, UpdatedAt: base,
	}
}

func mustCreateSession(t *testing.T, s assistantStores, cs ports.ChatSession) ports.ChatSession {
	t.Helper()
	if err := s.Sessions.CreateSession(t.Context(), cs); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return cs
}

// newChat stores a fresh owner and a session of theirs.
func newChat(t *testing.T, s assistantStores) (ports.Owner, ports.ChatSession) {
	t.Helper()
	owner := seedOwner(t, s.Identity)
	return owner, mustCreateSession(t, s, newSession(owner))
}

func mustGetSession(t *testing.T, s assistantStores, owner ports.Owner, id string) ports.ChatSession {
	t.Helper()
	cs, err := s.Sessions.GetSession(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	return cs
}

func newMessage(cs ports.ChatSession, role ports.MessageRole, content string) ports.ChatMessage {
	return ports.ChatMessage{
		ID: newID(), SessionID: cs.ID, TurnID: "turn-1",
		Message:   ports.Message{Role: role, Content: content},
		CreatedAt: base,
	}
}

func mustAppendMessages(t *testing.T, s assistantStores, msgs ...ports.ChatMessage) {
	t.Helper()
	if err := s.Messages.AppendMessages(t.Context(), msgs...); err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
}

func mustListMessages(t *testing.T, s assistantStores, sessionID string) []ports.ChatMessage {
	t.Helper()
	msgs, err := s.Messages.ListMessages(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	return msgs
}

func newConfirmation(cs ports.ChatSession) ports.Confirmation {
	return ports.Confirmation{
		ID: newID(), SessionID: cs.ID, OrgID: cs.OrgID, UserID: cs.UserID, TurnID: newID(),
		ToolCallID: "call_" + newID()[:8], ToolName: "deploy_service",
		Arguments: json.RawMessage(`{"service": "api",  "image":"api:1.2", "replicas": [1, 2.5e3]}`),
		Summary:   "Deploy api:1.2 to the api service",
		Status:    ports.ConfirmationPending,
		CreatedAt: base, ExpiresAt: base.Add(15 * time.Minute),
	}
}

func mustCreateConfirmation(t *testing.T, s assistantStores, c ports.Confirmation) ports.Confirmation {
	t.Helper()
	if err := s.Confirmations.CreateConfirmation(t.Context(), c); err != nil {
		t.Fatalf("CreateConfirmation: %v", err)
	}
	return c
}

func mustGetConfirmation(t *testing.T, s assistantStores, owner ports.Owner, id string) ports.Confirmation {
	t.Helper()
	c, err := s.Confirmations.GetConfirmation(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("GetConfirmation: %v", err)
	}
	return c
}

func mustDecide(t *testing.T, s assistantStores, owner ports.Owner, id string, d ports.Decision) ports.Confirmation {
	t.Helper()
	c, err := s.Confirmations.DecideConfirmation(t.Context(), owner, id, d)
	if err != nil {
		t.Fatalf("DecideConfirmation: %v", err)
	}
	return c
}

func approval(by string, at time.Time) ports.Decision {
	return ports.Decision{Status: ports.ConfirmationApproved, By: by, Reason: "looks right", At: at}
}

// decided is c as d leaves it.
func decided(c ports.Confirmation, d ports.Decision) ports.Confirmation {
	c.Status, c.DecidedAt, c.DecidedBy, c.Reason = d.Status, &d.At, d.By, d.Reason
	return c
}

func newEvent(sessionID string, seq int64) ports.StreamEvent {
	return ports.StreamEvent{
		SessionID: sessionID, Seq: seq, TurnID: "turn-1", Name: "content",
		Data:      json.RawMessage(fmt.Sprintf(`{"session_id": %q, "delta": "part %d"}`, sessionID, seq)),
		CreatedAt: base.Add(time.Duration(seq) * time.Millisecond),
	}
}

func mustAppendEvents(t *testing.T, s assistantStores, events ...ports.StreamEvent) {
	t.Helper()
	if err := s.Events.AppendEvents(t.Context(), events...); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
}

func mustListEvents(t *testing.T, s assistantStores, sessionID string, afterSeq int64, limit int) []ports.StreamEvent {
	t.Helper()
	events, err := s.Events.ListEvents(t.Context(), sessionID, afterSeq, limit)
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	return events
}

func mustLastEventSeq(t *testing.T, s assistantStores, sessionID string) int64 {
	t.Helper()
	seq, err := s.Events.LastEventSeq(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("LastEventSeq: %v", err)
	}
	return seq
}

func newTurn(sessionID string, started time.Time) ports.Turn {
	return ports.Turn{ID: newID(), SessionID: sessionID, StartedAt: started}
}

// normJSON returns JSON in one form (keys sorted, no spaces), so a store may
// keep it as text or parsed; what is not JSON is returned unchanged.
func normJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

func normSession(cs ports.ChatSession) ports.ChatSession {
	cs.CreatedAt, cs.UpdatedAt = ms(cs.CreatedAt), ms(cs.UpdatedAt)
	return cs
}

func checkSession(t *testing.T, what string, got, want ports.ChatSession) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	checkEqual(t, what, normSession(got), normSession(want))
}

func normMessages(msgs []ports.ChatMessage) []ports.ChatMessage {
	out := make([]ports.ChatMessage, len(msgs))
	for i, m := range msgs {
		m.CreatedAt = ms(m.CreatedAt)
		out[i] = m
	}
	return out
}

func checkMessages(t *testing.T, what string, got, want []ports.ChatMessage) {
	t.Helper()
	for _, m := range got {
		checkUTC(t, what, &m.CreatedAt)
	}
	checkEqual(t, what, normMessages(got), normMessages(want))
}

func normConfirmation(c ports.Confirmation) ports.Confirmation {
	c.CreatedAt, c.ExpiresAt = ms(c.CreatedAt), ms(c.ExpiresAt)
	c.DecidedAt, c.ExecutedAt = msPtr(c.DecidedAt), msPtr(c.ExecutedAt)
	c.Arguments = normJSON(c.Arguments)
	if c.Outcome != nil {
		o := *c.Outcome
		o.Result = normJSON(o.Result)
		c.Outcome = &o
	}
	return c
}

func checkConfirmation(t *testing.T, what string, got, want ports.Confirmation) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.ExpiresAt, got.DecidedAt, got.ExecutedAt)
	checkEqual(t, what, normConfirmation(got), normConfirmation(want))
}

func checkConfirmations(t *testing.T, what string, got, want []ports.Confirmation) {
	t.Helper()
	norm := func(cs []ports.Confirmation) []ports.Confirmation {
		out := make([]ports.Confirmation, len(cs))
		for i, c := range cs {
			out[i] = normConfirmation(c)
		}
		return out
	}
	for _, c := range got {
		checkUTC(t, what, &c.CreatedAt, &c.ExpiresAt, c.DecidedAt, c.ExecutedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func checkEvents(t *testing.T, what string, got, want []ports.StreamEvent) {
	t.Helper()
	norm := func(events []ports.StreamEvent) []ports.StreamEvent {
		out := make([]ports.StreamEvent, len(events))
		for i, e := range events {
			e.CreatedAt, e.Data = ms(e.CreatedAt), normJSON(e.Data)
			out[i] = e
		}
		return out
	}
	for _, e := range got {
		checkUTC(t, what, &e.CreatedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func checkTurn(t *testing.T, what string, got, want ports.Turn) {
	t.Helper()
	checkUTC(t, what, &got.StartedAt, got.EndedAt)
	norm := func(tu ports.Turn) ports.Turn {
		if tu.AliveAt.IsZero() { // a turn is alive when it starts
			tu.AliveAt = tu.StartedAt
		}
		tu.StartedAt, tu.EndedAt = ms(tu.StartedAt), msPtr(tu.EndedAt)
		tu.AliveAt, tu.StopRequestedAt = ms(tu.AliveAt), msPtr(tu.StopRequestedAt)
		return tu
	}
	checkEqual(t, what, norm(got), norm(want))
}

// checkNotFound fails the test unless err is not_found with the message
// "<resource> <id> not found".
func checkNotFound(t *testing.T, what string, err error, resource, id string) {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != ports.KindNotFound {
		t.Errorf("%s: error %v, want not_found", what, err)
		return
	}
	if want := resource + " " + id + " not found"; e.Message != want {
		t.Errorf("%s: message %q, want %q", what, e.Message, want)
	}
}

func testSessionRoundTrip(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	cs := newSession(owner)
	cs.Title = "Scale the workers ✓ «now»"
	cs.UpdatedAt = base.Add(time.Minute)
	mustCreateSession(t, s, cs)
	checkSession(t, "GetSession", mustGetSession(t, s, owner, cs.ID), cs)

	dup := newSession(owner)
	dup.ID = cs.ID
	checkErr(t, "CreateSession with a taken id", s.Sessions.CreateSession(ctx, dup), ports.ErrConflict)
	orphan := newSession(ports.Owner{OrgID: owner.OrgID, UserID: newID()})
	checkErr(t, "CreateSession for a missing user", s.Sessions.CreateSession(ctx, orphan), ports.ErrNotFound)

	missing := newID()
	_, err := s.Sessions.GetSession(ctx, owner, missing)
	checkNotFound(t, "GetSession of a missing session", err, "chat session", missing)
}

func testSessionOwnerIsolation(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	stranger := seedOwner(t, s.Identity)
	for _, other := range []struct {
		name  string
		owner ports.Owner
	}{
		{"another user of the org", seedColleague(t, s.Identity, owner.OrgID)},
		{"a user of another org", stranger},
		{"the user under another org", ports.Owner{OrgID: stranger.OrgID, UserID: owner.UserID}},
		{"another user under the org", ports.Owner{OrgID: owner.OrgID, UserID: stranger.UserID}},
		{"nobody", ports.Owner{}},
	} {
		_, err := s.Sessions.GetSession(ctx, other.owner, cs.ID)
		checkNotFound(t, "GetSession by "+other.name, err, "chat session", cs.ID)
		err = s.Sessions.SetSessionTitle(ctx, other.owner, cs.ID, "hijacked", base.Add(time.Hour))
		checkNotFound(t, "SetSessionTitle by "+other.name, err, "chat session", cs.ID)
		err = s.Sessions.DeleteSession(ctx, other.owner, cs.ID, base)
		checkNotFound(t, "DeleteSession by "+other.name, err, "chat session", cs.ID)
		list, _, err := s.Sessions.ListSessions(ctx, other.owner, ports.Page{Limit: 200})
		if err != nil {
			t.Fatalf("ListSessions by %s: %v", other.name, err)
		}
		if slices.ContainsFunc(list, func(x ports.ChatSession) bool { return x.ID == cs.ID }) {
			t.Errorf("ListSessions by %s lists another owner's session", other.name)
		}
	}
	checkSession(t, "GetSession by the owner afterwards", mustGetSession(t, s, owner, cs.ID), cs)
}

func testSessionCounts(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	other := newSession(owner)
	other.UpdatedAt = base.Add(-time.Minute)
	mustCreateSession(t, s, other)
	checkSession(t, "GetSession of an empty session", mustGetSession(t, s, owner, cs.ID), cs)

	mustAppendMessages(t, s, newMessage(cs, ports.MessageUser, "deploy"), newMessage(cs, ports.MessageAssistant, "sure"))
	mustAppendMessages(t, s, newMessage(cs, ports.MessageUser, "and scale"))
	mustAppendMessages(t, s, newMessage(other, ports.MessageUser, "hello"))
	var confs []ports.Confirmation
	for range 4 {
		confs = append(confs, mustCreateConfirmation(t, s, newConfirmation(cs)))
	}
	mustCreateConfirmation(t, s, newConfirmation(other))
	mustDecide(t, s, owner, confs[0].ID, approval(owner.UserID, base.Add(time.Minute)))
	reject := approval(owner.UserID, base.Add(time.Minute))
	reject.Status = ports.ConfirmationRejected
	mustDecide(t, s, owner, confs[1].ID, reject)
	_, err := s.Confirmations.DecideConfirmation(ctx, owner, confs[2].ID, approval(owner.UserID, base.Add(time.Hour)))
	checkErr(t, "DecideConfirmation after expiry", err, errExpired)

	want := cs
	want.MessageCount, want.PendingConfirmations = 3, 1
	wantOther := other
	wantOther.MessageCount, wantOther.PendingConfirmations = 1, 1
	checkSession(t, "GetSession", mustGetSession(t, s, owner, cs.ID), want)
	checkSession(t, "GetSession of the other session", mustGetSession(t, s, owner, other.ID), wantOther)
	list, next, err := s.Sessions.ListSessions(ctx, owner, ports.Page{})
	if err != nil {
		t.Fatalf("ListSessions: %v", err)
	}
	if len(list) != 2 || next != "" {
		t.Fatalf("ListSessions = %d sessions, next %q; want 2, \"\"", len(list), next)
	}
	checkSession(t, "ListSessions[0]", list[0], want)
	checkSession(t, "ListSessions[1]", list[1], wantOther)
}

// testSearchSessions: a search matches the title or the text of a user or
// assistant message (not a tool result), case-insensitively, takes % and _
// literally, pages, and finds only the owner's sessions.
func testSearchSessions(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	session := func(title string, minutes int) ports.ChatSession {
		cs := newSession(owner)
		cs.Title, cs.UpdatedAt = title, base.Add(time.Duration(minutes)*time.Minute)
		return mustCreateSession(t, s, cs)
	}
	costs := session("Quarterly COSTS review", 1)
	answer := session("", 2)
	mustAppendMessages(t, s, newMessage(answer, ports.MessageUser, "hello"),
		newMessage(answer, ports.MessageAssistant, "The Checkout service runs 3 tasks"),
		newMessage(answer, ports.MessageTool, `{"needle":"in a tool result"}`))
	percent := session("", 3)
	mustAppendMessages(t, s, newMessage(percent, ports.MessageUser, "is 50%_off a deal?"))
	colleague := newSession(seedColleague(t, s.Identity, owner.OrgID))
	colleague.Title = "costs of checkout"
	mustCreateSession(t, s, colleague)

	ids := func(q string, page ports.Page) ([]string, string) {
		t.Helper()
		list, next, err := s.Sessions.SearchSessions(ctx, owner, q, page)
		if err != nil {
			t.Fatalf("SearchSessions(%q): %v", q, err)
		}
		out := []string{}
		for _, cs := range list {
			out = append(out, cs.ID)
		}
		return out, next
	}
	for q, want := range map[string][]string{
		"costs":        {costs.ID},
		"CHECKOUT":     {answer.ID},
		"needle":       {},
		"50%_":         {percent.ID},
		"%":            {percent.ID},
		"_":            {percent.ID},
		"nothing here": {},
		"e":            {percent.ID, answer.ID, costs.ID},
	} {
		got, next := ids(q, ports.Page{})
		checkEqual(t, "SearchSessions("+q+")", got, want)
		if next != "" {
			t.Errorf("SearchSessions(%q): next %q", q, next)
		}
	}
	list, _, err := s.Sessions.SearchSessions(ctx, owner, "checkout", ports.Page{})
	if err != nil || len(list) != 1 || list[0].MessageCount != 3 {
		t.Errorf("SearchSessions(checkout) = %+v, %v; want the session with its 3 messages", list, err)
	}
	first, next := ids("e", ports.Page{Limit: 2})
	checkEqual(t, "first page", first, []string{percent.ID, answer.ID})
	rest, last := ids("e", ports.Page{Limit: 2, Cursor: next})
	checkEqual(t, "second page", rest, []string{costs.ID})
	if next == "" || last != "" {
		t.Errorf("cursors %q then %q", next, last)
	}
	if _, _, err := s.Sessions.SearchSessions(ctx, owner, "e", ports.Page{Cursor: "!!!"}); !isInvalid(err) {
		t.Errorf("SearchSessions with a malformed cursor: %v, want invalid", err)
	}
}

func testListSessionsPages(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	mustCreateSession(t, s, newSession(seedColleague(t, s.Identity, owner.OrgID)))
	created := map[string]ports.ChatSession{}
	// Minutes after base in no order; four tie across the first two pages.
	for _, minutes := range []int{2, 0, 3, 2, 2, 1, 2} {
		cs := newSession(owner)
		cs.UpdatedAt = base.Add(time.Duration(minutes) * time.Minute)
		created[cs.ID] = mustCreateSession(t, s, cs)
	}

	var all []ports.ChatSession
	var sizes []int
	cursor := ""
	for range 10 {
		page, next, err := s.Sessions.ListSessions(ctx, owner, ports.Page{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListSessions(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			break
		}
		cursor = next
	}
	checkEqual(t, "page sizes", sizes, []int{3, 3, 1})
	seen := map[string]bool{}
	for i, cs := range all {
		want, ok := created[cs.ID]
		switch {
		case !ok:
			t.Errorf("page item %d: session %s is not the owner's", i, cs.ID)
		case seen[cs.ID]:
			t.Errorf("page item %d: session %s listed twice", i, cs.ID)
		default:
			checkSession(t, fmt.Sprintf("page item %d", i), cs, want)
		}
		seen[cs.ID] = true
	}
	if len(seen) != len(created) {
		t.Errorf("pages list %d of the %d sessions", len(seen), len(created))
	}
	if !slices.IsSortedFunc(all, func(a, b ports.ChatSession) int { return b.UpdatedAt.Compare(a.UpdatedAt) }) {
		t.Errorf("pages are not most recently updated first")
	}

	whole, next, err := s.Sessions.ListSessions(ctx, owner, ports.Page{Limit: len(created)})
	if err != nil || len(whole) != len(created) || next != "" {
		t.Errorf("ListSessions(limit %d) = %d sessions, next %q, %v; want all, \"\", nil", len(created), len(whole), next, err)
	}

	oldest := all[len(all)-1]
	if err := s.Sessions.TouchSession(ctx, oldest.ID, base.Add(10*time.Minute)); err != nil {
		t.Fatalf("TouchSession: %v", err)
	}
	first, _, err := s.Sessions.ListSessions(ctx, owner, ports.Page{Limit: 3})
	if err != nil {
		t.Fatalf("ListSessions after TouchSession: %v", err)
	}
	if len(first) == 0 || first[0].ID != oldest.ID {
		t.Errorf("the touched session is not first after TouchSession")
	}
}

func testListSessionsLimits(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	const total = 201
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		for i := range total {
			cs := newSession(owner)
			cs.UpdatedAt = base.Add(time.Duration(i) * time.Second)
			if err := s.Sessions.CreateSession(ctx, cs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.Sessions.ListSessions(ctx, owner, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListSessions(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListSessions(limit %d) = %d sessions, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	var sizes []int
	for cursor := ""; len(sizes) < 10; {
		page, next, err := s.Sessions.ListSessions(ctx, owner, ports.Page{Cursor: cursor})
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		sizes = append(sizes, len(page))
		if cursor = next; cursor == "" {
			break
		}
	}
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})

	empty, next, err := s.Sessions.ListSessions(ctx, seedOwner(t, s.Identity), ports.Page{})
	if err != nil || len(empty) != 0 || next != "" {
		t.Errorf("ListSessions of an owner without sessions = %d, %q, %v; want none", len(empty), next, err)
	}
}

func testListSessionsMalformedCursor(t *testing.T, s assistantStores) {
	owner, _ := newChat(t, s)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, cursor := range []string{
		"!!!", "%%", "not a cursor", b64("nonsense"), b64("2030-05-06T01:38:09.123456Z"),
		b64("yesterday " + newID()), base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}),
	} {
		_, _, err := s.Sessions.ListSessions(t.Context(), owner, ports.Page{Cursor: cursor})
		e, ok := ports.AsError(err)
		if !ok || e.Kind != ports.KindInvalid {
			t.Errorf("ListSessions(cursor %q): error %v, want invalid", cursor, err)
			continue
		}
		if !slices.ContainsFunc(e.Fields, func(f ports.FieldError) bool { return f.Field == "cursor" }) {
			t.Errorf("ListSessions(cursor %q): fields %+v, want one named cursor", cursor, e.Fields)
		}
	}
}

func testSetSessionTitle(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	older := mustCreateSession(t, s, func() ports.ChatSession {
		x := newSession(owner)
		x.UpdatedAt = base.Add(-time.Hour)
		return x
	}())
	at := base.Add(time.Hour)
	if err := s.Sessions.SetSessionTitle(ctx, owner, older.ID, "Scale the workers", at); err != nil {
		t.Fatalf("SetSessionTitle: %v", err)
	}
	want := older
	want.Title, want.UpdatedAt = "Scale the workers", at
	checkSession(t, "GetSession after SetSessionTitle", mustGetSession(t, s, owner, older.ID), want)
	checkSession(t, "GetSession of another session", mustGetSession(t, s, owner, cs.ID), cs)
	list, _, err := s.Sessions.ListSessions(ctx, owner, ports.Page{})
	if err != nil || len(list) != 2 || list[0].ID != older.ID {
		t.Errorf("ListSessions after SetSessionTitle does not list the retitled session first (%v)", err)
	}
	missing := newID()
	checkNotFound(t, "SetSessionTitle of a missing session", s.Sessions.SetSessionTitle(ctx, owner, missing, "x", at), "chat session", missing)
}

func testTouchSession(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, a := newChat(t, s)
	b := newSession(owner)
	b.UpdatedAt = base.Add(time.Minute)
	mustCreateSession(t, s, b)
	order := func() []string {
		t.Helper()
		list, _, err := s.Sessions.ListSessions(ctx, owner, ports.Page{})
		if err != nil {
			t.Fatalf("ListSessions: %v", err)
		}
		var ids []string
		for _, cs := range list {
			ids = append(ids, cs.ID)
		}
		return ids
	}
	checkEqual(t, "order before TouchSession", order(), []string{b.ID, a.ID})
	at := base.Add(2 * time.Minute)
	if err := s.Sessions.TouchSession(ctx, a.ID, at); err != nil {
		t.Fatalf("TouchSession: %v", err)
	}
	checkEqual(t, "order after TouchSession", order(), []string{a.ID, b.ID})
	want := a
	want.UpdatedAt = at
	checkSession(t, "GetSession after TouchSession", mustGetSession(t, s, owner, a.ID), want)
	checkErr(t, "TouchSession of a missing session", s.Sessions.TouchSession(ctx, newID(), at), ports.ErrNotFound)
}

func testDeleteSessionCascades(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	kept := mustCreateSession(t, s, newSession(owner))
	var confs = map[string]ports.Confirmation{}
	ended := map[string]ports.Turn{}
	for _, x := range []ports.ChatSession{cs, kept} {
		mustAppendMessages(t, s, newMessage(x, ports.MessageUser, "deploy"), newMessage(x, ports.MessageAssistant, "ok"))
		if err := s.Events.AppendEvents(ctx, newEvent(x.ID, 1), newEvent(x.ID, 2)); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		confs[x.ID] = mustCreateConfirmation(t, s, newConfirmation(x))
		old := newTurn(x.ID, base)
		if err := s.Turns.StartTurn(ctx, old, base.Add(-time.Hour), 0); err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
		if err := s.Turns.EndTurn(ctx, old.ID, base.Add(time.Minute)); err != nil {
			t.Fatalf("EndTurn: %v", err)
		}
		ended[x.ID] = old
		if err := s.Turns.StartTurn(ctx, newTurn(x.ID, base.Add(2*time.Minute)), base.Add(-time.Hour), 0); err != nil {
			t.Fatalf("StartTurn: %v", err)
		}
	}

	// Each session has a turn running since base+2m: refused while it is
	// not stale, deleted with the rest once it is.
	checkErr(t, "DeleteSession while a turn runs", s.Sessions.DeleteSession(ctx, owner, cs.ID, base.Add(2*time.Minute)), ports.ErrConflict)
	if got := mustGetSession(t, s, owner, cs.ID); got.MessageCount != 2 {
		t.Errorf("after a refused DeleteSession: %d messages, want 2", got.MessageCount)
	}
	if err := s.Sessions.DeleteSession(ctx, owner, cs.ID, base.Add(time.Hour)); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	_, err := s.Sessions.GetSession(ctx, owner, cs.ID)
	checkNotFound(t, "GetSession after DeleteSession", err, "chat session", cs.ID)
	checkNotFound(t, "DeleteSession twice", s.Sessions.DeleteSession(ctx, owner, cs.ID, base.Add(time.Hour)), "chat session", cs.ID)
	if msgs := mustListMessages(t, s, cs.ID); len(msgs) != 0 {
		t.Errorf("ListMessages after DeleteSession = %d messages", len(msgs))
	}
	if events := mustListEvents(t, s, cs.ID, 0, 100); len(events) != 0 {
		t.Errorf("ListEvents after DeleteSession = %d events", len(events))
	}
	if seq := mustLastEventSeq(t, s, cs.ID); seq != 0 {
		t.Errorf("LastEventSeq after DeleteSession = %d", seq)
	}
	if list, err := s.Confirmations.ListConfirmations(ctx, cs.ID); err != nil || len(list) != 0 {
		t.Errorf("ListConfirmations after DeleteSession = %d, %v", len(list), err)
	}
	_, err = s.Confirmations.GetConfirmation(ctx, owner, confs[cs.ID].ID)
	checkErr(t, "GetConfirmation after DeleteSession", err, ports.ErrNotFound)
	_, err = s.Turns.RunningTurn(ctx, cs.ID)
	checkErr(t, "RunningTurn after DeleteSession", err, ports.ErrNotFound)
	checkErr(t, "EndTurn of a deleted session's turn", s.Turns.EndTurn(ctx, ended[cs.ID].ID, base.Add(time.Hour)), ports.ErrNotFound)
	checkErr(t, "AppendMessages to a deleted session",
		s.Messages.AppendMessages(ctx, newMessage(cs, ports.MessageUser, "hello?")), ports.ErrNotFound)

	want := kept
	want.MessageCount, want.PendingConfirmations = 2, 1
	want.UpdatedAt = base.Add(time.Minute) // its first turn's end
	checkSession(t, "GetSession of the other session", mustGetSession(t, s, owner, kept.ID), want)
	if n := len(mustListEvents(t, s, kept.ID, 0, 100)); n != 2 {
		t.Errorf("ListEvents of the other session = %d events, want 2", n)
	}
	if _, err := s.Turns.RunningTurn(ctx, kept.ID); err != nil {
		t.Errorf("RunningTurn of the other session: %v", err)
	}
}

func testMessagesRoundTrip(t *testing.T, s assistantStores) {
	_, cs := newChat(t, s)
	turn := newID()
	msgs := []ports.ChatMessage{
		{Message: ports.Message{Role: ports.MessageSystem, Content: "You are devpilot."}},
		{Message: ports.Message{Role: ports.MessageUser, Content: "Deploy api:1.2 — then \"scale\" <it> & tell me ✓\n\ttabbed"}},
		{Message: ports.Message{Role: ports.MessageAssistant, ToolCalls: []ports.ToolCall{
			{ID: "call_1", Name: "deploy_service", Arguments: `{"service": "api",   "image":"api:1.2"}`},
			{ID: "call_2", Name: "scale_service", Arguments: `{"service": "api", "count": 3`},
			{ID: "call_3", Name: "list_clusters", Arguments: ""},
			{ID: "call_4", Name: "get_logs", Arguments: "  not json at all \u00e9 \\u0000 "},
		}}},
		{Message: ports.Message{Role: ports.MessageTool, Content: `{"ok": true}`, ToolCallID: "call_1", Name: "deploy_service"}},
		{Message: ports.Message{Role: ports.MessageAssistant, Content: "Deployed.", ToolCalls: []ports.ToolCall{
			{ID: "call_5", Name: "list_services", Arguments: "{}"},
		}}},
	}
	for i := range msgs {
		msgs[i].ID, msgs[i].SessionID, msgs[i].TurnID = newID(), cs.ID, turn
		msgs[i].CreatedAt = base.Add(time.Duration(i) * time.Second)
	}
	mustAppendMessages(t, s, msgs...)
	checkMessages(t, "ListMessages", mustListMessages(t, s, cs.ID), msgs)
}

func testMessagesOrder(t *testing.T, s assistantStores) {
	owner, cs := newChat(t, s)
	other := mustCreateSession(t, s, newSession(owner))
	var want []ports.ChatMessage
	// Same time, random ids: only the store's record of append order tells.
	for i := range 6 {
		a := newMessage(cs, ports.MessageUser, fmt.Sprintf("message %d", 2*i))
		b := newMessage(cs, ports.MessageAssistant, fmt.Sprintf("message %d", 2*i+1))
		if i%2 == 0 {
			mustAppendMessages(t, s, a, b)
		} else {
			mustAppendMessages(t, s, a)
			mustAppendMessages(t, s, newMessage(other, ports.MessageUser, "elsewhere"))
			mustAppendMessages(t, s, b)
		}
		want = append(want, a, b)
	}
	checkMessages(t, "ListMessages", mustListMessages(t, s, cs.ID), want)
	if n := len(mustListMessages(t, s, other.ID)); n != 3 {
		t.Errorf("ListMessages of the other session = %d messages, want 3", n)
	}
	if n := len(mustListMessages(t, s, newID())); n != 0 {
		t.Errorf("ListMessages of a missing session = %d messages", n)
	}
}

func testMessagesErrors(t *testing.T, s assistantStores) {
	ctx := t.Context()
	_, cs := newChat(t, s)
	first := newMessage(cs, ports.MessageUser, "first")
	mustAppendMessages(t, s, first)
	if err := s.Messages.AppendMessages(ctx); err != nil {
		t.Errorf("AppendMessages of nothing: %v", err)
	}
	missing := newMessage(ports.ChatSession{ID: newID()}, ports.MessageUser, "lost")
	checkErr(t, "AppendMessages to a missing session", s.Messages.AppendMessages(ctx, missing), ports.ErrNotFound)
	dup := newMessage(cs, ports.MessageUser, "again")
	dup.ID = first.ID
	checkErr(t, "AppendMessages with a taken id",
		s.Messages.AppendMessages(ctx, newMessage(cs, ports.MessageUser, "dropped"), dup), ports.ErrConflict)
	checkMessages(t, "ListMessages after failed appends", mustListMessages(t, s, cs.ID), []ports.ChatMessage{first})
}

func testConfirmationRoundTrip(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	checkConfirmation(t, "GetConfirmation", mustGetConfirmation(t, s, owner, c.ID), c)
	bare := newConfirmation(cs)
	bare.Arguments, bare.Summary, bare.TurnID = nil, "", ""
	mustCreateConfirmation(t, s, bare)
	checkConfirmation(t, "GetConfirmation without arguments", mustGetConfirmation(t, s, owner, bare.ID), bare)

	dup := newConfirmation(cs)
	dup.ID = c.ID
	checkErr(t, "CreateConfirmation with a taken id", s.Confirmations.CreateConfirmation(ctx, dup), ports.ErrConflict)
	orphan := newConfirmation(ports.ChatSession{ID: newID(), OrgID: owner.OrgID, UserID: owner.UserID})
	checkErr(t, "CreateConfirmation in a missing session", s.Confirmations.CreateConfirmation(ctx, orphan), ports.ErrNotFound)
	missing := newID()
	_, err := s.Confirmations.GetConfirmation(ctx, owner, missing)
	checkNotFound(t, "GetConfirmation of a missing confirmation", err, "confirmation", missing)
}

func testListConfirmations(t *testing.T, s assistantStores) {
	owner, cs := newChat(t, s)
	other := mustCreateSession(t, s, newSession(owner))
	var want []ports.Confirmation
	for _, minutes := range []int{2, 0, 1} {
		c := newConfirmation(cs)
		c.CreatedAt = base.Add(time.Duration(minutes) * time.Minute)
		want = append(want, mustCreateConfirmation(t, s, c))
	}
	mustCreateConfirmation(t, s, newConfirmation(other))
	want[0] = mustDecide(t, s, owner, want[0].ID, approval(owner.UserID, base.Add(3*time.Minute)))
	slices.SortFunc(want, func(a, b ports.Confirmation) int { return a.CreatedAt.Compare(b.CreatedAt) })
	got, err := s.Confirmations.ListConfirmations(t.Context(), cs.ID)
	if err != nil {
		t.Fatalf("ListConfirmations: %v", err)
	}
	checkConfirmations(t, "ListConfirmations", got, want)
	if got, err := s.Confirmations.ListConfirmations(t.Context(), newID()); err != nil || len(got) != 0 {
		t.Errorf("ListConfirmations of a missing session = %d, %v; want none", len(got), err)
	}
}

func testDecideConfirmation(t *testing.T, s assistantStores) {
	ctx := t.Context()
	for _, status := range []ports.ConfirmationStatus{ports.ConfirmationApproved, ports.ConfirmationRejected} {
		owner, cs := newChat(t, s)
		c := mustCreateConfirmation(t, s, newConfirmation(cs))
		for _, bad := range []ports.ConfirmationStatus{"", ports.ConfirmationPending, ports.ConfirmationExpired, "maybe"} {
			d := approval(owner.UserID, base.Add(time.Minute))
			d.Status = bad
			_, err := s.Confirmations.DecideConfirmation(ctx, owner, c.ID, d)
			checkErr(t, fmt.Sprintf("DecideConfirmation(%q)", bad), err, ports.ErrInvalid)
		}
		d := ports.Decision{Status: status, By: owner.UserID, Reason: "because " + string(status), At: base.Add(5 * time.Minute)}
		got, err := s.Confirmations.DecideConfirmation(ctx, owner, c.ID, d)
		if err != nil {
			t.Fatalf("DecideConfirmation(%s): %v", status, err)
		}
		want := decided(c, d)
		checkConfirmation(t, "DecideConfirmation("+string(status)+")", got, want)
		checkConfirmation(t, "GetConfirmation after DecideConfirmation("+string(status)+")", mustGetConfirmation(t, s, owner, c.ID), want)
		if n := mustGetSession(t, s, owner, cs.ID).PendingConfirmations; n != 0 {
			t.Errorf("PendingConfirmations after DecideConfirmation(%s) = %d", status, n)
		}
	}
}

func testDecideTwice(t *testing.T, s assistantStores) {
	ctx := t.Context()
	reject := func(d ports.Decision) ports.Decision {
		d.Status, d.Reason = ports.ConfirmationRejected, "not now"
		return d
	}
	for _, first := range []ports.Decision{
		approval("", base.Add(time.Minute)),
		reject(approval("", base.Add(time.Minute))),
	} {
		owner, cs := newChat(t, s)
		colleague := seedColleague(t, s.Identity, owner.OrgID)
		c := mustCreateConfirmation(t, s, newConfirmation(cs))
		first.By = owner.UserID
		want := decided(c, first)
		mustDecide(t, s, owner, c.ID, first)
		for _, again := range []ports.Decision{
			approval(colleague.UserID, base.Add(2*time.Minute)),
			reject(approval(colleague.UserID, base.Add(2*time.Minute))),
			approval(colleague.UserID, base.Add(time.Hour)), // after expiry: decided still wins
		} {
			what := fmt.Sprintf("DecideConfirmation(%s) after %s", again.Status, first.Status)
			got, err := s.Confirmations.DecideConfirmation(ctx, owner, c.ID, again)
			checkErr(t, what, err, errAlreadyDecided)
			checkConfirmation(t, what, got, want)
		}
		checkConfirmation(t, "GetConfirmation after deciding twice", mustGetConfirmation(t, s, owner, c.ID), want)
	}
}

func testDecideExpired(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	want := c
	want.Status = ports.ConfirmationExpired
	// At ExpiresAt exactly, it has expired.
	for _, at := range []time.Time{c.ExpiresAt, c.ExpiresAt.Add(time.Minute), c.ExpiresAt.Add(time.Hour), base} {
		got, err := s.Confirmations.DecideConfirmation(ctx, owner, c.ID, approval(owner.UserID, at))
		checkErr(t, "DecideConfirmation after expiry", err, errExpired)
		checkConfirmation(t, "DecideConfirmation after expiry", got, want)
	}
	checkConfirmation(t, "GetConfirmation after expiry", mustGetConfirmation(t, s, owner, c.ID), want)
	if n := mustGetSession(t, s, owner, cs.ID).PendingConfirmations; n != 0 {
		t.Errorf("PendingConfirmations after expiry = %d", n)
	}
}

func testConfirmationOwnerIsolation(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	stranger := seedOwner(t, s.Identity)
	for _, other := range []struct {
		name  string
		owner ports.Owner
	}{
		{"another user of the org", seedColleague(t, s.Identity, owner.OrgID)},
		{"a user of another org", stranger},
		{"the user under another org", ports.Owner{OrgID: stranger.OrgID, UserID: owner.UserID}},
		{"nobody", ports.Owner{}},
	} {
		_, err := s.Confirmations.GetConfirmation(ctx, other.owner, c.ID)
		checkNotFound(t, "GetConfirmation by "+other.name, err, "confirmation", c.ID)
		for _, at := range []time.Time{base.Add(time.Minute), c.ExpiresAt.Add(time.Hour)} {
			_, err := s.Confirmations.DecideConfirmation(ctx, other.owner, c.ID, approval(other.owner.UserID, at))
			checkNotFound(t, "DecideConfirmation by "+other.name, err, "confirmation", c.ID)
		}
	}
	checkConfirmation(t, "GetConfirmation by the owner afterwards", mustGetConfirmation(t, s, owner, c.ID), c)
}

func testExpireConfirmations(t *testing.T, s assistantStores) {
	ctx := t.Context()
	// Far before base, so confirmations of other subtests sharing the store are untouched.
	epoch := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	cutoff := epoch.Add(time.Hour)
	owner, cs := newChat(t, s)
	confirmation := func(expires time.Time) ports.Confirmation {
		c := newConfirmation(cs)
		c.CreatedAt, c.ExpiresAt = epoch, expires
		return mustCreateConfirmation(t, s, c)
	}
	expired := []ports.Confirmation{
		confirmation(cutoff), // expiring at now exactly
		confirmation(cutoff.Add(-time.Millisecond)),
		confirmation(epoch.Add(time.Minute)),
		confirmation(epoch.Add(time.Second)),
	}
	kept := []ports.Confirmation{
		confirmation(cutoff.Add(time.Millisecond)),
		confirmation(cutoff.Add(time.Hour)),
	}
	approved := confirmation(epoch.Add(time.Minute))
	approved = mustDecide(t, s, owner, approved.ID, approval(owner.UserID, epoch.Add(time.Second/2)))

	n, err := s.Confirmations.ExpireConfirmations(ctx, cutoff)
	if err != nil {
		t.Fatalf("ExpireConfirmations: %v", err)
	}
	if n != len(expired) {
		t.Errorf("ExpireConfirmations expired %d confirmations, want %d", n, len(expired))
	}
	for _, c := range expired {
		want := c
		want.Status = ports.ConfirmationExpired
		checkConfirmation(t, "GetConfirmation of an expired confirmation", mustGetConfirmation(t, s, owner, c.ID), want)
	}
	for _, c := range append(kept, approved) {
		checkConfirmation(t, "GetConfirmation of a kept confirmation", mustGetConfirmation(t, s, owner, c.ID), c)
	}
	if n, err := s.Confirmations.ExpireConfirmations(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("ExpireConfirmations again = %d, %v; want 0, nil", n, err)
	}
	got, err := s.Confirmations.DecideConfirmation(ctx, owner, expired[0].ID, approval(owner.UserID, epoch))
	checkErr(t, "DecideConfirmation of a confirmation ExpireConfirmations expired", err, errExpired)
	if got.Status != ports.ConfirmationExpired {
		t.Errorf("DecideConfirmation of an expired confirmation returned status %q", got.Status)
	}
	if n := mustGetSession(t, s, owner, cs.ID).PendingConfirmations; n != len(kept) {
		t.Errorf("PendingConfirmations = %d, want %d", n, len(kept))
	}
}

func testRecordOutcome(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	approved := mustDecide(t, s, owner, c.ID, approval(owner.UserID, base.Add(time.Minute)))
	at := base.Add(2 * time.Minute)
	o := ports.ToolOutcome{OK: true, Result: json.RawMessage(`{"deployment_id": "d-1", "tasks": [1, 2]}`)}
	if err := s.Confirmations.RecordOutcome(ctx, c.ID, o, at); err != nil {
		t.Fatalf("RecordOutcome: %v", err)
	}
	want := approved
	want.Outcome, want.ExecutedAt = &o, &at
	checkConfirmation(t, "GetConfirmation after RecordOutcome", mustGetConfirmation(t, s, owner, c.ID), want)
	checkErr(t, "RecordOutcome twice",
		s.Confirmations.RecordOutcome(ctx, c.ID, ports.ToolOutcome{Error: "ran again"}, at.Add(time.Minute)), ports.ErrConflict)
	checkConfirmation(t, "GetConfirmation after RecordOutcome twice", mustGetConfirmation(t, s, owner, c.ID), want)

	failed := mustCreateConfirmation(t, s, newConfirmation(cs))
	wantFailed := mustDecide(t, s, owner, failed.ID, approval(owner.UserID, base.Add(time.Minute)))
	fo := ports.ToolOutcome{Error: "service api not found"}
	if err := s.Confirmations.RecordOutcome(ctx, failed.ID, fo, at); err != nil {
		t.Fatalf("RecordOutcome of a failure: %v", err)
	}
	wantFailed.Outcome, wantFailed.ExecutedAt = &fo, &at
	checkConfirmation(t, "GetConfirmation after RecordOutcome of a failure", mustGetConfirmation(t, s, owner, failed.ID), wantFailed)

	pending := mustCreateConfirmation(t, s, newConfirmation(cs))
	rejected := mustCreateConfirmation(t, s, newConfirmation(cs))
	reject := approval(owner.UserID, base.Add(time.Minute))
	reject.Status = ports.ConfirmationRejected
	rejected = mustDecide(t, s, owner, rejected.ID, reject)
	for _, x := range []ports.Confirmation{pending, rejected} {
		checkErr(t, "RecordOutcome of a "+string(x.Status)+" confirmation", s.Confirmations.RecordOutcome(ctx, x.ID, o, at), ports.ErrConflict)
		checkConfirmation(t, "GetConfirmation after RecordOutcome of a "+string(x.Status)+" confirmation",
			mustGetConfirmation(t, s, owner, x.ID), x)
	}
	checkErr(t, "RecordOutcome of a missing confirmation", s.Confirmations.RecordOutcome(ctx, newID(), o, at), ports.ErrNotFound)
}

func testRaceDecideConfirmation(t *testing.T, s assistantStores) {
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	const n = 50
	decision := func(i int) ports.Decision {
		d := ports.Decision{Status: ports.ConfirmationApproved, By: owner.UserID, Reason: fmt.Sprintf("decider %d", i), At: base.Add(time.Minute)}
		if i%2 == 1 {
			d.Status = ports.ConfirmationRejected
		}
		return d
	}
	results := make([]ports.Confirmation, n)
	errs := race(n, func(i int) error {
		var err error
		results[i], err = s.Confirmations.DecideConfirmation(t.Context(), owner, c.ID, decision(i))
		return err
	})
	winner, conflicts := -1, 0
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("deciders %d and %d both succeeded", winner, i)
			}
			winner = i
		case errors.Is(err, errAlreadyDecided):
			conflicts++
		default:
			t.Errorf("DecideConfirmation %d: %v, want nil or conflict already_decided", i, err)
		}
	}
	if winner < 0 || conflicts != n-1 {
		t.Fatalf("%d concurrent DecideConfirmation: winner %d, %d conflicts; want one winner and %d conflicts", n, winner, conflicts, n-1)
	}
	want := decided(c, decision(winner))
	checkConfirmation(t, "GetConfirmation after the race", mustGetConfirmation(t, s, owner, c.ID), want)
	for i, got := range results {
		checkConfirmation(t, fmt.Sprintf("DecideConfirmation %d", i), got, want)
	}
}

func testRaceRecordOutcome(t *testing.T, s assistantStores) {
	owner, cs := newChat(t, s)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))
	approved := mustDecide(t, s, owner, c.ID, approval(owner.UserID, base.Add(time.Minute)))
	outcome := func(i int) ports.ToolOutcome {
		return ports.ToolOutcome{OK: true, Result: json.RawMessage(fmt.Sprintf(`{"run":%d}`, i))}
	}
	at := base.Add(2 * time.Minute)
	errs := race(20, func(i int) error { return s.Confirmations.RecordOutcome(t.Context(), c.ID, outcome(i), at) })
	winner := oneWinner(t, "RecordOutcome", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	o := outcome(winner)
	approved.Outcome, approved.ExecutedAt = &o, &at
	checkConfirmation(t, "GetConfirmation after the race", mustGetConfirmation(t, s, owner, c.ID), approved)
}

func testDecideAfterRestart(t *testing.T, s assistantStores) {
	if s.Reopen == nil {
		t.Fatalf("assistantStores.Reopen is nil")
	}
	ctx := t.Context()
	owner, cs := newChat(t, s)
	msg := newMessage(cs, ports.MessageAssistant, "Deploy api:1.2? I need your confirmation.")
	mustAppendMessages(t, s, msg)
	c := mustCreateConfirmation(t, s, newConfirmation(cs))

	restarted := s.Reopen(t)
	want := cs
	want.MessageCount, want.PendingConfirmations = 1, 1
	checkSession(t, "GetSession after the restart", mustGetSession(t, restarted, owner, cs.ID), want)
	checkMessages(t, "ListMessages after the restart", mustListMessages(t, restarted, cs.ID), []ports.ChatMessage{msg})
	d := approval(owner.UserID, base.Add(time.Minute))
	got, err := restarted.Confirmations.DecideConfirmation(ctx, owner, c.ID, d)
	if err != nil {
		t.Fatalf("DecideConfirmation after the restart: %v", err)
	}
	checkConfirmation(t, "DecideConfirmation after the restart", got, decided(c, d))
	for name, stores := range map[string]assistantStores{"the old stores": s, "the new stores": restarted} {
		_, err := stores.Confirmations.DecideConfirmation(ctx, owner, c.ID, approval(owner.UserID, base.Add(2*time.Minute)))
		checkErr(t, "DecideConfirmation again through "+name, err, errAlreadyDecided)
		checkConfirmation(t, "GetConfirmation through "+name, mustGetConfirmation(t, stores, owner, c.ID), decided(c, d))
	}
}

func testEvents(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	other := mustCreateSession(t, s, newSession(owner))
	if seq := mustLastEventSeq(t, s, cs.ID); seq != 0 {
		t.Errorf("LastEventSeq of a session without events = %d", seq)
	}
	if events := mustListEvents(t, s, cs.ID, 0, 10); len(events) != 0 {
		t.Errorf("ListEvents of a session without events = %d events", len(events))
	}
	var want []ports.StreamEvent
	for seq := int64(1); seq <= 7; seq++ {
		want = append(want, newEvent(cs.ID, seq))
	}
	want[5].Name, want[5].Data = "tool_call", nil
	want[6].Name, want[6].Data = "done", json.RawMessage(`{"finish_reason": "stop", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}`)
	for _, batch := range [][]ports.StreamEvent{
		{want[2], want[0], want[1]},
		{newEvent(other.ID, 1), newEvent(other.ID, 9)},
		{want[3]},
		{want[4], want[5], want[6]},
	} {
		if err := s.Events.AppendEvents(ctx, batch...); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
	}
	for _, tc := range []struct {
		after int64
		limit int
		want  []ports.StreamEvent
	}{
		{0, 100, want},
		{3, 100, want[3:]},
		{0, 2, want[:2]},
		{2, 3, want[2:5]},
		{6, 1, want[6:]},
		{7, 100, nil},
		{100, 100, nil},
	} {
		got := mustListEvents(t, s, cs.ID, tc.after, tc.limit)
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		checkEvents(t, fmt.Sprintf("ListEvents(after %d, limit %d)", tc.after, tc.limit), got, tc.want)
	}
	if seq := mustLastEventSeq(t, s, cs.ID); seq != 7 {
		t.Errorf("LastEventSeq = %d, want 7", seq)
	}
	if seq := mustLastEventSeq(t, s, other.ID); seq != 9 {
		t.Errorf("LastEventSeq of the other session = %d, want 9", seq)
	}
	if seq := mustLastEventSeq(t, s, newID()); seq != 0 {
		t.Errorf("LastEventSeq of a missing session = %d, want 0", seq)
	}
}

func testEventsErrors(t *testing.T, s assistantStores) {
	ctx := t.Context()
	_, cs := newChat(t, s)
	stored := []ports.StreamEvent{newEvent(cs.ID, 1), newEvent(cs.ID, 2)}
	if err := s.Events.AppendEvents(ctx, stored...); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	if err := s.Events.AppendEvents(ctx); err != nil {
		t.Errorf("AppendEvents of nothing: %v", err)
	}
	checkErr(t, "AppendEvents with a taken seq", s.Events.AppendEvents(ctx, newEvent(cs.ID, 2)), ports.ErrConflict)
	checkErr(t, "AppendEvents of a batch with a taken seq",
		s.Events.AppendEvents(ctx, newEvent(cs.ID, 3), newEvent(cs.ID, 1)), ports.ErrConflict)
	checkErr(t, "AppendEvents of a batch repeating a seq",
		s.Events.AppendEvents(ctx, newEvent(cs.ID, 4), newEvent(cs.ID, 4)), ports.ErrConflict)
	checkErr(t, "AppendEvents to a missing session", s.Events.AppendEvents(ctx, newEvent(newID(), 1)), ports.ErrNotFound)
	checkEvents(t, "ListEvents after failed appends", mustListEvents(t, s, cs.ID, 0, 100), stored)
	if seq := mustLastEventSeq(t, s, cs.ID); seq != 2 {
		t.Errorf("LastEventSeq after failed appends = %d, want 2", seq)
	}
}

// testEventsText appends events whose names and data hold what SQL, array
// or JSON syntax might trip on, with times in another zone and below the
// microsecond, and reads them back byte for byte (times to the
// microsecond, in UTC).
func testEventsText(t *testing.T, s assistantStores) {
	_, cs := newChat(t, s)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	texts := []string{
		`{"delta":"say \"hi\", then \\ and \\\"; {a,b} NULL 'q' (x) ë 日本 \u0000 \ud83d\ude00 \n"}`,
		`{"delta":"NULL"}`,
		`{"delta":""}`,
		`"just a string"`,
		`{"a":{"b":[1,2,{"c":null}]},"d":"}{,\""}`,
	}
	var want []ports.StreamEvent
	for i, d := range texts {
		want = append(want, ports.StreamEvent{
			SessionID: cs.ID, Seq: int64(i + 1), TurnID: `turn "1", {x}`, Name: `name\with"quotes`,
			Data:      json.RawMessage(d),
			CreatedAt: base.In(zone).Add(time.Duration(i)*time.Second + 1234567*time.Nanosecond),
		})
	}
	want = append(want, ports.StreamEvent{SessionID: cs.ID, Seq: int64(len(texts) + 1), TurnID: "t", Name: "none", CreatedAt: base})
	mustAppendEvents(t, s, want...)
	got := mustListEvents(t, s, cs.ID, 0, 100)
	if len(got) != len(want) {
		t.Fatalf("ListEvents: %d events, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.SessionID != w.SessionID || g.Seq != w.Seq || g.TurnID != w.TurnID || g.Name != w.Name {
			t.Errorf("event %d: %+v, want %+v", i, g, w)
		}
		if string(g.Data) != string(w.Data) {
			t.Errorf("event %d data %q, want %q", i, g.Data, w.Data)
		}
		if wt := w.CreatedAt.UTC().Truncate(time.Microsecond); !g.CreatedAt.Equal(wt) || g.CreatedAt.Location() != time.UTC {
			t.Errorf("event %d created_at %v, want %v", i, g.CreatedAt, wt)
		}
	}
}

// testEventsBigBatch appends more events in one call than one SQL statement
// of either database takes, and lists them with a limit above the maximum.
func testEventsBigBatch(t *testing.T, s assistantStores) {
	_, cs := newChat(t, s)
	const n = 6000
	events := make([]ports.StreamEvent, n)
	for i := range events {
		events[i] = newEvent(cs.ID, int64(i+1))
	}
	if err := s.Events.AppendEvents(t.Context(), events...); err != nil {
		t.Fatalf("AppendEvents of %d events: %v", n, err)
	}
	if seq := mustLastEventSeq(t, s, cs.ID); seq != n {
		t.Errorf("LastEventSeq = %d, want %d", seq, n)
	}
	got := mustListEvents(t, s, cs.ID, 4500, n)
	if len(got) != 1000 || got[0].Seq != 4501 || got[len(got)-1].Seq != 5500 {
		t.Errorf("ListEvents(after 4500, limit %d) = %d events; want 1000, seq 4501 to 5500", n, len(got))
	}
}

func testTurns(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	other := mustCreateSession(t, s, newSession(owner))
	longAgo := base.Add(-time.Hour)
	_, err := s.Turns.RunningTurn(ctx, cs.ID)
	checkErr(t, "RunningTurn of a new session", err, ports.ErrNotFound)

	first := newTurn(cs.ID, base)
	if err := s.Turns.StartTurn(ctx, first, longAgo, 0); err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	running := func(sessionID string) ports.Turn {
		t.Helper()
		tu, err := s.Turns.RunningTurn(ctx, sessionID)
		if err != nil {
			t.Fatalf("RunningTurn: %v", err)
		}
		return tu
	}
	checkTurn(t, "RunningTurn", running(cs.ID), first)

	second := newTurn(cs.ID, base.Add(time.Minute))
	checkErr(t, "StartTurn while a turn runs", s.Turns.StartTurn(ctx, second, longAgo, 0), ports.ErrConflict)
	checkErr(t, "StartTurn while a turn started at staleBefore runs", s.Turns.StartTurn(ctx, second, first.StartedAt, 0), ports.ErrConflict)
	checkErr(t, "StartTurn with a zero staleBefore while a turn runs", s.Turns.StartTurn(ctx, second, time.Time{}, 0), ports.ErrConflict)
	checkTurn(t, "RunningTurn after a conflict", running(cs.ID), first)

	elsewhere := newTurn(other.ID, base)
	if err := s.Turns.StartTurn(ctx, elsewhere, longAgo, 0); err != nil {
		t.Fatalf("StartTurn in another session while a turn runs: %v", err)
	}

	if err := s.Turns.EndTurn(ctx, first.ID, base.Add(2*time.Minute)); err != nil {
		t.Fatalf("EndTurn: %v", err)
	}
	_, err = s.Turns.RunningTurn(ctx, cs.ID)
	checkErr(t, "RunningTurn after EndTurn", err, ports.ErrNotFound)
	updated := func(id string) time.Time { return ms(mustGetSession(t, s, owner, id).UpdatedAt) }
	if got, want := updated(cs.ID), ms(base.Add(2*time.Minute)); !got.Equal(want) {
		t.Errorf("session updated at %v after EndTurn, want the turn's end %v", got, want)
	}
	if err := s.Turns.EndTurn(ctx, first.ID, base.Add(time.Hour)); err != nil {
		t.Errorf("EndTurn of an ended turn: %v", err)
	}
	if got, want := updated(cs.ID), ms(base.Add(2*time.Minute)); !got.Equal(want) {
		t.Errorf("session updated at %v after ending an ended turn, want %v still", got, want)
	}
	if got, want := updated(other.ID), ms(base); !got.Equal(want) {
		t.Errorf("the other session updated at %v after EndTurn, want %v", got, want)
	}
	second.StartedAt = base.Add(3 * time.Minute)
	if err := s.Turns.StartTurn(ctx, second, longAgo, 0); err != nil {
		t.Fatalf("StartTurn after EndTurn: %v", err)
	}
	checkTurn(t, "RunningTurn after EndTurn and StartTurn", running(cs.ID), second)
	checkTurn(t, "RunningTurn of the other session", running(other.ID), elsewhere)

	checkErr(t, "EndTurn of a missing turn", s.Turns.EndTurn(ctx, newID(), base), ports.ErrNotFound)
	checkErr(t, "StartTurn in a missing session", s.Turns.StartTurn(ctx, newTurn(newID(), base), longAgo, 0), ports.ErrNotFound)
}

// A running turn records that it is alive and learns of a stop request in
// the same call; one last alive long ago is found and ended as lost.
func testTurnLeases(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	_, idle := newChat(t, s)
	turn := newTurn(cs.ID, base)
	if err := s.Turns.StartTurn(ctx, turn, time.Time{}, 0); err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	checkRunningTurn(t, s, "a new turn is alive at its start", cs.ID, turn)

	beat, err := s.Turns.HeartbeatTurn(ctx, turn.ID, base.Add(time.Minute))
	if err != nil {
		t.Fatalf("HeartbeatTurn: %v", err)
	}
	want := turn
	want.AliveAt = base.Add(time.Minute)
	checkTurn(t, "HeartbeatTurn", beat, want)
	checkRunningTurn(t, s, "RunningTurn after a heartbeat", cs.ID, want)
	_, err = s.Turns.HeartbeatTurn(ctx, newID(), base)
	checkErr(t, "HeartbeatTurn of a missing turn", err, ports.ErrNotFound)

	_, err = s.Turns.RequestStop(ctx, idle.ID, base)
	checkErr(t, "RequestStop with no turn running", err, ports.ErrNotFound)
	stopAt := base.Add(2 * time.Minute)
	got, err := s.Turns.RequestStop(ctx, cs.ID, stopAt)
	if err != nil {
		t.Fatalf("RequestStop: %v", err)
	}
	want.StopRequestedAt = &stopAt
	checkTurn(t, "RequestStop", got, want)
	if got, err = s.Turns.RequestStop(ctx, cs.ID, base.Add(3*time.Minute)); err != nil {
		t.Fatalf("RequestStop again: %v", err)
	}
	checkTurn(t, "RequestStop again keeps the first time", got, want)
	if beat, err = s.Turns.HeartbeatTurn(ctx, turn.ID, base.Add(4*time.Minute)); err != nil {
		t.Fatalf("HeartbeatTurn: %v", err)
	}
	want.AliveAt = base.Add(4 * time.Minute)
	checkTurn(t, "HeartbeatTurn after a stop request", beat, want)

	lost := func(before time.Time) bool {
		t.Helper()
		turns, err := s.Turns.LostTurns(ctx, before, 1000)
		if err != nil {
			t.Fatalf("LostTurns: %v", err)
		}
		return slices.ContainsFunc(turns, func(tu ports.Turn) bool { return tu.ID == turn.ID })
	}
	if lost(base.Add(4 * time.Minute)) {
		t.Error("LostTurns holds a turn alive at aliveBefore")
	}
	if !lost(base.Add(5 * time.Minute)) {
		t.Error("LostTurns misses a turn last alive before aliveBefore")
	}
	if ended, err := s.Turns.EndLostTurn(ctx, turn.ID, base.Add(4*time.Minute), base.Add(9*time.Minute)); err != nil || ended {
		t.Fatalf("EndLostTurn of a turn alive at aliveBefore: %v, %v; want false", ended, err)
	}
	if ended, err := s.Turns.EndLostTurn(ctx, turn.ID, base.Add(5*time.Minute), base.Add(10*time.Minute)); err != nil || !ended {
		t.Fatalf("EndLostTurn: %v, %v; want true", ended, err)
	}
	_, err = s.Turns.RunningTurn(ctx, cs.ID)
	checkErr(t, "RunningTurn after EndLostTurn", err, ports.ErrNotFound)
	if got, want := ms(mustGetSession(t, s, owner, cs.ID).UpdatedAt), ms(base.Add(10*time.Minute)); !got.Equal(want) {
		t.Errorf("session updated at %v after EndLostTurn, want %v", got, want)
	}
	if lost(base.Add(time.Hour)) {
		t.Error("LostTurns holds an ended turn")
	}
	if ended, err := s.Turns.EndLostTurn(ctx, turn.ID, base.Add(time.Hour), base.Add(time.Hour)); err != nil || ended {
		t.Errorf("EndLostTurn of an ended turn: %v, %v; want false", ended, err)
	}
	if beat, err = s.Turns.HeartbeatTurn(ctx, turn.ID, base.Add(11*time.Minute)); err != nil {
		t.Fatalf("HeartbeatTurn of an ended turn: %v", err)
	}
	end := base.Add(10 * time.Minute)
	want.EndedAt = &end
	checkTurn(t, "HeartbeatTurn of an ended turn tells it ended and changes nothing", beat, want)
}

// Of concurrent EndLostTurn calls, exactly one ends the turn.
func testRaceEndLostTurn(t *testing.T, s assistantStores) {
	_, cs := newChat(t, s)
	turn := newTurn(cs.ID, base)
	if err := s.Turns.StartTurn(t.Context(), turn, time.Time{}, 0); err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ended, err := s.Turns.EndLostTurn(t.Context(), turn.ID, base.Add(time.Minute), base.Add(time.Hour))
			if err != nil {
				t.Errorf("EndLostTurn: %v", err)
			}
			if ended {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Errorf("%d concurrent EndLostTurn calls ended the turn, want 1", n)
	}
}

func testStaleTurn(t *testing.T, s assistantStores) {
	ctx := t.Context()
	_, cs := newChat(t, s)
	dead := newTurn(cs.ID, base)
	if err := s.Turns.StartTurn(ctx, dead, base.Add(-time.Hour), 0); err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	next := newTurn(cs.ID, base.Add(10*time.Minute))
	if err := s.Turns.StartTurn(ctx, next, base.Add(5*time.Minute), 0); err != nil {
		t.Fatalf("StartTurn over a stale turn: %v", err)
	}
	checkRunningTurn(t, s, "RunningTurn after taking over", cs.ID, next)
	if err := s.Turns.EndTurn(ctx, next.ID, base.Add(11*time.Minute)); err != nil {
		t.Fatalf("EndTurn: %v", err)
	}
	_, err := s.Turns.RunningTurn(ctx, cs.ID)
	checkErr(t, "RunningTurn after ending the new turn (the stale one must be ended)", err, ports.ErrNotFound)
	if err := s.Turns.EndTurn(ctx, dead.ID, base.Add(12*time.Minute)); err != nil {
		t.Errorf("EndTurn of the stale turn when its process comes back: %v", err)
	}
}

func testRaceStartTurn(t *testing.T, s assistantStores) {
	_, cs := newChat(t, s)
	turns := make([]ports.Turn, 20)
	for i := range turns {
		turns[i] = newTurn(cs.ID, base)
	}
	errs := race(len(turns), func(i int) error {
		return s.Turns.StartTurn(t.Context(), turns[i], base.Add(-time.Hour), 0)
	})
	winner := oneWinner(t, "StartTurn", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	checkRunningTurn(t, s, "RunningTurn after the race", cs.ID, turns[winner])
}

// checkRunningTurn fails the test unless want is the session's running
// turn.
func checkRunningTurn(t *testing.T, s assistantStores, what, sessionID string, want ports.Turn) {
	t.Helper()
	got, err := s.Turns.RunningTurn(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("%s: RunningTurn: %v", what, err)
	}
	checkTurn(t, what, got, want)
}

// continueTurn is a turn of cs starting at at, with the user's message.
func continueTurn(cs ports.ChatSession, at time.Time, content string) (ports.Turn, ports.ChatMessage) {
	turn := newTurn(cs.ID, at)
	msg := newMessage(cs, ports.MessageUser, content)
	msg.TurnID, msg.CreatedAt = turn.ID, at
	return turn, msg
}

// checkState fails t unless st holds the messages, last event seq and
// confirmations want does (by id).
func checkState(t *testing.T, what string, st, want ports.SessionState) {
	t.Helper()
	ids := func(st ports.SessionState) (msgs, confs []string) {
		for _, m := range st.Messages {
			msgs = append(msgs, m.ID)
		}
		for _, c := range st.Confirmations {
			confs = append(confs, c.ID)
		}
		return msgs, confs
	}
	gotMsgs, gotConfs := ids(st)
	wantMsgs, wantConfs := ids(want)
	if !slices.Equal(gotMsgs, wantMsgs) || st.LastEventSeq != want.LastEventSeq || !slices.Equal(gotConfs, wantConfs) {
		t.Errorf("%s: messages %v, last event %d, confirmations %v; want %v, %d, %v",
			what, gotMsgs, st.LastEventSeq, gotConfs, wantMsgs, want.LastEventSeq, wantConfs)
	}
}

// readState reads a session back as ContinueSession returns it.
func readState(t *testing.T, s assistantStores, sessionID string) ports.SessionState {
	t.Helper()
	ctx := t.Context()
	msgs, err := s.Messages.ListMessages(ctx, sessionID)
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	last, err := s.Events.LastEventSeq(ctx, sessionID)
	if err != nil {
		t.Fatalf("LastEventSeq: %v", err)
	}
	confs, err := s.Confirmations.ListConfirmations(ctx, sessionID)
	if err != nil {
		t.Fatalf("ListConfirmations: %v", err)
	}
	return ports.SessionState{Messages: msgs, LastEventSeq: last, Confirmations: confs}
}

// ContinueSession starts a turn in the owner's session with its message and
// the session's activity, or nothing, and returns the session then; it
// takes a stale turn over, and refuses a running one, another owner's
// session and a reused id.
func testContinueSession(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	continueSession := func(o ports.Owner, tr ports.Turn, m ports.ChatMessage, staleBefore time.Time) error {
		_, err := s.Sessions.ContinueSession(ctx, o, tr, m, staleBefore, 0)
		return err
	}
	checkMessages := func(what string, want ...ports.ChatMessage) {
		t.Helper()
		msgs, err := s.Messages.ListMessages(ctx, cs.ID)
		if err != nil || len(msgs) != len(want) {
			t.Fatalf("%s: %d messages (%v), want %d", what, len(msgs), err, len(want))
		}
		for i, m := range msgs {
			if m.ID != want[i].ID || m.TurnID != want[i].TurnID || m.Role != ports.MessageUser || m.Content != want[i].Content {
				t.Errorf("%s: message %d = %+v, want %+v", what, i, m, want[i])
			}
		}
	}
	checkRunning := func(what string, want *ports.Turn) {
		t.Helper()
		if want == nil {
			_, err := s.Turns.RunningTurn(ctx, cs.ID)
			checkErr(t, what, err, ports.ErrNotFound)
			return
		}
		checkRunningTurn(t, s, what, cs.ID, *want)
	}
	checkUpdated := func(what string, want time.Time) {
		t.Helper()
		if got := mustGetSession(t, s, owner, cs.ID); !ms(got.UpdatedAt).Equal(ms(want)) {
			t.Errorf("%s: updated at %v, want %v", what, got.UpdatedAt, want)
		}
	}

	at := base.Add(time.Minute)
	later := at.Add(time.Minute)
	// Another owner's or an unknown session, with or without a turn running.
	refuseStrangers := func(what string) {
		t.Helper()
		for _, other := range []ports.Owner{{OrgID: owner.OrgID, UserID: newID()}, {OrgID: newID(), UserID: owner.UserID}} {
			refused, m := continueTurn(cs, later, "not yours")
			checkErr(t, "ContinueSession of another owner's session "+what, continueSession(other, refused, m, later), ports.ErrNotFound)
		}
		refused, m := continueTurn(newSession(owner), later, "nowhere")
		checkErr(t, "ContinueSession of an unknown session "+what, continueSession(owner, refused, m, later), ports.ErrNotFound)
	}
	refuseStrangers("(no turn running)")
	checkRunning("after refusing strangers", nil)
	checkMessages("after refusing strangers")
	checkUpdated("after refusing strangers", base)

	// What an earlier turn left: events and a confirmation.
	mustAppendEvents(t, s, newEvent(cs.ID, 1), newEvent(cs.ID, 2), newEvent(cs.ID, 3))
	conf := mustCreateConfirmation(t, s, newConfirmation(cs))

	first, m1 := continueTurn(cs, at, "deploy the api")
	st, err := s.Sessions.ContinueSession(ctx, owner, first, m1, at.Add(-time.Hour), 0)
	if err != nil {
		t.Fatalf("ContinueSession: %v", err)
	}
	checkState(t, "what ContinueSession returns", st, ports.SessionState{
		Messages: []ports.ChatMessage{m1}, LastEventSeq: 3, Confirmations: []ports.Confirmation{conf}})
	if m := st.Messages[len(st.Messages)-1]; m.Content != m1.Content || m.Role != m1.Role || m.TurnID != first.ID {
		t.Errorf("ContinueSession returned message %+v, want %+v", m, m1)
	}
	checkRunning("the continued turn", &first)
	checkMessages("after ContinueSession", m1)
	checkUpdated("after ContinueSession", at)

	refused, m := continueTurn(cs, later, "again")
	checkErr(t, "ContinueSession while a turn runs", continueSession(owner, refused, m, at.Add(-time.Hour)), ports.ErrConflict)
	refuseStrangers("(a turn running)")
	checkRunning("after the refusals", &first)
	checkMessages("after the refusals", m1)
	checkUpdated("after the refusals", at)

	// first started before staleBefore: it is taken over (and ended).
	takeover, m2 := continueTurn(cs, later, "take over")
	mustAppendEvents(t, s, newEvent(cs.ID, 4)) // the stale turn's
	st, err = s.Sessions.ContinueSession(ctx, owner, takeover, m2, at.Add(time.Second), 0)
	if err != nil {
		t.Fatalf("ContinueSession over a stale turn: %v", err)
	}
	checkState(t, "what ContinueSession over a stale turn returns", st, ports.SessionState{
		Messages: []ports.ChatMessage{m1, m2}, LastEventSeq: 4, Confirmations: []ports.Confirmation{conf}})
	checkRunning("after taking over", &takeover)
	checkMessages("after taking over", m1, m2)
	checkUpdated("after taking over", later)
	if err := s.Turns.EndTurn(ctx, takeover.ID, later.Add(time.Second)); err != nil {
		t.Fatalf("EndTurn: %v", err)
	}
	checkRunning("after ending the new turn (the stale one must be ended)", nil)

	// An id that exists already: nothing is stored.
	last := later.Add(time.Minute)
	dup, m := continueTurn(cs, last, "same turn id")
	dup.ID, m.TurnID = takeover.ID, takeover.ID
	checkErr(t, "ContinueSession reusing a turn id", continueSession(owner, dup, m, last), ports.ErrConflict)
	dup, m = continueTurn(cs, last, "same message id")
	m.ID = m2.ID
	checkErr(t, "ContinueSession reusing a message id", continueSession(owner, dup, m, last), ports.ErrConflict)
	checkRunning("after the reused ids", nil)
	checkMessages("after the reused ids", m1, m2)
	checkUpdated("after the reused ids", later.Add(time.Second)) // takeover's end
}

// Of 20 concurrent ContinueSession calls in one session, one starts its
// turn and the others are conflicts that store nothing.
func testRaceContinueSession(t *testing.T, s assistantStores) {
	owner, cs := newChat(t, s)
	turns := make([]ports.Turn, 20)
	msgs := make([]ports.ChatMessage, len(turns))
	for i := range turns {
		turns[i], msgs[i] = continueTurn(cs, base.Add(time.Minute), fmt.Sprintf("message %d", i))
	}
	errs := race(len(turns), func(i int) error {
		_, err := s.Sessions.ContinueSession(t.Context(), owner, turns[i], msgs[i], base.Add(-time.Hour), 0)
		return err
	})
	winner := oneWinner(t, "ContinueSession", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	checkRunningTurn(t, s, "RunningTurn after the race", cs.ID, turns[winner])
	stored, err := s.Messages.ListMessages(t.Context(), cs.ID)
	if err != nil || len(stored) != 1 || stored[0].ID != msgs[winner].ID {
		t.Fatalf("messages after the race: %+v, %v; want only the winner's", stored, err)
	}
}

// What ContinueSession returns is the session as it stands once its turn
// started, even when the turn before it stores its last events, message
// and confirmation and ends (in one transaction, so a read from before it
// misses them) while the call is under way: round after round, one turn
// winds up while the next chat tries to start until it can, and what it
// started from is compared with the session read back while its turn runs
// (when nothing else writes to it).
func testContinueSessionAsATurnEnds(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner, cs := newChat(t, s)
	at := base.Add(time.Minute)
	never := base.Add(-time.Hour) // no turn is stale
	running, m := continueTurn(cs, at, "round 0")
	if _, err := s.Sessions.ContinueSession(ctx, owner, running, m, never, 0); err != nil {
		t.Fatalf("ContinueSession: %v", err)
	}
	var seq int64
	for round := 1; round <= 30; round++ {
		var next ports.Turn
		var st ports.SessionState
		var wg sync.WaitGroup
		wg.Go(func() { // the running turn winds up, all at once
			evs := []ports.StreamEvent{newEvent(cs.ID, seq+1), newEvent(cs.ID, seq+2)}
			seq += 2
			answer := newMessage(cs, ports.MessageAssistant, fmt.Sprintf("answer %d", round))
			answer.TurnID = running.ID
			c := newConfirmation(cs)
			c.TurnID = running.ID
			err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
				if err := s.Events.AppendEvents(ctx, evs...); err != nil {
					return err
				}
				if err := s.Messages.AppendMessages(ctx, answer); err != nil {
					return err
				}
				if round > 15 { // the first rounds have none
					if err := s.Confirmations.CreateConfirmation(ctx, c); err != nil {
						return err
					}
				}
				return s.Turns.EndTurn(ctx, running.ID, at)
			})
			if err != nil {
				t.Errorf("winding the turn up: %v", err)
			}
		})
		wg.Go(func() { // the next chat tries until the session is free
			for start := time.Now(); time.Since(start) < 20*time.Second; {
				tr, msg := continueTurn(cs, at, fmt.Sprintf("round %d", round))
				var err error
				st, err = s.Sessions.ContinueSession(ctx, owner, tr, msg, never, 0)
				if errors.Is(err, ports.ErrConflict) {
					continue
				}
				if err != nil {
					t.Errorf("ContinueSession: %v", err)
				}
				next = tr
				return
			}
			t.Errorf("round %d: the session is not free after 20s", round)
		})
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		checkState(t, fmt.Sprintf("round %d: what ContinueSession returned", round), st, readState(t, s, cs.ID))
		running = next
	}
}

// A session deleted while a chat starts in it: either the delete wins and
// the chat finds no session, or the chat's turn starts and the delete is
// refused, round after round; never both, never a turn in a deleted
// session.
func testRaceDeleteSession(t *testing.T, s assistantStores) {
	ctx := t.Context()
	at := base.Add(time.Minute)
	for round := range 20 {
		owner, cs := newChat(t, s)
		turn, msg := continueTurn(cs, at, fmt.Sprintf("round %d", round))
		var continued, deleted error
		var wg sync.WaitGroup
		wg.Go(func() { _, continued = s.Sessions.ContinueSession(ctx, owner, turn, msg, base, 0) })
		wg.Go(func() { deleted = s.Sessions.DeleteSession(ctx, owner, cs.ID, base) })
		wg.Wait()
		switch {
		case continued == nil && errors.Is(deleted, ports.ErrConflict):
			checkRunningTurn(t, s, fmt.Sprintf("round %d: the chat won", round), cs.ID, turn)
		case deleted == nil && errors.Is(continued, ports.ErrNotFound):
			_, err := s.Sessions.GetSession(ctx, owner, cs.ID)
			checkErr(t, fmt.Sprintf("round %d: the delete won", round), err, ports.ErrNotFound)
			_, err = s.Turns.RunningTurn(ctx, cs.ID)
			checkErr(t, fmt.Sprintf("round %d: the delete won, running turn", round), err, ports.ErrNotFound)
		default:
			t.Fatalf("round %d: ContinueSession: %v; DeleteSession: %v", round, continued, deleted)
		}
	}
}

func getPreferences(t *testing.T, s assistantStores, owner ports.Owner) ([]ports.Preference, *time.Time) {
	t.Helper()
	prefs, at, err := s.Preferences.GetPreferences(t.Context(), owner)
	if err != nil {
		t.Fatalf("GetPreferences: %v", err)
	}
	checkUTC(t, "GetPreferences", at)
	for i, p := range prefs {
		checkUTC(t, "GetPreferences", &p.CreatedAt)
		prefs[i].CreatedAt = ms(p.CreatedAt)
	}
	return prefs, msPtr(at)
}

func checkPreferences(t *testing.T, what string, s assistantStores, owner ports.Owner, want []ports.Preference, wantAt *time.Time) {
	t.Helper()
	got, at := getPreferences(t, s, owner)
	if len(got) != 0 || len(want) != 0 {
		norm := make([]ports.Preference, len(want))
		for i, p := range want {
			p.CreatedAt = ms(p.CreatedAt)
			norm[i] = p
		}
		checkEqual(t, what, got, norm)
	}
	checkEqual(t, what+" updated at", at, msPtr(wantAt))
}

func replacePreferences(t *testing.T, s assistantStores, owner ports.Owner, prefs []ports.Preference, at time.Time) {
	t.Helper()
	if err := s.Preferences.ReplacePreferences(t.Context(), owner, prefs, at); err != nil {
		t.Fatalf("ReplacePreferences: %v", err)
	}
}

func newPreference(instruction string, created time.Time) ports.Preference {
	return ports.Preference{ID: newID(), Instruction: instruction, CreatedAt: created}
}

func testPreferences(t *testing.T, s assistantStores) {
	owner := seedOwner(t, s.Identity)
	checkPreferences(t, "GetPreferences before any", s, owner, nil, nil)
	prefs := []ports.Preference{
		newPreference("Answer in British English.", base),
		newPreference("Never deploy on Fridays; ask first — always ✓", base.Add(-time.Hour)),
		newPreference("Keep answers short.", base.Add(time.Hour)),
	}
	at := base.Add(time.Minute)
	replacePreferences(t, s, owner, prefs, at)
	checkPreferences(t, "GetPreferences", s, owner, prefs, &at)

	replaced := []ports.Preference{newPreference("Use metric units.", base.Add(2*time.Minute)), prefs[2], prefs[0]}
	at = base.Add(2 * time.Minute)
	replacePreferences(t, s, owner, replaced, at)
	checkPreferences(t, "GetPreferences after replacing", s, owner, replaced, &at)

	at = base.Add(3 * time.Minute)
	replacePreferences(t, s, owner, nil, at)
	checkPreferences(t, "GetPreferences after replacing with none", s, owner, nil, &at)
}

func testPreferencesOwnerIsolation(t *testing.T, s assistantStores) {
	owner := seedOwner(t, s.Identity)
	colleague := seedColleague(t, s.Identity, owner.OrgID)
	stranger := seedOwner(t, s.Identity)
	mine := []ports.Preference{newPreference("Answer in French.", base)}
	at := base.Add(time.Minute)
	replacePreferences(t, s, owner, mine, at)
	for name, other := range map[string]ports.Owner{
		"another user of the org":    colleague,
		"a user of another org":      stranger,
		"the user under another org": {OrgID: stranger.OrgID, UserID: owner.UserID},
	} {
		checkPreferences(t, "GetPreferences of "+name, s, other, nil, nil)
	}
	theirs := []ports.Preference{newPreference("Answer in German.", base)}
	replacePreferences(t, s, colleague, theirs, base.Add(time.Hour))
	checkPreferences(t, "GetPreferences of the owner after a colleague's replace", s, owner, mine, &at)
	later := base.Add(time.Hour)
	checkPreferences(t, "GetPreferences of the colleague", s, colleague, theirs, &later)
}

// testAssistantTxJoins calls every method inside one transaction, checks that
// the reads see the transaction's writes, and that a rollback undoes them.
func testAssistantTxJoins(t *testing.T, s assistantStores) {
	// A method writing outside the transaction may wait for it forever on a
	// single-writer database: bound the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	owner := seedOwner(t, s.Identity)
	cs, gone := newSession(owner), newSession(owner)
	msg := newMessage(cs, ports.MessageUser, "deploy")
	c := newConfirmation(cs)
	ev := newEvent(cs.ID, 1)
	turn := newTurn(cs.ID, base)
	prefs := []ports.Preference{newPreference("Be brief.", base)}
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var failed error
		step := func(what string, err error) bool {
			if err != nil && failed == nil {
				t.Errorf("%s inside the transaction: %v", what, err)
				failed = err
			}
			return failed == nil
		}
		_ = step("CreateSession", s.Sessions.CreateSession(ctx, cs)) &&
			step("CreateSession", s.Sessions.CreateSession(ctx, gone)) &&
			step("DeleteSession", s.Sessions.DeleteSession(ctx, owner, gone.ID, base)) &&
			step("SetSessionTitle", s.Sessions.SetSessionTitle(ctx, owner, cs.ID, "Deploying", base.Add(time.Minute))) &&
			step("TouchSession", s.Sessions.TouchSession(ctx, cs.ID, base.Add(2*time.Minute))) &&
			step("AppendMessages", s.Messages.AppendMessages(ctx, msg)) &&
			step("CreateConfirmation", s.Confirmations.CreateConfirmation(ctx, c)) &&
			step("AppendEvents", s.Events.AppendEvents(ctx, ev)) &&
			step("StartTurn", s.Turns.StartTurn(ctx, turn, base.Add(-time.Hour), 0)) &&
			step("ReplacePreferences", s.Preferences.ReplacePreferences(ctx, owner, prefs, base))
		if failed != nil {
			return failed
		}
		got, err := s.Sessions.GetSession(ctx, owner, cs.ID)
		if step("GetSession", err) && (got.Title != "Deploying" || got.MessageCount != 1 || got.PendingConfirmations != 1) {
			t.Errorf("GetSession inside the transaction = %+v, want its writes", got)
		}
		list, _, err := s.Sessions.ListSessions(ctx, owner, ports.Page{})
		if step("ListSessions", err) && len(list) != 1 {
			t.Errorf("ListSessions inside the transaction = %d sessions, want 1", len(list))
		}
		msgs, err := s.Messages.ListMessages(ctx, cs.ID)
		if step("ListMessages", err) && len(msgs) != 1 {
			t.Errorf("ListMessages inside the transaction = %d messages, want 1", len(msgs))
		}
		_, err = s.Confirmations.GetConfirmation(ctx, owner, c.ID)
		step("GetConfirmation", err)
		confs, err := s.Confirmations.ListConfirmations(ctx, cs.ID)
		if step("ListConfirmations", err) && len(confs) != 1 {
			t.Errorf("ListConfirmations inside the transaction = %d, want 1", len(confs))
		}
		_, err = s.Confirmations.DecideConfirmation(ctx, owner, c.ID, approval(owner.UserID, base.Add(time.Minute)))
		step("DecideConfirmation", err)
		step("RecordOutcome", s.Confirmations.RecordOutcome(ctx, c.ID, ports.ToolOutcome{OK: true}, base.Add(2*time.Minute)))
		_, err = s.Confirmations.ExpireConfirmations(ctx, time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC))
		step("ExpireConfirmations", err)
		events, err := s.Events.ListEvents(ctx, cs.ID, 0, 10)
		if step("ListEvents", err) && len(events) != 1 {
			t.Errorf("ListEvents inside the transaction = %d events, want 1", len(events))
		}
		seq, err := s.Events.LastEventSeq(ctx, cs.ID)
		if step("LastEventSeq", err) && seq != 1 {
			t.Errorf("LastEventSeq inside the transaction = %d, want 1", seq)
		}
		_, err = s.Turns.RunningTurn(ctx, cs.ID)
		step("RunningTurn", err)
		step("EndTurn", s.Turns.EndTurn(ctx, turn.ID, base.Add(time.Minute)))
		got2, at, err := s.Preferences.GetPreferences(ctx, owner)
		if step("GetPreferences", err) && (len(got2) != 1 || at == nil) {
			t.Errorf("GetPreferences inside the transaction = %d, %v; want 1 and a time", len(got2), at)
		}
		if failed != nil {
			return failed
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.Sessions.GetSession(t.Context(), owner, cs.ID)
	checkErr(t, "GetSession after rollback", err, ports.ErrNotFound)
	if n := len(mustListMessages(t, s, cs.ID)); n != 0 {
		t.Errorf("ListMessages after rollback = %d messages", n)
	}
	_, err = s.Confirmations.GetConfirmation(t.Context(), owner, c.ID)
	checkErr(t, "GetConfirmation after rollback", err, ports.ErrNotFound)
	if n := len(mustListEvents(t, s, cs.ID, 0, 10)); n != 0 {
		t.Errorf("ListEvents after rollback = %d events", n)
	}
	_, err = s.Turns.RunningTurn(t.Context(), cs.ID)
	checkErr(t, "RunningTurn after rollback", err, ports.ErrNotFound)
	checkPreferences(t, "GetPreferences after rollback", s, owner, nil, nil)
}

// StartSession stores a session, its running turn and its first message, or
// none of them.
func testStartSession(t *testing.T, s assistantStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	start := func(cs ports.ChatSession) (ports.Turn, ports.ChatMessage) {
		turn := newTurn(cs.ID, base)
		msg := newMessage(cs, ports.MessageUser, "deploy the api")
		msg.TurnID = turn.ID
		return turn, msg
	}
	cs := newSession(owner)
	turn, msg := start(cs)
	if err := s.Sessions.StartSession(ctx, cs, turn, msg, time.Time{}, 0); err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	got := mustGetSession(t, s, owner, cs.ID)
	if at := base.Truncate(time.Microsecond); got.ID != cs.ID || got.Title != cs.Title || !got.CreatedAt.Equal(at) || !got.UpdatedAt.Equal(at) || got.MessageCount != 1 {
		t.Errorf("session %+v", got)
	}
	running, err := s.Turns.RunningTurn(ctx, cs.ID)
	if err != nil {
		t.Fatalf("RunningTurn: %v", err)
	}
	checkTurn(t, "RunningTurn", running, turn)
	msgs, err := s.Messages.ListMessages(ctx, cs.ID)
	if err != nil || len(msgs) != 1 || msgs[0].ID != msg.ID || msgs[0].TurnID != turn.ID ||
		msgs[0].Role != ports.MessageUser || msgs[0].Content != "deploy the api" || msgs[0].ToolCalls != nil {
		t.Fatalf("messages %+v, %v", msgs, err)
	}
	checkErr(t, "StartTurn in the started session", s.Turns.StartTurn(ctx, newTurn(cs.ID, base.Add(time.Minute)), time.Time{}, 0), ports.ErrConflict)

	// A conflict on any of the three ids stores none of them.
	for _, tc := range []struct {
		name   string
		change func(*ports.ChatSession, *ports.Turn, *ports.ChatMessage)
	}{
		{"session id", func(c *ports.ChatSession, tu *ports.Turn, m *ports.ChatMessage) {
			c.ID, tu.SessionID, m.SessionID = cs.ID, cs.ID, cs.ID
		}},
		{"turn id", func(_ *ports.ChatSession, tu *ports.Turn, _ *ports.ChatMessage) { tu.ID = turn.ID }},
		{"message id", func(_ *ports.ChatSession, _ *ports.Turn, m *ports.ChatMessage) { m.ID = msg.ID }},
	} {
		again := newSession(owner)
		tu, m := start(again)
		tc.change(&again, &tu, &m)
		checkErr(t, "StartSession reusing the "+tc.name, s.Sessions.StartSession(ctx, again, tu, m, time.Time{}, 0), ports.ErrConflict)
		if again.ID != cs.ID {
			_, err := s.Sessions.GetSession(ctx, owner, again.ID)
			checkErr(t, "the session of a failed StartSession ("+tc.name+")", err, ports.ErrNotFound)
		}
	}
	if msgs, _ := s.Messages.ListMessages(ctx, cs.ID); len(msgs) != 1 {
		t.Errorf("%d messages after the conflicts, want 1", len(msgs))
	}

	stranger := ports.Owner{OrgID: owner.OrgID, UserID: newID()}
	lost := newSession(stranger)
	tu, m := start(lost)
	checkErr(t, "StartSession for an unknown user", s.Sessions.StartSession(ctx, lost, tu, m, time.Time{}, 0), ports.ErrNotFound)
}

// isInvalid reports whether err is an invalid-input Error.
func isInvalid(err error) bool {
	e, ok := ports.AsError(err)
	return ok && e.Kind == ports.KindInvalid
}
