package fakeaws

import (
	"fmt"
	"math/big"
	"time"
)

// Account seeds one AWS account of a Server. Its methods may be called at any
// time, also while the fake serves requests, and return the Account so calls
// can be chained. Resources are per account, whatever the region a request
// is signed for (ARNs carry the request's region).
type Account struct {
	s  *Server
	id string
}

// Service is an ECS service to seed.
type Service struct {
	Name string
	// Status is "ACTIVE" when empty.
	Status string
	// TaskDefinition is "family:revision" (or an ARN) of a seeded task
	// definition.
	TaskDefinition string
	Desired        int
	Running        int
	Pending        int
	// Deployments are the service's deployments; when empty, one PRIMARY
	// deployment with the service's task definition and counts.
	Deployments []Deployment
	// Events are the service's events, newest first, as DescribeServices
	// returns them.
	Events []ServiceEvent
	// StoppedTasks are tasks of the service that stopped, listed by
	// ListTasks with desiredStatus STOPPED and described by DescribeTasks.
	StoppedTasks []StoppedTask
}

// ServiceEvent is an event of a Service.
type ServiceEvent struct {
	ID        string
	CreatedAt time.Time
	Message   string
}

// StoppedTask is a stopped task of a Service.
type StoppedTask struct {
	// ID is the task's id, the last part of its ARN.
	ID            string
	StopCode      string // such as "TaskFailedToStart" or "EssentialContainerExited"
	StoppedReason string
	StoppedAt     time.Time
	// Container, ExitCode and Reason describe its one container; ExitCode
	// nil leaves it out.
	Container string
	ExitCode  *int
	Reason    string
}

// Deployment is an ECS service deployment to seed.
type Deployment struct {
	ID             string
	Status         string
	RolloutState   string
	TaskDefinition string
	Desired        int
	Running        int
	Pending        int
	CreatedAt      time.Time
}

// TaskDefinition is an ECS task definition to seed.
type TaskDefinition struct {
	Family string
	// Revision is 1 when zero.
	Revision   int
	Containers []Container
}

// Container is a container definition of a TaskDefinition.
type Container struct {
	Name             string
	Image            string
	LogConfiguration *LogConfiguration
}

// LogConfiguration is a container's log configuration.
type LogConfiguration struct {
	LogDriver string
	Options   map[string]string
}

// AWSLogs is the awslogs log configuration writing to group with stream
// names "prefix/container/task-id".
func AWSLogs(group, prefix string) *LogConfiguration {
	return &LogConfiguration{LogDriver: "awslogs", Options: map[string]string{
		"awslogs-group":         group,
		"awslogs-stream-prefix": prefix,
	}}
}

// LogEvent is a CloudWatch Logs event to seed.
type LogEvent struct {
	Timestamp time.Time
	Message   string
}

// Function is a Lambda function to seed.
type Function struct {
	Name         string
	Runtime      string
	Handler      string
	State        string // "Active" when empty
	MemoryMB     int
	TimeoutSecs  int
	LastModified time.Time
	// LogGroup is the function's LoggingConfig.LogGroup: "/aws/lambda/NAME"
	// when empty.
	LogGroup string
	// Result is the canned answer of a RequestResponse invocation.
	Result InvokeResult
	// Handle, when set, computes the answer from the payload instead of
	// Result. It runs without the fake's lock held.
	Handle func(payload []byte) InvokeResult
}

// InvokeResult is what an invocation of a seeded Function answers.
type InvokeResult struct {
	// Payload is the response body; "null" when empty.
	Payload []byte
	// FunctionError is "Unhandled" or "Handled" when the function failed.
	FunctionError string
	// LogTail is the log tail sent (base64-encoded) when the caller asks
	// for it.
	LogTail string
}

// App is an Amplify app to seed.
type App struct {
	ID            string
	Name          string
	Platform      string // "WEB" when empty
	Repository    string
	DefaultDomain string    // "ID.amplifyapp.com" when empty
	UpdatedAt     time.Time // 2026-01-01 when zero
	Branches      []Branch
}

