package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/ports"
)

type invitationView struct {
	ID         string
	Email      *string
	Role       string
	Status     string
	Prefix     string
	AcceptedBy *string `json:"accepted_by"`
}

type createdInvitation struct {
	Invitation invitationView
	Secret     string
	JoinURL    string `json:"join_url"`
}

type joinedView struct {
	User struct{ ID, Email, Role string }
	Org  struct{ ID, Name string }
	// Token is the new user's first API token.
	Token       string
	TokenRecord struct{ ID, Name, Status string } `json:"token_record"`
}

// invite creates an invitation as the admin and fails the test unless it
// is created.
func (st *stack) invite(admin string, body map[string]any) createdInvitation {
	st.t.Helper()
	code, raw, _ := st.call(admin, "POST", "/api/v1/invitations", body)
	var c createdInvitation
	if err := json.Unmarshal(raw, &c); code != 201 || err != nil {
		st.t.Fatalf("invite %v: %d %s", body, code, raw)
	}
	return c
}

// accept accepts an invitation, unauthenticated.
func (st *stack) accept(body any) (int, joinedView, []byte) {
	st.t.Helper()
	code, raw, _ := st.call("", "POST", "/api/v1/invitations/accept", body)
	var j joinedView
	if code == 201 {
		if err := json.Unmarshal(raw, &j); err != nil {
			st.t.Fatalf("accept: %v in %s", err, raw)
		}
	}
	return code, j, raw
}

// sendBytes sends body as it is, as JSON, and returns the status, the
// content type and the body of the answer.
func (st *stack) sendBytes(method, path string, body []byte) (int, string, []byte) {
	st.t.Helper()
	req, _ := http.NewRequest(method, st.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), raw
}

