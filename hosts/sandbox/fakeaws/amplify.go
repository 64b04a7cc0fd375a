package fakeaws

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// logPathPrefix is where the fake serves the logs of Amplify job steps.
const logPathPrefix = "/_fakeaws/amplify-logs/"

func (s *Server) routeAmplify(rq *request, path string) (handler, *apiError) {
	parts, ok := splitPath(path)
	if !ok {
		return nil, errf(http.StatusBadRequest, "BadRequestException", "fakeaws: malformed path %s", path)
	}
	method := rq.r.Method
	labels := map[string]string{}
	for i, name := range []string{"appId", "branchName", "jobId"} {
		if len(parts) > 2*i+1 {
			labels[name] = parts[2*i+1]
		}
	}
	shape := strings.Join(shapeOf(parts), "/")
	var h handler
	switch {
	case shape == "apps" && method == http.MethodGet:
		rq.operation, h = "ListApps", amplifyListApps
	case shape == "apps/*" && method == http.MethodGet:
		rq.operation, h = "GetApp", amplifyGetApp
	case shape == "apps/*/branches" && method == http.MethodGet:
		rq.operation, h = "ListBranches", amplifyListBranches
	case shape == "apps/*/branches/*/jobs" && method == http.MethodPost:
		rq.operation, h = "StartJob", amplifyStartJob
	case shape == "apps/*/branches/*/jobs" && method == http.MethodGet:
		rq.operation, h = "ListJobs", amplifyListJobs
	case shape == "apps/*/branches/*/jobs/*" && method == http.MethodGet:
		rq.operation, h = "GetJob", amplifyGetJob
	default:
		return nil, errf(http.StatusNotFound, "UnknownOperationException", "fakeaws: no Amplify operation serves %s %s", method, path)
	}
	rq.restInput(labels)
	if aerr := rq.jsonBody(); aerr != nil {
		return nil, aerr
	}
	return h, nil
}

// shapeOf replaces the label segments of an Amplify path (odd positions)
// with "*".
func shapeOf(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if i%2 == 1 {
			p = "*"
		}
		out[i] = p
	}
	return out
}

func amplifyNotFound(format string, args ...any) *apiError {
	return errf(http.StatusNotFound, "NotFoundException", format, args...)
}

func amplifyBadRequest(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, "BadRequestException", format, args...)
}

func amplifyAppARN(rq *request, appID string) string {
	return fmt.Sprintf("arn:aws:amplify:%s:%s:apps/%s", rq.region, rq.account().id, appID)
}

// amplifyLookup finds the app, branch and job the path names (as far as it
// names them); the caller holds the lock.
func amplifyLookup(rq *request) (*app, *branch, *Job, *apiError) {
	ap := rq.account().apps[str(rq.input, "appId")]
	if ap == nil {
		return nil, nil, nil, amplifyNotFound("App %s not found.", str(rq.input, "appId"))
	}
	name, ok := rq.input["branchName"].(string)
	if !ok {
		return ap, nil, nil, nil
	}
	br := ap.branches[name]
	if br == nil {
		return nil, nil, nil, amplifyNotFound("Branch %s not found.", name)
	}
	id, ok := rq.input["jobId"].(string)
	if !ok {
		return ap, br, nil, nil
	}
	for _, j := range br.jobs {
		if j.ID == id {
			j.advance(time.Now().UTC(), br.Name)
			return ap, br, j, nil
		}
	}
	return nil, nil, nil, amplifyNotFound("Job %s not found.", id)
}

func amplifyAppJSON(rq *request, ap *app) map[string]any {
	return map[string]any{
		"appId":                    ap.ID,
		"appArn":                   amplifyAppARN(rq, ap.ID),
		"name":                     ap.Name,
		"tags":                     map[string]any{},
		"description":              "",
		"repository":               ap.Repository,
		"platform":                 ap.Platform,
		"createTime":               epochSeconds(seedTime),
		"updateTime":               epochSeconds(ap.UpdatedAt),
		"environmentVariables":     map[string]any{},
		"defaultDomain":            ap.DefaultDomain,
		"enableBranchAutoBuild":    true,
		"enableBranchAutoDeletion": false,
		"enableBasicAuth":          false,
		"customRules":              []any{},
	}
}

