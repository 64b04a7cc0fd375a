// Command devpilot is the devpilot service: `devpilot run` starts the HTTP API
// and the worker in one process on the embedded defaults; serve and worker
// start them separately; migrate, token and version are one-shot commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/system"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/ports"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

const usage = `usage: devpilot <command> [flags]

commands:
  run       HTTP API and worker in one process (embedded defaults, SQLite under ./data;
            sandbox providers when no provider is configured)
  serve     HTTP API only (--sandbox: with sandbox providers, working its own jobs)
  worker    background job worker only (waits for a migrated database)
  migrate   apply database migrations and exit
  token     manage API tokens: token create | list | revoke
  eval      run the evaluation corpus and report metrics; eval compare A B
  version   print the version (also: devpilot --version)

devpilot COMMAND --help (or devpilot help COMMAND) describes a command and its flags.
`

// errUsage marks errors caused by the command line or the configuration:
// the process exits with status 2 for them.
type errUsage struct{ error }

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// cli is one invocation's environment and output streams.
type cli struct {
	getenv         func(string) string
	stdout, stderr io.Writer
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	c := cli{getenv: getenv, stdout: stdout, stderr: stderr}
	err := c.dispatch(ctx, args)
	if err == nil || errors.Is(err, errHelpShown) {
		return 0
	}
	fmt.Fprintln(stderr, "devpilot: "+oneLine(err))
	if errors.As(err, new(errUsage)) {
		return 2
	}
	return 1
}

func (c cli) dispatch(ctx context.Context, args []string) error {
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run", "worker":
		if err := c.parse(newFlags(cmd), rest, 0); err != nil {
			return err
		}
		return c.serve(ctx, app.Mode(cmd))
	case "serve":
		fs, sandbox := serveFlagSet()
		if err := c.parse(fs, rest, 0); err != nil {
			return err
		}
		var opts []app.LoadOption
		if *sandbox {
			opts = append(opts, app.WithSandboxFlag())
		}
		return c.serve(ctx, app.ModeServe, opts...)
	case "migrate":
		if err := c.parse(newFlags(cmd), rest, 0); err != nil {
			return err
		}
		return c.migrate(ctx)
	case "token":
		return c.token(ctx, rest)
	case "eval":
		return c.eval(ctx, rest)
	case "version", "--version", "-version":
		if err := c.parse(newFlags("version"), rest, 0); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "devpilot", buildVersion())
		return nil
	case "help", "-h", "-help", "--help":
		if len(rest) > 0 && rest[0] != "help" && !strings.HasPrefix(rest[0], "-") {
			return c.dispatch(ctx, append(rest[:1:1], "--help"))
		}
		fmt.Fprint(c.stdout, usage)
		return nil
	}
	return errUsage{fmt.Errorf("unknown command %q (try: devpilot help)", cmd)}
}

