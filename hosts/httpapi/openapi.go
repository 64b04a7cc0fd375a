package httpapi

import (
	"bytes"
	_ "embed"
	"net/http"
	"strconv"
)

// openapiDoc is the OpenAPI 3.1 description of every route this package
// registers. Tests hold it to the router (every route is described, and
// nothing else) and to the responses of the running service.
//
//go:embed openapi.json
var openapiDoc []byte

// OpenAPI returns a copy of the OpenAPI 3.1 document served at
// GET /openapi.json.
func OpenAPI() []byte { return bytes.Clone(openapiDoc) }

// openapi serves the document.
func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(openapiDoc)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openapiDoc)
	return nil
}
