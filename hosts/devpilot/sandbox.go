//go:build !nosandbox

package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox"
)

// checkSandboxBuild reports whether this build can run the configured
// sandbox: it always can, as it links package hosts/sandbox (built without
// the nosandbox tag; see nosandbox.go).
func checkSandboxBuild(app.Config) error { return nil }

// startSandbox starts the sandbox providers when cfg.Sandbox is set
// (sandbox.Start) and returns cfg pointed at them, the banner to print once
// the app has started (nil with the sandbox off) and a function that stops
// the fakes (always safe to call).
func startSandbox(cfg app.Config, logger *slog.Logger) (app.Config, func() string, func(), error) {
	cfg, sb, err := sandbox.Start(cfg, logger)
	if err != nil || sb == nil {
		return cfg, nil, func() {}, err
	}
	return cfg, func() string { return sandboxBanner(sb) }, sb.Close, nil
}

// sandboxBanner tells the person at the terminal that the providers are
// fakes and how to call the API as the demo user.
func sandboxBanner(sb *sandbox.Sandbox) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSANDBOX MODE: the model, AWS and GitHub are in-process fakes on loopback, with demo data.\n")
	fmt.Fprintf(&b, "  demo token:     %s\n", sb.Token())
	fmt.Fprintf(&b, "  token file:     %s\n", sb.TokenFile())
	fmt.Fprintf(&b, "  webhook secret: %s\n", sandbox.WebhookSecret)
	fmt.Fprintf(&b, "  web console:    %s/ (click \"Use the demo user\")\n", sb.PublicURL())
	fmt.Fprintf(&b, "  try:            curl -s -H \"Authorization: Bearer $(cat %s)\" %s/api/v1/me\n", sb.TokenFile(), sb.PublicURL())
	fmt.Fprintf(&b, "Set %s (or %s), AWS credentials, %s/%s, or %s=0 to use real providers.\n\n",
		app.EnvOpenAIKey, app.EnvOpenAIBaseURL, app.EnvGitHubClientID, app.EnvGitHubSecret, app.EnvSandbox)
	return b.String()
}