// commandHelp is each command's synopsis and what it does, for --help.
var commandHelp = map[string]string{
	"run": `usage: devpilot run

HTTP API and worker in one process, on the embedded defaults: a SQLite file
under ./data, a secret key generated into ./data/secret.key, and the sandbox
providers when no provider is configured. Configured by DEVPILOT_* variables
(see the README). Takes no flags.
`,
	"serve": `usage: devpilot serve [--sandbox]

HTTP API only. Needs DEVPILOT_SECRET_KEY and a migrated database (until
devpilot migrate ran, /readyz answers 503 and says how many are pending).
With --sandbox it runs the sandbox providers and works its own jobs in
process, on a job queue no worker takes from (a worker has no sandbox
model); its demo token is kept in DEVPILOT_DATA_DIR/sandbox-token-serve.
`,
	"worker": `usage: devpilot worker

Background job worker only. Needs DEVPILOT_SECRET_KEY. On a database not
migrated yet it says so ("N migrations pending: run devpilot migrate"),
answers /readyz 503 on DEVPILOT_WORKER_ADDR, and starts working jobs once
devpilot migrate ran. Takes no flags.
`,
	"migrate": `usage: devpilot migrate

Applies pending database migrations to DEVPILOT_DATABASE_URL and exits,
saying what it applied ("applied 3 migrations: …") or "database is up to
date". Takes no flags.
`,
	"version": `usage: devpilot version   (or devpilot --version)

Prints the version: the release, or the commit the binary was built from.
`,
	"token create": `usage: devpilot token create --email E --org O [--role admin|operator|member] [--name N] [--ttl 720h] [--scopes "read cloud:read"]

Creates the org and user if needed and prints a new API token once.
`,
	"token list": `usage: devpilot token list [--org O] [--email E]

Lists API tokens: id, prefix, owner, last use and status.
`,
	"token revoke": `usage: devpilot token revoke ID

Revokes the API token with that id (see devpilot token list).
`,
	"eval": `usage: devpilot eval [run] [flags] | devpilot eval compare A B [--threshold 0.05]

Runs the golden corpus (specification cases, content briefs, assistant tasks)
on a devpilot started in this process, and reports metrics; compare tells
two runs apart. devpilot eval run --help and devpilot eval compare --help
describe each. Needs a build with the sandbox.
`,
	"eval run": `usage: devpilot eval [run] [--cases id,id] [--out DIR] [--concurrency N] [--parts spec,content,assistant] [--model provider:model] [--resume]

Runs the golden corpus on a devpilot started in this process: a SQLite
database in the run directory, the sandbox's fake AWS and GitHub (each case's
repository is added to the fake GitHub), and the configured model
(OPENAI_API_KEY, OPENAI_BASE_URL, DEVPILOT_LLM_*, DEVPILOT_MODEL_*) or, with
none, the sandbox's demo model in its faithful mode (each stage written only
from its request). --model anthropic:claude-sonnet-4-5 (or openai:…,
bedrock:…) runs every feature on that model: two runs compared with eval
compare compare two providers.
Each case goes through the five specification stages; the content
part writes briefs under a brand; the assistant part plays scripted chats.
Writes report.json and report.md in the run directory and prints a summary.
An interrupted run (Ctrl-C) continues with --resume --out DIR.
The optional judge model scores each stage on a fixed rubric:
DEVPILOT_EVAL_JUDGE_MODEL (with DEVPILOT_EVAL_JUDGE_BASE_URL,
DEVPILOT_EVAL_JUDGE_API_KEY); off when unset.
`,
	"eval compare": `usage: devpilot eval compare A B [--threshold 0.05]

Compares two runs (run directories or report.json files): prints each
metric's change from A to B, and exits with status 1, naming each one, when
a metric got worse by more than the threshold (coverage, grounding,
first-try validity and task success down; conflicts, findings, repair turns
and failures up). Shares (0 to 1) compare by absolute change, counts by
change relative to A. Time and tokens are shown, never regressions.
`,
	"token": `usage: devpilot token create | list | revoke [flags]

Manages API tokens; devpilot token SUBCOMMAND --help describes each.
`,
}

// errHelpShown is returned once a command printed its help: exit 0.
var errHelpShown = errors.New("help shown")

func newFlags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parse parses a command's flags. -h or --help prints the command's help
// and flags to stdout and returns errHelpShown; other flag errors and more
// than maxArgs arguments are usage errors.
func (c cli) parse(fs *flag.FlagSet, args []string, maxArgs int) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		c.help(fs)
		return errHelpShown
	}
	if err != nil {
		return errUsage{fmt.Errorf("%s: %w", fs.Name(), err)}
	}
	if fs.NArg() > maxArgs {
		return errUsage{fmt.Errorf("%s takes no arguments, got %q", fs.Name(), fs.Arg(maxArgs))}
	}
	return nil
}

