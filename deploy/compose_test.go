package deploy

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"
)

// composeSecrets are distinctive values for the .env the test writes from
// .env.example: none may appear in compose.yaml or its config files.
var composeSecrets = map[string]string{
	"POSTGRES_PASSWORD":     "pgpwPG7f3a9c2e",
	"DEVPILOT_SECRET_KEY":   "Y29tcG9zZS1zZWNyZXQta2V5LUNLLTMyLWJ5dGVzISE=",
	"OPENAI_API_KEY":        "sk-COMPOSE-OPENAI-5b6c",
	"GITHUB_CLIENT_SECRET":  "compose-gh-secret-CG-8d9e",
	"GITHUB_WEBHOOK_SECRET": "compose-gh-webhook-CW-0a1b",
}

// composeFiles are compose.yaml and the files it mounts, relative to the
// repository's root.
var composeFiles = []string{"compose.yaml", ".env.example", "deploy/compose/Caddyfile", "deploy/compose/otel-collector.yaml", "deploy/compose/prometheus.yml"}

// composeDir copies compose.yaml and its files into a temporary project
// directory, with .env made from .env.example by fill (a variable's line
// `NAME=` or `# NAME=` becomes `NAME=value`).
func composeDir(t *testing.T, fill map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range composeFiles {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if f == ".env.example" {
			text := string(b)
			for k, v := range fill {
				re := regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(k) + `=.*$`)
				if !re.MatchString(text) {
					t.Fatalf(".env.example has no line for %s", k)
				}
				text = re.ReplaceAllString(text, k+"="+v)
			}
			if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func loadCompose(dir string, profiles ...string) (*types.Project, error) {
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir),
		cli.WithEnv([]string{}), // not this process's environment
		cli.WithEnvFiles(filepath.Join(dir, ".env")),
		cli.WithDotEnv,
		cli.WithProfiles(profiles),
	)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return opts.LoadProject(ctx)
}

// TestComposeNeedsItsSecrets: .env.example as it is committed (secrets
// empty) is refused by name, as `docker compose up` would refuse it.
func TestComposeNeedsItsSecrets(t *testing.T) {
	_, err := loadCompose(composeDir(t, nil))
	if err == nil || !strings.Contains(err.Error(), "POSTGRES_PASSWORD") {
		t.Fatalf("loading with the empty .env.example: %v, want an error naming POSTGRES_PASSWORD", err)
	}
	_, err = loadCompose(composeDir(t, map[string]string{"POSTGRES_PASSWORD": "x"}))
	if err == nil || !strings.Contains(err.Error(), "DEVPILOT_SECRET_KEY") {
		t.Fatalf("loading without DEVPILOT_SECRET_KEY: %v, want an error naming it", err)
	}
}

