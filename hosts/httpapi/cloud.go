package httpapi

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
)

// Cloud is cloud management as the transport calls it.
type Cloud interface {
	CreateAccount(ctx context.Context, in cloud.NewAccount) (ports.CloudAccount, error)
	ListAccounts(ctx context.Context, page ports.Page) ([]ports.CloudAccount, string, error)
	GetAccount(ctx context.Context, id string) (ports.CloudAccount, error)
	DeleteAccount(ctx context.Context, id string) error
	TestAccount(ctx context.Context, id string) (cloud.TestResult, error)
	Costs(ctx context.Context, in cloud.CostInput) (cloud.CostView, error)
	ListClusters(ctx context.Context, accountID string) ([]ports.Cluster, error)
	ListServices(ctx context.Context, accountID, cluster string) ([]ports.ContainerService, error)
	DeployService(ctx context.Context, in cloud.ServiceRef) (ports.Deployment, error)
	ScaleService(ctx context.Context, in cloud.ScaleInput) (ports.ContainerService, error)
	ServiceLogs(ctx context.Context, in cloud.ServiceRef, q cloud.LogsInput) ([]ports.LogEvent, error)
	ListFunctions(ctx context.Context, accountID string) ([]ports.Function, error)
	InvokeFunction(ctx context.Context, in cloud.InvokeInput) (ports.Invocation, error)
	FunctionLogs(ctx context.Context, accountID, name string, q cloud.LogsInput) ([]ports.LogEvent, error)
	FollowLogs(ctx context.Context, in cloud.FollowInput) (*cloud.LogFollow, error)
	ListApps(ctx context.Context, accountID string) (cloud.AppList, error)
	DeployApp(ctx context.Context, in cloud.AppDeployInput) (cloud.StartedBuild, error)
	BuildLogs(ctx context.Context, in cloud.BuildQuery) (ports.Build, error)
	ListBuilds(ctx context.Context, in cloud.BuildListInput) (cloud.BuildList, error)
	ListAudit(ctx context.Context, accountID string, page ports.Page) ([]ports.AuditEntry, string, error)
	ExternalID(ctx context.Context) (string, error)
}

// cloudRoutes serves cloud management: accounts and costs at /cloud/…, containers and
// functions at /infrastructure/…, hosted apps at /deployments/…, each under
// /api/v1 too.
func (s *Server) cloudRoutes() {
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodGet, p+"/cloud/external-id", s.cloudExternalID)
		s.handle(http.MethodPost, p+"/cloud/accounts", s.createCloudAccount)
		s.handle(http.MethodGet, p+"/cloud/accounts", s.listCloudAccounts)
		s.handle(http.MethodGet, p+"/cloud/accounts/:account_id", s.getCloudAccount)
		s.handle(http.MethodDelete, p+"/cloud/accounts/:account_id", s.deleteCloudAccount)
		s.handle(http.MethodPost, p+"/cloud/accounts/:account_id/test", s.testCloudAccount)
		s.handle(http.MethodGet, p+"/cloud/accounts/:account_id/audit", s.listAudit)
		s.handle(http.MethodGet, p+"/cloud/costs", s.costs)
		s.handle(http.MethodGet, p+"/infrastructure/containers/clusters", s.listClusters)
		s.handle(http.MethodGet, p+"/infrastructure/containers/clusters/:cluster/services", s.listServices)
		s.handle(http.MethodPost, p+"/infrastructure/containers/services/:service/deploy", s.deployService)
		s.handle(http.MethodPost, p+"/infrastructure/containers/services/:service/scale", s.scaleService)
		s.handle(http.MethodGet, p+"/infrastructure/containers/services/:service/logs", s.serviceLogs)
		s.handle(http.MethodGet, p+"/infrastructure/containers/services/:service/logs/stream", s.serviceLogStream, streaming)
		s.handle(http.MethodGet, p+"/infrastructure/serverless/functions", s.listFunctions)
		s.handle(http.MethodPost, p+"/infrastructure/serverless/functions/:name/invoke", s.invokeFunction)
		s.handle(http.MethodGet, p+"/infrastructure/serverless/functions/:name/logs", s.functionLogs)
		s.handle(http.MethodGet, p+"/infrastructure/serverless/functions/:name/logs/stream", s.functionLogStream, streaming)
		s.handle(http.MethodGet, p+"/deployments/apps", s.listApps)
		s.handle(http.MethodPost, p+"/deployments/apps/:app_id/deploy", s.deployApp)
		s.handle(http.MethodGet, p+"/deployments/apps/:app_id/builds/:build_id/logs", s.buildLogs)
		s.handle(http.MethodGet, p+"/deployments/apps/:app_id/builds", s.listBuilds)
	}
}

