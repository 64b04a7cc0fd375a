package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/devpilot/devpilot/adapters/telemetry"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
	sseOpen  prometheus.Gauge
	// rateErrors counts requests let through because the rate counter failed.
	rateErrors prometheus.Counter
}

// newMetrics registers the HTTP metrics, and the Go and process collectors,
// on reg (a new registry when nil). Collectors registered already (by the
// caller, or by another Server on the same registry) are reused.
func newMetrics(reg *prometheus.Registry) (*prometheus.Registry, *metrics) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	register(reg, collectors.NewGoCollector())
	register(reg, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_http_requests_total",
			Help: "HTTP requests served, by method, route pattern and status code.",
		}, []string{"method", "route", "code"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_http_request_duration_seconds",
			Help:    "Time to serve an HTTP request, by method and route pattern.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"method", "route"})),
		inFlight: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "devpilot_http_requests_in_flight",
			Help: "HTTP requests being served.",
		})),
		sseOpen: register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "devpilot_http_sse_streams_open",
			Help: "Server-Sent Event streams (assistant turns and resumed sessions) open now.",
		})),
		rateErrors: register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "devpilot_http_rate_limit_errors_total",
			Help: "Requests to costly routes let through unchecked because the rate counter failed.",
		})),
	}
	return reg, m
}

// register is telemetry.Register: collectors registered already are
// reused.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	return telemetry.Register(reg, c)
}

func (m *metrics) observe(method, route string, status int, elapsed time.Duration) {
	method = metricMethod(method)
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
}

// metricMethod bounds the method label: clients may send any token.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// promLogger sends promhttp's errors to slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("serving metrics", slog.String("error", fmt.Sprint(v...)))
}