// TestComposeProject loads compose.yaml with compose-go (what docker compose
// itself uses) and checks its shape.
func TestComposeProject(t *testing.T) {
	dir := composeDir(t, composeSecrets)
	p, err := loadCompose(dir)
	if err != nil {
		t.Fatalf("loading compose.yaml: %v", err)
	}
	svc := func(name string) types.ServiceConfig {
		t.Helper()
		s, err := p.GetService(name)
		if err != nil {
			t.Fatalf("service %s: %v (have %v)", name, err, p.ServiceNames())
		}
		return s
	}
	if names := p.ServiceNames(); slices.Contains(names, "prometheus") || slices.Contains(names, "otel-collector") {
		t.Errorf("observability services start without their profile: %v", names)
	}

	pg := svc("postgres")
	if pg.HealthCheck == nil || len(pg.HealthCheck.Test) == 0 {
		t.Errorf("postgres has no healthcheck")
	}
	migrate := svc("migrate")
	if strings.Join(migrate.Command, " ") != "migrate" || migrate.Restart != "no" {
		t.Errorf("migrate: command %v, restart %q", migrate.Command, migrate.Restart)
	}
	if d, ok := migrate.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
		t.Errorf("migrate does not wait for a healthy postgres: %v", migrate.DependsOn)
	}

	var serves []types.ServiceConfig
	for _, s := range p.Services {
		if strings.Join(s.Command, " ") == "serve" {
			n := 1
			if s.Deploy != nil && s.Deploy.Replicas != nil {
				n = *s.Deploy.Replicas
			}
			for range n {
				serves = append(serves, s)
			}
		}
	}
	if len(serves) != 2 {
		t.Errorf("%d serve replicas, want 2", len(serves))
	}
	worker := svc("worker")
	if strings.Join(worker.Command, " ") != "worker" {
		t.Errorf("worker runs %v", worker.Command)
	}
	for _, s := range append(slices.Clone(serves), worker) {
		if d, ok := s.DependsOn["migrate"]; !ok || d.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("%s does not wait for migrate to complete: %v", s.Name, s.DependsOn)
		}
	}
	for _, s := range append(slices.Clone(serves), worker, migrate) {
		checkDevpilotService(t, s)
	}

	proxy := svc("proxy")
	if len(proxy.Ports) != 1 || proxy.Ports[0].Target != 8080 {
		t.Errorf("proxy ports: %+v", proxy.Ports)
	}
	for _, s := range p.Services {
		if s.Name != "proxy" && s.Name != "prometheus" && len(s.Ports) > 0 {
			t.Errorf("%s publishes ports %+v: only the proxy (and Prometheus) should", s.Name, s.Ports)
		}
	}
	var caddyfile string
	for _, v := range proxy.Volumes {
		if v.Target == "/etc/caddy/Caddyfile" {
			caddyfile = v.Source
		}
	}
	if caddyfile == "" {
		t.Fatalf("proxy mounts no Caddyfile: %+v", proxy.Volumes)
	}
	b, err := os.ReadFile(caddyfile)
	if err != nil {
		t.Fatalf("the proxy's config: %v", err)
	}
	conf := string(b)
	for _, s := range serves {
		if !strings.Contains(conf, s.Name+":8080") {
			t.Errorf("Caddyfile does not proxy to %s:8080", s.Name)
		}
	}
	for _, want := range []string{"health_uri /readyz", "flush_interval -1", "respond @metrics 404"} {
		if !strings.Contains(conf, want) {
			t.Errorf("Caddyfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`(?m)^\s*write\s`).MatchString(conf) {
		t.Errorf("Caddyfile sets a write timeout: it would cut chat streams")
	}
	if !slices.Contains(p.DisabledServiceNames(), "prometheus") || !slices.Contains(p.DisabledServiceNames(), "otel-collector") {
		t.Errorf("prometheus and otel-collector are not behind a profile: %v", p.DisabledServiceNames())
	}

	checkNoSecretLiteral(t, dir)
}

// checkDevpilotService: the image's user, a read-only root with /data on
// tmpfs, no capabilities, the database and key from .env, and a stop grace
// longer than DEVPILOT_SHUTDOWN_GRACE.
func checkDevpilotService(t *testing.T, s types.ServiceConfig) {
	t.Helper()
	if !s.ReadOnly || s.User != "65532:65532" || !slices.Contains(s.CapDrop, "ALL") {
		t.Errorf("%s: read_only %v, user %q, cap_drop %v", s.Name, s.ReadOnly, s.User, s.CapDrop)
	}
	if !slices.ContainsFunc(s.Tmpfs, func(m string) bool { return strings.HasPrefix(m, "/data") }) {
		t.Errorf("%s has no writable /data: tmpfs %v", s.Name, s.Tmpfs)
	}
	env := func(k string) string {
		if v := s.Environment[k]; v != nil {
			return *v
		}
		return ""
	}
	if want := composeSecrets["DEVPILOT_SECRET_KEY"]; env("DEVPILOT_SECRET_KEY") != want {
		t.Errorf("%s DEVPILOT_SECRET_KEY = %q, want .env's", s.Name, env("DEVPILOT_SECRET_KEY"))
	}
	if url := env("DEVPILOT_DATABASE_URL"); !strings.HasPrefix(url, "postgres://") || !strings.Contains(url, composeSecrets["POSTGRES_PASSWORD"]+"@postgres:5432/") {
		t.Errorf("%s DEVPILOT_DATABASE_URL = %q", s.Name, url)
	}
	if env("OPENAI_API_KEY") != composeSecrets["OPENAI_API_KEY"] {
		t.Errorf("%s does not get .env's OPENAI_API_KEY", s.Name)
	}
	grace, err := time.ParseDuration(env("DEVPILOT_SHUTDOWN_GRACE"))
	if err != nil {
		t.Errorf("%s DEVPILOT_SHUTDOWN_GRACE: %v", s.Name, err)
	}
	if s.StopGracePeriod == nil || time.Duration(*s.StopGracePeriod) <= grace {
		t.Errorf("%s stop_grace_period %v is not longer than DEVPILOT_SHUTDOWN_GRACE %v", s.Name, s.StopGracePeriod, grace)
	}
}

var secretName = regexp.MustCompile(`(?i)(PASSWORD|SECRET|_KEY|TOKEN|CREDENTIAL)`)

// checkNoSecretLiteral: compose.yaml gives every secret-looking variable by
// reference to .env (${NAME...}), and none of .env's values appear in it or
// in its config files.
func checkNoSecretLiteral(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`^[^$]*\$\{[A-Z_]+(:?[-?][^}]*)?\}`)
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && secretName.MatchString(k) && !ref.MatchString(s) {
					t.Errorf("compose.yaml %s.%s is a literal %q: take it from .env", path, k, s)
				}
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range v {
				if s, ok := e.(string); ok && strings.Contains(s, "=") {
					k, val, _ := strings.Cut(s, "=")
					if secretName.MatchString(k) && !ref.MatchString(val) {
						t.Errorf("compose.yaml %s %s is a literal: take it from .env", path, k)
					}
				}
				walk(path, e)
			}
		}
	}
	walk("", doc)
	for _, f := range composeFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range composeSecrets {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds %s's value", f, k)
			}
		}
		if f == ".env.example" {
			for _, line := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") && secretName.MatchString(k) && v != "" {
					t.Errorf(".env.example gives %s a value: leave secrets empty", k)
				}
			}
		}
	}
}