type cloudAuthJSON struct {
	Mode            string `json:"mode"`
	RoleARN         string `json:"role_arn,omitempty"`
	ExternalID      string `json:"external_id,omitempty"`
	AccessKeyID     string `json:"access_key_id,omitempty"`
	SecretAccessKey string `json:"secret_access_key,omitempty"`
}

type newAccountRequest struct {
	Provider string         `json:"provider"`
	Name     string         `json:"name"`
	Region   string         `json:"region"`
	Auth     *cloudAuthJSON `json:"auth"`
	ReadOnly bool           `json:"read_only"`
}

type cloudAccountJSON struct {
	ID           string        `json:"id"`
	Provider     string        `json:"provider"`
	Name         string        `json:"name"`
	Region       string        `json:"region"`
	Auth         cloudAuthJSON `json:"auth"`
	ReadOnly     bool          `json:"read_only"`
	Status       string        `json:"status"`
	LastTestedAt *time.Time    `json:"last_tested_at"`
	LastError    string        `json:"last_error,omitempty"`
	CreatedAt    time.Time     `json:"created_at"`
}

// cloudAccountOut never carries the secret: only its mode's public fields.
func cloudAccountOut(a ports.CloudAccount) cloudAccountJSON {
	auth := cloudAuthJSON{Mode: string(a.Auth.Mode)}
	if a.Auth.Mode == ports.AuthAssumeRole {
		auth.RoleARN, auth.ExternalID = a.Auth.RoleARN, a.Auth.ExternalID
	} else {
		auth.AccessKeyID = a.Auth.AccessKeyID
	}
	return cloudAccountJSON{ID: a.ID, Provider: a.Provider, Name: a.Name, Region: a.Region, Auth: auth, ReadOnly: a.ReadOnly,
		Status: string(a.Status), LastTestedAt: utc(a.LastTestedAt), LastError: a.LastError, CreatedAt: a.CreatedAt.UTC()}
}

func (s *Server) createCloudAccount(w http.ResponseWriter, r *http.Request) error {
	var req newAccountRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Auth == nil {
		return missing("auth")
	}
	a, err := s.d.Cloud.CreateAccount(r.Context(), cloud.NewAccount{
		Provider: req.Provider, Name: req.Name, Region: req.Region, ReadOnly: req.ReadOnly,
		Auth: cloud.AuthInput{Mode: ports.CloudAuthMode(req.Auth.Mode), RoleARN: req.Auth.RoleARN, ExternalID: req.Auth.ExternalID,
			AccessKeyID: req.Auth.AccessKeyID, SecretAccessKey: req.Auth.SecretAccessKey},
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, cloudAccountOut(a))
}

func (s *Server) listCloudAccounts(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	accounts, next, err := s.d.Cloud.ListAccounts(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(accounts, cloudAccountOut), next))
}

