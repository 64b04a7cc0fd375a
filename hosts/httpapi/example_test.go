package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/system"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// readyFunc adapts a function to httpapi.Readiness.
type readyFunc func(context.Context) error

func (f readyFunc) Ready(ctx context.Context) error { return f(ctx) }

// devpilot mounted inside another program's http.ServeMux under /devpilot,
// without fx: the program opens a SQLite database in a temporary directory,
// migrates it, builds the identity service and the content engine from their
// exported constructors, and serves httpapi's Handler beside its own routes.
// Areas left out of httpapi.Deps (here the assistant, specifications, cloud,
// repositories and voice) have no routes. No worker runs in this program, so
// content generation jobs would wait in the queue for one (devpilot worker).
func ExampleServer_Handler() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "devpilot-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	db, err := sqlstore.Open(ctx, "sqlite:"+filepath.Join(dir, "devpilot.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	quiet := slog.New(slog.DiscardHandler)
	if err := db.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := queue.Migrate(ctx, db, quiet); err != nil { // the job queue's tables
		log.Fatal(err)
	}
	jobs, err := queue.New(db, queue.Config{Logger: quiet}) // insert-only: no workers
	if err != nil {
		log.Fatal(err)
	}

	clock, ids, ident := system.Clock{}, system.IDs{}, sqlstore.NewIdentity(db)
	id := identity.New(identity.Deps{Orgs: ident, Users: ident, Tokens: ident, Tx: db, Clock: clock, IDs: ids})
	engine := content.New(content.Config{}, content.Deps{
		Store: sqlstore.NewContent(db), Tx: db, Jobs: jobs, Clock: clock, IDs: ids, Logger: quiet,
	})
	key, err := secretbox.GenerateKey() // a real host reads its key from its configuration
	if err != nil {
		log.Fatal(err)
	}
	seal, err := secretbox.New(key)
	if err != nil {
		log.Fatal(err)
	}
	srv := httpapi.New(httpapi.Config{}, httpapi.Deps{
		Identity: id, Content: engine, Ready: readyFunc(db.Ping),
		Idempotency: sqlstore.NewIdempotency(db), IdempotencySeal: seal, Logger: quiet,
	})

	// The host program's own routes, and devpilot under /devpilot.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello from the host") })
	mux.Handle("/devpilot/", http.StripPrefix("/devpilot", srv.Handler()))
	ts := httptest.NewServer(mux)
	defer ts.Close()

	tok, err := id.IssueToken(ctx, identity.IssueTokenInput{Email: "ada@example.com", OrgName: "Acme", Role: ports.RoleAdmin})
	if err != nil {
		log.Fatal(err)
	}
	call := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequestWithContext(ctx, method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}

	status, body := call("GET", "/hello", "")
	fmt.Print(status, " ", string(body))

	var me struct {
		User struct{ Email, Role string }
		Org  struct{ Name string }
	}
	status, body = call("GET", "/devpilot/api/v1/me", "")
	_ = json.Unmarshal(body, &me)
	fmt.Println(status, me.User.Email, me.User.Role, me.Org.Name)

	var brief struct {
		Title     string
		Format    string
		CreatedBy string `json:"created_by"`
	}
	status, body = call("POST", "/devpilot/api/v1/content/briefs", `{"project_id":"web-site","title":"Launch post"}`)
	_ = json.Unmarshal(body, &brief)
	fmt.Println(status, brief.Title, brief.Format, brief.CreatedBy == tok.User.ID)

	status, _ = call("GET", "/devpilot/api/v1/agent/sessions", "") // the assistant is not mounted
	fmt.Println(status)
	// Output:
	// 200 hello from the host
	// 200 ada@example.com admin Acme
	// 201 Launch post article true
	// 404
}
