package httpapi

import "net/http"

// Test-only access to the route machinery and the JSON helpers.
var (
	Public     = public
	Streaming  = streaming
	MaxBody    = maxBody
	DecodeJSON = decodeJSON
	WriteJSON  = writeJSON
	PathParam  = pathParam
)

// RouteOption is a route option, for HandleForTest.
type RouteOption = routeOption

// HandleForTest registers a test-only route; call it before serving.
func (s *Server) HandleForTest(method, pattern string, h func(http.ResponseWriter, *http.Request) error, opts ...RouteOption) {
	s.handle(method, pattern, h, opts...)
}
