package cloud

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// ServiceRef names a container service of an account's cluster. AccountID
// and Cluster may be left out where only one account and cluster run the
// service.
type ServiceRef struct {
	AccountID string
	Cluster   string
	Service   string
}

// ScaleInput asks to set a service's desired task count. DesiredCount is
// required; 0 stops the service, and needs ConfirmScaleToZero. A large
// change (see LargeScale) needs ConfirmName, the service's name typed.
type ScaleInput struct {
	ServiceRef
	DesiredCount       *int
	ConfirmScaleToZero bool
	ConfirmName        string
}

// LargeScale says whether setting a service's desired count from current to
// next needs the service's name typed: next is above the size above, or it
// multiplies or divides the count by more than ScaleConfirmFactor (a count
// of 0 counting as 1). Scaling to 0 has its own confirmation
// (confirm_scale_to_zero) and is not large by the factor.
func LargeScale(current, next, above int) bool {
	if next > above {
		return true
	}
	if next == 0 || next == current {
		return false
	}
	base := max(current, 1)
	return next > base*ScaleConfirmFactor || next*ScaleConfirmFactor < current
}

// LogsInput selects log events: Since, RFC 3339, optional; Limit 1..1000,
// 0 meaning 100.
type LogsInput struct {
	Since string
	Limit int
	// Filter is a CloudWatch Logs filter pattern, passed through: at most
	// MaxLogFilterLen characters of valid UTF-8 without control characters.
	Filter string
}

// InvokeInput asks to invoke a function with Payload, any JSON of at most
// 256 KiB ({} when empty). DryRun only checks that it could be invoked; it is
// a write all the same. AccountID may be left out where only one account has
// the function.
type InvokeInput struct {
	AccountID string
	Name      string
	Payload   json.RawMessage
	DryRun    bool
}

// AppDeployInput asks to deploy a hosted app's branch. AccountID may be
// left out where only one account has the app; Branch where the app has one
// branch, or one production branch.
type AppDeployInput struct {
	AccountID string
	AppID     string
	Branch    string
}

// StartedBuild is a build DeployApp started. ID is devpilot's id of it, the
// one BuildLogs takes alone; JobID is the provider's (an Amplify job id,
// unique only within its branch).
type StartedBuild struct {
	ID        string
	AccountID string
	AppID     string
	Branch    string
	JobID     string
	Status    string
}

// BuildQuery names a build of an app: BuildID is the id DeployApp returned,
// or a provider job id (a build started elsewhere), which is looked for in
// the app's branches (only Branch's when set) of the account named, or of
// every account.
type BuildQuery struct {
	AccountID string
	AppID     string
	BuildID   string
	Branch    string
}

// BuildListInput asks for a page of an app's builds: of Branch (the app's
// only, or only production, branch when ""), of the account named (the one
// holding the app when ""). Limit 1..50, 0 meaning 20; Cursor the previous
// page's NextCursor.
type BuildListInput struct {
	AccountID string
	AppID     string
	Branch    string
	Limit     int
	Cursor    string
}

// BuildList is a page of an app branch's builds, newest first.
type BuildList struct {
	AccountID  string
	Branch     string
	Items      []ports.Build
	NextCursor string
}

// Bounds of ListBuilds.
const (
	DefaultBuildLimit = 20
	MaxBuildLimit     = 50
	maxCursorLen      = 4096
)

// AccountApp is a hosted app with the id of the account it is in.
type AccountApp struct {
	AccountID string
	ports.App
}

// AccountFailure says why an account could not be read.
type AccountFailure struct {
	AccountID   string
	AccountName string
	Error       string
	Kind        ports.Kind
}

// AppList is the apps of one account or of every account of an
// organisation, and the accounts whose apps could not be listed.
type AppList struct {
	Items  []AccountApp
	Failed []AccountFailure
}

