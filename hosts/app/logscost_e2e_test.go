package app_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// followEvent is one event of a log stream.
type followEvent struct {
	id, name string
	data     map[string]any
}

// follow opens a log stream and returns its events as they come (the
// channel closes when the stream ends) and a function that closes it.
func follow(t *testing.T, st *stack, token, path, lastID string) (<-chan followEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan followEvent, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev followEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = followEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &ev.data)
			}
		}
	}()
	return out, cancel
}

// next returns the stream's next event; it fails the test when the stream
// ends first or nothing comes within a generous bound (not a timing
// assertion: the stream polls every 2 s).
func next(t *testing.T, evs <-chan followEvent) followEvent {
	t.Helper()
	select {
	case ev, ok := <-evs:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event in 30 s")
	}
	return followEvent{}
}

func TestCloudLogFollow(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStackWith(t, string(d), map[string]string{app.EnvLogFollowFor: "6s"})
			aws := st.aws.Account(cloudAWSAccount)
			seed := seedCloud(aws, time.Now())
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			member, _ := st.cloudUser("dev@example.com", "acme", "")
			if code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false)); code != 201 {
				t.Fatalf("create account: %d %s", code, body)
			}
			const path = "/api/v1/infrastructure/containers/services/web/logs/stream?cluster=prod"

			// Hostile or wrong input is answered before any stream.
			for _, tc := range []struct {
				path, lastID string
				want         int
			}{
				{path + "&filter=" + url.QueryEscape("GET\x01"), "", 400},
				{path + "&filter=" + strings.Repeat("x", 1025), "", 400},
				{path, "not-an-id", 400},
				{"/api/v1/infrastructure/containers/services/nope/logs/stream?cluster=prod", "", 404},
			} {
				req, _ := http.NewRequestWithContext(t.Context(), "GET", st.base+tc.path, nil)
				req.Header.Set("Authorization", "Bearer "+member)
				if tc.lastID != "" {
					req.Header.Set("Last-Event-ID", tc.lastID)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
					t.Fatalf("%s (Last-Event-ID %q): %d %s, want %d", tc.path, tc.lastID, resp.StatusCode, resp.Header.Get("Content-Type"), tc.want)
				}
			}

			// Following: the backlog, then a line the log gets later; then the
			// end event naming the last id, after the configured 6 s.
			st.aws.ResetCalls()
			evs, stop := follow(t, st, member, path, "")
			defer stop()
			first, second := next(t, evs), next(t, evs)
			if first.name != "log" || first.data["message"] != seed.serviceLogs[0] || second.data["message"] != seed.serviceLogs[1] ||
				first.id == "" || first.data["id"] != first.id {
				t.Fatalf("backlog: %+v %+v", first, second)
			}
			aws.LogEvents("/ecs/web", "ecs/web/4f1c9a", fakeaws.LogEvent{Timestamp: time.Now(), Message: "GET /orders 200"})
			third := next(t, evs)
			if third.name != "log" || third.data["message"] != "GET /orders 200" {
				t.Fatalf("new line: %+v", third)
			}
			end := next(t, evs)
			if end.name != "end" || end.data["after"] != third.id || end.id != third.id {
				t.Fatalf("end: %+v", end)
			}
			if _, ok := <-evs; ok {
				t.Fatal("events after end")
			}
			// Bounded polling: one poll at once, then one per 2 s over 6 s.
			if n := len(st.aws.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents")); n < 2 || n > 5 {
				t.Fatalf("%d FilterLogEvents calls in a 6 s stream polled every 2 s", n)
			}

			// Resuming after the first event repeats nothing before it.
			evs, stop2 := follow(t, st, member, path, first.id)
			defer stop2()
			if a, b := next(t, evs), next(t, evs); a.data["message"] != seed.serviceLogs[1] || b.data["message"] != "GET /orders 200" {
				t.Fatalf("resumed: %+v %+v", a, b)
			}
			aws.LogEvents("/ecs/web", "ecs/web/4f1c9a", fakeaws.LogEvent{Timestamp: time.Now(), Message: "POST /checkout 500"})
			if ev := next(t, evs); ev.data["message"] != "POST /checkout 500" {
				t.Fatalf("resumed, then new: %+v", ev)
			}
			stop2()

			// A filter is CloudWatch's pattern, passed through.
			evs, stop3 := follow(t, st, member, path+"&filter=checkout", "")
			defer stop3()
			if a, b := next(t, evs), next(t, evs); a.data["message"] != seed.serviceLogs[1] || b.data["message"] != "POST /checkout 500" {
				t.Fatalf("filtered: %+v %+v", a, b)
			}
			stop3()
			filtered := 0
			for _, call := range st.aws.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents") {
				if call.Input["filterPattern"] == "checkout" {
					filtered++
				}
			}
			if filtered == 0 {
				t.Fatal("no FilterLogEvents call carried the filter pattern")
			}

			// A function's log follows the same way.
			evs, stop4 := follow(t, st, member, "/api/v1/infrastructure/serverless/functions/"+cloudFunction+"/logs/stream", "")
			defer stop4()
			if ev := next(t, evs); ev.data["message"] != seed.functionLog {
				t.Fatalf("function: %+v", ev)
			}
			stop4()
			c.assertNoSecret(t, cloudSecret)
		})
	}
}