// help prints fs's command help and its flags.
func (c cli) help(fs *flag.FlagSet) {
	fmt.Fprint(c.stdout, commandHelp[fs.Name()])
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(c.stdout, "\nflags:")
	fs.SetOutput(c.stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// serveFlagSet returns serve's flags and where --sandbox lands.
func serveFlagSet() (*flag.FlagSet, *bool) {
	fs := newFlags("serve")
	return fs, fs.Bool("sandbox", false, "run the sandbox providers (fake OpenAI, AWS and GitHub on loopback)")
}

// serveFlags parses serve's flags and reports whether --sandbox was given.
func serveFlags(args []string) (bool, error) {
	fs, sandbox := serveFlagSet()
	err := cli{stdout: io.Discard}.parse(fs, args, 0)
	return *sandbox, err
}

func (c cli) loadConfig(mode app.Mode, opts ...app.LoadOption) (app.Config, error) {
	cfg, err := app.Load(mode, c.getenv, opts...)
	if err == nil {
		cfg.Version = buildVersion()
		err = checkSandboxBuild(cfg)
	}
	if err != nil {
		return cfg, errUsage{err}
	}
	return cfg, nil
}

// serve runs a long-running host until SIGINT or SIGTERM, with the sandbox
// providers when the configuration says so.
func (c cli) serve(ctx context.Context, mode app.Mode, opts ...app.LoadOption) error {
	cfg, err := c.loadConfig(mode, opts...)
	if err != nil {
		return err
	}
	if mode == app.ModeRun || mode == app.ModeServe {
		var release func()
		if cfg, release, err = app.ListenHTTP(cfg); err != nil {
			return err
		}
		defer release()
	}
	logger := app.NewLogger(cfg, c.stderr)
	if err := app.CheckFiles(cfg, logger); err != nil {
		return err
	}
	if cfg.UsesDataDir() {
		// Before the secret key file, the database and the sandbox's
		// token file are written there.
		if err := app.PrepareDataDir(cfg); err != nil {
			return err
		}
	}
	if mode == app.ModeRun || mode == app.ModeServe {
		state := "off"
		if cfg.Sandbox {
			state = "on"
		}
		logger.Info("sandbox providers "+state, "because", cfg.SandboxReason)
	}
	cfg, banner, stopSandbox, err := startSandbox(cfg, logger)
	if err != nil {
		return err
	}
	defer stopSandbox()
	fxApp := fx.New(app.Options(cfg, logger))
	if err := fxApp.Err(); err != nil {
		return app.StartupCause(err)
	}
	// Signals are caught from before the start: an orchestrator may stop a
	// replica as soon as /readyz answers, before Start has returned.
	ctx, stopSignals := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stopSignals()
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop while starting: fx stopped what had started
		}
		return app.StartupCause(err)
	}
	if banner != nil {
		fmt.Fprint(c.stdout, banner())
	}
	if mode == app.ModeRun {
		fmt.Fprintf(c.stdout, "devpilot is running (data in %s). Create an API token with:\n  %s token create --email you@example.com --org demo --role admin\n",
			cfg.DataDir, selfName())
	}
	exitCode := 0
	select {
	case sig := <-fxApp.Wait():
		exitCode = sig.ExitCode
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+5*time.Second)
	defer cancel()
	if err := fxApp.Stop(stopCtx); err != nil {
		return err
	}
	if exitCode != 0 {
		return fmt.Errorf("stopped after a fatal error (exit code %d)", exitCode)
	}
	return nil
}

func openDB(ctx context.Context, cfg app.Config) (*sqlstore.DB, error) {
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, errUsage{&app.StartupError{What: "cannot open the database", Setting: app.EnvDatabaseURL, Err: err}}
	}
	return db, nil
}

func (c cli) migrate(ctx context.Context) error {
	cfg, err := c.loadConfig(app.ModeMigrate)
	if err != nil {
		return err
	}
	logger := app.NewLogger(cfg, c.stderr)
	if err := app.CheckFiles(cfg, logger); err != nil {
		return err
	}
	if cfg.UsesDataDir() {
		if err := app.PrepareDataDir(cfg); err != nil {
			return err
		}
	}
	db, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := app.MigrateUp(ctx, db, logger)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, app.DescribeMigrations(applied))
	return nil
}

// identityService opens the database and returns the identity service over
// it, refusing to work on an unmigrated database.
func identityService(ctx context.Context, cfg app.Config) (*identity.Service, func() error, error) {
	db, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := app.NewReadiness(db).Ready(ctx); err != nil {
		db.Close()
		return nil, nil, err
	}
	store := sqlstore.NewIdentity(db)
	svc := identity.New(identity.Deps{
		Orgs: store, Users: store, Tokens: store, Tx: db, Clock: system.Clock{}, IDs: system.IDs{},
	})
	return svc, db.Close, nil
}

