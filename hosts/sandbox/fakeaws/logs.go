package fakeaws

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
)

type streamEvent struct {
	stream string
	index  int
	LogEvent
}

func logsFilterLogEvents(rq *request) (*reply, *apiError) {
	in := rq.input
	group := str(in, "logGroupName")
	if id := str(in, "logGroupIdentifier"); id != "" {
		if group != "" {
			return nil, invalidParameter("logGroupName and logGroupIdentifier are mutually exclusive")
		}
		group = id
		if _, name, ok := strings.Cut(id, ":log-group:"); ok {
			group = strings.TrimSuffix(name, ":*")
		}
	}
	if group == "" {
		return nil, invalidParameter("logGroupName or logGroupIdentifier is required")
	}
	names, aerr := strList(in, "logStreamNames")
	if aerr != nil {
		return nil, aerr
	}
	prefix := str(in, "logStreamNamePrefix")
	if len(names) > 0 && prefix != "" {
		return nil, invalidParameter("logStreamNames and logStreamNamePrefix are mutually exclusive")
	}
	start, hasStart, aerr := num(in, "startTime")
	if aerr != nil {
		return nil, aerr
	}
	end, hasEnd, aerr := num(in, "endTime")
	if aerr != nil {
		return nil, aerr
	}
	limit, _, aerr := num(in, "limit")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 10000 {
		return nil, invalidParameter("limit must be between 1 and 10000")
	}
	pattern := strings.Trim(str(in, "filterPattern"), `"`)

	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	streams, ok := rq.account().logGroups[group]
	var events []streamEvent
	for name, evs := range streams {
		if prefix != "" && !strings.HasPrefix(name, prefix) || len(names) > 0 && !contains(names, name) {
			continue
		}
		for i, ev := range evs {
			ms := ev.Timestamp.UnixMilli()
			if hasStart && ms < start || hasEnd && ms > end || pattern != "" && !strings.Contains(ev.Message, pattern) {
				continue
			}
			events = append(events, streamEvent{stream: name, index: i, LogEvent: ev})
		}
	}
	if !ok {
		return nil, errf(http.StatusBadRequest, "ResourceNotFoundException", "The specified log group does not exist.")
	}
	sort.Slice(events, func(i, j int) bool {
		a, b := events[i], events[j]
		if !a.Timestamp.Equal(b.Timestamp) {
			return a.Timestamp.Before(b.Timestamp)
		}
		if a.stream != b.stream {
			return a.stream < b.stream
		}
		return a.index < b.index
	})
	from, to, next, aerr := rq.s.page("FilterLogEvents", str(in, "nextToken"), len(events), int(limit), 10000)
	if aerr != nil {
		return nil, aerr
	}
	out := []any{}
	for _, ev := range events[from:to] {
		ms := ev.Timestamp.UnixMilli()
		out = append(out, map[string]any{
			"logStreamName": ev.stream,
			"timestamp":     ms,
			"message":       ev.Message,
			"ingestionTime": ms + 1,
			"eventId":       fmt.Sprintf("%056d", ms*1000+int64(ev.index)),
		})
	}
	body := map[string]any{"events": out}
	if next != "" {
		body["nextToken"] = next
	}
	return &reply{body: body}, nil
}
