// Package sandbox runs devpilot's sandbox providers: in-process fakes of
// OpenAI (the scripted demo model), AWS and GitHub on loopback, seeded with
// demo data, and devpilot's own demo records (an org, an admin with an API
// token, a cloud account, a GitHub connection) seeded through the core
// services once the app starts. The fakes and the demo model are its own
// subpackages (fakeopenai, fakeaws, fakegithub, demomodel), which the
// adapters' and hosts' tests import from here too. The wiring package
// hosts/app knows a running sandbox only through app.SandboxProviders, so a
// binary built without this package (the devpilot command with -tags
// nosandbox) carries none of them; no binary links testkit.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// What the sandbox seeds, fixed so that a walkthrough can name it. The demo
// API token is not fixed: it is issued on first start and kept in
// TokenFileName under the data directory.
const (
	// Org and Email are the demo organisation and its admin.
	Org   = "demo"
	Email = "demo@example.com"
	// TokenFileName is the file, under DEVPILOT_DATA_DIR, holding the
	// demo user's API token of `devpilot run` in plain text (mode 0600).
	TokenFileName = "sandbox-token"
	// ServeTokenFileName is `devpilot serve --sandbox`'s: each mode keeps
	// its own file, as each usually has its own database, so that a serve
	// never rewrites the token a run in the same folder hands out.
	ServeTokenFileName = "sandbox-token-serve"
	// WebhookSecret signs webhook deliveries to /webhooks/scm.
	WebhookSecret = "sandbox-webhook-secret"
	// OpenAIKey is the API key the model adapter sends the fake.
	OpenAIKey = "sk-sandbox"

	// CloudAccount is devpilot's cloud account of the fake AWS
	// account AWSAccountID, reached with the access key below.
	CloudAccount   = "demo-aws"
	AWSAccountID   = "123456789012"
	AWSRegion      = "us-east-1"
	AWSAccessKeyID = "AKIASANDBOXDEMO00001"
	AWSSecretKey   = "sandbox/demo/secret/access/key"
	// AmplifyAppID is the id of the Amplify app "storefront".
	AmplifyAppID = "d1storefront42"

	// GitHubLogin is the fake GitHub user the demo user is connected
	// as; GitHubClientID and GitHubClientSecret are the OAuth
	// app registered in the fake.
	GitHubLogin        = "demo-dev"
	GitHubClientID     = "Iv1.sandbox0demo"
	GitHubClientSecret = "sandbox-github-client-secret"
)

// Repos returns the full names of the repositories the demo GitHub
// connection sees, with their GitHub ids (what webhook payloads carry).
func Repos() map[string]int64 {
	m := map[string]int64{}
	for _, r := range sandboxRepos {
		m["demo/"+r.name] = r.id
	}
	return m
}

// Sandbox is a running set of sandbox providers: fakeopenai answering with
// the scripted demo model (hosts/sandbox/demomodel), fakeaws and fakegithub, each
// served by its own http.Server on a 127.0.0.1 port, seeded with demo data.
// Nothing it does leaves loopback.
//
// It is started by a function called before the fx graph is built
// (Start), not by an fx constructor, because the fakes' URLs are
// configuration: the model, AWS and GitHub adapters are built from Config,
// which is supplied to the graph as a plain value read once. Starting the
// fakes first and filling the Config in keeps that one value true for every
// component and every log line, without decorating Config inside the graph.
// What needs the graph — seeding devpilot's own records through the core
// services once the database is migrated — runs as an fx OnStart hook, and
// the fakes are shut down by the matching OnStop hook (app.Options adds both
// when the Config came from Start, through app.SandboxProviders).
type Sandbox struct {
	logger    *slog.Logger
	openai    *fakeopenai.Server
	aws       *fakeaws.Server
	github    *fakegithub.Server
	servers   []*http.Server
	openaiURL string
	awsURL    string
	githubURL string
	publicURL string
	tokenFile string
	closeOnce sync.Once

	mu sync.Mutex
	// listener is the HTTP API's socket, opened when its port was chosen
	// (port 0) and held until the server takes it, so no one else takes the
	// port in between.
	listener  net.Listener
	keepModel bool
	token     string
	accountID string
	repos     int
}