func (s *Server) getCloudAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.d.Cloud.GetAccount(r.Context(), pathParam(r, "account_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, cloudAccountOut(a))
}

func (s *Server) deleteCloudAccount(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Cloud.DeleteAccount(r.Context(), pathParam(r, "account_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) testCloudAccount(w http.ResponseWriter, r *http.Request) error {
	res, err := s.d.Cloud.TestAccount(r.Context(), pathParam(r, "account_id"))
	if err != nil {
		return err
	}
	out := map[string]any{"ok": res.OK, "account_id": res.AccountID, "arn": res.ARN, "latency_ms": res.LatencyMS}
	if res.Error != "" {
		out["error"] = res.Error
	}
	return writeJSON(w, http.StatusOK, out)
}

type auditJSON struct {
	ID        string          `json:"id"`
	UserID    string          `json:"user_id"`
	AccountID string          `json:"account_id"`
	Action    string          `json:"action"`
	Resource  string          `json:"resource"`
	Arguments json.RawMessage `json:"arguments"`
	Outcome   string          `json:"outcome"`
	Error     string          `json:"error,omitempty"`
	At        time.Time       `json:"at"`
}

func (s *Server) cloudExternalID(w http.ResponseWriter, r *http.Request) error {
	id, err := s.d.Cloud.ExternalID(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"external_id": id})
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	entries, next, err := s.d.Cloud.ListAudit(r.Context(), pathParam(r, "account_id"), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(entries, auditOut), next))
}

func auditOut(e ports.AuditEntry) auditJSON {
	return auditJSON{ID: e.ID, UserID: e.UserID, AccountID: e.AccountID, Action: e.Action, Resource: e.Resource,
		Arguments: e.Arguments, Outcome: e.Outcome, Error: e.Error, At: e.At.UTC()}
}

func (s *Server) costs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	csvOut, err := wantsCSV(r)
	if err != nil {
		return err
	}
	in := cloud.CostInput{
		AccountID: q.Get("account_id"), StartDate: q.Get("start_date"), EndDate: q.Get("end_date"),
		Granularity: q.Get("granularity"), GroupBy: q.Get("group_by"),
	}
	if v := q.Get("include"); v != "" {
		for _, part := range strings.Split(v, ",") {
			switch strings.TrimSpace(part) {
			case "":
			case "previous":
				in.Previous = true
			case "forecast":
				in.Forecast = true
			default:
				return ports.FieldsError(ports.KindMalformed, ports.FieldError{Field: "include", Reason: "must list previous and/or forecast, comma-separated"})
			}
		}
	}
	view, err := s.d.Cloud.Costs(r.Context(), in)
	if err != nil {
		return err
	}
	if csvOut {
		return writeCostsCSV(w, view)
	}
	periods := make([]map[string]any, len(view.Periods))
	for i, p := range view.Periods {
		groups := p.Groups
		if groups == nil {
			groups = []ports.CostGroup{}
		}
		// Like end_date, a period's end is inclusive: the provider's exclusive end less a day.
		end := p.End.UTC().AddDate(0, 0, -1).Format(time.DateOnly)
		periods[i] = map[string]any{"start": p.Start.UTC().Format(time.DateOnly), "end": end, "total": json.Number(p.Total), "groups": groupsOut(groups)}
	}
	out := map[string]any{
		"currency": view.Currency, "total": json.Number(view.Total), "start_date": view.StartDate, "end_date": view.EndDate, "periods": periods,
		"group_by": nilIfEmpty(view.GroupBy), "groups": mapSlice(view.Groups, func(g cloud.GroupTotal) map[string]any {
			m := map[string]any{"key": g.Key, "amount": json.Number(g.Amount)}
			if view.Previous != nil {
				changeOut(m, g.Change)
			}
			return m
		}), "previous": nil, "forecast": nil,
	}
	if p := view.Previous; p != nil {
		m := map[string]any{"start_date": p.StartDate, "end_date": p.EndDate, "total": json.Number(p.Total)}
		changeOut(m, p.Change)
		out["previous"] = m
	}
	if f := view.Forecast; f != nil {
		m := map[string]any{"start_date": f.StartDate, "end_date": f.EndDate, "amount": json.Number(f.Amount), "lower": nil, "upper": nil}
		if f.Lower != "" && f.Upper != "" {
			m["lower"], m["upper"] = json.Number(f.Lower), json.Number(f.Upper)
		}
		out["forecast"] = m
	}
	if view.ForecastError != "" {
		out["forecast_error"] = view.ForecastError
	}
	return writeJSON(w, http.StatusOK, out)
}

// changeOut adds a change's fields to m: previous, change and
// change_percent (null when the previous amount is zero).
func changeOut(m map[string]any, c cloud.Change) {
	m["previous"], m["change"], m["change_percent"] = json.Number(c.Previous), json.Number(c.Change), nil
	if c.ChangePercent != "" {
		m["change_percent"] = json.Number(c.ChangePercent)
	}
}

