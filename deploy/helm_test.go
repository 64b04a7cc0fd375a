package deploy

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

var chartDir = filepath.Join("helm", "devpilot")

// secretValues are distinctive values for every secret setting: none of
// them may appear in a rendered object other than a Secret, in clear or in
// base64.
var secretValues = map[string]string{
	"databaseURL":         "postgres://devpilot:pw-DB-5f1c9a@db.internal:5432/devpilot?sslmode=require",
	"secretKey":           "c2VjcmV0LWtleS1TSy03ZTJiNDQtMzItYnl0ZXMtISE=",
	"openaiAPIKey":        "sk-OPENAI-9d8c7b6a",
	"githubClientSecret":  "gh-client-secret-CS-1a2b3c",
	"githubWebhookSecret": "gh-webhook-secret-WH-4d5e6f",
	"oidcClientSecret":    "oidc-client-secret-OC-7a8b9c",
	"awsAccessKeyID":      "AKIAAWSKEYID0A1B2C3",
	"awsSecretAccessKey":  "aws-secret-access-key-AS-0f0e0d",
	"otlpHeaders":         "x-honeycomb-team=otlp-header-OH-112233",
}

// everythingOn turns every optional part of the chart on, with every secret
// set to a distinctive value.
func everythingOn() map[string]any {
	secrets := map[string]any{"extra": map[string]any{"GITHUB_PRIVATE_KEY_EXTRA": "extra-secret-EX-445566"}}
	for k, v := range secretValues {
		secrets[k] = v
	}
	return map[string]any{
		"secrets": secrets,
		"config": map[string]any{
			"publicURL":            "https://devpilot.example.com",
			"otlpEndpoint":         "http://otel-collector.observability:4318",
			"shutdownGraceSeconds": 45,
			"env":                  map[string]any{"DEVPILOT_LLM_MODEL": "gpt-4o", "GITHUB_CLIENT_ID": "Iv1.public", "DEVPILOT_MAX_TOKENS": 2048},
		},
		"serve":          map[string]any{"autoscaling": map[string]any{"enabled": true}},
		"ingress":        map[string]any{"enabled": true, "tls": []any{map[string]any{"secretName": "devpilot-tls", "hosts": []any{"devpilot.example.com"}}}},
		"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "kube-prometheus-stack"}},
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return c
}

// object is one rendered Kubernetes object.
type object struct {
	file string
	raw  string
	m    map[string]any
}

func (o object) kind() string { return str(o.m, "kind") }
func (o object) name() string { return str(o.m, "metadata", "name") }

// render renders the chart as `helm template` would, for an install, and
// parses every manifest.
func render(t *testing.T, c *chart.Chart, vals map[string]any) (objs []object, notes string) {
	t.Helper()
	objs, notes, err := tryRender(c, vals)
	if err != nil {
		t.Fatalf("rendering: %v", err)
	}
	return objs, notes
}

func tryRender(c *chart.Chart, vals map[string]any) ([]object, string, error) {
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "rel", Namespace: "team", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, "", err
	}
	out, err := engine.Render(c, rv)
	if err != nil {
		return nil, "", err
	}
	var objs []object
	var notes string
	for file, text := range out {
		if strings.HasSuffix(file, "NOTES.txt") {
			notes = text
			continue
		}
		for _, doc := range releaseutil.SplitManifests(text) {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				return nil, "", fmt.Errorf("%s: %v\n%s", file, err, doc)
			}
			if len(m) == 0 {
				continue
			}
			objs = append(objs, object{file: file, raw: doc, m: m})
		}
	}
	slices.SortFunc(objs, func(a, b object) int { return strings.Compare(a.kind()+"/"+a.name(), b.kind()+"/"+b.name()) })
	return objs, notes, nil
}

// TestChartLints runs helm lint (with the chart's schema) on the defaults and
// with everything on: no error, and no warning either.
func TestChartLints(t *testing.T) {
	for name, vals := range map[string]map[string]any{"defaults": nil, "everything on": everythingOn()} {
		t.Run(name, func(t *testing.T) {
			res := lint.All(chartDir, vals, "team", false)
			for _, m := range res.Messages {
				t.Logf("lint: %s", m)
				if m.Severity >= support.WarningSev {
					t.Errorf("lint: %s", m)
				}
			}
		})
	}
}

