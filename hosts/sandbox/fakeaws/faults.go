package fakeaws

import (
	"net/http"
	"strconv"
	"time"
)

type faultKind int

const (
	faultError faultKind = iota
	faultThrottle
	faultAccessDenied
	faultNotFound
	faultHang
)

// Fault is a failure injected into an operation with Server.Inject. Build one
// with Throttling, AccessDenied, NotFound, APIError or Hang; by default it
// answers every matching call, Times limits it to the first n.
type Fault struct {
	kind       faultKind
	status     int
	code       string
	message    string
	retryAfter string
	times      int
}

// Throttling answers with the service's throttling error: ThrottlingException
// (ECS, CloudWatch Logs), LimitExceededException (Cost Explorer, Amplify),
// TooManyRequestsException with status 429 (Lambda) or Throttling (STS).
func Throttling() Fault { return Fault{kind: faultThrottle} }

// AccessDenied answers with the service's access-denied error:
// AccessDeniedException, UnauthorizedException (Amplify) or AccessDenied
// (STS).
func AccessDenied() Fault { return Fault{kind: faultAccessDenied} }

// NotFound answers with the service's not-found error:
// ClusterNotFoundException (ECS), ResourceNotFoundException (CloudWatch Logs,
// Lambda), NotFoundException (Amplify); a ValidationException elsewhere.
func NotFound() Fault { return Fault{kind: faultNotFound} }

// APIError answers with an error of the given HTTP status, code and message.
func APIError(status int, code, message string) Fault {
	return Fault{kind: faultError, status: status, code: code, message: message}
}

// Hang holds the request without answering until the client gives up (or
// the fake closes): the behaviour of a provider that does not answer in time.
func Hang() Fault { return Fault{kind: faultHang} }

// Times makes the fault answer only the first n matching calls; the calls
// after them are served normally.
func (f Fault) Times(n int) Fault {
	f.times = n
	return f
}

// WithMessage sets the error message.
func (f Fault) WithMessage(m string) Fault {
	f.message = m
	return f
}

// WithRetryAfter adds a Retry-After header (in whole seconds) to the answer.
func (f Fault) WithRetryAfter(d time.Duration) Fault {
	f.retryAfter = strconv.Itoa(int(d / time.Second))
	return f
}

type fault struct {
	service   string
	operation string
	Fault
	left int // calls left to fail; -1 for every call
}

// Inject makes calls to service's operation (operation "" for every
// operation of the service) fail with f, until f's Times are used up. Faults
// are matched in the order they were injected; an authentication failure
// answers before any fault.
func (s *Server) Inject(service, operation string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := -1
	if f.times > 0 {
		left = f.times
	}
	s.faults = append(s.faults, &fault{service: service, operation: operation, Fault: f, left: left})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// applyFault answers rq with the first matching fault, if any.
func (s *Server) applyFault(rq *request) *apiError {
	s.mu.Lock()
	var f *Fault
	for _, ft := range s.faults {
		if ft.service != rq.service || (ft.operation != "" && ft.operation != rq.operation) || ft.left == 0 {
			continue
		}
		if ft.left > 0 {
			ft.left--
		}
		copied := ft.Fault
		f = &copied
		break
	}
	s.mu.Unlock()
	if f == nil {
		return nil
	}
	if f.kind == faultHang {
		select {
		case <-rq.r.Context().Done():
		case <-s.closing:
		}
		return errf(http.StatusServiceUnavailable, "ServiceUnavailable", "fakeaws: the request was held until the client gave up")
	}
	e := f.resolve(rq.service)
	if f.message != "" {
		e.message = f.message
	}
	if f.retryAfter != "" {
		e.retryAfter = f.retryAfter
	}
	return e
}

// resolve is the error a fault answers with on service.
func (f *Fault) resolve(service string) *apiError {
	switch f.kind {
	case faultThrottle:
		switch service {
		case ServiceLambda:
			return &apiError{status: http.StatusTooManyRequests, code: "TooManyRequestsException", message: "Rate Exceeded."}
		case ServiceAmplify:
			return &apiError{status: http.StatusTooManyRequests, code: "LimitExceededException", message: "Rate exceeded"}
		case ServiceCost:
			return &apiError{status: http.StatusBadRequest, code: "LimitExceededException", message: "You have exceeded the rate limit."}
		case ServiceSTS:
			return &apiError{status: http.StatusBadRequest, code: "Throttling", message: "Rate exceeded"}
		}
		return &apiError{status: http.StatusBadRequest, code: "ThrottlingException", message: "Rate exceeded"}
	case faultAccessDenied:
		msg := "User is not authorized to perform this operation"
		switch service {
		case ServiceAmplify:
			return &apiError{status: http.StatusUnauthorized, code: "UnauthorizedException", message: msg}
		case ServiceSTS:
			return &apiError{status: http.StatusForbidden, code: "AccessDenied", message: msg}
		case ServiceLambda:
			return &apiError{status: http.StatusForbidden, code: "AccessDeniedException", message: msg}
		}
		return &apiError{status: http.StatusBadRequest, code: "AccessDeniedException", message: msg}
	case faultNotFound:
		switch service {
		case ServiceECS:
			return &apiError{status: http.StatusBadRequest, code: "ClusterNotFoundException", message: "Cluster not found."}
		case ServiceLogs:
			return &apiError{status: http.StatusBadRequest, code: "ResourceNotFoundException", message: "The specified log group does not exist."}
		case ServiceLambda:
			return &apiError{status: http.StatusNotFound, code: "ResourceNotFoundException", message: "Function not found"}
		case ServiceAmplify:
			return &apiError{status: http.StatusNotFound, code: "NotFoundException", message: "Not found"}
		}
		return &apiError{status: http.StatusBadRequest, code: "ValidationException", message: "The resource does not exist"}
	}
	status := f.status
	if status == 0 {
		status = http.StatusBadRequest
	}
	return &apiError{status: status, code: f.code, message: f.message}
}