// TestInvitations: an admin invites a teammate, who accepts without a
// token and joins with the invited role and a first token that works; the
// secret is single use; expired and revoked invitations are refused like
// unknown ones; members may not invite; every step is audited. On both
// databases.
func TestInvitations(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			url := sqlstoretest.URL(t, d)
			st := startStackWith(t, string(d), map[string]string{app.EnvDatabaseURL: url})
			lead, bob := st.admin("lead@example.com"), st.token("bob@example.com")

			if code, body, _ := st.call(bob, "POST", "/api/v1/invitations", map[string]any{"email": "x@example.com"}); code != 403 {
				t.Fatalf("a member inviting: %d %s", code, body)
			}
			if code, _, _ := st.call(bob, "GET", "/api/v1/invitations", nil); code != 403 {
				t.Fatalf("a member listing invitations: %d", code)
			}
			if code, _, _ := st.call("", "GET", "/api/v1/invitations", nil); code != 401 {
				t.Fatalf("listing invitations without a token: %d", code)
			}

			ana := st.invite(lead, map[string]any{"email": "Ana@Example.com", "role": "admin", "expires_in_days": 3})
			if !strings.HasPrefix(ana.Secret, "dpi_") || ana.JoinURL != "/#/join/"+ana.Secret || ana.Invitation.Status != "pending" ||
				ana.Invitation.Email == nil || *ana.Invitation.Email != "ana@example.com" || ana.Invitation.Role != "admin" ||
				!strings.HasPrefix(ana.Secret, ana.Invitation.Prefix) {
				t.Fatalf("the invitation: %+v", ana)
			}

			// The wrong email, or none, is refused and uses nothing up.
			for _, body := range []map[string]any{
				{"secret": ana.Secret, "email": "eve@example.com"},
				{"secret": ana.Secret, "email": ""},
			} {
				if code, _, raw := st.accept(body); code != 422 {
					t.Fatalf("accept %v: %d %s", body, code, raw)
				}
			}
			code, joined, raw := st.accept(map[string]any{"secret": ana.Secret, "email": "ana@EXAMPLE.com", "token_name": "laptop"})
			if code != 201 || joined.User.Email != "ana@example.com" || joined.User.Role != "admin" || joined.Org.Name != "acme" ||
				!strings.HasPrefix(joined.Token, "dp_") || joined.TokenRecord.Name != "laptop" || joined.TokenRecord.Status != "active" {
				t.Fatalf("accept: %d %s", code, raw)
			}
			// The new user's token works, as an admin of acme.
			code, raw, _ = st.call(joined.Token, "GET", "/api/v1/me", nil)
			if code != 200 || !strings.Contains(string(raw), `"email":"ana@example.com"`) || !strings.Contains(string(raw), `"name":"acme"`) {
				t.Fatalf("the new user's /me: %d %s", code, raw)
			}
			if code, _, _ := st.call(joined.Token, "GET", "/api/v1/members", nil); code != 200 {
				t.Fatalf("the new admin listing members: %d", code)
			}
			// Single use.
			code, _, raw = st.accept(map[string]any{"secret": ana.Secret, "email": "ana@example.com"})
			if code != 404 || !strings.Contains(string(raw), `"code":"invalid_invitation"`) {
				t.Fatalf("accepting again: %d %s", code, raw)
			}
			refusal := string(raw)

			// Revoked, and expired (stored directly, its expiry past), are
			// the same 404 as unknown.
			revoked := st.invite(lead, map[string]any{})
			if code, raw, _ := st.call(bob, "DELETE", "/api/v1/invitations/"+revoked.Invitation.ID, nil); code != 403 {
				t.Fatalf("a member revoking: %d %s", code, raw)
			}
			if code, raw, _ := st.call(lead, "DELETE", "/api/v1/invitations/"+revoked.Invitation.ID, nil); code != 204 {
				t.Fatalf("revoke: %d %s", code, raw)
			}
			if code, _, _ := st.call(lead, "DELETE", "/api/v1/invitations/"+revoked.Invitation.ID, nil); code != 409 {
				t.Fatalf("revoke twice: %d", code)
			}
			if code, _, _ := st.call(lead, "DELETE", "/api/v1/invitations/not-an-id", nil); code != 404 {
				t.Fatalf("revoke a bad id: %d", code)
			}
			expired := storeExpiredInvitation(t, url, st, lead)
			for name, secret := range map[string]string{
				"revoked": revoked.Secret, "expired": expired, "unknown": "dpi_" + strings.Repeat("Z", 43), "malformed": "dpi_x",
			} {
				code, _, raw := st.accept(map[string]any{"secret": secret, "email": "carl@example.com"})
				if code != 404 || !sameProblem(raw, refusal) {
					t.Errorf("%s: %d %s, want the refusal %s", name, code, raw, refusal)
				}
			}

			// An open invitation: any email that is not a user's.
			open := st.invite(lead, map[string]any{"expires_in_days": 1})
			if code, _, raw := st.accept(map[string]any{"secret": open.Secret, "email": "bob@example.com"}); code != 409 {
				t.Fatalf("accepting as an existing user: %d %s", code, raw)
			}
			code, carl, raw := st.accept(map[string]any{"secret": open.Secret, "email": "carl@example.com"})
			if code != 201 || carl.User.Role != "member" || carl.TokenRecord.Name != identity.DefaultJoinTokenName {
				t.Fatalf("carl joins: %d %s", code, raw)
			}
			if code, _, _ := st.call(carl.Token, "GET", "/api/v1/invitations", nil); code != 403 {
				t.Fatalf("the new member listing invitations: %d", code)
			}

			// The list shows each invitation's status, newest first.
			code, raw, _ = st.call(lead, "GET", "/api/v1/invitations?limit=2", nil)
			var page struct {
				Items []invitationView
				Next  *string `json:"next_cursor"`
			}
			if err := json.Unmarshal(raw, &page); code != 200 || err != nil || len(page.Items) != 2 || page.Next == nil {
				t.Fatalf("first page: %d %s", code, raw)
			}
			code, raw, _ = st.call(lead, "GET", "/api/v1/invitations?limit=2&cursor="+*page.Next, nil)
			var rest struct{ Items []invitationView }
			if err := json.Unmarshal(raw, &rest); code != 200 || err != nil {
				t.Fatalf("second page: %d %s", code, raw)
			}
			statuses := map[string]invitationView{}
			for _, inv := range append(page.Items, rest.Items...) {
				statuses[inv.ID] = inv
			}
			for id, want := range map[string]string{ana.Invitation.ID: "accepted", revoked.Invitation.ID: "revoked", open.Invitation.ID: "accepted"} {
				if statuses[id].Status != want {
					t.Errorf("invitation %s listed %+v, want %s", id, statuses[id], want)
				}
			}
			if by := statuses[ana.Invitation.ID].AcceptedBy; by == nil || *by != joined.User.ID {
				t.Errorf("ana's invitation accepted by %v, want %s", by, joined.User.ID)
			}
			if len(statuses) != 4 || strings.Contains(string(raw), ana.Secret) {
				t.Errorf("listed %d invitations (want 4) or a secret: %s", len(statuses), raw)
			}

			// Of concurrent acceptances, exactly one joins.
			raced := st.invite(lead, map[string]any{})
			codes := make([]int, 6)
			var wg sync.WaitGroup
			for i := range codes {
				wg.Go(func() {
					body := fmt.Sprintf(`{"secret":%q,"email":"racer%d@example.com"}`, raced.Secret, i)
					codes[i], _, _ = st.sendBytes("POST", "/api/v1/invitations/accept", []byte(body))
				})
			}
			wg.Wait()
			slices.Sort(codes)
			if codes[0] != 201 || codes[1] == 201 || slices.ContainsFunc(codes[1:], func(c int) bool { return c != 404 && c != 409 }) {
				t.Fatalf("concurrent acceptances answered %v, want one 201 and the rest 404 or 409", codes)
			}
			code, raw, _ = st.call(lead, "GET", "/api/v1/members", nil)
			if n := strings.Count(string(raw), "racer"); code != 200 || n != 1 {
				t.Fatalf("members after the race: %d, %d racers", code, n)
			}

			code, raw, _ = st.call(lead, "GET", "/api/v1/audit", nil)
			var audit struct {
				Items []struct{ Action, Resource string }
			}
			if err := json.Unmarshal(raw, &audit); code != 200 || err != nil {
				t.Fatalf("audit: %d %s", code, raw)
			}
			var got []string
			for _, e := range audit.Items {
				got = append(got, e.Action+" "+e.Resource)
			}
			got = slices.DeleteFunc(got, func(s string) bool { return strings.HasSuffix(s, raced.Invitation.ID) })
			want := []string{
				"invitation.accept invitation/" + open.Invitation.ID, "invitation.create invitation/" + open.Invitation.ID,
				"invitation.revoke invitation/" + revoked.Invitation.ID, "invitation.create invitation/" + revoked.Invitation.ID,
				"invitation.accept invitation/" + ana.Invitation.ID, "invitation.create invitation/" + ana.Invitation.ID,
			}
			if !slices.Equal(got, want) {
				t.Fatalf("audit %v, want %v", got, want)
			}
		})
	}
}