func find(objs []object, kind, suffix string) (object, bool) {
	for _, o := range objs {
		if o.kind() == kind && strings.HasSuffix(o.name(), suffix) {
			return o, true
		}
	}
	return object{}, false
}

func mustFind(t *testing.T, objs []object, kind, suffix string) object {
	t.Helper()
	o, ok := find(objs, kind, suffix)
	if !ok {
		var have []string
		for _, o := range objs {
			have = append(have, o.kind()+"/"+o.name())
		}
		t.Fatalf("no %s named *%s; rendered: %v", kind, suffix, have)
	}
	return o
}

// TestChartRenders checks the rendered objects with the defaults and with
// everything on.
func TestChartRenders(t *testing.T) {
	c := loadChart(t)
	for name, vals := range map[string]map[string]any{"defaults": nil, "everything on": everythingOn()} {
		t.Run(name, func(t *testing.T) {
			objs, notes := render(t, c, vals)
			on := vals != nil
			cm := mustFind(t, objs, "ConfigMap", "rel-devpilot")
			grace, err := time.ParseDuration(str(cm.m, "data", "DEVPILOT_SHUTDOWN_GRACE"))
			if err != nil {
				t.Fatalf("ConfigMap's DEVPILOT_SHUTDOWN_GRACE: %v", err)
			}
			if on && grace != 45*time.Second {
				t.Errorf("DEVPILOT_SHUTDOWN_GRACE = %v, want 45s from config.shutdownGraceSeconds", grace)
			}
			secret := mustFind(t, objs, "Secret", "rel-devpilot")
			if key := b64(t, str(secret.m, "data", "DEVPILOT_SECRET_KEY")); on && key != secretValues["secretKey"] {
				t.Errorf("DEVPILOT_SECRET_KEY = %q, want the one given", key)
			} else if raw, err := base64.StdEncoding.DecodeString(key); err != nil || len(raw) != 32 {
				t.Errorf("DEVPILOT_SECRET_KEY %q is not base64 of 32 bytes (%d, %v)", key, len(raw), err)
			}
			if str(secret.m, "metadata", "annotations", "helm.sh/resource-policy") != "keep" {
				t.Errorf("the Secret holding DEVPILOT_SECRET_KEY is not kept on uninstall")
			}

			for _, component := range []string{"serve", "worker"} {
				d := mustFind(t, objs, "Deployment", "-"+component)
				checkPod(t, component, d, grace, cm.name(), secret.name())
			}
			serve := mustFind(t, objs, "Deployment", "-serve")
			_, hasHPA := find(objs, "HorizontalPodAutoscaler", "-serve")
			if hasHPA != on {
				t.Errorf("HPA rendered: %v, want %v", hasHPA, on)
			}
			if replicas, set := get(serve.m, "spec", "replicas").(float64); set == hasHPA || (set && replicas < 2) {
				t.Errorf("serve's replicas = %v with HPA %v: want 2 or more without an HPA, none with one", get(serve.m, "spec", "replicas"), hasHPA)
			}
			for _, component := range []string{"serve", "worker"} {
				pdb := mustFind(t, objs, "PodDisruptionBudget", "-"+component)
				if str(pdb.m, "spec", "selector", "matchLabels", "app.kubernetes.io/component") != component {
					t.Errorf("PDB of %s selects %v", component, get(pdb.m, "spec", "selector"))
				}
			}
			svc := mustFind(t, objs, "Service", "rel-devpilot")
			if str(svc.m, "spec", "selector", "app.kubernetes.io/component") != "serve" {
				t.Errorf("the Service selects %v", get(svc.m, "spec", "selector"))
			}
			checkMigrationJob(t, objs, on)

			_, hasIngress := find(objs, "Ingress", "rel-devpilot")
			if hasIngress != on {
				t.Errorf("Ingress rendered: %v, want %v", hasIngress, on)
			}
			if on {
				ing := mustFind(t, objs, "Ingress", "rel-devpilot")
				for k, want := range map[string]string{
					"nginx.ingress.kubernetes.io/proxy-buffering":    "off",
					"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600",
					"nginx.ingress.kubernetes.io/proxy-send-timeout": "3600",
				} {
					if got := str(ing.m, "metadata", "annotations", k); got != want {
						t.Errorf("Ingress annotation %s = %q, want %q (SSE)", k, got, want)
					}
				}
				if str(ing.m, "spec", "rules", 0, "http", "paths", 0, "backend", "service", "name") != svc.name() {
					t.Errorf("Ingress backend is not the Service %s", svc.name())
				}
				for _, component := range []string{"serve", "worker"} {
					sm := mustFind(t, objs, "ServiceMonitor", "-"+component)
					if str(sm.m, "spec", "endpoints", 0, "path") != "/metrics" || str(sm.m, "metadata", "labels", "release") != "kube-prometheus-stack" {
						t.Errorf("ServiceMonitor %s: %s", sm.name(), sm.raw)
					}
				}
				if !strings.Contains(notes, "https://devpilot.example.com/") {
					t.Errorf("NOTES.txt does not name the ingress URL:\n%s", notes)
				}
			} else if !strings.Contains(notes, "no database is configured") {
				t.Errorf("NOTES.txt does not warn that no database is configured:\n%s", notes)
			}

			checkNoSecretOutsideSecrets(t, objs, notes, vals)
		})
	}
}