// logQuery validates q: a missing required field (fields) or a filter it
// cannot read is malformed; since (ports.ParseClientTime) and limit invalid.
func (q LogsInput) logQuery(fields []ports.FieldError) (ports.LogQuery, error) {
	var lq ports.LogQuery
	if reason := filterProblem(q.Filter); reason != "" {
		fields = append(fields, ports.FieldError{Field: "filter", Reason: reason})
	}
	lq.Filter = q.Filter
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return lq, err
	}
	var invalid []ports.FieldError
	if q.Since != "" {
		t, err := ports.ParseClientTime("since", q.Since)
		if e, ok := ports.AsError(err); ok {
			invalid = append(invalid, e.Fields...)
		}
		lq.Since = t
	}
	switch {
	case q.Limit == 0:
		lq.Limit = DefaultLogLimit
	case q.Limit < 1 || q.Limit > MaxLogLimit:
		invalid = append(invalid, ports.FieldError{Field: "limit", Reason: fmt.Sprintf("must be 1 to %d", MaxLogLimit)})
	default:
		lq.Limit = q.Limit
	}
	return lq, ports.FieldsError(ports.KindInvalid, invalid...)
}

// ListClusters returns the container clusters of an account of the caller's
// organisation; accountID may be "" when the organisation has one account.
// Errors: malformed (account_id required when the organisation has several
// accounts, naming them, or none); not_found for the account; the provider's
// errors.
func (s *Service) ListClusters(ctx context.Context, accountID string) ([]ports.Cluster, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.pick(ctx, p, accountID)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, s.d.Provider.ListClusters)
}

// ListServices returns the services of an account's cluster, with their
// deployments; accountID may be "" when the organisation has one account.
// Errors: malformed (cluster required; account_id as ListClusters);
// not_found for the account or the cluster; the provider's errors.
func (s *Service) ListServices(ctx context.Context, accountID, cluster string) ([]ports.ContainerService, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if err := ports.FieldsError(ports.KindMalformed, required("cluster", cluster)...); err != nil {
		return nil, err
	}
	a, err := s.pick(ctx, p, accountID)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.ContainerService, error) {
		return s.d.Provider.ListServices(ctx, c, cluster)
	})
}

// DeployService forces a new deployment of a service, audited. The account
// and cluster may be left out where only one fits (see ServiceLogs). Errors:
// malformed (service required; account_id or cluster when several fit,
// naming them); not_found for the account or the service; forbidden when the
// account is read-only; the provider's errors.
func (s *Service) DeployService(ctx context.Context, in ServiceRef) (ports.Deployment, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Deployment{}, err
	}
	if err := ports.FieldsError(ports.KindMalformed, required("service", in.Service)...); err != nil {
		return ports.Deployment{}, err
	}
	a, cluster, err := s.locateService(ctx, p, in)
	if err != nil {
		return ports.Deployment{}, err
	}
	o := op{action: "ecs.deploy_service", resource: cluster + "/" + in.Service,
		args: map[string]any{"cluster": cluster, "service": in.Service}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Deployment, error) {
		return s.d.Provider.DeployService(ctx, c, cluster, in.Service)
	})
}

// ScaleService sets a service's desired task count, audited, and returns the
// service. The account and cluster may be left out where only one fits (see
// ServiceLogs). Errors: malformed (service, desired_count required;
// account_id or cluster when several fit, naming them); invalid
// (desired_count 0..1000; confirm_scale_to_zero must be true to scale to 0;
// confirm_name must be the service's name for a large change, LargeScale);
// not_found for the account or the service; forbidden when the account is
// read-only; the provider's errors.
func (s *Service) ScaleService(ctx context.Context, in ScaleInput) (ports.ContainerService, error) {
	fields := required("service", in.Service)
	if in.DesiredCount == nil {
		fields = append(fields, ports.FieldError{Field: "desired_count", Reason: "required"})
	}
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContainerService{}, err
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return ports.ContainerService{}, err
	}
	switch n := *in.DesiredCount; {
	case n < 0 || n > MaxDesiredCount:
		return ports.ContainerService{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "desired_count", Reason: fmt.Sprintf("must be 0 to %d", MaxDesiredCount)})
	case n == 0 && !in.ConfirmScaleToZero:
		return ports.ContainerService{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "confirm_scale_to_zero", Reason: "must be true to scale a service to 0 tasks, which stops it"})
	}
	n := *in.DesiredCount
	a, cluster, err := s.locateService(ctx, p, in.ServiceRef)
	if err != nil {
		return ports.ContainerService{}, err
	}
	o := op{action: "ecs.scale_service", resource: cluster + "/" + in.Service,
		args: map[string]any{"cluster": cluster, "service": in.Service, "desired_count": n, "confirm_scale_to_zero": in.ConfirmScaleToZero}}
	return write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.ContainerService, error) {
		// The count now decides whether the change is large: a large one
		// without the name typed is refused, and audited so.
		cur, err := s.currentService(ctx, c, cluster, in.Service)
		if err != nil {
			return ports.ContainerService{}, err
		}
		if err := s.confirmScale(in, cur, n); err != nil {
			return ports.ContainerService{}, refusal{err}
		}
		return s.d.Provider.ScaleService(ctx, c, cluster, in.Service, n)
	})
}