// Branch is a branch of an App.
type Branch struct {
	Name  string
	Stage string // "PRODUCTION" when empty
	Jobs  []Job
}

// Job is an Amplify job (a build) of a Branch.
type Job struct {
	ID        string
	Type      string // "RELEASE" when empty
	Status    string // "SUCCEED" when empty
	StartTime time.Time
	Steps     []Step
	// finishIn, set by StartJob under BuildsFinishAfter, is how long after
	// StartTime the job succeeds.
	finishIn time.Duration
}

// advance moves a job started under BuildsFinishAfter along at now.
func (j *Job) advance(now time.Time, branch string) {
	if j.finishIn <= 0 {
		return
	}
	switch elapsed := now.Sub(j.StartTime); {
	case elapsed < j.finishIn/2:
		j.Status = "RUNNING"
		j.Steps = []Step{{Name: "BUILD", Status: "RUNNING", Log: "# Starting build of " + branch + "\n"}}
	case elapsed < j.finishIn:
		j.Status = "RUNNING"
		j.Steps = []Step{{Name: "BUILD", Status: "SUCCEED", Log: "# Starting build of " + branch + "\nbuild finished\n"},
			{Name: "DEPLOY", Status: "RUNNING", Log: "deploying " + branch + "\n"}}
	default:
		j.Status = "SUCCEED"
		j.Steps = []Step{{Name: "BUILD", Status: "SUCCEED", Log: "# Starting build of " + branch + "\nbuild finished\n"},
			{Name: "DEPLOY", Status: "SUCCEED", Log: "deploying " + branch + "\ndeployed\n"}}
		j.finishIn = 0
	}
}

// Step is a step of a Job. Its log is served by the fake at the step's
// LogUrl.
type Step struct {
	Name   string
	Status string // "SUCCEED" when empty
	Log    string
	// LogStatus, when set, is the HTTP status the LogUrl answers with
	// instead of the log (such as 403 for an expired URL).
	LogStatus int
}

// seedTime is when seeded resources were created, unless told otherwise.
var seedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type principal struct {
	account      *account
	arn          string
	userID       string
	secret       string
	sessionToken string
}

type role struct {
	account    *account
	arn        string
	name       string
	id         string
	externalID string
}

type account struct {
	id        string
	clusters  map[string]*cluster
	taskDefs  map[string]*TaskDefinition // by "family:revision"
	logGroups map[string]map[string][]LogEvent
	functions map[string]*Function
	apps      map[string]*app
	costs     []costLine
	// forecastDaily, when set, is the forecast cost of each day.
	forecastDaily *big.Rat
}

// costLine is one seeded cost of a day.
type costLine struct {
	day string
	CostLine
	amount *big.Rat
}

type cluster struct {
	name     string
	services map[string]*Service
}

type app struct {
	App
	branches map[string]*branch
}

type branch struct {
	Branch
	jobs []*Job
}

// Account returns the seeding handle of account id (twelve digits), creating
// the account if needed.
func (s *Server) Account(id string) *Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountLocked(id)
	return &Account{s: s, id: id}
}

func (s *Server) accountLocked(id string) *account {
	a := s.accounts[id]
	if a == nil {
		a = &account{
			id:        id,
			clusters:  map[string]*cluster{},
			taskDefs:  map[string]*TaskDefinition{},
			logGroups: map[string]map[string][]LogEvent{},
			functions: map[string]*Function{},
			apps:      map[string]*app{},
		}
		s.accounts[id] = a
	}
	return a
}

func (a *Account) update(fn func(*account)) *Account {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	fn(a.s.accountLocked(a.id))
	return a
}

// ID is the account's id.
func (a *Account) ID() string { return a.id }

