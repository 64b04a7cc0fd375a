package httpapi

import (
	"net/http"
	"time"
)

// Timeout is the timeout route option, for HandleForTest.
var Timeout = timeout

// SSEForTest starts an SSE stream on w, as the chat does, and ends it.
func SSEForTest(w http.ResponseWriter) {
	startSSE(w, time.Hour).close()
}