func nilIfEmpty(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// wantsCSV says whether the costs are asked for as CSV: format=csv, or no
// format and an Accept header naming text/csv. Errors: malformed for another
// format.
func wantsCSV(r *http.Request) (bool, error) {
	switch r.URL.Query().Get("format") {
	case "csv":
		return true, nil
	case "json":
		return false, nil
	case "":
		for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/csv") {
				return true, nil
			}
		}
		return false, nil
	}
	return false, ports.FieldsError(ports.KindMalformed, ports.FieldError{Field: "format", Reason: "must be json or csv"})
}

// writeCostsCSV writes the costs as CSV, one row per period and group
// ("total" for a period not grouped): start_date, end_date (inclusive),
// group, amount, currency; then, when grouped, one row per group over the
// whole range, with its previous amount and change when asked for; and the
// forecast's row when there is one. A text cell that a spreadsheet would
// read as a formula is written with a leading quote.
func writeCostsCSV(w http.ResponseWriter, v cloud.CostView) error {
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	_ = cw.Write([]string{"row", "start_date", "end_date", "group", "amount", "currency", "previous", "change", "change_percent"})
	for _, p := range v.Periods {
		start, end := p.Start.UTC().Format(time.DateOnly), p.End.UTC().AddDate(0, 0, -1).Format(time.DateOnly)
		if v.GroupBy == "" || len(p.Groups) == 0 {
			_ = cw.Write([]string{"period", start, end, "total", p.Total, v.Currency, "", "", ""})
			continue
		}
		for _, g := range p.Groups {
			_ = cw.Write([]string{"period", start, end, csvText(g.Key), g.Amount, v.Currency, "", "", ""})
		}
	}
	for _, g := range v.Groups {
		_ = cw.Write([]string{"range", v.StartDate, v.EndDate, csvText(g.Key), g.Amount, v.Currency, g.Previous, g.Change.Change, g.ChangePercent})
	}
	total := []string{"range", v.StartDate, v.EndDate, "total", v.Total, v.Currency, "", "", ""}
	if p := v.Previous; p != nil {
		total[6], total[7], total[8] = p.Total, p.Change.Change, p.ChangePercent
	}
	_ = cw.Write(total)
	if f := v.Forecast; f != nil {
		_ = cw.Write([]string{"forecast", f.StartDate, f.EndDate, "total", f.Amount, v.Currency, "", "", ""})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	name := "costs-" + v.StartDate + "-to-" + v.EndDate
	if v.GroupBy != "" {
		name += "-by-" + strings.ToLower(fileSafe.ReplaceAllString(v.GroupBy, "_"))
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(buf.Bytes())
	return err
}

// fileSafe matches what a file name should not carry.
var fileSafe = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// csvText guards a text cell against being read as a formula.
func csvText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

func groupsOut(groups []ports.CostGroup) []map[string]any {
	return mapSlice(groups, func(g ports.CostGroup) map[string]any {
		return map[string]any{"key": g.Key, "amount": json.Number(g.Amount)}
	})
}

func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	clusters, err := s.d.Cloud.ListClusters(r.Context(), r.URL.Query().Get("account_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(clusters, func(c ports.Cluster) map[string]any {
		return map[string]any{"name": c.Name, "arn": c.ARN, "status": c.Status, "active_services": c.ActiveServices,
			"running_tasks": c.RunningTasks, "pending_tasks": c.PendingTasks}
	}), ""))
}

func serviceOut(svc ports.ContainerService) map[string]any {
	return map[string]any{"name": svc.Name, "arn": svc.ARN, "cluster": svc.Cluster, "status": svc.Status, "task_definition": svc.TaskDefinition,
		"desired_count": svc.Desired, "running_count": svc.Running, "pending_count": svc.Pending,
		"deployments": mapSlice(svc.Deployments, func(d ports.ServiceDeployment) map[string]any {
			return map[string]any{"id": d.ID, "status": d.Status, "rollout_state": d.RolloutState, "task_definition": d.TaskDefinition,
				"desired_count": d.Desired, "running_count": d.Running, "pending_count": d.Pending, "created_at": d.CreatedAt.UTC()}
		}),
		"events": mapSlice(svc.Events, func(e ports.ServiceEvent) map[string]any {
			return map[string]any{"id": e.ID, "created_at": e.CreatedAt.UTC(), "message": e.Message}
		}),
		"stopped_tasks": mapSlice(svc.StoppedTasks, func(t ports.StoppedTask) map[string]any {
			reasons := t.ContainerReasons
			if reasons == nil {
				reasons = []string{}
			}
			return map[string]any{"task_id": t.TaskID, "arn": t.ARN, "stop_code": t.StopCode, "stopped_reason": t.StoppedReason,
				"stopped_at": t.StoppedAt.UTC(), "containers": reasons}
		})}
}