func (c cli) token(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errUsage{errors.New("token needs a subcommand: create, list or revoke")}
	}
	sub, args := args[0], args[1:]
	if sub == "-h" || sub == "-help" || sub == "--help" || sub == "help" {
		return c.parse(newFlags("token"), []string{"--help"}, 0)
	}
	fs := newFlags("token " + sub)
	var email, org *string
	var role, name, scopes string
	var ttl time.Duration
	switch sub {
	case "create":
		email = fs.String("email", "", "the user's email (required)")
		org = fs.String("org", "", "the organisation's name (required)")
		fs.StringVar(&role, "role", "member", "admin, operator or member (for a new user)")
		fs.StringVar(&name, "name", "", "a label for the token")
		fs.DurationVar(&ttl, "ttl", 0, "lifetime, such as 720h (default: no expiry)")
		fs.StringVar(&scopes, "scopes", "", `what the token may do, space- or comma-separated: read, write, or an area (assistant, spec, cloud, content, voice, scm) alone or with :read or :write (default: "read write")`)
	case "list":
		email = fs.String("email", "", "only this user's tokens")
		org = fs.String("org", "", "only this organisation's tokens")
	case "revoke":
		email, org = new(string), new(string)
	default:
		return errUsage{fmt.Errorf("unknown token subcommand %q: use create, list or revoke", sub)}
	}
	maxArgs := 0
	if sub == "revoke" {
		maxArgs = 1
	}
	if err := c.parse(fs, args, maxArgs); err != nil {
		return err
	}
	switch {
	case sub == "create" && (*email == "" || *org == ""):
		return errUsage{errors.New("token create needs --email and --org")}
	case sub == "create" && !ports.Role(role).Valid():
		return errUsage{fmt.Errorf("token create: --role %q must be admin, operator or member", role)}
	case sub == "revoke" && fs.NArg() != 1:
		return errUsage{errors.New("token revoke needs exactly one token id")}
	}

	cfg, err := c.loadConfig(app.ModeToken)
	if err != nil {
		return err
	}
	svc, closeDB, err := identityService(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeDB()

	switch sub {
	case "create":
		issued, err := svc.IssueToken(ctx, identity.IssueTokenInput{
			Email: *email, OrgName: *org, Role: ports.Role(role), Name: name, TTL: ttl,
			Scopes: strings.FieldsFunc(scopes, func(r rune) bool { return r == ',' || r == ' ' }),
		})
		if err != nil {
			return asUsage(err)
		}
		fmt.Fprintln(c.stdout, issued.Token)
		fmt.Fprintf(c.stderr, "token %s for %s (%s) in org %s; it is shown only once\n",
			issued.Record.ID, issued.User.Email, issued.User.Role, issued.Org.Name)
		return nil
	case "list":
		tokens, err := svc.ListTokens(ctx, *org, *email)
		if err != nil {
			return asUsage(err)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPREFIX\tORG\tEMAIL\tNAME\tCREATED\tLAST USED\tSTATUS")
		for _, t := range tokens {
			fmt.Fprintf(tw, "%s\t%s…\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Prefix, t.OrgName, t.Email, t.Name,
				t.CreatedAt.Format(time.RFC3339), stamp(t.LastUsedAt), t.Status(time.Now()))
		}
		return tw.Flush()
	default:
		if err := svc.RevokeToken(ctx, fs.Arg(0)); err != nil {
			if ports.IsKind(err, ports.KindNotFound) {
				return errUsage{fmt.Errorf("token revoke: no token has the id %q (devpilot token list shows the ids)", fs.Arg(0))}
			}
			return asUsage(err)
		}
		switch {
		case cfg.AuthCacheTTL == 0:
			fmt.Fprintln(c.stdout, "revoked", fs.Arg(0))
		case strings.HasPrefix(cfg.DatabaseURL, "postgres"): // servers watch revocations
			fmt.Fprintf(c.stdout, "revoked %s (running servers stop accepting it at once, within %s at the latest)\n", fs.Arg(0), cfg.AuthCacheTTL)
		default:
			fmt.Fprintf(c.stdout, "revoked %s (running servers stop accepting it within %s)\n", fs.Arg(0), cfg.AuthCacheTTL)
		}
		return nil
	}
}

// asUsage turns errors about the caller's input into usage errors (exit 2)
// that say the Error's message only, without the store's cause (such as the
// driver's "sql: no rows in result set").
func asUsage(err error) error {
	switch ports.KindOf(err) {
	case ports.KindInvalid, ports.KindMalformed, ports.KindNotFound, ports.KindConflict:
		pe, _ := ports.AsError(err)
		msg := ports.Public(pe).Message
		for _, f := range pe.Fields {
			msg += "; " + f.Field + ": " + f.Reason
		}
		return errUsage{errors.New(msg)}
	}
	return err
}

func stamp(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.RFC3339)
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
}

func selfName() string {
	if strings.Contains(os.Args[0], "go-build") {
		return "go run ./hosts/devpilot"
	}
	return os.Args[0]
}

// buildVersion is the version `devpilot version` prints: the -ldflags
// version, else the build's.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return versionOf(info)
}

// versionOf describes a build: its module version, or, for a development
// build ("(devel)"), "devel" with the commit, its time and whether the tree
// had uncommitted changes, from the VCS stamp of `go build`.
func versionOf(info *debug.BuildInfo) string {
	vcs := map[string]string{}
	for _, s := range info.Settings {
		vcs[s.Key] = s.Value
	}
	rev := vcs["vcs.revision"]
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		if rev != "" && !strings.Contains(v, rev) {
			v += " " + rev
		}
		return v
	}
	if rev == "" {
		return "devel (no VCS information: built outside a git checkout, or with -buildvcs=false)"
	}
	details := []string{"commit " + rev}
	if t := vcs["vcs.time"]; t != "" {
		details = append(details, t)
	}
	if vcs["vcs.modified"] == "true" {
		details = append(details, "with uncommitted changes")
	}
	return "devel (" + strings.Join(details, ", ") + ")"
}