// costsJSON is the answer of GET /cloud/costs, amounts as written.
type costsJSON struct {
	Total   json.Number
	GroupBy *string `json:"group_by"`
	Groups  []struct {
		Key           string
		Amount        json.Number
		Previous      json.Number
		Change        json.Number
		ChangePercent *json.Number `json:"change_percent"`
	}
	Previous *struct {
		StartDate     string `json:"start_date"`
		EndDate       string `json:"end_date"`
		Total         json.Number
		Change        json.Number
		ChangePercent *json.Number `json:"change_percent"`
	}
	Forecast *struct {
		StartDate string `json:"start_date"`
		EndDate   string `json:"end_date"`
		Amount    json.Number
	}
	ForecastError string `json:"forecast_error"`
}

func ratEq(a json.Number, b string) bool {
	x, ok1 := new(big.Rat).SetString(string(a))
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

func TestCloudCostAnalysis(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			now := time.Now()
			aws := st.aws.Account(cloudAWSAccount)
			seed := seedCloud(aws, now)
			day := func(n int) string { return seed.today.AddDate(0, 0, n).Format(time.DateOnly) }
			ec2 := fakeaws.CostLine{Service: "Amazon EC2", Region: "eu-west-1", UsageType: "EUW1-BoxUsage", LinkedAccount: "210987654321",
				Tags: map[string]string{"team": "payments"}}
			ec2.Amount = "4.00"
			aws.CostLine(day(-5), ec2)
			ec2.Amount = "1.00"
			aws.CostLine(day(-15), ec2)
			aws.ForecastDaily("2")
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			member, _ := st.cloudUser("dev@example.com", "acme", "")
			if code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false)); code != 201 {
				t.Fatalf("create account: %d %s", code, body)
			}
			// Ten days to today; the previous ten hold day -10 (1.35 in
			// us-east-1) and day -15 (1 in eu-west-1).
			base := "/api/v1/cloud/costs?start_date=" + day(-9) + "&end_date=" + day(0)
			get := func(q string) costsJSON {
				t.Helper()
				code, _, body := c.do(t, member, "GET", base+q, nil)
				return decodeOK[costsJSON](t, q, code, 200, body)
			}

			// The old answer stays: no previous, no forecast unless asked.
			if v := get("&group_by=SERVICE"); v.Previous != nil || v.Forecast != nil || !ratEq(v.Total, "7.7") || len(v.Groups) != 3 {
				t.Fatalf("plain: %+v", v)
			}
			if n := len(st.aws.CallsTo(fakeaws.ServiceCost, "GetCostForecast")); n != 0 {
				t.Fatalf("%d forecasts unasked", n)
			}

			type row struct{ key, amount, prev, change, pct string }
			for _, tc := range []struct {
				group string
				want  []row
			}{
				{"REGION", []row{{"eu-west-1", "4", "1", "3", "300"}, {"us-east-1", "3.7", "1.35", "2.35", "174.1"}}},
				{"LINKED_ACCOUNT", []row{{"210987654321", "4", "1", "3", "300"}, {cloudAWSAccount, "3.7", "1.35", "2.35", "174.1"}}},
				{"USAGE_TYPE", []row{{"EUW1-BoxUsage", "4", "1", "3", "300"}, {"Usage", "3.7", "1.35", "2.35", "174.1"}}},
				{"tag:team", []row{{"payments", "4", "1", "3", "300"}, {"", "3.7", "1.35", "2.35", "174.1"}}},
				{"SERVICE", []row{{"Amazon EC2", "4", "1", "3", "300"}, {"Amazon Elastic Container Service", "3.5", "1.25", "2.25", "180"},
					{"AWS Lambda", "0.2", "0.1", "0.1", "100"}}},
			} {
				v := get("&group_by=" + url.QueryEscape(tc.group) + "&include=previous,forecast")
				if v.GroupBy == nil || *v.GroupBy != tc.group || len(v.Groups) != len(tc.want) {
					t.Fatalf("%s: %+v", tc.group, v)
				}
				for i, w := range tc.want {
					g := v.Groups[i]
					if g.Key != w.key || !ratEq(g.Amount, w.amount) || !ratEq(g.Previous, w.prev) || !ratEq(g.Change, w.change) ||
						g.ChangePercent == nil || !ratEq(*g.ChangePercent, w.pct) {
						t.Fatalf("%s group %d: %+v, want %+v", tc.group, i, g, w)
					}
				}
				if p := v.Previous; p == nil || p.StartDate != day(-19) || p.EndDate != day(-10) || !ratEq(p.Total, "2.35") || !ratEq(p.Change, "5.35") {
					t.Fatalf("%s previous: %+v", tc.group, v.Previous)
				}
				monthEnd := time.Date(seed.today.Year(), seed.today.Month()+1, 1, 0, 0, 0, 0, time.UTC)
				days := int(monthEnd.Sub(seed.today).Hours() / 24)
				if f := v.Forecast; f == nil || f.StartDate != day(0) || f.EndDate != monthEnd.AddDate(0, 0, -1).Format(time.DateOnly) ||
					!ratEq(f.Amount, big.NewRat(int64(2*days), 1).RatString()) {
					t.Fatalf("%s forecast: %+v (%s)", tc.group, v.Forecast, v.ForecastError)
				}
			}
			// A forecast is asked for only when the range reaches today.
			past := "/api/v1/cloud/costs?start_date=" + day(-9) + "&end_date=" + day(-1) + "&include=forecast"
			code, _, body := c.do(t, member, "GET", past, nil)
			if v := decodeOK[costsJSON](t, "past", code, 200, body); v.Forecast != nil {
				t.Fatalf("past range forecast: %s", body)
			}
			for _, bad := range []string{"&group_by=OPERATION", "&group_by=tag:", "&group_by=" + url.QueryEscape("tag:a\x01"), "&include=everything", "&format=xml"} {
				if code, _, body := c.do(t, member, "GET", base+bad, nil); code != 400 {
					t.Fatalf("%s: %d %s", bad, code, body)
				}
			}

			// CSV, by format=csv or by Accept.
			code, h, raw := c.do(t, member, "GET", base+"&group_by=REGION&include=previous,forecast&format=csv", nil)
			if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") ||
				h.Get("Content-Disposition") != `attachment; filename="costs-`+day(-9)+`-to-`+day(0)+`-by-region.csv"` {
				t.Fatalf("csv: %d %v %s", code, h, raw)
			}
			rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{
				"row,start_date,end_date,group,amount,currency,previous,change,change_percent": true,
				"period," + day(-5) + "," + day(-5) + ",eu-west-1,4,USD,,,":                    true,
				"range," + day(-9) + "," + day(0) + ",eu-west-1,4,USD,1,3,300.0":               true,
				"range," + day(-9) + "," + day(0) + ",us-east-1,3.7,USD,1.35,2.35,174.1":       true,
				"range," + day(-9) + "," + day(0) + ",total,7.7,USD,2.35,5.35,227.7":           true,
			}
			var forecastRow bool
			for _, r := range rows {
				delete(want, strings.Join(r, ","))
				forecastRow = forecastRow || r[0] == "forecast"
			}
			if len(want) != 0 || !forecastRow {
				t.Fatalf("csv lacks %v (forecast row %v):\n%s", want, forecastRow, raw)
			}
			req, _ := http.NewRequestWithContext(t.Context(), "GET", st.base+base, nil)
			req.Header.Set("Authorization", "Bearer "+member)
			req.Header.Set("Accept", "text/csv")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("Accept: text/csv: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			c.assertNoSecret(t, cloudSecret)
		})
	}
}