// User adds an IAM user with an access key: requests signed with
// accessKeyID act on this account as arn:aws:iam::ID:user/NAME.
func (a *Account) User(name, accessKeyID, secretAccessKey string) *Account {
	return a.update(func(acct *account) {
		a.s.seq++
		a.s.keys[accessKeyID] = &principal{
			account: acct,
			arn:     "arn:aws:iam::" + acct.id + ":user/" + name,
			userID:  fmt.Sprintf("AIDAFAKE%012d", a.s.seq),
			secret:  secretAccessKey,
		}
	})
}

// Role adds an IAM role that AssumeRole grants to any known caller giving
// externalID (none when ""). Its ARN is RoleARN(name).
func (a *Account) Role(name, externalID string) *Account {
	return a.update(func(acct *account) {
		a.s.seq++
		arn := a.RoleARN(name)
		a.s.roles[arn] = &role{account: acct, arn: arn, name: name, id: fmt.Sprintf("AROAFAKE%012d", a.s.seq), externalID: externalID}
	})
}

// RoleARN is the ARN of the account's role name.
func (a *Account) RoleARN(name string) string {
	return "arn:aws:iam::" + a.id + ":role/" + name
}

// Cluster adds an ECS cluster, or adds services to it if it exists.
// Services of the same name are replaced.
func (a *Account) Cluster(name string, services ...Service) *Account {
	return a.update(func(acct *account) {
		c := acct.clusters[name]
		if c == nil {
			c = &cluster{name: name, services: map[string]*Service{}}
			acct.clusters[name] = c
		}
		for _, svc := range services {
			if svc.Status == "" {
				svc.Status = "ACTIVE"
			}
			if len(svc.Deployments) == 0 {
				a.s.seq++
				svc.Deployments = []Deployment{{
					ID: fmt.Sprintf("ecs-svc/%019d", a.s.seq), Status: "PRIMARY", RolloutState: "COMPLETED",
					TaskDefinition: svc.TaskDefinition, Desired: svc.Desired, Running: svc.Running, Pending: svc.Pending,
					CreatedAt: seedTime,
				}}
			} else {
				svc.Deployments = append([]Deployment(nil), svc.Deployments...)
			}
			svc.Events = append([]ServiceEvent(nil), svc.Events...)
			svc.StoppedTasks = append([]StoppedTask(nil), svc.StoppedTasks...)
			c.services[svc.Name] = &svc
		}
	})
}

// TaskDefinition adds an ECS task definition.
func (a *Account) TaskDefinition(td TaskDefinition) *Account {
	return a.update(func(acct *account) {
		if td.Revision == 0 {
			td.Revision = 1
		}
		td.Containers = append([]Container(nil), td.Containers...)
		acct.taskDefs[fmt.Sprintf("%s:%d", td.Family, td.Revision)] = &td
	})
}

// LogGroup adds an empty CloudWatch Logs group.
func (a *Account) LogGroup(group string) *Account {
	return a.update(func(acct *account) {
		if acct.logGroups[group] == nil {
			acct.logGroups[group] = map[string][]LogEvent{}
		}
	})
}

// LogEvents adds events to a log stream of a group, creating both if needed.
func (a *Account) LogEvents(group, stream string, events ...LogEvent) *Account {
	return a.update(func(acct *account) {
		g := acct.logGroups[group]
		if g == nil {
			g = map[string][]LogEvent{}
			acct.logGroups[group] = g
		}
		g[stream] = append(g[stream], events...)
	})
}

// Function adds (or replaces) a Lambda function.
func (a *Account) Function(f Function) *Account {
	return a.update(func(acct *account) {
		if f.State == "" {
			f.State = "Active"
		}
		if f.LogGroup == "" {
			f.LogGroup = "/aws/lambda/" + f.Name
		}
		acct.functions[f.Name] = &f
	})
}