// checkPod checks a Deployment's pod: probes on the container's port,
// hardening, resources, and a termination grace longer than the preStop
// drain plus DEVPILOT_SHUTDOWN_GRACE.
func checkPod(t *testing.T, component string, d object, grace time.Duration, configMap, secret string) {
	t.Helper()
	pod := get(d.m, "spec", "template", "spec").(map[string]any)
	ctr := get(pod, "containers", 0).(map[string]any)
	if args := fmt.Sprint(ctr["args"]); args != "["+component+"]" {
		t.Errorf("%s runs %s", component, args)
	}
	ports := map[string]bool{}
	for _, p := range ctr["ports"].([]any) {
		ports[str(p, "name")] = true
	}
	for probe, path := range map[string]string{"startupProbe": "/livez", "livenessProbe": "/livez", "readinessProbe": "/readyz"} {
		if got := str(ctr, probe, "httpGet", "path"); got != path {
			t.Errorf("%s %s path = %q, want %s", component, probe, got, path)
		}
		if port := str(ctr, probe, "httpGet", "port"); !ports[port] {
			t.Errorf("%s %s port %q is none of the container's %v", component, probe, port, ports)
		}
	}
	if component == "worker" && !ports["metrics"] {
		t.Errorf("worker exposes no metrics port: %v", ports)
	}
	sc := ctr["securityContext"]
	if get(sc, "readOnlyRootFilesystem") != true || get(sc, "allowPrivilegeEscalation") != false || fmt.Sprint(get(sc, "capabilities", "drop")) != "[ALL]" {
		t.Errorf("%s container securityContext: %v", component, sc)
	}
	if get(pod, "securityContext", "runAsNonRoot") != true || get(pod, "securityContext", "runAsUser") == 0.0 {
		t.Errorf("%s pod securityContext: %v", component, pod["securityContext"])
	}
	if get(ctr, "resources", "requests", "memory") == nil || get(ctr, "resources", "limits", "memory") == nil {
		t.Errorf("%s has no memory request and limit: %v", component, ctr["resources"])
	}
	preStop, _ := get(ctr, "lifecycle", "preStop", "sleep", "seconds").(float64)
	if preStop <= 0 {
		t.Errorf("%s has no preStop sleep: %v", component, ctr["lifecycle"])
	}
	tgp, _ := pod["terminationGracePeriodSeconds"].(float64)
	if need := preStop + grace.Seconds(); tgp <= need {
		t.Errorf("%s terminationGracePeriodSeconds %v <= preStop %vs + DEVPILOT_SHUTDOWN_GRACE %v", component, tgp, preStop, grace)
	}
	var from []string
	for _, e := range ctr["envFrom"].([]any) {
		from = append(from, str(e, "configMapRef", "name")+str(e, "secretRef", "name"))
	}
	if !slices.Contains(from, configMap) || !slices.Contains(from, secret) {
		t.Errorf("%s envFrom %v, want ConfigMap %s and Secret %s", component, from, configMap, secret)
	}
	refs := map[string]string{}
	for _, e := range ctr["env"].([]any) {
		refs[str(e, "name")] = str(e, "valueFrom", "secretKeyRef", "name")
	}
	for _, name := range []string{"DEVPILOT_DATABASE_URL", "DEVPILOT_SECRET_KEY"} {
		if refs[name] != secret {
			t.Errorf("%s does not require %s from Secret %s by key: %v", component, name, secret, refs)
		}
	}
	mounts := map[string]bool{}
	for _, m := range ctr["volumeMounts"].([]any) {
		mounts[str(m, "mountPath")] = true
	}
	if !mounts["/data"] {
		t.Errorf("%s has no writable /data (the image's TMPDIR) under a read-only root: %v", component, mounts)
	}
}

