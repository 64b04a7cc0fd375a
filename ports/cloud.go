package ports

import (
	"context"
	"encoding/json"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/cloud.go -package mocks . CloudProvider,CloudAccountStore,CostCacheStore,AuditStore

// CloudAuthMode is how devpilot authenticates to a cloud account.
type CloudAuthMode string

// The authentication modes of a cloud account.
const (
	// AuthAssumeRole assumes a role in the account (role ARN and external id):
	// the recommended cross-account pattern.
	AuthAssumeRole CloudAuthMode = "assume_role"
	// AuthAccessKey uses an access key pair of the account.
	AuthAccessKey CloudAuthMode = "access_key"
)

// CloudAccountStatus is the result of the last connection test.
type CloudAccountStatus string

// The statuses of a cloud account.
const (
	CloudUntested CloudAccountStatus = "untested"
	CloudOK       CloudAccountStatus = "ok"
	CloudFailed   CloudAccountStatus = "failed"
)

// CloudAuth is how to authenticate to an account. SealedSecret is the
// secret access key sealed with the Cipher; it never leaves the service.
type CloudAuth struct {
	Mode         CloudAuthMode
	RoleARN      string
	ExternalID   string
	AccessKeyID  string
	SealedSecret string
}

// CloudAccount is a cloud account an organisation operates through devpilot.
type CloudAccount struct {
	ID           string
	OrgID        string
	Provider     string
	Name         string
	Region       string
	Auth         CloudAuth
	ReadOnly     bool
	Status       CloudAccountStatus
	LastTestedAt *time.Time
	LastError    string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// CloudCredentials are what a provider call authenticates with. The secret
// is in the clear only for the call; String and GoString redact it.
type CloudCredentials struct {
	Region          string
	Mode            CloudAuthMode
	RoleARN         string
	ExternalID      string
	AccessKeyID     string
	SecretAccessKey string
}

// String describes the credentials without the secret.
func (c CloudCredentials) String() string {
	return "CloudCredentials{" + string(c.Mode) + " " + c.Region + " " + c.RoleARN + c.AccessKeyID + "}"
}

// GoString is String, so %#v does not print the secret either.
func (c CloudCredentials) GoString() string { return c.String() }

// CallerIdentity is who the credentials authenticate as.
type CallerIdentity struct {
	Account string
	ARN     string
	UserID  string
}

// CostQuery asks for costs over [Start, End): End is exclusive, as the
// provider wants it. Granularity is "DAILY" or "MONTHLY"; GroupBy is "",
// a dimension ("SERVICE", "LINKED_ACCOUNT", "REGION", "USAGE_TYPE") or "TAG",
// with TagKey the tag's key (a group's key is then the tag's value, "" for
// costs without the tag).
type CostQuery struct {
	Start       time.Time
	End         time.Time
	Granularity string
	GroupBy     string
	TagKey      string
}

// CostForecast is the provider's forecast of the cost over [Start, End):
// Amount, and the prediction interval Lower..Upper when known ("" if not),
// as decimal strings in Currency.
type CostForecast struct {
	Start    time.Time
	End      time.Time
	Currency string
	Amount   string
	Lower    string
	Upper    string
}

// CostGroup is one group's cost in a period. Amounts are decimal strings,
// exactly as the provider reports them.
type CostGroup struct {
	Key    string `json:"key"`
	Amount string `json:"amount"`
}

// CostPeriod is the cost of one period [Start, End).
type CostPeriod struct {
	Start  time.Time   `json:"start"`
	End    time.Time   `json:"end"`
	Total  string      `json:"total"`
	Groups []CostGroup `json:"groups"`
}

// CostReport is the cost of a range, period by period.
type CostReport struct {
	Currency string       `json:"currency"`
	Periods  []CostPeriod `json:"periods"`
}

// Cluster is a container cluster with its counts.
type Cluster struct {
	Name           string
	ARN            string
	Status         string
	ActiveServices int
	RunningTasks   int
	PendingTasks   int
}

// ServiceDeployment is one deployment of a container service.
type ServiceDeployment struct {
	ID             string
	Status         string
	RolloutState   string
	TaskDefinition string
	Desired        int
	Running        int
	Pending        int
	CreatedAt      time.Time
}

// ContainerService is a long-running service of a cluster.
type ContainerService struct {
	Name           string
	ARN            string
	Cluster        string
	Status         string
	TaskDefinition string
	Desired        int
	Running        int
	Pending        int
	Deployments    []ServiceDeployment
	// Events are the service's newest events, newest first (at most
	// MaxServiceEvents), such as why tasks fail to start.
	Events []ServiceEvent
	// StoppedTasks are some of its recently stopped tasks with why they
	// stopped, newest first (at most MaxStoppedTasks); read only for a
	// service running fewer tasks than it wants.
	StoppedTasks []StoppedTask
}

// Bounds on what a ContainerService carries.
const (
	MaxServiceEvents = 10
	MaxStoppedTasks  = 5
)

// ServiceEvent is an event of a container service.
type ServiceEvent struct {
	ID        string
	CreatedAt time.Time
	Message   string
}

// StoppedTask is a task of a service that stopped, and why.
type StoppedTask struct {
	ARN           string
	TaskID        string
	LastStatus    string
	StopCode      string
	StoppedReason string
	StoppedAt     time.Time
	// Containers' reasons and exit codes, such as "app: exit 137
	// (OutOfMemoryError)".
	ContainerReasons []string
}

// Deployment is a deployment just started.
type Deployment struct {
	ID     string
	Status string
}

// LogQuery selects log events: the newest up to Limit, not before Since
// (zero: the provider's recent window). Filter, when set, is the provider's
// filter pattern (CloudWatch Logs syntax), passed through. Oldest asks for
// the oldest events from Since instead (up to Limit, oldest first): what a
// reader following the log wants next.
type LogQuery struct {
	Since  time.Time
	Limit  int
	Filter string
	Oldest bool
}

// LogEvent is one log line. ID is the provider's id of the event, unique
// within its log group ("" when the provider gives none).
type LogEvent struct {
	Timestamp time.Time
	Message   string
	Stream    string
	ID        string
}

// Function is a serverless function.
type Function struct {
	Name         string
	ARN          string
	Runtime      string
	State        string
	MemoryMB     int
	TimeoutSecs  int
	LastModified time.Time
	LogGroup     string
}

// Invocation is the result of invoking a function. FunctionError is set
// when the function itself failed (the call succeeded).
type Invocation struct {
	StatusCode    int
	Payload       json.RawMessage
	FunctionError string
	LogTail       string
}

// App is a hosted web app.
type App struct {
	ID            string
	Name          string
	ARN           string
	Platform      string
	DefaultDomain string
	Repository    string
	Branches      []string
	UpdatedAt     time.Time
}

// The stage Amplify gives an app's production branch.
const BranchStageProduction = "PRODUCTION"

// AppBranch is a branch of a hosted app. Stage is the provider's (such as
// "PRODUCTION" or "DEVELOPMENT").
type AppBranch struct {
	Name  string
	Stage string
}

// BuildStep is one step of a build, with its log text (bounded in size).
type BuildStep struct {
	Name   string
	Status string
	Log    string
}

// Build is a build (and deployment) of an app's branch. The commit, type
// and times are set by ListBuilds (EndedAt zero while it runs).
type Build struct {
	ID            string
	AppID         string
	Branch        string
	Status        string
	Steps         []BuildStep
	CommitID      string
	CommitMessage string
	JobType       string
	StartedAt     time.Time
	EndedAt       time.Time
}

// CloudProvider operates a cloud account with the credentials given to each
// call. Errors: not_found for a missing resource; rate_limited (with
// RetryAfter when known) once the provider's own retries are exhausted;
// upstream for a refusal such as AccessDenied (the message names the
// provider's error code, never the credentials); timeout; invalid for a
// request the provider rejects as malformed.
type CloudProvider interface {
	// CallerIdentity returns who the credentials are.
	CallerIdentity(ctx context.Context, c CloudCredentials) (CallerIdentity, error)
	// Probe makes one cheap read (never a paid API) to prove access.
	Probe(ctx context.Context, c CloudCredentials) error
	// Costs returns the cost report for q, following every page.
	Costs(ctx context.Context, c CloudCredentials, q CostQuery) (CostReport, error)
	// CostForecast forecasts the cost over [start, end); start must not be
	// before today (UTC). Errors: invalid for a malformed range; upstream
	// when the provider has too little history to forecast.
	CostForecast(ctx context.Context, c CloudCredentials, start, end time.Time) (CostForecast, error)
	// ListClusters returns the clusters with their counts.
	ListClusters(ctx context.Context, c CloudCredentials) ([]Cluster, error)
	// ListServices returns a cluster's services with their deployments.
	ListServices(ctx context.Context, c CloudCredentials, cluster string) ([]ContainerService, error)
	// DeployService forces a new deployment of a service.
	DeployService(ctx context.Context, c CloudCredentials, cluster, service string) (Deployment, error)
	// ScaleService sets a service's desired task count.
	ScaleService(ctx context.Context, c CloudCredentials, cluster, service string, desired int) (ContainerService, error)
	// ServiceLogs returns a service's newest log events, from the log
	// configuration of its task definition.
	ServiceLogs(ctx context.Context, c CloudCredentials, cluster, service string, q LogQuery) ([]LogEvent, error)
	// ListFunctions returns the functions.
	ListFunctions(ctx context.Context, c CloudCredentials) ([]Function, error)
	// InvokeFunction invokes a function synchronously (or only checks that it
	// could be, with dryRun) and returns its answer and log tail.
	InvokeFunction(ctx context.Context, c CloudCredentials, name string, payload json.RawMessage, dryRun bool) (Invocation, error)
	// FunctionLogs returns a function's newest log events.
	FunctionLogs(ctx context.Context, c CloudCredentials, name string, q LogQuery) ([]LogEvent, error)
	// ListApps returns the hosted apps.
	ListApps(ctx context.Context, c CloudCredentials) ([]App, error)
	// ListBranches returns an app's branches; not_found for a missing app.
	ListBranches(ctx context.Context, c CloudCredentials, appID string) ([]AppBranch, error)
	// DeployApp starts a release build of an app's branch.
	DeployApp(ctx context.Context, c CloudCredentials, appID, branch string) (Build, error)
	// BuildLogs returns a build with each step's log text.
	BuildLogs(ctx context.Context, c CloudCredentials, appID, branch, buildID string) (Build, error)
	// ListBuilds returns a page of at most limit builds of an app's branch,
	// newest first, without steps, and the next page's token ("" at the
	// end); token "" is the first page. not_found for a missing app or
	// branch; invalid for a bad token.
	ListBuilds(ctx context.Context, c CloudCredentials, appID, branch string, limit int, token string) ([]Build, string, error)
}

// CloudAccountStore keeps cloud accounts.
type CloudAccountStore interface {
	// CreateCloudAccount stores a new account; conflict when the org has an
	// account of that name.
	CreateCloudAccount(ctx context.Context, a CloudAccount) error
	// GetCloudAccount returns the org's account; not_found when absent or
	// another org's.
	GetCloudAccount(ctx context.Context, orgID, id string) (CloudAccount, error)
	// ListCloudAccounts returns the org's accounts by name, and the next
	// page's cursor ("" at the end); invalid for a bad cursor.
	ListCloudAccounts(ctx context.Context, orgID string, page Page) ([]CloudAccount, string, error)
	// RecordCloudTest records a connection test's status and error message
	// ("" when it passed); not_found as GetCloudAccount.
	RecordCloudTest(ctx context.Context, orgID, id string, status CloudAccountStatus, lastError string, at time.Time) error
	// DeleteCloudAccount deletes the org's account, its cached costs and the
	// builds recorded for it, and keeps its audit entries; not_found as
	// GetCloudAccount.
	DeleteCloudAccount(ctx context.Context, orgID, id string) error
	// OrgExternalID returns the external id the org's assumed roles are
	// given, storing candidate as it (created at) when the org has none yet;
	// concurrent calls all return the one stored. Errors: conflict when
	// candidate is another org's external id; not_found when the org does
	// not exist.
	OrgExternalID(ctx context.Context, orgID, candidate string, at time.Time) (string, error)
	// RecordCloudBuild remembers a build devpilot started. Errors: conflict
	// when the id exists; not_found when the account does not.
	RecordCloudBuild(ctx context.Context, b CloudBuild) error
	// GetCloudBuild returns a build the org started; not_found when absent,
	// another org's, or its account was deleted.
	GetCloudBuild(ctx context.Context, orgID, id string) (CloudBuild, error)
}

// CloudBuild is a build of a hosted app that devpilot started, remembered so
// that devpilot's id of it alone finds it again: the provider needs the
// account, the app, the branch and its own job id.
type CloudBuild struct {
	ID        string
	OrgID     string
	AccountID string
	AppID     string
	Branch    string
	JobID     string
	CreatedAt time.Time
}

// CostCacheStore keeps cost reports for a while.
type CostCacheStore interface {
	// GetCachedCost returns the report cached under the account and key, if
	// it has not expired at now.
	GetCachedCost(ctx context.Context, accountID, key string, now time.Time) (CostReport, bool, error)
	// PutCachedCost caches a report under the account and key until
	// expiresAt, replacing any earlier one.
	PutCachedCost(ctx context.Context, accountID, key string, r CostReport, expiresAt time.Time) error
}

// Audit outcomes.
const (
	AuditOK      = "ok"
	AuditFailed  = "failed"
	AuditRefused = "refused"
)

// AuditEntry records one write operation on a cloud account: who, when,
// on what, with which arguments, and how it ended.
type AuditEntry struct {
	ID        string
	OrgID     string
	UserID    string
	AccountID string
	Action    string
	Resource  string
	Arguments json.RawMessage
	Outcome   string
	Error     string
	At        time.Time
}

// AuditStore keeps the audit log.
type AuditStore interface {
	// RecordAudit appends an entry.
	RecordAudit(ctx context.Context, e AuditEntry) error
	// ListAudit returns the org's entries, newest first, optionally only one
	// account's (accountID ""), and the next page's cursor; invalid for a
	// bad cursor.
	ListAudit(ctx context.Context, orgID, accountID string, page Page) ([]AuditEntry, string, error)
}