// confirmScale is nil unless setting cur's desired count to n is a large
// change (LargeScale) and in.ConfirmName is not the service's name: then
// invalid, naming confirm_name.
func (s *Service) confirmScale(in ScaleInput, cur ports.ContainerService, n int) error {
	if !LargeScale(cur.Desired, n, s.cfg.ScaleConfirmAbove) || in.ConfirmName == cur.Name || (in.ConfirmName != "" && in.ConfirmName == in.Service) {
		return nil
	}
	reason := fmt.Sprintf("must be the service's name, %s, to change its desired count from %d to %d (more than %d times, or above %d)",
		cur.Name, cur.Desired, n, ScaleConfirmFactor, s.cfg.ScaleConfirmAbove)
	if in.ConfirmName != "" {
		reason = "does not match the service's name; " + reason
	}
	return &ports.Error{Kind: ports.KindInvalid,
		Message: fmt.Sprintf("scaling %s from %d to %d tasks is a large change: type the service's name in confirm_name", cur.Name, cur.Desired, n),
		Fields:  []ports.FieldError{{Field: "confirm_name", Reason: reason}}}
}

// currentService reads a service of a cluster as it is now, with the
// credentials given. Errors: not_found for the service; the provider's
// errors.
func (s *Service) currentService(ctx context.Context, c ports.CloudCredentials, cluster, service string) (ports.ContainerService, error) {
	list, err := s.d.Provider.ListServices(ctx, c, cluster)
	if err != nil {
		return ports.ContainerService{}, err
	}
	for _, v := range list {
		if v.Name == service || v.ARN == service {
			return v, nil
		}
	}
	return ports.ContainerService{}, ports.NotFound("container service", service)
}

// ServiceLogs returns a service's newest log events. The account and the
// cluster may be left out: they are found when exactly one cluster of one
// account (of the one named, or of the organisation's) runs the service.
// Errors: malformed (service required; since RFC 3339; account_id or
// cluster when several fit, naming them); invalid (limit 1..1000);
// not_found for the account or the service; the provider's errors.
func (s *Service) ServiceLogs(ctx context.Context, in ServiceRef, q LogsInput) ([]ports.LogEvent, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lq, err := q.logQuery(required("service", in.Service))
	if err != nil {
		return nil, err
	}
	a, cluster, err := s.locateService(ctx, p, in)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.LogEvent, error) {
		return s.d.Provider.ServiceLogs(ctx, c, cluster, in.Service, lq)
	})
}

// ListFunctions returns the serverless functions of an account; accountID
// may be "" when the organisation has one account. Errors: as ListClusters.
func (s *Service) ListFunctions(ctx context.Context, accountID string) ([]ports.Function, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.pick(ctx, p, accountID)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, s.d.Provider.ListFunctions)
}