// Start starts the sandbox providers when cfg.Sandbox is set and returns
// cfg pointed at them, with the Sandbox attached (Config.WithSandbox);
// otherwise it returns cfg unchanged and a nil Sandbox. The returned Config
// makes app.Options seed devpilot's demo records on
// start (an org, an admin user with an API token, a cloud account and a
// GitHub connection) and close the fakes on stop; call Close as well when
// the app is never started or fails to start (it is idempotent, and nil-safe).
//
// It fills in: LLM.BaseURL and LLM.APIKey (the fake OpenAI, OpenAIKey),
// AWSEndpoint (the fake AWS; the credentials are the demo cloud account's
// access key), GitHub (an OAuth app registered in the fake, its web and API
// URLs, WebhookSecret) and, when unset, PublicURL: the listen
// address, on 127.0.0.1 when it names no host, with port 0 replaced by a
// free port chosen now (so that the OAuth callback URL is right). Errors:
// only when a loopback port cannot be opened.
//
// Options change what the sandbox runs: KeepModel leaves the configured
// model in place, WithResponder answers with another model than the demo
// model.
func Start(cfg app.Config, logger *slog.Logger, opts ...Option) (app.Config, *Sandbox, error) {
	if !cfg.Sandbox {
		return cfg, nil, nil
	}
	o := options{responder: demomodel.New().Respond}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := sandboxPublicURL(&cfg)
	if err != nil {
		return cfg, nil, err
	}
	now := time.Now().UTC()
	sb := &Sandbox{
		listener:  ln,
		logger:    logger,
		openai:    fakeopenai.NewHandler(),
		aws:       fakeaws.NewHandler(),
		github:    fakegithub.NewHandler(fakegithub.WithEpoch(now.AddDate(0, -3, 0))),
		publicURL: cfg.PublicURL,
		tokenFile: filepath.Join(cfg.DataDir, tokenFileName(cfg.Mode)),
		keepModel: o.keepModel,
	}
	sb.openai.SetResponder(o.responder)
	// What answers behind the fake is a script, never a real model: its
	// answers say so, and so does every version and item recorded from them.
	sb.openai.SetModel(ports.SandboxModel)
	seedSandboxAWS(sb.aws.Account(AWSAccountID), now)
	sb.aws.BuildsFinishAfter(sandboxBuildTime)
	seedSandboxGitHub(sb.github, now)
	sb.github.RegisterApp(GitHubClientID, GitHubClientSecret).CallbackURL(cfg.PublicURL + scm.CallbackPath)
	sb.github.AuthorizeAs(GitHubLogin)

	for _, f := range []struct {
		name string
		h    http.Handler
		url  *string
	}{{"openai", sb.openai, &sb.openaiURL}, {"aws", sb.aws, &sb.awsURL}, {"github", sb.github, &sb.githubURL}} {
		u, err := sb.serve(f.name, f.h)
		if err != nil {
			sb.Close()
			return cfg, nil, err
		}
		*f.url = u
	}

	if !o.keepModel {
		cfg.LLM.BaseURL = sb.openaiURL + "/v1"
		cfg.LLM.APIKey = OpenAIKey
	}
	cfg.AWSEndpoint = sb.awsURL
	cfg.GitHub = app.GitHubConfig{
		ClientID:      GitHubClientID,
		ClientSecret:  GitHubClientSecret,
		WebURL:        sb.githubURL,
		APIURL:        sb.githubURL + "/",
		WebhookSecret: WebhookSecret,
	}
	return cfg.WithSandbox(sb), sb, nil
}

// Option changes what Start runs.
type Option func(*options)

type options struct {
	keepModel bool
	responder func(*fakeopenai.Request) fakeopenai.Response
}

// KeepModel leaves the configured model (Config.LLM) in place instead of
// pointing it at the fake OpenAI: AWS and GitHub are still fakes, the model
// is the real provider. `devpilot eval` uses it when a provider is set.
func KeepModel() Option { return func(o *options) { o.keepModel = true } }

// WithResponder makes respond answer the fake OpenAI's chat requests
// instead of the demo model (hosts/sandbox/demomodel); nil keeps the demo model.
func WithResponder(respond func(*fakeopenai.Request) fakeopenai.Response) Option {
	return func(o *options) {
		if respond != nil {
			o.responder = respond
		}
	}
}

// sandboxPublicURL sets cfg.PublicURL, when unset, to the listen address.
// For port 0 it listens on a free port and returns that listener, for the
// HTTP server to serve on.
func sandboxPublicURL(cfg *app.Config) (net.Listener, error) {
	if cfg.PublicURL != "" {
		return nil, nil
	}
	host, port, err := net.SplitHostPort(cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", app.EnvHTTPAddr, err)
	}
	var ln net.Listener
	if port == "0" {
		if ln, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return nil, fmt.Errorf("%s: %w", app.EnvHTTPAddr, err)
		}
		port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		cfg.HTTPAddr = net.JoinHostPort(host, port)
	}
	switch host {
	case "", "0.0.0.0", "::":
		host = "127.0.0.1"
	}
	cfg.PublicURL = "http://" + net.JoinHostPort(host, port)
	return ln, nil
}

