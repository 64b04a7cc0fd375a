package aws

import (
	"context"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/devpilot/devpilot/ports"
)

// Bounds of a log query.
const (
	defaultLogLimit  = 100
	maxLogLimit      = 10000
	defaultLogWindow = time.Hour
	maxLogPages      = 100
)

// filterLogs returns the newest events (up to q.Limit, oldest first) of a
// log group since q.Since (default: the last hour), from streams starting
// with prefix, matching q.Filter (a CloudWatch filter pattern) when set.
// FilterLogEvents returns the oldest events first, so the window is read in
// pages as large as the API allows (at most maxLogPages of them) and only
// the newest events are kept; with q.Oldest, reading stops at the first
// q.Limit events instead.
// region, when set, is the log group's region.
func (p *Provider) filterLogs(ctx context.Context, s *session, region, group, prefix string, q ports.LogQuery) ([]ports.LogEvent, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLogLimit
	}
	limit = min(limit, maxLogLimit)
	since := q.Since
	if since.IsZero() {
		since = p.clock.Now().Add(-defaultLogWindow)
	}
	cfg := s.cfg
	if region != "" && region != cfg.Region {
		cfg = cfg.Copy()
		cfg.Region = region
	}
	in := &cloudwatchlogs.FilterLogEventsInput{
		LogGroupName: sdkaws.String(group),
		StartTime:    sdkaws.Int64(since.UnixMilli()),
		Limit:        sdkaws.Int32(maxLogLimit),
	}
	if prefix != "" {
		in.LogStreamNamePrefix = sdkaws.String(prefix)
	}
	if q.Filter != "" {
		in.FilterPattern = sdkaws.String(q.Filter)
	}
	if q.Oldest {
		in.Limit = sdkaws.Int32(int32(limit))
	}
	ring := make([]ports.LogEvent, 0, limit)
	next := 0 // where the next event goes once ring is full
	pages := cloudwatchlogs.NewFilterLogEventsPaginator(cloudwatchlogs.NewFromConfig(cfg), in)
	for n := 0; pages.HasMorePages() && n < maxLogPages; n++ {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, resources{"": "log group " + group})
		}
		for _, ev := range out.Events {
			e := ports.LogEvent{
				Timestamp: time.UnixMilli(sdkaws.ToInt64(ev.Timestamp)).UTC(),
				Message:   sdkaws.ToString(ev.Message),
				Stream:    sdkaws.ToString(ev.LogStreamName),
				ID:        sdkaws.ToString(ev.EventId),
			}
			if len(ring) < limit {
				ring = append(ring, e)
				continue
			}
			if q.Oldest {
				return ring, nil
			}
			ring[next] = e
			next = (next + 1) % limit
		}
		if q.Oldest && len(ring) == limit {
			return ring, nil
		}
	}
	events := make([]ports.LogEvent, 0, len(ring))
	events = append(events, ring[next:]...)
	return append(events, ring[:next]...), nil
}