// checkMigrationJob: devpilot migrate as a pre-install and pre-upgrade hook
// with a delete policy, reading the database URL from a Secret.
func checkMigrationJob(t *testing.T, objs []object, on bool) {
	t.Helper()
	job := mustFind(t, objs, "Job", "-migrate")
	hooks := strings.Split(str(job.m, "metadata", "annotations", "helm.sh/hook"), ",")
	if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
		t.Errorf("migration Job hooks = %v, want pre-install and pre-upgrade", hooks)
	}
	if str(job.m, "metadata", "annotations", "helm.sh/hook-delete-policy") == "" {
		t.Errorf("migration Job has no hook-delete-policy")
	}
	ctr := get(job.m, "spec", "template", "spec", "containers", 0)
	if fmt.Sprint(get(ctr, "args")) != "[migrate]" {
		t.Errorf("migration Job runs %v", get(ctr, "args"))
	}
	if get(job.m, "spec", "template", "spec", "containers", 0, "securityContext", "readOnlyRootFilesystem") != true {
		t.Errorf("migration Job's root filesystem is writable")
	}
	var ref string
	for _, e := range get(ctr, "env").([]any) {
		if str(e, "name") == "DEVPILOT_DATABASE_URL" {
			ref = str(e, "valueFrom", "secretKeyRef", "name")
		}
	}
	dbSecret := mustFind(t, objs, "Secret", ref)
	jobWeight, secretWeight := str(job.m, "metadata", "annotations", "helm.sh/hook-weight"), str(dbSecret.m, "metadata", "annotations", "helm.sh/hook-weight")
	if !slices.Contains(strings.Split(str(dbSecret.m, "metadata", "annotations", "helm.sh/hook"), ","), "pre-install") || atoi(secretWeight) >= atoi(jobWeight) {
		t.Errorf("the migration's Secret %s is not a pre-install hook created before the Job (weights %q, %q): a release's own Secret does not exist yet when pre-install hooks run", ref, secretWeight, jobWeight)
	}
	if url := b64(t, str(dbSecret.m, "data", "DEVPILOT_DATABASE_URL")); on && url != secretValues["databaseURL"] {
		t.Errorf("the migration's DEVPILOT_DATABASE_URL = %q", url)
	}
}

// checkNoSecretOutsideSecrets: no secret value, in clear or base64, in any
// object but a Secret, nor in NOTES.txt.
func checkNoSecretOutsideSecrets(t *testing.T, objs []object, notes string, vals map[string]any) {
	t.Helper()
	if vals == nil {
		return
	}
	var values []string
	for _, v := range secretValues {
		values = append(values, v)
	}
	values = append(values, "extra-secret-EX-445566")
	inSecrets := map[string]bool{}
	for _, o := range objs {
		for _, v := range values {
			enc := base64.StdEncoding.EncodeToString([]byte(v))
			if o.kind() == "Secret" {
				if strings.Contains(o.raw, enc) {
					inSecrets[v] = true
				}
				continue
			}
			if strings.Contains(o.raw, v) || strings.Contains(o.raw, enc) {
				t.Errorf("secret value %q is rendered into %s %s", v, o.kind(), o.name())
			}
		}
	}
	for _, v := range values {
		if !inSecrets[v] {
			t.Errorf("secret value %q is in no Secret", v)
		}
		if strings.Contains(notes, v) {
			t.Errorf("secret value %q is in NOTES.txt", v)
		}
	}
}

