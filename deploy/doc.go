// Package deploy holds the deployment files' tests: compose.yaml at the
// repository's root and the Helm chart under helm/devpilot are loaded with
// the tools' own Go libraries (compose-go, the Helm SDK), linted, rendered and
// checked.
//
// It is a module of its own (github.com/devpilot/devpilot/deploy) so that
// those libraries and their dependencies stay out of devpilot's go.mod; the
// main module's ./... does not include it. Run its tests with
// `cd deploy && go test ./...` (make test does).
package deploy
