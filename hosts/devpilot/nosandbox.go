//go:build nosandbox

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/devpilot/devpilot/hosts/app"
)

// checkSandboxBuild refuses a configuration with the sandbox on: this
// build (-tags nosandbox) links neither package hosts/sandbox nor the
// fakes and demo model it runs (its subpackages). The error names the reason the sandbox is on and
// the tag.
func checkSandboxBuild(cfg app.Config) error {
	if !cfg.Sandbox {
		return nil
	}
	return fmt.Errorf("this devpilot was built without the sandbox (go build -tags nosandbox), but the sandbox providers are on (%s): "+
		"use real providers (configure them, or set %s=0; no --sandbox), or a devpilot built without the nosandbox tag", cfg.SandboxReason, app.EnvSandbox)
}

// startSandbox returns cfg unchanged when the sandbox is off, and
// checkSandboxBuild's error when it is on (loadConfig has refused such a
// configuration already).
func startSandbox(cfg app.Config, _ *slog.Logger) (app.Config, func() string, func(), error) {
	return cfg, nil, func() {}, checkSandboxBuild(cfg)
}

// eval refuses: the evaluation harness runs on the sandbox's fakes, which
// this build does not link.
func (c cli) eval(_ context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		return c.parse(newFlags("eval"), []string{"--help"}, 0)
	}
	return errUsage{errors.New("eval needs the sandbox's fakes, and this devpilot was built without the sandbox (go build -tags nosandbox): " +
		"use a devpilot built without the nosandbox tag (make build)")}
}
