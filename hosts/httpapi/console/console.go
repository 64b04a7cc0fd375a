// Package console is devpilot's web console: the static assets of a
// single-page client of the public HTTP API, embedded in the binary and
// served by the HTTP host at / and /console/. It uses no front-end
// framework and no third-party code: modules under static/js build the DOM
// with createElement and textContent only, so nothing from the API (model
// output above all) is ever parsed as HTML.
package console

import (
	"embed"
	"io/fs"
)

//go:embed static
var files embed.FS

// FS returns the console's assets, rooted at the static folder: index.html,
// app.css and js/.
func FS() fs.FS {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		panic(err) // the embedded folder is always there
	}
	return sub
}