// App adds (or replaces) an Amplify app with its branches and jobs.
func (a *Account) App(ap App) *Account {
	return a.update(func(acct *account) {
		if ap.Platform == "" {
			ap.Platform = "WEB"
		}
		if ap.DefaultDomain == "" {
			ap.DefaultDomain = ap.ID + ".amplifyapp.com"
		}
		if ap.UpdatedAt.IsZero() {
			ap.UpdatedAt = seedTime
		}
		stored := &app{App: ap, branches: map[string]*branch{}}
		for _, b := range ap.Branches {
			if b.Stage == "" {
				b.Stage = "PRODUCTION"
			}
			sb := &branch{Branch: b}
			for _, j := range b.Jobs {
				if j.Type == "" {
					j.Type = "RELEASE"
				}
				if j.Status == "" {
					j.Status = "SUCCEED"
				}
				j.Steps = append([]Step(nil), j.Steps...)
				for i := range j.Steps {
					if j.Steps[i].Status == "" {
						j.Steps[i].Status = "SUCCEED"
					}
				}
				sb.jobs = append(sb.jobs, &j)
			}
			stored.branches[b.Name] = sb
		}
		stored.Branches = nil
		acct.apps[ap.ID] = stored
	})
}

// Cost adds amount (a decimal string, in USD) to service's cost on day
// (YYYY-MM-DD), in region us-east-1, of usage type "Usage", in the account
// itself, untagged. It panics on a malformed day or amount.
func (a *Account) Cost(day, service, amount string) *Account {
	return a.CostLine(day, CostLine{Service: service, Amount: amount})
}

// CostLine is a cost to seed with its dimensions: Region (default
// us-east-1), UsageType (default "Usage"), LinkedAccount (default the
// account's id) and Tags (key → value).
type CostLine struct {
	Service       string
	Region        string
	UsageType     string
	LinkedAccount string
	Tags          map[string]string
	Amount        string
}

// CostLine adds a cost on day (YYYY-MM-DD) with its dimensions. It panics on
// a malformed day or amount.
func (a *Account) CostLine(day string, c CostLine) *Account {
	if _, err := time.Parse(time.DateOnly, day); err != nil {
		panic(fmt.Sprintf("fakeaws: Cost day %q: %v", day, err))
	}
	v, ok := new(big.Rat).SetString(c.Amount)
	if !ok {
		panic(fmt.Sprintf("fakeaws: Cost amount %q is not a decimal", c.Amount))
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.UsageType == "" {
		c.UsageType = "Usage"
	}
	if c.LinkedAccount == "" {
		c.LinkedAccount = a.id
	}
	return a.update(func(acct *account) {
		acct.costs = append(acct.costs, costLine{day: day, CostLine: c, amount: v})
	})
}

// ForecastDaily makes GetCostForecast forecast amount (a decimal string, in
// USD) for each day of the range asked; by default it forecasts each day as
// the mean daily cost of the 30 days before the range.
func (a *Account) ForecastDaily(amount string) *Account {
	v, ok := new(big.Rat).SetString(amount)
	if !ok {
		panic(fmt.Sprintf("fakeaws: ForecastDaily amount %q is not a decimal", amount))
	}
	return a.update(func(acct *account) { acct.forecastDaily = v })
}

// decimal formats r exactly with the fewest decimal places; r must have a
// finite decimal expansion (as sums of decimal strings do).
func decimal(r *big.Rat) string {
	p := big.NewInt(1)
	ten := big.NewInt(10)
	for k := 0; k < 64; k++ {
		if new(big.Int).Rem(p, r.Denom()).Sign() == 0 {
			return r.FloatString(k)
		}
		p.Mul(p, ten)
	}
	return r.FloatString(64)
}

func (a *account) sortedClusters() []*cluster {
	out := make([]*cluster, 0, len(a.clusters))
	for _, k := range sortedKeys(a.clusters) {
		out = append(out, a.clusters[k])
	}
	return out
}

func (c *cluster) sortedServices() []*Service {
	out := make([]*Service, 0, len(c.services))
	for _, k := range sortedKeys(c.services) {
		out = append(out, c.services[k])
	}
	return out
}