// TakeListener returns the HTTP API's socket opened by Start (when it chose
// the port of a port-0 address), once; nil when there is none (and on a nil
// Sandbox). The HTTP server takes it (app.SandboxProviders); Close closes it
// when no one did.
func (sb *Sandbox) TakeListener() net.Listener {
	if sb == nil {
		return nil
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	ln := sb.listener
	sb.listener = nil
	return ln
}

// serve serves h on a new 127.0.0.1 port and returns its base URL.
func (sb *Sandbox) serve(name string, h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("sandbox: fake %s: %w", name, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	sb.servers = append(sb.servers, srv)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			sb.logger.Error("sandbox: fake "+name+" stopped", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}

// Close stops the fakes at once. It may be called more than once, and on a
// nil Sandbox.
func (sb *Sandbox) Close() {
	if sb == nil {
		return
	}
	sb.closeOnce.Do(func() {
		if ln := sb.TakeListener(); ln != nil {
			_ = ln.Close()
		}
		for _, srv := range sb.servers {
			_ = srv.Close()
		}
		sb.aws.Close()
		sb.github.Close()
	})
}

// shutdown stops the fakes gracefully, then closes them.
func (sb *Sandbox) shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range sb.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	sb.Close()
	return errors.Join(errs...)
}

// Token is the demo user's API token once the app has started; "" before.
func (sb *Sandbox) Token() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.token
}

// ConsoleToken is Token on a sandbox, "" on none (a nil *Sandbox): what the
// console's "demo user" button signs in with (GET /api/v1/sandbox).
func (sb *Sandbox) ConsoleToken() string {
	if sb == nil {
		return ""
	}
	return sb.Token()
}

// TokenFile is where the demo token is kept: DEVPILOT_DATA_DIR/sandbox-token
// for run, DEVPILOT_DATA_DIR/sandbox-token-serve for serve --sandbox.
func (sb *Sandbox) TokenFile() string { return sb.tokenFile }

// Model is the fake OpenAI the sandbox answers with: the demo model is its
// responder, so a response a test enqueues (fakeopenai.Server.Enqueue)
// answers the next model call instead, and the demo model the ones after.
func (sb *Sandbox) Model() *fakeopenai.Server { return sb.openai }

// GitHub is the fake GitHub the sandbox serves, for a caller that adds
// repositories or users of its own (see AddRepo).
func (sb *Sandbox) GitHub() *fakegithub.Server { return sb.github }

// AWS is the fake AWS the sandbox serves, for a caller that adds resources
// or log events of its own (the demo account is AWSAccountID).
func (sb *Sandbox) AWS() *fakeaws.Server { return sb.aws }

// AddRepo adds a private repository of the organisation Org to the fake
// GitHub, visible to the demo GitHub user (GitHubLogin), with id as its
// GitHub id and files as its default branch's tree. Call it before the app
// starts: the demo GitHub connection, made on start, lists the repositories
// the demo user sees then.
func (sb *Sandbox) AddRepo(name, description string, id int64, files map[string]string) *fakegithub.Repo {
	repo := sb.github.AddRepo(Org, name, fakegithub.RepoID(id), fakegithub.Private(),
		fakegithub.VisibleTo(GitHubLogin), fakegithub.Description(description))
	repo.Commit(fakegithub.Commit{Message: "Initial commit", Author: GitHubLogin, Date: time.Now().UTC().Add(-time.Hour).Truncate(time.Minute)})
	if len(files) > 0 {
		repo.Files(files)
	}
	return repo
}

// PublicURL is devpilot's base URL as the sandbox configured it.
func (sb *Sandbox) PublicURL() string { return sb.publicURL }

// CloudAccountID is devpilot's id of the demo cloud account once the app
// has started; "" before.
func (sb *Sandbox) CloudAccountID() string {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.accountID
}

// Module provides the Sandbox to the graph and ties seeding and shutdown
// to the app's lifecycle; app.Options adds it (app.SandboxProviders).
// Seeding errors fail the app's start.
func (sb *Sandbox) Module() fx.Option {
	return fx.Module("sandbox",
		fx.Supply(sb),
		fx.Invoke(sb.register),
	)
}

// sandboxParams are what seeding devpilot's demo records needs.
type sandboxParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Ready     *app.Readiness
	Identity  *identity.Service
	Cloud     *cloud.Service
	SCM       *scm.Service
}

// register appends the seeding and shutdown hooks. The database's hook
// (migrations in run mode) is appended before, as the services depend on it.
func (sb *Sandbox) register(p sandboxParams) {
	p.Lifecycle.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if err := sb.seed(ctx, p); err != nil {
				return fmt.Errorf("sandbox: %w", err)
			}
			return nil
		},
		OnStop: sb.shutdown,
	})
}

// seed makes devpilot's demo records idempotently: the fakes are new on
// every start while the database persists, so the org, user and cloud
// account are reused, the token is reused while it authenticates, and the
// GitHub connection is made again (the fake's tokens are new each time).
func (sb *Sandbox) seed(ctx context.Context, p sandboxParams) error {
	if err := p.Ready.Ready(ctx); err != nil {
		return err
	}
	token, principal, err := sb.demoToken(ctx, p.Identity)
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	// Seeding is an operator action done as the demo user; it needs the
	// admin role (to add the cloud account) even if that user was made a
	// member by hand.
	principal.Role = ports.RoleAdmin
	ctx = ports.WithPrincipal(ctx, principal)
	accountID, err := sb.demoCloudAccount(ctx, p.Cloud)
	if err != nil {
		return fmt.Errorf("cloud account %s: %w", CloudAccount, err)
	}
	repos, err := sb.connectGitHub(ctx, p.SCM)
	if err != nil {
		return fmt.Errorf("GitHub connection: %w", err)
	}
	sb.mu.Lock()
	sb.token, sb.accountID, sb.repos = token, accountID, repos
	sb.mu.Unlock()
	sb.banner()
	return nil
}