func (s *Server) listServices(w http.ResponseWriter, r *http.Request) error {
	services, err := s.d.Cloud.ListServices(r.Context(), r.URL.Query().Get("account_id"), pathParam(r, "cluster"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(services, serviceOut), ""))
}

type scaleRequest struct {
	AccountID          string `json:"account_id"`
	Cluster            string `json:"cluster"`
	DesiredCount       *int   `json:"desired_count"`
	ConfirmScaleToZero bool   `json:"confirm_scale_to_zero"`
	ConfirmName        string `json:"confirm_name"`
}

// deployRequest is a service deploy's body: only the service's address.
type deployRequest struct {
	AccountID string `json:"account_id"`
	Cluster   string `json:"cluster"`
}

func (s *Server) deployService(w http.ResponseWriter, r *http.Request) error {
	var req deployRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	d, err := s.d.Cloud.DeployService(r.Context(), cloud.ServiceRef{AccountID: req.AccountID, Cluster: req.Cluster, Service: pathParam(r, "service")})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"deployment_id": d.ID, "status": d.Status})
}

func (s *Server) scaleService(w http.ResponseWriter, r *http.Request) error {
	var req scaleRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	svc, err := s.d.Cloud.ScaleService(r.Context(), cloud.ScaleInput{
		ServiceRef:   cloud.ServiceRef{AccountID: req.AccountID, Cluster: req.Cluster, Service: pathParam(r, "service")},
		DesiredCount: req.DesiredCount, ConfirmScaleToZero: req.ConfirmScaleToZero, ConfirmName: req.ConfirmName,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, serviceOut(svc))
}

func logsQuery(r *http.Request) (cloud.LogsInput, error) {
	q := r.URL.Query()
	in := cloud.LogsInput{Since: q.Get("since"), Filter: q.Get("filter")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return in, ports.Invalid("limit must be a whole number", ports.FieldError{Field: "limit", Reason: "must be a whole number"})
		}
		in.Limit = n
	}
	return in, nil
}

func logsOut(events []ports.LogEvent) map[string]any {
	return map[string]any{"items": mapSlice(events, func(e ports.LogEvent) map[string]any {
		return map[string]any{"timestamp": e.Timestamp.UTC(), "message": e.Message, "stream": e.Stream}
	})}
}

func (s *Server) serviceLogs(w http.ResponseWriter, r *http.Request) error {
	q, err := logsQuery(r)
	if err != nil {
		return err
	}
	ref := cloud.ServiceRef{AccountID: r.URL.Query().Get("account_id"), Cluster: r.URL.Query().Get("cluster"), Service: pathParam(r, "service")}
	events, err := s.d.Cloud.ServiceLogs(r.Context(), ref, q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, logsOut(events))
}

func (s *Server) listFunctions(w http.ResponseWriter, r *http.Request) error {
	fns, err := s.d.Cloud.ListFunctions(r.Context(), r.URL.Query().Get("account_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(fns, func(f ports.Function) map[string]any {
		return map[string]any{"name": f.Name, "arn": f.ARN, "runtime": f.Runtime, "state": f.State, "memory_mb": f.MemoryMB,
			"timeout_seconds": f.TimeoutSecs, "last_modified": f.LastModified.UTC(), "log_group": f.LogGroup}
	}), ""))
}

type invokeRequest struct {
	AccountID string          `json:"account_id"`
	Payload   json.RawMessage `json:"payload"`
	DryRun    bool            `json:"dry_run"`
}