// InvokeFunction invokes a function synchronously (or, with DryRun, only
// checks that it could be), audited with the payload's size and SHA-256, not
// its content. The account may be left out where only one has the function
// (see FunctionLogs). A function that fails is an Invocation with
// FunctionError, not an error. Errors: malformed (name required; payload
// JSON; account_id when several accounts fit, naming them);
// payload_too_large (payload over 256 KiB); not_found for the account or the
// function; forbidden when the account is read-only; the provider's errors.
// An invocation whose function failed is audited as failed, with why.
func (s *Service) InvokeFunction(ctx context.Context, in InvokeInput) (ports.Invocation, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Invocation{}, err
	}
	fields := required("name", in.Name)
	payload := json.RawMessage(`{}`)
	if len(bytes.TrimSpace(in.Payload)) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, in.Payload); err != nil {
			fields = append(fields, ports.FieldError{Field: "payload", Reason: "must be JSON"})
		}
		payload = buf.Bytes()
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return ports.Invocation{}, err
	}
	if len(payload) > MaxPayloadBytes {
		return ports.Invocation{}, &ports.Error{Kind: ports.KindPayloadTooLarge,
			Message: fmt.Sprintf("the payload is %d bytes; a function takes at most %d", len(payload), MaxPayloadBytes),
			Fields:  []ports.FieldError{{Field: "payload", Reason: fmt.Sprintf("must be at most %d bytes", MaxPayloadBytes)}}}
	}
	a, err := s.locateFunction(ctx, p, in.AccountID, in.Name)
	if err != nil {
		return ports.Invocation{}, err
	}
	sum := sha256.Sum256(payload)
	o := op{action: "lambda.invoke_function", resource: in.Name,
		args: map[string]any{"name": in.Name, "dry_run": in.DryRun, "payload_bytes": len(payload), "payload_sha256": hex.EncodeToString(sum[:])}}
	return writeChecked(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Invocation, error) {
		return s.d.Provider.InvokeFunction(ctx, c, in.Name, payload, in.DryRun)
	}, invocationFailed)
}

// invocationFailed says why an invocation failed, for the audit log: the
// function's error (its errorType and errorMessage when its answer has
// them), or a status code of 400 or more; "" when it succeeded.
func invocationFailed(inv ports.Invocation) string {
	if inv.FunctionError == "" && inv.StatusCode < 400 {
		return ""
	}
	var answer struct {
		ErrorType    string `json:"errorType"`
		ErrorMessage string `json:"errorMessage"`
	}
	_ = json.Unmarshal(inv.Payload, &answer)
	why := fmt.Sprintf("the function failed (%s, status %d)", cmp.Or(inv.FunctionError, "error"), inv.StatusCode)
	if answer.ErrorType != "" || answer.ErrorMessage != "" {
		why += ": " + strings.TrimPrefix(answer.ErrorType+": "+answer.ErrorMessage, ": ")
	}
	return ports.Line(why, 1000)
}

// FunctionLogs returns a function's newest log events. accountID may be "":
// the account is then the organisation's only one, or the one account whose
// functions include name. Errors: malformed (name required; since RFC 3339;
// account_id when several accounts fit, naming them); invalid (limit
// 1..1000); not_found for the account or the function; the provider's
// errors.
func (s *Service) FunctionLogs(ctx context.Context, accountID, name string, q LogsInput) ([]ports.LogEvent, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	lq, err := q.logQuery(required("name", name))
	if err != nil {
		return nil, err
	}
	a, err := s.locateFunction(ctx, p, accountID, name)
	if err != nil {
		return nil, err
	}
	return call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.LogEvent, error) {
		return s.d.Provider.FunctionLogs(ctx, c, name, lq)
	})
}

// ListApps returns the hosted apps of an account, or with accountID "" of
// every account of the organisation, each with its account's id, accounts
// in name order. When every account is asked, one that fails (AccessDenied,
// throttling, a timeout) does not fail the others: it is listed in Failed
// with its error; only when every account failed is the first failure
// returned as the error. Errors: not_found for the account named; the
// provider's errors.
func (s *Service) ListApps(ctx context.Context, accountID string) (AppList, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return AppList{}, err
	}
	var accounts []ports.CloudAccount
	if accountID != "" {
		a, err := s.account(ctx, p, accountID)
		if err != nil {
			return AppList{}, err
		}
		accounts = []ports.CloudAccount{a}
	} else if accounts, err = s.orgAccounts(ctx, p); err != nil {
		return AppList{}, err
	}
	out := AppList{Items: []AccountApp{}, Failed: []AccountFailure{}}
	var first error
	for _, a := range accounts {
		apps, err := call(ctx, s, a, s.d.Provider.ListApps)
		if err != nil {
			if accountID != "" || ctx.Err() != nil {
				return AppList{}, err
			}
			first = cmp.Or(first, err)
			out.Failed = append(out.Failed, AccountFailure{AccountID: a.ID, AccountName: a.Name, Error: message(err), Kind: cmp.Or(ports.KindOf(err), ports.KindInternal)})
			continue
		}
		for _, app := range apps {
			out.Items = append(out.Items, AccountApp{AccountID: a.ID, App: app})
		}
	}
	if len(accounts) > 0 && len(out.Failed) == len(accounts) {
		return AppList{}, first
	}
	return out, nil
}