// banner says loudly, at warn level, that the providers are fakes.
func (sb *Sandbox) banner() {
	first := "SANDBOX MODE: fake OpenAI, AWS and GitHub on loopback; nothing reaches a real provider"
	if sb.keepModel {
		first = "SANDBOX MODE: fake AWS and GitHub on loopback; the model is the configured provider"
	}
	lines := []string{
		first,
		"SANDBOX MODE: demo token: " + sb.Token(),
		"SANDBOX MODE: token file: " + sb.tokenFile,
		"SANDBOX MODE: webhook secret: " + WebhookSecret,
		fmt.Sprintf("SANDBOX MODE: seeded org %s, admin %s, cloud account %s (id %s), GitHub login %s with %d repositories",
			Org, Email, CloudAccount, sb.CloudAccountID(), GitHubLogin, sb.repos),
		"SANDBOX MODE: set OPENAI_API_KEY/OPENAI_BASE_URL, AWS credentials, GITHUB_CLIENT_ID/GITHUB_CLIENT_SECRET " +
			"(or DEVPILOT_SANDBOX=0) to use real providers",
	}
	for i, l := range lines {
		if i == 0 {
			sb.logger.Warn(l, "openai", sb.openaiURL+"/v1", "aws", sb.awsURL, "github", sb.githubURL)
			continue
		}
		sb.logger.Warn(l)
	}
}

// demoToken returns the token kept in the token file when it still
// authenticates as the demo user, else issues a new one (creating the org
// and the admin user on first start) and writes it to the file.
func (sb *Sandbox) demoToken(ctx context.Context, id *identity.Service) (string, ports.Principal, error) {
	raw, err := os.ReadFile(sb.tokenFile)
	switch {
	case err == nil:
		token := strings.TrimSpace(string(raw))
		p, err := id.Authenticate(ctx, token)
		if err == nil {
			me, err := id.Me(ports.WithPrincipal(ctx, p))
			if err != nil && ports.KindOf(err) != ports.KindNotFound {
				return "", p, err
			}
			if err == nil && me.User.Email == Email && me.Org.Name == Org {
				return token, p, nil
			}
		} else if ports.KindOf(err) != ports.KindUnauthenticated {
			return "", p, err
		}
		sb.logger.Info("sandbox: the token in " + sb.tokenFile + " no longer authenticates as " + Email + ": issuing a new one")
	case !errors.Is(err, fs.ErrNotExist):
		return "", ports.Principal{}, err
	}
	issued, err := id.IssueToken(ctx, identity.IssueTokenInput{
		Email: Email, OrgName: Org, Role: ports.RoleAdmin, Name: "sandbox",
	})
	if err != nil {
		return "", ports.Principal{}, err
	}
	if err := writeFileAtomic(sb.tokenFile, []byte(issued.Token+"\n"), 0o600); err != nil {
		return "", ports.Principal{}, err
	}
	return issued.Token, ports.Principal{
		UserID: issued.User.ID, OrgID: issued.Org.ID, Role: issued.User.Role, TokenID: issued.Record.ID,
	}, nil
}

// writeFileAtomic writes data to a new file beside path and renames it over
// path, so a reader never sees half a token.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// demoCloudAccount returns the id of the demo cloud account, adding it when
// the org has none of that name, and tests it. An existing account that
// fails its test (say, sealed with another DEVPILOT_SECRET_KEY) is replaced.
func (sb *Sandbox) demoCloudAccount(ctx context.Context, c *cloud.Service) (string, error) {
	id, err := findCloudAccount(ctx, c)
	if err != nil {
		return "", err
	}
	if id != "" {
		if res, err := c.TestAccount(ctx, id); err == nil && res.OK {
			return id, nil
		}
		sb.logger.Warn("sandbox: cloud account " + CloudAccount + " does not reach the fake AWS: replacing it")
		if err := c.DeleteAccount(ctx, id); err != nil {
			return "", err
		}
	}
	a, err := c.CreateAccount(ctx, cloud.NewAccount{
		Name: CloudAccount, Region: AWSRegion,
		Auth: cloud.AuthInput{Mode: ports.AuthAccessKey, AccessKeyID: AWSAccessKeyID, SecretAccessKey: AWSSecretKey},
	})
	if err != nil {
		return "", err
	}
	res, err := c.TestAccount(ctx, a.ID)
	if err != nil {
		return "", err
	}
	if !res.OK {
		return "", fmt.Errorf("the fake AWS refused the demo account: %s", res.Error)
	}
	return a.ID, nil
}

// findCloudAccount returns the id of the org's demo cloud account, "" when
// there is none.
func findCloudAccount(ctx context.Context, c *cloud.Service) (string, error) {
	page := ports.Page{Limit: 200}
	for {
		list, next, err := c.ListAccounts(ctx, page)
		if err != nil {
			return "", err
		}
		for _, a := range list {
			if a.Name == CloudAccount {
				return a.ID, nil
			}
		}
		if next == "" {
			return "", nil
		}
		page.Cursor = next
	}
}