// TestComposeObservability: with the observability profile, the collector
// receives OTLP/HTTP on 4318 and Prometheus scrapes every replica's and the
// worker's /metrics.
func TestComposeObservability(t *testing.T) {
	dir := composeDir(t, composeSecrets)
	p, err := loadCompose(dir, "observability")
	if err != nil {
		t.Fatalf("loading compose.yaml with --profile observability: %v", err)
	}
	var serves []string
	for _, s := range p.Services {
		if strings.Join(s.Command, " ") == "serve" {
			serves = append(serves, s.Name+":8080")
		}
	}
	read := func(service, target string) map[string]any {
		t.Helper()
		s, err := p.GetService(service)
		if err != nil {
			t.Fatalf("%s: %v", service, err)
		}
		for _, v := range s.Volumes {
			if v.Target == target {
				b, err := os.ReadFile(v.Source)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := yaml.Unmarshal(b, &m); err != nil {
					t.Fatalf("%s: %v", v.Source, err)
				}
				return m
			}
		}
		t.Fatalf("%s mounts nothing at %s", service, target)
		return nil
	}
	otel := read("otel-collector", "/etc/otelcol/config.yaml")
	if str(otel, "receivers", "otlp", "protocols", "http", "endpoint") != "0.0.0.0:4318" || !strings.Contains(str(otel, "service", "pipelines", "traces", "receivers"), "otlp") {
		t.Errorf("collector config: %v", otel)
	}
	prom := read("prometheus", "/etc/prometheus/prometheus.yml")
	targets := str(prom, "scrape_configs")
	for _, want := range append(serves, "worker:9091") {
		if !strings.Contains(targets, `"`+want+`"`) {
			t.Errorf("Prometheus does not scrape %s: %s", want, targets)
		}
	}
}