func amplifyBranchJSON(rq *request, ap *app, br *branch) map[string]any {
	active := "0"
	if n := len(br.jobs); n > 0 {
		active = br.jobs[n-1].ID
	}
	return map[string]any{
		"branchArn":                amplifyAppARN(rq, ap.ID) + "/branches/" + url.PathEscape(br.Name),
		"branchName":               br.Name,
		"description":              "",
		"stage":                    br.Stage,
		"displayName":              strings.ReplaceAll(br.Name, "/", "-"),
		"enableNotification":       false,
		"createTime":               epochSeconds(seedTime),
		"updateTime":               epochSeconds(ap.UpdatedAt),
		"environmentVariables":     map[string]any{},
		"enableAutoBuild":          true,
		"customDomains":            []any{},
		"framework":                "",
		"activeJobId":              active,
		"totalNumberOfJobs":        strconv.Itoa(len(br.jobs)),
		"enableBasicAuth":          false,
		"ttl":                      "5",
		"enablePullRequestPreview": false,
	}
}

func amplifyJobSummary(rq *request, ap *app, br *branch, j *Job) map[string]any {
	j.advance(time.Now().UTC(), br.Name)
	out := map[string]any{
		"jobArn":        amplifyAppARN(rq, ap.ID) + "/branches/" + url.PathEscape(br.Name) + "/jobs/" + j.ID,
		"jobId":         j.ID,
		"commitId":      "HEAD",
		"commitMessage": "",
		"commitTime":    epochSeconds(j.StartTime),
		"startTime":     epochSeconds(j.StartTime),
		"status":        j.Status,
		"jobType":       j.Type,
	}
	if j.Status == "SUCCEED" || j.Status == "FAILED" || j.Status == "CANCELLED" {
		out["endTime"] = epochSeconds(j.StartTime.Add(time.Minute))
	}
	return out
}

func amplifyListApps(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	var apps []*app
	for _, id := range sortedKeys(rq.account().apps) {
		apps = append(apps, rq.account().apps[id])
	}
	start, end, next, aerr := rq.s.page("ListApps", str(rq.input, "nextToken"), len(apps), int(limit), 100)
	if aerr != nil {
		return nil, amplifyBadRequest("%s", aerr.message)
	}
	out := []any{}
	for _, ap := range apps[start:end] {
		out = append(out, amplifyAppJSON(rq, ap))
	}
	body := map[string]any{"apps": out}
	if next != "" {
		body["nextToken"] = next
	}
	return &reply{body: body}, nil
}

func amplifyGetApp(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	ap, _, _, aerr := amplifyLookup(rq)
	if aerr != nil {
		return nil, aerr
	}
	return &reply{body: map[string]any{"app": amplifyAppJSON(rq, ap)}}, nil
}

func amplifyListBranches(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	ap, _, _, aerr := amplifyLookup(rq)
	if aerr != nil {
		return nil, aerr
	}
	names := sortedKeys(ap.branches)
	start, end, next, aerr := rq.s.page("ListBranches", str(rq.input, "nextToken"), len(names), int(limit), 100)
	if aerr != nil {
		return nil, amplifyBadRequest("%s", aerr.message)
	}
	out := []any{}
	for _, n := range names[start:end] {
		out = append(out, amplifyBranchJSON(rq, ap, ap.branches[n]))
	}
	body := map[string]any{"branches": out}
	if next != "" {
		body["nextToken"] = next
	}
	return &reply{body: body}, nil
}