// connectGitHub runs the OAuth round trip in-process, as a browser would:
// Authorize, the fake's authorize page (which approves as the demo GitHub
// user and redirects), then Callback with the code and state. It returns
// how many repositories the connection sees.
func (sb *Sandbox) connectGitHub(ctx context.Context, s *scm.Service) (int, error) {
	authorize, err := s.Authorize(ctx, "")
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorize.URL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := sb.github.Client().Do(req)
	if err != nil {
		return 0, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return 0, fmt.Errorf("the fake's authorize page answered %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return 0, err
	}
	q := back.Query()
	res, err := s.Callback(ctx, scm.CallbackInput{
		Code: q.Get("code"), State: q.Get("state"), Error: q.Get("error"), ErrorDescription: q.Get("error_description"),
		Binding: authorize.Binding,
	})
	if err != nil {
		return 0, err
	}
	return res.Repositories, nil
}

// The demo AWS account's ECS services.
var sandboxServices = []struct {
	cluster, name, image string
	revision, tasks      int
}{
	{"production", "checkout", "demo/checkout-api:1.8.2", 7, 2},
	{"production", "search", "demo/search:2.3.0", 12, 3},
	{"production", "payments", "demo/payments:0.9.4", 4, 2},
	{"staging", "checkout", "demo/checkout-api:1.9.0-rc.1", 8, 1},
}

// The demo account's daily costs: a base and a spread in cents per service.
var sandboxCosts = []struct {
	service       string
	base, spread  int64
	weekendFactor int64 // percent of the weekday cost on weekends
	region, usage string
	team          string // the "team" tag, "" for none
}{
	{"Amazon Elastic Container Service", 3840, 420, 80, "eu-west-1", "EUW1-Fargate-vCPU-Hours:perCPU", "checkout"},
	{"Amazon Relational Database Service", 2875, 90, 100, "eu-west-1", "EUW1-InstanceUsage:db.t4g.medium", "payments"},
	{"AWS Lambda", 312, 140, 60, "us-east-1", "Lambda-GB-Second", "checkout"},
	{"Amazon CloudWatch", 215, 60, 90, "us-east-1", "CW:MetricMonitorUsage", ""},
	{"AWS Amplify", 148, 50, 70, "us-east-1", "BuildDuration", "web"},
	{"Amazon Simple Storage Service", 92, 20, 100, "us-east-1", "TimedStorage-ByteHrs", "web"},
}

// sandboxCostDays is how many days of costs the demo account has, up to
// and including today.
const sandboxCostDays = 60

// seedSandboxAWS fills the demo AWS account: an IAM user with the sandbox
// access key, clusters production (checkout, search, payments) and staging
// (checkout; production's checkout one task short, see shortOfTasks) with task definitions and recent logs, Lambda functions
// resize-image and send-receipt, the Amplify app storefront (branch main,
// two builds), and sandboxCostDays days of costs by service (each in a
// region, of a usage type, most tagged with a team). The amounts
// depend on the date only, so a date costs the same after a restart.
// sandboxBuildTime is how long a deploy of the demo Amplify app takes to
// build and deploy.
const sandboxBuildTime = 6 * time.Second

func seedSandboxAWS(a *fakeaws.Account, now time.Time) {
	a.User("devpilot-sandbox", AWSAccessKeyID, AWSSecretKey)
	byCluster := map[string][]fakeaws.Service{}
	for i, s := range sandboxServices {
		group := "/ecs/" + s.cluster + "/" + s.name
		a.TaskDefinition(fakeaws.TaskDefinition{Family: s.name, Revision: s.revision, Containers: []fakeaws.Container{
			{Name: s.name, Image: s.image, LogConfiguration: fakeaws.AWSLogs(group, "ecs")},
		}})
		taskDef := fmt.Sprintf("%s:%d", s.name, s.revision)
		svc := fakeaws.Service{
			Name: s.name, TaskDefinition: taskDef, Desired: s.tasks, Running: s.tasks,
			Deployments: []fakeaws.Deployment{{
				ID: fmt.Sprintf("ecs-svc/%019d", 4817305521930000000+int64(i)), Status: "PRIMARY", RolloutState: "COMPLETED",
				TaskDefinition: taskDef, Desired: s.tasks, Running: s.tasks,
				CreatedAt: now.Add(-time.Duration(i+1) * 26 * time.Hour).Truncate(time.Minute),
			}},
		}
		if s.cluster == "production" && s.name == "checkout" {
			shortOfTasks(&svc, now)
		}
		byCluster[s.cluster] = append(byCluster[s.cluster], svc)
		task := fmt.Sprintf("%08x%024x", 0x5a1d0000+i, 0x3c9e7f1b2a4d)
		a.LogEvents(group, "ecs/"+s.name+"/"+task, serviceLog(s.name, now)...)
	}
	a.Cluster("production", byCluster["production"]...)
	a.Cluster("staging", byCluster["staging"]...)

	a.Function(fakeaws.Function{
		Name: "resize-image", Runtime: "nodejs20.x", Handler: "index.handler", MemoryMB: 512, TimeoutSecs: 30,
		LastModified: now.AddDate(0, 0, -6).Truncate(time.Hour),
		Result: fakeaws.InvokeResult{
			Payload: []byte(`{"resized":true,"width":640,"height":427,"key":"products/640/sneaker.jpg"}`),
			LogTail: "START RequestId: 5d1c Version: $LATEST\nresized products/sneaker.jpg 1200x800 -> 640x427\nEND RequestId: 5d1c\n",
		},
	})
	a.Function(fakeaws.Function{
		Name: "send-receipt", Runtime: "python3.12", Handler: "app.handler", MemoryMB: 256, TimeoutSecs: 10,
		LastModified: now.AddDate(0, 0, -2).Truncate(time.Hour),
		Handle:       sendReceipt,
	})
	a.LogEvents("/aws/lambda/resize-image", now.Format("2006/01/02")+"/[$LATEST]4b1e8f",
		fakeaws.LogEvent{Timestamp: now.Add(-42 * time.Minute), Message: "START RequestId: 5d1c Version: $LATEST"},
		fakeaws.LogEvent{Timestamp: now.Add(-42 * time.Minute), Message: "resized products/sneaker.jpg 1200x800 -> 640x427"},
		fakeaws.LogEvent{Timestamp: now.Add(-42 * time.Minute), Message: "END RequestId: 5d1c"})
	a.LogEvents("/aws/lambda/send-receipt", now.Format("2006/01/02")+"/[$LATEST]9a2c0d",
		fakeaws.LogEvent{Timestamp: now.Add(-17 * time.Minute), Message: "receipt sent order=ord_1041 to=ana@example.com"},
		fakeaws.LogEvent{Timestamp: now.Add(-9 * time.Minute), Message: "receipt sent order=ord_1042 to=sam@example.com"})

	a.App(fakeaws.App{
		ID: AmplifyAppID, Name: "storefront", Repository: "https://github.com/demo/storefront",
		UpdatedAt: now.Add(-2 * time.Hour).Truncate(time.Minute),
		Branches: []fakeaws.Branch{{Name: "main", Jobs: []fakeaws.Job{
			{ID: "11", StartTime: now.AddDate(0, 0, -1).Truncate(time.Minute), Steps: []fakeaws.Step{
				{Name: "BUILD", Log: "npm ci\nnpm run build\nbuild ok in 48s\n"},
				{Name: "DEPLOY", Log: "deployed to main." + AmplifyAppID + ".amplifyapp.com\n"},
			}},
			{ID: "12", StartTime: now.Add(-2 * time.Hour).Truncate(time.Minute), Steps: []fakeaws.Step{
				{Name: "BUILD", Log: "npm ci\nnpm run build\nbuild ok in 51s\n"},
				{Name: "DEPLOY", Log: "deployed to main." + AmplifyAppID + ".amplifyapp.com\n"},
				{Name: "VERIFY", Log: "lighthouse performance 94, accessibility 100\n"},
			}},
		}}},
	})

	today := now.Truncate(24 * time.Hour)
	for d := range sandboxCostDays {
		day := today.AddDate(0, 0, d-sandboxCostDays+1)
		n := day.Unix() / 86400
		weekend := day.Weekday() == time.Saturday || day.Weekday() == time.Sunday
		for i, c := range sandboxCosts {
			cents := c.base + (n*7919+int64(i)*104729)%c.spread
			if weekend {
				cents = cents * c.weekendFactor / 100
			}
			line := fakeaws.CostLine{Service: c.service, Region: c.region, UsageType: c.usage, Amount: fmt.Sprintf("%d.%02d", cents/100, cents%100)}
			if c.team != "" {
				line.Tags = map[string]string{"team": c.team}
			}
			a.CostLine(day.Format(time.DateOnly), line)
		}
	}
}

// shortOfTasks makes svc (production's checkout) want one task more than it
// runs, with the events and stopped tasks that say why: its third task
// keeps running out of memory.
func shortOfTasks(svc *fakeaws.Service, now time.Time) {
	svc.Desired++
	svc.Deployments[0].Desired++
	svc.Deployments[0].RolloutState = "IN_PROGRESS"
	at := now.Add(-4 * time.Minute).Truncate(time.Second)
	exit := 137
	svc.Events = []fakeaws.ServiceEvent{
		{ID: "3f1a9c0e-0001-4d6b-9a51-5e2f0c7d1b01", CreatedAt: at, Message: "(service checkout) has started 1 tasks: (task 9b2e4c71d0f84a6f8e3b5c2a1d7f6e90)."},
		{ID: "3f1a9c0e-0002-4d6b-9a51-5e2f0c7d1b02", CreatedAt: at.Add(-30 * time.Second), Message: "(service checkout) task 5c8d1e2f3a4b4c5d9e6f7a8b9c0d1e2f stopped: Essential container in task exited (OutOfMemoryError: Container killed due to memory usage)."},
		{ID: "3f1a9c0e-0003-4d6b-9a51-5e2f0c7d1b03", CreatedAt: at.Add(-6 * time.Minute), Message: "(service checkout) has started 1 tasks: (task 5c8d1e2f3a4b4c5d9e6f7a8b9c0d1e2f)."},
		{ID: "3f1a9c0e-0004-4d6b-9a51-5e2f0c7d1b04", CreatedAt: now.Add(-26 * time.Hour).Truncate(time.Minute), Message: "(service checkout) has reached a steady state."},
	}
	svc.StoppedTasks = []fakeaws.StoppedTask{
		{ID: "5c8d1e2f3a4b4c5d9e6f7a8b9c0d1e2f", StopCode: "EssentialContainerExited",
			StoppedReason: "Essential container in task exited", StoppedAt: at.Add(-30 * time.Second),
			Container: "checkout", ExitCode: &exit, Reason: "OutOfMemoryError: Container killed due to memory usage"},
		{ID: "1a2b3c4d5e6f4a7b8c9d0e1f2a3b4c5d", StopCode: "EssentialContainerExited",
			StoppedReason: "Essential container in task exited", StoppedAt: at.Add(-7 * time.Minute),
			Container: "checkout", ExitCode: &exit, Reason: "OutOfMemoryError: Container killed due to memory usage"},
	}
}

// serviceLog is a few recent log lines of an ECS service.
func serviceLog(service string, now time.Time) []fakeaws.LogEvent {
	var msgs []string
	switch service {
	case "checkout":
		msgs = []string{"GET /health 200 2ms", "POST /api/checkout 201 184ms order=ord_1041",
			"POST /api/checkout 201 171ms order=ord_1042", "payment captured order=ord_1042 amount=59.90 currency=EUR"}
	case "search":
		msgs = []string{"GET /health 200 1ms", `query q="running shoes" hits=42 took=18ms`, `query q="rain jacket" hits=17 took=12ms`}
	default:
		msgs = []string{"GET /health 200 1ms", "capture ok order=ord_1041 provider=demo-pay", "capture ok order=ord_1042 provider=demo-pay"}
	}
	out := make([]fakeaws.LogEvent, len(msgs))
	for i, m := range msgs {
		out[i] = fakeaws.LogEvent{Timestamp: now.Add(time.Duration(i-len(msgs)) * 3 * time.Minute), Message: m}
	}
	return out
}

// sendReceipt is the demo function send-receipt: it answers for the
// order_id of its payload, and fails as an unhandled error without one.
func sendReceipt(payload []byte) fakeaws.InvokeResult {
	var in struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal(payload, &in); err != nil || in.OrderID == "" {
		return fakeaws.InvokeResult{
			Payload:       []byte(`{"errorMessage":"order_id is required","errorType":"ValueError"}`),
			FunctionError: "Unhandled",
			LogTail:       "START RequestId: 7e20\n[ERROR] ValueError: order_id is required\nEND RequestId: 7e20\n",
		}
	}
	out, _ := json.Marshal(map[string]any{"sent": true, "order_id": in.OrderID, "message_id": "msg-" + in.OrderID})
	return fakeaws.InvokeResult{Payload: out, LogTail: "START RequestId: 7e21\nreceipt sent order=" + in.OrderID + "\nEND RequestId: 7e21\n"}
}

// The demo GitHub repositories, all in the organisation "demo".
var sandboxRepos = []struct {
	name, description string
	id                int64
	commits           []string // oldest first
	pulls             []fakegithub.Pull
	files             map[string]string // the default branch's tree, for grounded PRPs
}{
	{
		name: "storefront", id: 810001, description: "The shop's web front end (Next.js), hosted on Amplify",
		commits: []string{"Add product listing page", "Lazy-load product images", "Show delivery estimate on the cart page",
			"Fix currency rounding in the cart total"},
		pulls: []fakegithub.Pull{
			{Title: "Lazy-load product images", Author: "ana-lopez", Merged: true},
			{Title: "Add Apple Pay to the checkout page", Author: "demo-dev"},
		},
		files: map[string]string{
			"package.json":                   `{"name":"storefront","private":true,"scripts":{"dev":"next dev","build":"next build","lint":"next lint","test":"vitest run","typecheck":"tsc --noEmit"}}` + "\n",
			"package-lock.json":              "{}\n",
			"tsconfig.json":                  `{"compilerOptions":{"strict":true,"jsx":"preserve"}}` + "\n",
			".github/workflows/ci.yml":       "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: npm ci\n      - run: npm run lint\n      - run: npm test\n",
			"src/app/page.tsx":               "export default function Home() {\n  return <ProductList />;\n}\n",
			"src/app/cart/page.tsx":          "import { CartTotal } from \"@/components/CartTotal\";\n\nexport default function CartPage() {\n  return <CartTotal />;\n}\n",
			"src/app/checkout/page.tsx":      "export default function CheckoutPage() {\n  return <form action=\"/api/checkout\" />;\n}\n",
			"src/components/ProductList.tsx": "export function ProductList() {\n  return <ul />;\n}\n",
			"src/components/CartTotal.tsx":   "import { formatMoney } from \"@/lib/money\";\n\nexport function CartTotal({ cents = 0 }) {\n  return <p>{formatMoney(cents)}</p>;\n}\n",
			"src/lib/money.ts":               "export function formatMoney(cents: number): string {\n  return (cents / 100).toFixed(2);\n}\n",
			"src/lib/money.test.ts":          "import { formatMoney } from \"./money\";\n\ntest(\"rounds\", () => expect(formatMoney(105)).toBe(\"1.05\"));\n",
		},
	},
	{
		name: "checkout-api", id: 810002, description: "Checkout and payment capture API (Go), on ECS",
		commits: []string{"Add idempotency keys to POST /api/checkout", "Bump Go to 1.26", "Log order ids on capture failures",
			"Retry payment captures with backoff"},
		pulls: []fakegithub.Pull{
			{Title: "Bump Go to 1.26", Author: "sam-k", Merged: true},
			{Title: "Retry payment captures with backoff", Author: "demo-dev"},
			{Title: "Experiment: capture payments asynchronously", Author: "sam-k", State: "closed"},
		},
		files: map[string]string{
			"go.mod":                            "module github.com/demo/checkout-api\n\ngo 1.26\n",
			"Makefile":                          ".PHONY: test lint build\n\ntest:\n\tgo test -race ./...\n\nlint:\n\tgo vet ./...\n\nbuild:\n\tgo build -o bin/checkout-api ./cmd/checkout-api\n",
			".github/workflows/ci.yml":          "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make lint\n      - run: make test\n",
			"cmd/checkout-api/main.go":          "package main\n\nfunc main() {}\n",
			"internal/checkout/handler.go":      "package checkout\n\n// Handler serves POST /api/checkout.\ntype Handler struct{}\n",
			"internal/checkout/handler_test.go": "package checkout\n",
			"internal/payment/capture.go":       "package payment\n\n// Capture captures an authorised payment, retrying with backoff.\nfunc Capture(orderID string) error { return nil }\n",
			"internal/order/order.go":           "package order\n\n// Order is a customer's order.\ntype Order struct{ ID string }\n",
		},
	},
	{
		name: "infra", id: 810003, description: "Terraform for the ECS clusters, Lambda functions and Amplify app",
		commits: []string{"Add the staging cluster", "Move receipts to Lambda (send-receipt)", "Alarm on the checkout 5xx rate",
			"Scale search to 3 tasks in production"},
		pulls: []fakegithub.Pull{
			{Title: "Scale search to 3 tasks in production", Author: "ana-lopez", Merged: true},
			{Title: "Scale checkout to 3 tasks in production", Author: "demo-dev"},
		},
	},
}

// seedSandboxGitHub fills the fake GitHub: the demo user and two teammates,
// and the repositories of sandboxRepos, private to the organisation "demo"
// and shared with them, with commits over the last days, pull requests and
// a recent push each.
func seedSandboxGitHub(gh *fakegithub.Server, now time.Time) {
	authors := []string{GitHubLogin, "ana-lopez", "sam-k"}
	gh.AddUser(GitHubLogin, 90001).Profile("Demo Developer", "demo-dev@example.com")
	gh.AddUser("ana-lopez", 90002).Profile("Ana López", "ana@example.com")
	gh.AddUser("sam-k", 90003).Profile("Sam Kowalski", "sam@example.com")
	now = now.Truncate(time.Minute)
	for ri, r := range sandboxRepos {
		repo := gh.AddRepo(Org, r.name, fakegithub.RepoID(r.id), fakegithub.Private(),
			fakegithub.VisibleTo(authors...), fakegithub.Description(r.description))
		for ci, msg := range r.commits {
			age := time.Duration(len(r.commits)-ci)*29*time.Hour + time.Duration(ri)*47*time.Minute
			repo.Commit(fakegithub.Commit{Message: msg, Author: authors[(ri+ci)%len(authors)], Date: now.Add(-age)})
		}
		for pi, p := range r.pulls {
			p.CreatedAt = now.Add(-time.Duration(len(r.pulls)-pi) * 31 * time.Hour)
			p.UpdatedAt = p.CreatedAt.Add(5 * time.Hour)
			p.Head = slug(p.Title)
			repo.Pull(p)
		}
		repo.Activity(fakegithub.Activity{Actor: authors[ri%len(authors)], At: now.Add(-time.Duration(ri+1) * 3 * time.Hour)})
		if r.files != nil {
			repo.Files(r.files)
		}
	}
}

// slug is a branch name made of a title: lower-case words joined by dashes.
func slug(title string) string {
	words := strings.FieldsFunc(strings.ToLower(title), func(r rune) bool {
		return (r < 'a' || r > 'z') && (r < '0' || r > '9')
	})
	return strings.Join(words, "-")
}

// tokenFileName is the token file of mode under the data directory.
func tokenFileName(mode app.Mode) string {
	if mode == app.ModeServe {
		return ServeTokenFileName
	}
	return TokenFileName
}