// DeployApp starts a release build of an app's branch, audited, and
// remembers it, so that its id alone finds it again (BuildLogs). The account
// may be left out where only one has the app; the branch where the app has
// one branch, or one production branch. Should the build not be remembered,
// the provider's job id is returned as its id (BuildLogs finds that too) and
// the failure is logged. Errors: malformed (app_id required; account_id or
// branch when several fit, naming them); invalid for an app without
// branches; not_found for the account, the app or the branch; forbidden when
// the account is read-only; the provider's errors.
func (s *Service) DeployApp(ctx context.Context, in AppDeployInput) (StartedBuild, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return StartedBuild{}, err
	}
	if err := ports.FieldsError(ports.KindMalformed, required("app_id", in.AppID)...); err != nil {
		return StartedBuild{}, err
	}
	var a ports.CloudAccount
	branch := in.Branch
	if in.AccountID != "" && branch != "" {
		if a, err = s.account(ctx, p, in.AccountID); err != nil {
			return StartedBuild{}, err
		}
	} else {
		homes, err := s.locateApp(ctx, p, in.AccountID, in.AppID)
		if err != nil {
			return StartedBuild{}, err
		}
		if len(homes) > 1 {
			choices := make([]choice, len(homes))
			for i, h := range homes {
				choices[i] = choice{account: h.account}
			}
			return StartedBuild{}, ambiguous(fmt.Sprintf("app %s exists in %d cloud accounts; pass account_id", in.AppID, len(homes)), choices)
		}
		a = homes[0].account
		if branch == "" {
			if branch, err = releaseBranch(homes[0], in.AppID); err != nil {
				return StartedBuild{}, err
			}
		}
	}
	o := op{action: "amplify.deploy_app", resource: in.AppID + "/" + branch,
		args: map[string]any{"app_id": in.AppID, "branch": branch}}
	b, err := write(ctx, s, p, a, o, func(ctx context.Context, c ports.CloudCredentials) (ports.Build, error) {
		return s.d.Provider.DeployApp(ctx, c, in.AppID, branch)
	})
	if err != nil {
		return StartedBuild{}, err
	}
	out := StartedBuild{ID: b.ID, AccountID: a.ID, AppID: in.AppID, Branch: branch, JobID: b.ID, Status: b.Status}
	rec := ports.CloudBuild{ID: s.d.IDs.NewID(), OrgID: p.OrgID, AccountID: a.ID, AppID: in.AppID, Branch: branch,
		JobID: b.ID, CreatedAt: s.d.Clock.Now()}
	if err := s.d.Accounts.RecordCloudBuild(context.WithoutCancel(ctx), rec); err != nil {
		s.log.Error("remembering a build", "err", err, "account", a.ID, "app", in.AppID, "branch", branch, "job", b.ID)
		return out, nil
	}
	out.ID = rec.ID
	return out, nil
}

// BuildLogs returns a build of an app with each step's log. A build id
// DeployApp returned is enough; any other id is taken for a provider job id
// and looked for in the app's branches. Errors: malformed (app_id, build_id
// required; account_id or branch when the job id is found in several places,
// naming them); not_found for the account, the app or the build; the
// provider's errors.
func (s *Service) BuildLogs(ctx context.Context, in BuildQuery) (ports.Build, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Build{}, err
	}
	if err := ports.FieldsError(ports.KindMalformed, required("app_id", in.AppID, "build_id", in.BuildID)...); err != nil {
		return ports.Build{}, err
	}
	if ports.IsID(in.BuildID) {
		// devpilot's ids are UUIDs, Amplify's job ids numbers.
		return s.rememberedBuild(ctx, p, in)
	}
	homes, err := s.locateApp(ctx, p, in.AccountID, in.AppID)
	if err != nil {
		return ports.Build{}, err
	}
	var found []choice
	var build ports.Build
	var failed error
	for _, h := range homes {
		for _, br := range h.branches {
			if in.Branch != "" && br.Name != in.Branch {
				continue
			}
			b, err := call(ctx, s, h.account, func(ctx context.Context, c ports.CloudCredentials) (ports.Build, error) {
				return s.d.Provider.BuildLogs(ctx, c, in.AppID, br.Name, in.BuildID)
			})
			if ports.IsKind(err, ports.KindNotFound) {
				continue
			}
			if err != nil {
				failed = cmp.Or(failed, searchFailed(err, h.account, "build "+in.BuildID, "use the build_id the deploy returned"))
				break
			}
			found = append(found, choice{account: h.account, branch: br.Name})
			build = b
		}
	}
	switch {
	case len(found) > 1:
		return ports.Build{}, ambiguous(fmt.Sprintf("build %s of app %s exists in %d branches; pass branch (or account_id)", in.BuildID, in.AppID, len(found)), found)
	case failed != nil:
		return ports.Build{}, failed
	case len(found) == 0:
		return ports.Build{}, ports.NotFound("build", in.BuildID)
	}
	return build, nil
}