func (s *Server) invokeFunction(w http.ResponseWriter, r *http.Request) error {
	var req invokeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	inv, err := s.d.Cloud.InvokeFunction(r.Context(), cloud.InvokeInput{AccountID: req.AccountID, Name: pathParam(r, "name"), Payload: req.Payload, DryRun: req.DryRun})
	if err != nil {
		return err
	}
	payload := inv.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	return writeJSON(w, http.StatusOK, map[string]any{"status_code": inv.StatusCode, "payload": payload,
		"function_error": inv.FunctionError, "log_tail": inv.LogTail})
}

func (s *Server) functionLogs(w http.ResponseWriter, r *http.Request) error {
	q, err := logsQuery(r)
	if err != nil {
		return err
	}
	events, err := s.d.Cloud.FunctionLogs(r.Context(), r.URL.Query().Get("account_id"), pathParam(r, "name"), q)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, logsOut(events))
}

func (s *Server) listApps(w http.ResponseWriter, r *http.Request) error {
	apps, err := s.d.Cloud.ListApps(r.Context(), r.URL.Query().Get("account_id"))
	if err != nil {
		return err
	}
	out := map[string]any{"items": mapSlice(apps.Items, func(a cloud.AccountApp) map[string]any {
		branches := a.Branches
		if branches == nil {
			branches = []string{}
		}
		return map[string]any{"account_id": a.AccountID, "id": a.ID, "name": a.Name, "arn": a.ARN, "platform": a.Platform,
			"default_domain": a.DefaultDomain, "repository": a.Repository, "branches": branches, "updated_at": a.UpdatedAt.UTC()}
	}), "next_cursor": nil}
	if len(apps.Failed) > 0 {
		out["failed_accounts"] = mapSlice(apps.Failed, func(f cloud.AccountFailure) map[string]any {
			return map[string]any{"account_id": f.AccountID, "name": f.AccountName, "code": string(f.Kind), "error": f.Error}
		})
	}
	return writeJSON(w, http.StatusOK, out)
}

type appDeployRequest struct {
	AccountID string `json:"account_id"`
	Branch    string `json:"branch"`
}

func (s *Server) deployApp(w http.ResponseWriter, r *http.Request) error {
	var req appDeployRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	b, err := s.d.Cloud.DeployApp(r.Context(), cloud.AppDeployInput{AccountID: req.AccountID, AppID: pathParam(r, "app_id"), Branch: req.Branch})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"build_id": b.ID, "status": b.Status,
		"account_id": b.AccountID, "app_id": b.AppID, "branch": b.Branch, "job_id": b.JobID})
}

func (s *Server) buildLogs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	b, err := s.d.Cloud.BuildLogs(r.Context(), cloud.BuildQuery{AccountID: q.Get("account_id"), AppID: pathParam(r, "app_id"),
		BuildID: pathParam(r, "build_id"), Branch: q.Get("branch")})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"status": b.Status, "steps": mapSlice(b.Steps, func(st ports.BuildStep) map[string]string {
		return map[string]string{"name": st.Name, "status": st.Status, "log": st.Log}
	})})
}

func (s *Server) listBuilds(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	in := cloud.BuildListInput{AccountID: q.Get("account_id"), AppID: pathParam(r, "app_id"), Branch: q.Get("branch"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return ports.Invalid("limit must be a whole number", ports.FieldError{Field: "limit", Reason: "must be a whole number"})
		}
		in.Limit = n
	}
	page, err := s.d.Cloud.ListBuilds(r.Context(), in)
	if err != nil {
		return err
	}
	var next any
	if page.NextCursor != "" {
		next = page.NextCursor
	}
	return writeJSON(w, http.StatusOK, map[string]any{"account_id": page.AccountID, "branch": page.Branch, "next_cursor": next,
		"items": mapSlice(page.Items, func(b ports.Build) map[string]any {
			return map[string]any{"id": b.ID, "branch": b.Branch, "status": b.Status, "job_type": b.JobType,
				"commit_id": b.CommitID, "commit_message": b.CommitMessage, "started_at": timeOrNil(b.StartedAt), "ended_at": timeOrNil(b.EndedAt)}
		})})
}

// timeOrNil is t in UTC, or nil when it is zero.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return utc(&t)
}

// mapSlice returns f applied to each element, never nil.
func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