// storeExpiredInvitation stores, in the stack's database at url, an
// invitation to the lead's organisation that expired a minute ago, and
// returns its secret.
func storeExpiredInvitation(t *testing.T, url string, st *stack, lead string) string {
	t.Helper()
	code, raw, _ := st.call(lead, "GET", "/api/v1/me", nil)
	var me struct {
		User struct{ ID string }
		Org  struct{ ID string }
	}
	if err := json.Unmarshal(raw, &me); code != 200 || err != nil {
		t.Fatalf("/me: %d %s", code, raw)
	}
	db, err := sqlstore.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	secret := "dpi_" + strings.Repeat("E", 43)
	hash := sha256.Sum256([]byte(secret))
	now := time.Now()
	inv := ports.Invitation{ID: "0193a5b0-0000-7000-8000-00000000e001", OrgID: me.Org.ID, Role: ports.RoleMember, Hash: hash[:],
		Prefix: secret[:10], CreatedBy: me.User.ID, CreatedAt: now.Add(-2 * time.Hour), ExpiresAt: now.Add(-time.Minute)}
	if err := sqlstore.NewInvitations(db).CreateInvitation(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	return secret
}

// sameProblem reports whether the problem raw says what want says, but for
// its request id.
func sameProblem(raw []byte, want string) bool {
	var a, b map[string]any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal([]byte(want), &b) != nil {
		return false
	}
	delete(a, "request_id")
	delete(b, "request_id")
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestInvitationsHostileInput: what a stranger may send to the public
// accept, and an admin to invite, is refused as a problem, never a 500;
// and nothing hostile is stored.
func TestInvitationsHostileInput(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead := st.admin("lead@example.com")
			open := st.invite(lead, map[string]any{})
			for name, body := range map[string]map[string]any{
				"NUL in the email":          {"email": "a\x00b@example.com"},
				"a control character":       {"email": "a\x1bb@example.com"},
				"bidi override":             {"email": "a\u202eb@example.com"},
				"not an email":              {"email": "<script>"},
				"an unknown role":           {"role": "owner"},
				"too long":                  {"expires_in_days": 31},
				"zero days":                 {"expires_in_days": 0},
				"days as text":              {"expires_in_days": "7"},
				"an unknown field":          {"org_id": "0193a5b0-0000-7000-8000-000000000001"},
				"an email that is too long": {"email": strings.Repeat("a", 300) + "@example.com"},
			} {
				code, raw, _ := st.call(lead, "POST", "/api/v1/invitations", body)
				if code < 400 || code >= 500 {
					t.Errorf("invite with %s: %d %s", name, code, raw)
				}
			}
			for name, body := range map[string]map[string]any{
				"NUL in the email":      {"secret": open.Secret, "email": "a\x00b@example.com"},
				"NUL in the secret":     {"secret": open.Secret + "\x00", "email": "a@example.com"},
				"NUL in the token name": {"secret": open.Secret, "email": "a@example.com", "token_name": "x\x00"},
				"control characters":    {"secret": open.Secret, "email": "a@example.com", "token_name": "\x07"},
				"no secret":             {"email": "a@example.com"},
				"no email":              {"secret": open.Secret},
				"a number as secret":    {"secret": 7, "email": "a@example.com"},
				"an unknown field":      {"secret": open.Secret, "email": "a@example.com", "role": "admin"},
				"a huge token name":     {"secret": open.Secret, "email": "a@example.com", "token_name": strings.Repeat("n", 5000)},
			} {
				code, raw, _ := st.accept(body)
				if code < 400 || code >= 500 {
					t.Errorf("accept with %s: %d %s", name, code, raw)
				}
			}
			for name, body := range map[string][]byte{
				"invalid UTF-8":    []byte(`{"secret":"` + open.Secret + `","email":"a\xff@example.com"}`),
				"not JSON":         []byte(`{"secret":`),
				"an oversized one": []byte(`{"secret":"` + open.Secret + `","email":"a@example.com","token_name":"` + strings.Repeat("x", 64<<10) + `"}`),
				"two values":       []byte(`{"secret":"x","email":"a@example.com"} {}`),
			} {
				code, ct, raw := st.sendBytes("POST", "/api/v1/invitations/accept", body)
				if code < 400 || code >= 500 || !strings.HasPrefix(ct, "application/problem+json") {
					t.Errorf("accept with %s: %d %s %s", name, code, ct, raw)
				}
			}
			// Nothing above used the invitation up.
			if code, _, raw := st.accept(map[string]any{"secret": open.Secret, "email": "dora@example.com"}); code != 201 {
				t.Fatalf("the invitation after hostile requests: %d %s", code, raw)
			}
		})
	}
}