// TestChartRefusesSecretsInConfig: a secret-looking name under config.env
// fails the render, naming it, instead of landing in the ConfigMap.
func TestChartRefusesSecretsInConfig(t *testing.T) {
	c := loadChart(t)
	for _, name := range []string{"OPENAI_API_KEY", "GITHUB_WEBHOOK_SECRET", "DEVPILOT_DATABASE_URL", "AWS_SESSION_TOKEN", "OTEL_EXPORTER_OTLP_HEADERS"} {
		_, _, err := tryRender(c, map[string]any{"config": map[string]any{"env": map[string]any{name: "x"}}})
		if err == nil || !strings.Contains(err.Error(), "config.env."+name) || !strings.Contains(err.Error(), "secrets") {
			t.Errorf("config.env.%s: %v, want an error naming it and secrets", name, err)
		}
	}
	objs, _ := render(t, c, map[string]any{"config": map[string]any{"env": map[string]any{"DEVPILOT_MAX_TOKENS": 2048, "DEVPILOT_REALTIME_TOKEN_TTL": "10m"}}})
	cm := mustFind(t, objs, "ConfigMap", "rel-devpilot")
	if str(cm.m, "data", "DEVPILOT_MAX_TOKENS") != "2048" || str(cm.m, "data", "DEVPILOT_REALTIME_TOKEN_TTL") != "10m" {
		t.Errorf("ConfigMap data: %v", cm.m["data"])
	}
}

// TestChartExistingSecret: with secrets.existingSecret the chart makes no
// Secret, the pods and the migration read the one named.
func TestChartExistingSecret(t *testing.T) {
	c := loadChart(t)
	objs, notes := render(t, c, map[string]any{"secrets": map[string]any{"existingSecret": "devpilot-env", "openaiAPIKey": "sk-IGNORED-1"}})
	for _, o := range objs {
		if o.kind() == "Secret" {
			t.Errorf("Secret %s rendered with existingSecret", o.name())
		}
		if strings.Contains(o.raw, "sk-IGNORED-1") {
			t.Errorf("%s %s holds a value given next to existingSecret", o.kind(), o.name())
		}
	}
	for _, component := range []string{"serve", "worker"} {
		d := mustFind(t, objs, "Deployment", "-"+component)
		if !strings.Contains(d.raw, "name: devpilot-env") {
			t.Errorf("%s does not read Secret devpilot-env", component)
		}
	}
	job := mustFind(t, objs, "Job", "-migrate")
	if str(job.m, "spec", "template", "spec", "containers", 0, "env", 0, "valueFrom", "secretKeyRef", "name") != "devpilot-env" {
		t.Errorf("migration Job does not read Secret devpilot-env: %s", job.raw)
	}
	if strings.Contains(notes, "WARNING") {
		t.Errorf("NOTES.txt warns with existingSecret:\n%s", notes)
	}
}

// TestChartSchemaRefuses: values.schema.json catches a misspelt key and a
// bad value at install time.
func TestChartSchemaRefuses(t *testing.T) {
	c := loadChart(t)
	for name, vals := range map[string]map[string]any{
		"unknown key":   {"serve": map[string]any{"replica": 3}},
		"bad log level": {"config": map[string]any{"logLevel": "verbose"}},
		"sqlite":        {"secrets": map[string]any{"databaseURL": "sqlite:/data/devpilot.db"}},
		"grace as text": {"config": map[string]any{"shutdownGraceSeconds": "30s"}},
	} {
		if _, _, err := tryRender(c, vals); err == nil {
			t.Errorf("%s: rendered, want a schema error", name)
		}
	}
}

// get walks a decoded YAML value by map keys and slice indexes; nil when a
// step is missing.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			s, ok := v.([]any)
			if !ok || k >= len(s) {
				return nil
			}
			v = s[k]
		}
	}
	return v
}

func str(v any, path ...any) string {
	switch s := get(v, path...).(type) {
	case string:
		return s
	case nil:
		return ""
	default:
		b, _ := json.Marshal(s)
		return string(b)
	}
}

func b64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Errorf("not base64: %q", s)
	}
	return string(b)
}

var intRE = regexp.MustCompile(`^-?[0-9]+$`)

func atoi(s string) int {
	if !intRE.MatchString(s) {
		return 0
	}
	var n int
	fmt.Sscan(s, &n)
	return n
}