// ListBuilds returns a page of the builds of an app's branch, newest first,
// without their steps (BuildLogs, given a build's id and branch, has them).
// Errors: malformed (app_id required; account_id or branch when several
// fit, naming them); invalid (limit 1..50; a cursor that is not one a page
// returned); not_found for the account, the app or the branch; the
// provider's errors.
func (s *Service) ListBuilds(ctx context.Context, in BuildListInput) (BuildList, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return BuildList{}, err
	}
	if err := ports.FieldsError(ports.KindMalformed, required("app_id", in.AppID)...); err != nil {
		return BuildList{}, err
	}
	limit := in.Limit
	switch {
	case limit == 0:
		limit = DefaultBuildLimit
	case limit < 1 || limit > MaxBuildLimit:
		return BuildList{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "limit", Reason: fmt.Sprintf("must be 1 to %d", MaxBuildLimit)})
	}
	if len(in.Cursor) > maxCursorLen || strings.IndexFunc(in.Cursor, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return BuildList{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "cursor", Reason: "must be the next_cursor of a page"})
	}
	homes, err := s.locateApp(ctx, p, in.AccountID, in.AppID)
	if err != nil {
		return BuildList{}, err
	}
	if len(homes) > 1 {
		choices := make([]choice, len(homes))
		for i, h := range homes {
			choices[i] = choice{account: h.account}
		}
		return BuildList{}, ambiguous(fmt.Sprintf("app %s exists in %d cloud accounts; pass account_id", in.AppID, len(homes)), choices)
	}
	h := homes[0]
	branch := in.Branch
	if branch == "" {
		if branch, err = releaseBranch(h, in.AppID); err != nil {
			return BuildList{}, err
		}
	} else if !slices.ContainsFunc(h.branches, func(b ports.AppBranch) bool { return b.Name == branch }) {
		return BuildList{}, ports.NotFound("branch", branch)
	}
	type page struct {
		builds []ports.Build
		next   string
	}
	pg, err := call(ctx, s, h.account, func(ctx context.Context, c ports.CloudCredentials) (page, error) {
		b, next, err := s.d.Provider.ListBuilds(ctx, c, in.AppID, branch, limit, in.Cursor)
		return page{b, next}, err
	})
	if err != nil {
		if in.Cursor != "" && ports.IsKind(err, ports.KindInvalid) {
			return BuildList{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "cursor", Reason: "must be the next_cursor of a page"})
		}
		return BuildList{}, err
	}
	if pg.builds == nil {
		pg.builds = []ports.Build{}
	}
	return BuildList{AccountID: h.account.ID, Branch: branch, Items: pg.builds, NextCursor: pg.next}, nil
}

// rememberedBuild returns a build DeployApp started, by devpilot's id of it.
func (s *Service) rememberedBuild(ctx context.Context, p ports.Principal, in BuildQuery) (ports.Build, error) {
	rec, err := s.d.Accounts.GetCloudBuild(ctx, p.OrgID, in.BuildID)
	if ports.IsKind(err, ports.KindNotFound) || (err == nil && rec.AppID != in.AppID) {
		return ports.Build{}, ports.NotFound("build", in.BuildID)
	}
	if err != nil {
		return ports.Build{}, err
	}
	a, err := s.account(ctx, p, rec.AccountID)
	if err != nil {
		return ports.Build{}, err
	}
	b, err := call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) (ports.Build, error) {
		return s.d.Provider.BuildLogs(ctx, c, rec.AppID, rec.Branch, rec.JobID)
	})
	if err != nil {
		return ports.Build{}, err
	}
	b.ID = rec.ID
	return b, nil
}