func amplifyStartJob(rq *request) (*reply, *apiError) {
	if typ := str(rq.input, "jobType"); typ != "RELEASE" {
		return nil, amplifyBadRequest("fakeaws supports only jobType RELEASE, not %q", typ)
	}
	s := rq.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, br, _, aerr := amplifyLookup(rq)
	if aerr != nil {
		return nil, aerr
	}
	last := 0
	for _, j := range br.jobs {
		if n, err := strconv.Atoi(j.ID); err == nil && n > last {
			last = n
		}
	}
	j := &Job{ID: strconv.Itoa(last + 1), Type: "RELEASE", Status: "PENDING", StartTime: time.Now().UTC(), finishIn: s.buildTime}
	j.advance(j.StartTime, br.Name)
	br.jobs = append(br.jobs, j)
	return &reply{body: map[string]any{"jobSummary": amplifyJobSummary(rq, ap, br, j)}}, nil
}

func amplifyListJobs(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	ap, br, _, aerr := amplifyLookup(rq)
	if aerr != nil {
		return nil, aerr
	}
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 50 {
		return nil, amplifyBadRequest("maxResults must be between 0 and 50")
	}
	start, end, next, aerr := rq.s.page("ListJobs", str(rq.input, "nextToken"), len(br.jobs), int(limit), 50)
	if aerr != nil {
		return nil, aerr
	}
	out := []any{}
	for i := len(br.jobs) - 1 - start; i > len(br.jobs)-1-end; i-- {
		out = append(out, amplifyJobSummary(rq, ap, br, br.jobs[i]))
	}
	body := map[string]any{"jobSummaries": out}
	if next != "" {
		body["nextToken"] = next
	}
	return &reply{body: body}, nil
}

func amplifyGetJob(rq *request) (*reply, *apiError) {
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	ap, br, j, aerr := amplifyLookup(rq)
	if aerr != nil {
		return nil, aerr
	}
	scheme := "http"
	if rq.r.TLS != nil {
		scheme = "https"
	}
	steps := []any{}
	for i, st := range j.Steps {
		logURL := fmt.Sprintf("%s://%s%s%s/%s/%s/%s/%d", scheme, rq.r.Host, logPathPrefix,
			rq.account().id, url.PathEscape(ap.ID), url.PathEscape(br.Name), url.PathEscape(j.ID), i)
		steps = append(steps, map[string]any{
			"stepName":  st.Name,
			"startTime": epochSeconds(j.StartTime),
			"status":    st.Status,
			"endTime":   epochSeconds(j.StartTime.Add(time.Minute)),
			"logUrl":    logURL,
		})
	}
	return &reply{body: map[string]any{"job": map[string]any{
		"summary": amplifyJobSummary(rq, ap, br, j),
		"steps":   steps,
	}}}, nil
}

// serveBuildLog serves the log of a job step, as the presigned URL of a real
// step's logUrl would.
func (s *Server) serveBuildLog(w http.ResponseWriter, r *http.Request) {
	parts, ok := splitPath(strings.TrimPrefix(r.URL.EscapedPath(), logPathPrefix))
	if !ok || len(parts) != 5 || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	idx, err := strconv.Atoi(parts[4])
	if err != nil {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	var step *Step
	if acct := s.accounts[parts[0]]; acct != nil {
		if ap := acct.apps[parts[1]]; ap != nil {
			if br := ap.branches[parts[2]]; br != nil {
				for _, j := range br.jobs {
					if j.ID == parts[3] && idx >= 0 && idx < len(j.Steps) {
						copied := j.Steps[idx]
						step = &copied
					}
				}
			}
		}
	}
	s.mu.Unlock()
	switch {
	case step == nil:
		http.NotFound(w, r)
	case step.LogStatus != 0 && step.LogStatus != http.StatusOK:
		http.Error(w, http.StatusText(step.LogStatus), step.LogStatus)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(step.Log)))
		_, _ = w.Write([]byte(step.Log))
	}
}
