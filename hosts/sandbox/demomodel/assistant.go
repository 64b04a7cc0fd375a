package demomodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// step is the model's next move in a chat turn: tool calls (with a short
// sentence before them), or a final text.
type step struct {
	lead  string
	calls []plannedCall
	text  string
}

func say(format string, args ...any) step { return step{text: fmt.Sprintf(format, args...)} }

func callStep(lead, name string, args map[string]any) step {
	return step{lead: lead, calls: []plannedCall{{name: name, args: args}}}
}

// maxRounds bounds the tool rounds of one turn (the assistant allows 8).
const maxRounds = 6

// assist answers a chat request with tools: the assistant's turn.
func (m *Model) assist(req *fakeopenai.Request) fakeopenai.Response {
	c := parseConversation(req)
	st := m.decide(c)
	if len(st.calls) == 0 {
		if st.text == "" {
			st.text = report(c)
		}
		return fakeopenai.Text(st.text)
	}
	prefix := callIDPrefix(req)
	calls := make([]fakeopenai.Call, 0, len(st.calls))
	for i, p := range st.calls {
		tool, ok := req.Tool(p.name)
		if !ok {
			return fakeopenai.Text(fmt.Sprintf("I would need the %s tool for that, but it is not available here.", p.name))
		}
		if tool.Strict {
			p.args = strictArgs(tool.Parameters, p.args)
		}
		if err := m.schemas.validate(tool.Parameters, p.args); err != nil {
			return fakeopenai.Text(fmt.Sprintf("I could not put together valid arguments for %s (%s). Could you say it with the exact names?",
				p.name, firstLine(err.Error())))
		}
		args, err := marshal(p.args)
		if err != nil {
			return fakeopenai.Text(genericAnswer)
		}
		calls = append(calls, fakeopenai.Call{ID: prefix + strconv.Itoa(i), Name: p.name, Arguments: args})
	}
	if st.lead == "" {
		return fakeopenai.ToolCalls(calls...)
	}
	return fakeopenai.Text(st.lead + "\n\n").WithToolCalls(calls...)
}

func (m *Model) decide(c *conversation) step {
	if text := failureText(c); text != "" {
		return step{text: text}
	}
	if c.rounds >= maxRounds {
		return step{text: report(c)}
	}
	for _, r := range routes {
		if r.pattern.MatchString(c.msg) && (r.also == nil || r.also.MatchString(c.msg)) {
			return r.plan(m, c)
		}
	}
	return step{text: help(c)}
}

// route sends a message that matches pattern (and also, when set) to plan.
type route struct {
	pattern, also *regexp.Regexp
	plan          func(*Model, *conversation) step
}

func rx(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// routes are tried in order on the lower-cased message.
var routes = []route{
	{pattern: rx(`\bscal(e|ing)\b`), plan: (*Model).planScale},
	{pattern: rx(`\b(re)?deploy\b|\broll ?out\b`), plan: (*Model).planDeploy},
	{pattern: rx(`\blogs?\b`), plan: (*Model).planLogs},
	{pattern: rx(`\bcosts?\b|\bspend(ing)?\b|\bbill(ing)?\b|\bhow much\b`), plan: (*Model).planCosts},
	{pattern: rx(`\b(specs?|specifications?|prds?|pse|epics?|user stories|prps?)\b`), also: rx(`\b(generate|regenerate|next stage|continue|write)\b`), plan: (*Model).planGenerateStage},
	{pattern: rx(`\b(specs?|specifications?|prds?|pse|epics?|user stories|prps?)\b`), plan: (*Model).planSpecs},
	{pattern: rx(`\bsearch\b|\bmentioning\b|\bmatching\b`), also: rx(`\bcommits?\b`), plan: (*Model).planSearchCommits},
	{pattern: rx(`\bcommits?\b`), plan: repoPlan(toolListCommits, "the latest commits")},
	{pattern: rx(`\bpull requests?\b|\bpulls?\b|\bprs?\b`), plan: repoPlan(toolListPulls, "the pull requests")},
	{pattern: rx(`\bactivity\b|\bwhat happened\b`), plan: repoPlan(toolRepoActivity, "the recent activity")},
	{pattern: rx(`\brepos?\b|\brepositor(y|ies)\b|\bgithub\b`), plan: listPlan(toolListRepos, "Let me list your connected repositories.")},
	{pattern: rx(`\b(create|add|make|new)\b.*\bbrief\b|\bwrite an? (new )?brief\b`), plan: (*Model).planCreateBrief},
	{pattern: rx(`\b(generate|write|draft)\b`), also: rx(`\b(content|drafts?|posts?|articles?|copy|brief|newsletter)\b`), plan: (*Model).planGenerateContent},
	{pattern: rx(`\bbrand\b|\bbanned words?\b|\btone of voice\b`), plan: (*Model).planBrand},
	{pattern: rx(`\bbriefs?\b`), plan: projectListPlan(toolListBriefs, "Let me list the content briefs.")},
	{pattern: rx(`\bcontent\b|\bdrafts?\b|\barticles?\b|\bposts?\b`), plan: projectListPlan(toolListContent, "Let me list the content items.")},
	{pattern: rx(`\bfunctions?\b|\blambdas?\b`), plan: accountPlan(toolListFunctions, "Listing the Lambda functions of %s.")},
	{pattern: rx(`\bapps?\b|\bamplify\b`), plan: accountPlan(toolListApps, "Listing the Amplify apps of %s.")},
	{pattern: rx(`\bclusters?\b`), plan: func(m *Model, c *conversation) step {
		return m.planProduction(c, !servicesWanted.MatchString(c.msg))
	}},
	{pattern: rx(`\bproduction\b|\bprod\b|\bservices?\b|\brunning\b|\bruns\b|\becs\b|\binfrastructure\b|\bdeployed\b`), plan: func(m *Model, c *conversation) step {
		return m.planProduction(c, false)
	}},
	{pattern: rx(`\baccounts?\b|\baws\b|\bcloud\b`), plan: listPlan(toolListAccounts, "Let me list your cloud accounts.")},
}

var servicesWanted = rx(`\bservices?\b|\bproduction\b|\bprod\b|\bruns?\b|\brunning\b`)

// listPlan calls a listing tool that takes no arguments once, then reports.
func listPlan(name, lead string) func(*Model, *conversation) step {
	return func(_ *Model, c *conversation) step {
		if !c.called(name, nil) {
			return callStep(lead, name, map[string]any{})
		}
		return step{text: report(c, name)}
	}
}

// projectListPlan is listPlan for content listings, narrowed to the project
// the user names or looks at.
func projectListPlan(name, lead string) func(*Model, *conversation) step {
	return func(_ *Model, c *conversation) step {
		if !c.called(name, nil) {
			args := map[string]any{}
			if p := c.project(); p != "" {
				args["project_id"] = p
			}
			return callStep(lead, name, args)
		}
		return step{text: report(c, name)}
	}
}

// accountPlan calls a tool that takes an account once, then reports.
func accountPlan(name, lead string) func(*Model, *conversation) step {
	return func(_ *Model, c *conversation) step {
		acct, st, ok := c.account()
		if !ok {
			return st
		}
		if !c.called(name, map[string]any{"account_id": acct.ID}) {
			return callStep(fmt.Sprintf(lead, acct.label()), name, map[string]any{"account_id": acct.ID})
		}
		return step{text: report(c, name)}
	}
}

// repoPlan calls a tool that takes a repository once, then reports.
func repoPlan(name, what string) func(*Model, *conversation) step {
	return func(_ *Model, c *conversation) step {
		r, st, ok := c.repo(what)
		if !ok {
			return st
		}
		if !c.called(name, map[string]any{"repo_id": r.ID}) {
			return callStep(fmt.Sprintf("Fetching %s of %s.", what, r.FullName), name, map[string]any{"repo_id": r.ID})
		}
		return step{text: report(c, name)}
	}
}

const noAccounts = "No cloud account is connected yet. Add an AWS account under Cloud accounts, then ask me again."

func (a account) label() string {
	if a.Name != "" {
		return a.Name
	}
	return "account " + a.ID
}

// account is the cloud account the user means: the one named, one whose
// name says production when they ask about production, or the first.
func (c *conversation) account() (account, step, bool) {
	if len(c.kb.accounts) == 0 {
		switch {
		case !c.offers(toolListAccounts):
			return account{}, say("I cannot see your cloud accounts in this conversation."), false
		case c.called(toolListAccounts, nil):
			return account{}, say(noAccounts), false
		}
		return account{}, callStep("Let me look up your cloud accounts.", toolListAccounts, map[string]any{}), false
	}
	for _, a := range c.kb.accounts {
		if a.Name != "" && c.mentions(a.Name) {
			return a, step{}, true
		}
	}
	if c.mentions("production") || c.mentions("prod") {
		for _, a := range c.kb.accounts {
			if strings.Contains(strings.ToLower(a.Name), "prod") {
				return a, step{}, true
			}
		}
	}
	return c.kb.accounts[0], step{}, true
}

// maxClusters bounds the clusters whose services one turn lists.
const maxClusters = 5

func (m *Model) planProduction(c *conversation, clustersOnly bool) step {
	acct, st, ok := c.account()
	if !ok {
		return st
	}
	if !c.called(toolListClusters, map[string]any{"account_id": acct.ID}) {
		return callStep(fmt.Sprintf("Checking the ECS clusters of %s.", acct.label()), toolListClusters, map[string]any{"account_id": acct.ID})
	}
	clusters := c.kb.clustersOf(acct.ID)
	if !clustersOnly && c.offers(toolListServices) {
		wanted := clusters[:min(len(clusters), maxClusters)]
		if named := slices.DeleteFunc(slices.Clone(clusters), func(cl cluster) bool { return !c.mentions(cl.Name) }); len(named) > 0 {
			wanted = named
		}
		var calls []plannedCall
		for _, cl := range wanted {
			args := map[string]any{"account_id": acct.ID, "cluster": cl.Name}
			if !c.called(toolListServices, args) {
				calls = append(calls, plannedCall{name: toolListServices, args: args})
			}
		}
		if len(calls) > 0 {
			return step{lead: "Listing the services of each cluster.", calls: calls}
		}
	}
	return step{text: productionReport(c, acct, clusters, clustersOnly)}
}

// serviceName reads a service's name from the message with pattern; "" when
// the word there is not a name.
func serviceName(pattern *regexp.Regexp, user string) string {
	m := pattern.FindStringSubmatch(user)
	if m == nil {
		return ""
	}
	name := strings.Trim(m[1], "\"'`“”.,;:!?")
	if stopWords[strings.ToLower(name)] {
		return ""
	}
	return name
}

var stopWords = map[string]bool{
	"the": true, "a": true, "an": true, "it": true, "to": true, "service": true, "services": true, "everything": true,
	"all": true, "now": true, "this": true, "that": true, "my": true, "our": true, "me": true, "up": true, "down": true,
	"show": true, "recent": true, "latest": true, "last": true, "new": true, "of": true, "for": true, "from": true,
	"please": true, "again": true, "app": true, "apps": true, "error": true, "errors": true, "its": true, "some": true,
}

// findService is the service the user means: the one named (or mentioned)
// among the services known, or found by listing the account's clusters and
// their services first.
func (c *conversation) findService(name, purpose string) (service, step, bool) {
	if s, ok := c.matchService(name); ok {
		return s, step{}, true
	}
	acct, st, ok := c.account()
	if !ok {
		return service{}, st, false
	}
	var known []string
	for _, s := range c.kb.services {
		if s.Account == acct.ID && !slices.Contains(known, s.Name) {
			known = append(known, s.Name)
		}
	}
	list := "it has no ECS services"
	if len(known) > 0 {
		list = "its services are " + joinAnd(known)
	}
	if name == "" && len(known) > 0 {
		return service{}, say("Which service should be %s? In %s %s.", purpose, acct.label(), list), false
	}
	lookFor := "the service"
	if name != "" {
		lookFor = "service " + name
	}
	clusters := c.kb.clustersOf(acct.ID)
	if len(clusters) == 0 && !c.called(toolListClusters, map[string]any{"account_id": acct.ID}) {
		return service{}, callStep(fmt.Sprintf("Looking for %s in %s.", lookFor, acct.label()), toolListClusters,
			map[string]any{"account_id": acct.ID}), false
	}
	var calls []plannedCall
	for _, cl := range clusters[:min(len(clusters), 2*maxClusters)] {
		args := map[string]any{"account_id": acct.ID, "cluster": cl.Name}
		if !c.called(toolListServices, args) {
			calls = append(calls, plannedCall{name: toolListServices, args: args})
		}
	}
	if len(calls) > 0 {
		return service{}, step{calls: calls}, false
	}
	if name == "" {
		return service{}, say("Which service should be %s? In %s %s.", purpose, acct.label(), list), false
	}
	return service{}, say("I could not find a service named %q in %s: %s.", name, acct.label(), list), false
}

func (c *conversation) matchService(name string) (service, bool) {
	var found []service
	if name != "" {
		for _, s := range c.kb.services {
			if strings.EqualFold(s.Name, name) || strings.HasSuffix(strings.ToLower(s.Name), "/"+strings.ToLower(name)) {
				found = append(found, s)
			}
		}
	} else {
		longest := 0
		for _, s := range c.kb.services {
			switch n := len(s.Name); {
			case !c.mentions(s.Name) || n < longest:
			case n > longest:
				found, longest = []service{s}, n
			default:
				found = append(found, s)
			}
		}
	}
	if len(found) == 0 {
		return service{}, false
	}
	// A cluster named in the message narrows the choice; else, for the same
	// name in several clusters, a production one comes first.
	named := false
	for _, cl := range c.kb.clusters {
		named = named || c.mentions(cl.Name)
	}
	if named {
		found = slices.DeleteFunc(found, func(s service) bool { return !c.mentions(s.Cluster) })
		if len(found) == 0 {
			return service{}, false
		}
	}
	for _, s := range found {
		if strings.Contains(strings.ToLower(s.Cluster), "prod") {
			return s, true
		}
	}
	return found[0], true
}

var (
	scaleCount    = rx(`(?i)\bscal(?:e|ing)\b.*?\bto\s+(\d+)\b`)
	scaleName     = rx(`(?i)\bscale\s+(?:up\s+|down\s+)?(?:the\s+)?(?:service\s+)?([A-Za-z0-9][A-Za-z0-9._:/-]*)`)
	deployPattern = rx(`(?i)\b(?:re)?deploy\s+(?:the\s+)?(?:latest\s+(?:version\s+of\s+)?|new\s+version\s+of\s+)?(?:service\s+)?([A-Za-z0-9][A-Za-z0-9._:/-]*)`)
	logsPattern   = rx(`(?i)\blogs?\s+(?:of|for|from)\s+(?:the\s+)?(?:service\s+)?([A-Za-z0-9][A-Za-z0-9._:/-]*)`)
	logsBefore    = rx(`(?i)\b([A-Za-z0-9][A-Za-z0-9._:/-]*?)(?:'s)?(?:\s+service)?(?:'s)?\s+logs?\b`)
)

func (m *Model) planScale(c *conversation) step {
	name := serviceName(scaleName, c.user)
	count := -1
	if sm := scaleCount.FindStringSubmatch(c.user); sm != nil {
		count, _ = strconv.Atoi(sm[1])
	}
	if count < 0 {
		what := "the service"
		if name != "" {
			what = name
		}
		return say("How many tasks should %s run? Say, for example, “scale %s to 3”.", what, cmpOr(name, "api"))
	}
	if count > 1000 {
		return say("A service can run at most 1000 tasks; %d is too many.", count)
	}
	svc, st, ok := c.findService(name, "scaled")
	if !ok {
		return st
	}
	if c.called(toolScaleService, map[string]any{"service": svc.Name, "cluster": svc.Cluster}) {
		return step{text: report(c, toolScaleService)}
	}
	args := map[string]any{"account_id": svc.Account, "cluster": svc.Cluster, "service": svc.Name, "desired_count": count}
	if count == 0 {
		args["confirm_scale_to_zero"] = true
	}
	return callStep(fmt.Sprintf("I will scale %s in cluster %s from %d to %d %s once you approve.",
		svc.Name, svc.Cluster, svc.Desired, count, plural(count, "task")), toolScaleService, args)
}

func (m *Model) planDeploy(c *conversation) step {
	svc, st, ok := c.findService(serviceName(deployPattern, c.user), "deployed")
	if !ok {
		return st
	}
	if c.called(toolDeployService, map[string]any{"service": svc.Name, "cluster": svc.Cluster}) {
		return step{text: report(c, toolDeployService)}
	}
	return callStep(fmt.Sprintf("I will start a new deployment of %s in cluster %s once you approve.", svc.Name, svc.Cluster),
		toolDeployService, map[string]any{"account_id": svc.Account, "cluster": svc.Cluster, "service": svc.Name})
}

func (m *Model) planLogs(c *conversation) step {
	name := serviceName(logsPattern, c.user)
	if name == "" {
		name = serviceName(logsBefore, c.user)
	}
	svc, st, ok := c.findService(name, "shown")
	if !ok {
		return st
	}
	args := map[string]any{"account_id": svc.Account, "cluster": svc.Cluster, "service": svc.Name}
	if !c.called(toolServiceLogs, args) {
		args["limit"] = 20
		return callStep(fmt.Sprintf("Fetching the latest log events of %s.", svc.Name), toolServiceLogs, args)
	}
	return step{text: report(c, toolServiceLogs)}
}

var (
	datePattern     = rx(`\b(\d{4}-\d{2}-\d{2})\b`)
	lastDaysPattern = rx(`\blast (\d{1,3}) days\b`)
)

func (m *Model) planCosts(c *conversation) step {
	acct, st, ok := c.account()
	if !ok {
		return st
	}
	if c.called(toolCosts, map[string]any{"account_id": acct.ID}) {
		return step{text: report(c, toolCosts)}
	}
	today := m.now().UTC()
	day := func(back int) string { return today.AddDate(0, 0, -back).Format(dateLayout) }
	start, end, gran := day(29), day(0), "MONTHLY"
	switch dates := datePattern.FindAllString(c.msg, 2); {
	case len(dates) == 2:
		start, end = min(dates[0], dates[1]), max(dates[0], dates[1])
	case strings.Contains(c.msg, "last month"):
		first := today.AddDate(0, 0, 1-today.Day())
		start, end = first.AddDate(0, -1, 0).Format(dateLayout), first.AddDate(0, 0, -1).Format(dateLayout)
	case strings.Contains(c.msg, "this month"):
		start = today.AddDate(0, 0, 1-today.Day()).Format(dateLayout)
	case strings.Contains(c.msg, "year") || strings.Contains(c.msg, "12 months"):
		start = today.AddDate(-1, 0, 1).Format(dateLayout)
	default:
		if mm := lastDaysPattern.FindStringSubmatch(c.msg); mm != nil {
			if n, _ := strconv.Atoi(mm[1]); n >= 1 && n <= 365 {
				start = day(n - 1)
			}
		}
	}
	if strings.Contains(c.msg, "daily") || strings.Contains(c.msg, "per day") || strings.Contains(c.msg, "by day") {
		gran = "DAILY"
	}
	return callStep(fmt.Sprintf("Fetching the costs of %s from %s to %s.", acct.label(), start, end), toolCosts,
		map[string]any{"account_id": acct.ID, "start_date": start, "end_date": end, "granularity": gran, "group_by": "SERVICE"})
}

const dateLayout = "2006-01-02"

// repo is the repository the user means: the one named, or the only one.
func (c *conversation) repo(what string) (repo, step, bool) {
	for _, r := range c.kb.repos {
		if c.mentions(r.FullName) {
			return r, step{}, true
		}
	}
	for _, r := range c.kb.repos {
		if _, short, ok := strings.Cut(r.FullName, "/"); ok && c.mentions(short) {
			return r, step{}, true
		}
	}
	if !c.called(toolListRepos, nil) && c.offers(toolListRepos) {
		return repo{}, callStep("Let me find your repositories first.", toolListRepos, map[string]any{}), false
	}
	switch len(c.kb.repos) {
	case 0:
		return repo{}, say("No GitHub repository is connected yet. Connect GitHub (Settings → Repositories) and ask me again."), false
	case 1:
		return c.kb.repos[0], step{}, true
	}
	names := make([]string, len(c.kb.repos))
	for i, r := range c.kb.repos {
		names[i] = r.FullName
	}
	return repo{}, say("Which repository should I show %s of? You have %s.", what, joinAnd(names)), false
}

var (
	quotedPattern = rx(`["“'‘]([^"”'’]{1,256})["”'’]`)
	searchPattern = rx(`(?i)\b(?:for|about|mentioning|matching|containing|with)\s+(.+)$`)
)

func (m *Model) planSearchCommits(c *conversation) step {
	q := ""
	if mm := quotedPattern.FindStringSubmatch(c.user); mm != nil {
		q = mm[1]
	} else if mm := searchPattern.FindStringSubmatch(c.user); mm != nil {
		q = mm[1]
	}
	q = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(q), ".?!"))
	if q == "" {
		return say("What should I search the commits for? Say, for example, “search commits for login fix”.")
	}
	q = cutWords(q, 256)
	if !c.called(toolSearchCommits, map[string]any{"q": q}) {
		return callStep(fmt.Sprintf("Searching the commits for %q.", q), toolSearchCommits, map[string]any{"q": q})
	}
	return step{text: report(c, toolSearchCommits)}
}

var (
	projectPattern    = rx(`(?i)\bproject\s+(?:id\s+)?["'“]?([A-Za-z0-9._:-]{1,100})`)
	briefTitlePattern = rx(`(?i)\b(?:about|on|titled|called|named)\s+(.+?)(?:\s+(?:for|in)\s+(?:the\s+)?project\b.*)?[.?!]*$`)
)

// project is the content project the user names, looks at, or has briefs in.
func (c *conversation) project() string {
	if mm := projectPattern.FindStringSubmatch(c.user); mm != nil && !stopWords[strings.ToLower(mm[1])] &&
		!slices.Contains([]string{"settings", "brand", "briefs", "content", "id"}, strings.ToLower(mm[1])) {
		return mm[1]
	}
	if p := c.selectedProject(); p != "" {
		return p
	}
	var projects []string
	for _, b := range c.kb.briefs {
		if b.ProjectID != "" && !slices.Contains(projects, b.ProjectID) {
			projects = append(projects, b.ProjectID)
		}
	}
	if len(projects) == 1 {
		return projects[0]
	}
	return ""
}

func (m *Model) planBrand(c *conversation) step {
	p := c.project()
	if p == "" {
		return say("Which project's brand settings should I show? Tell me its id, for example “brand of project acme”.")
	}
	if !c.called(toolGetBrand, map[string]any{"project_id": p}) {
		return callStep(fmt.Sprintf("Fetching the brand settings of project %s.", p), toolGetBrand, map[string]any{"project_id": p})
	}
	return step{text: report(c, toolGetBrand)}
}

func (m *Model) planCreateBrief(c *conversation) step {
	if c.called(toolCreateBrief, nil) {
		return step{text: report(c, toolCreateBrief)}
	}
	p := c.project()
	t := ""
	if mm := quotedPattern.FindStringSubmatch(c.user); mm != nil {
		t = mm[1]
	} else if mm := briefTitlePattern.FindStringSubmatch(oneLine(c.user)); mm != nil {
		t = mm[1]
	}
	t = capitalise(cutWords(strings.TrimSpace(t), 200))
	switch {
	case p == "":
		return say("Which project is the brief for? Say, for example, “create a brief about our spring launch for project acme”.")
	case t == "":
		return say("What is the brief about? Say, for example, “create a brief about our spring launch for project %s”.", p)
	}
	return callStep(fmt.Sprintf("I will create the brief %q in project %s once you approve.", t, p), toolCreateBrief,
		map[string]any{"project_id": p, "title": t, "format": "article", "length": map[string]any{"min_words": 150, "max_words": 400}})
}

func (m *Model) planGenerateContent(c *conversation) step {
	if c.called(toolGenerateDraft, nil) {
		return step{text: report(c, toolGenerateDraft)}
	}
	b, ok := c.mentionedBrief()
	if !ok {
		if !c.called(toolListBriefs, nil) && c.offers(toolListBriefs) {
			args := map[string]any{}
			if p := c.project(); p != "" {
				args["project_id"] = p
			}
			return callStep("Let me find the brief first.", toolListBriefs, args)
		}
		switch len(c.kb.briefs) {
		case 0:
			return say("There is no content brief yet. Create one first, for example “create a brief about our spring launch for project acme”.")
		case 1:
			b = c.kb.briefs[0]
		default:
			titles := make([]string, len(c.kb.briefs))
			for i, b := range c.kb.briefs {
				titles[i] = "“" + b.Title + "”"
			}
			return say("Which brief should I write from? There are %s.", joinAnd(titles))
		}
	}
	return callStep(fmt.Sprintf("I will start writing a draft from the brief %q once you approve.", b.Title), toolGenerateDraft,
		map[string]any{"brief_id": b.ID})
}

func (c *conversation) mentionedBrief() (brief, bool) {
	for _, b := range c.kb.briefs {
		if b.Title != "" && strings.Contains(c.msg, strings.ToLower(oneLine(b.Title))) {
			return b, true
		}
	}
	if mm := quotedPattern.FindStringSubmatch(c.user); mm != nil {
		for _, b := range c.kb.briefs {
			if strings.Contains(strings.ToLower(b.Title), strings.ToLower(mm[1])) {
				return b, true
			}
		}
	}
	return brief{}, false
}

// mentionedSession is the specification session the user names.
func (c *conversation) mentionedSession() (specSession, bool) {
	best := -1
	for i, s := range c.kb.sessions {
		if s.Name != "" && c.mentions(oneLine(s.Name)) && (best < 0 || len(s.Name) > len(c.kb.sessions[best].Name)) {
			best = i
		}
	}
	if best < 0 {
		return specSession{}, false
	}
	return c.kb.sessions[best], true
}

func (m *Model) planSpecs(c *conversation) step {
	if s, ok := c.mentionedSession(); ok && c.offers(toolGetSpec) {
		if !c.called(toolGetSpec, map[string]any{"session_id": s.ID}) {
			return callStep(fmt.Sprintf("Opening the specification %q.", s.Name), toolGetSpec, map[string]any{"session_id": s.ID})
		}
		return step{text: report(c, toolGetSpec)}
	}
	if !c.called(toolListSpecs, nil) {
		return callStep("Let me list your specification sessions.", toolListSpecs, map[string]any{})
	}
	return step{text: report(c, toolListSpecs)}
}

var stageWords = []string{"scope", "prd", "epics", "stories", "prps"}

func (m *Model) planGenerateStage(c *conversation) step {
	if c.called(toolGenerateStage, nil) {
		return step{text: report(c, toolGenerateStage)}
	}
	s, ok := c.mentionedSession()
	if !ok {
		if !c.called(toolListSpecs, nil) && c.offers(toolListSpecs) {
			return callStep("Let me find the specification first.", toolListSpecs, map[string]any{})
		}
		switch len(c.kb.sessions) {
		case 0:
			return say("You have no specification session yet. Create one with your documents (POST /api/v1/pse/sessions) and ask me again.")
		case 1:
			s = c.kb.sessions[0]
		default:
			names := make([]string, len(c.kb.sessions))
			for i, s := range c.kb.sessions {
				names[i] = "“" + s.Name + "”"
			}
			return say("Which specification should I continue? You have %s.", joinAnd(names))
		}
	}
	args := map[string]any{"session_id": s.ID}
	what := "the next stage"
	for _, w := range stageWords {
		if c.mentions(w) || (w == "epics" && c.mentions("epic")) {
			args["stage"], what = w, "the "+w+" stage"
		}
	}
	return callStep(fmt.Sprintf("I will start generating %s of %q once you approve.", what, s.Name), toolGenerateStage, args)
}

// help says what the model can do with the tools the request offers.
func help(c *conversation) string {
	var b strings.Builder
	b.WriteString("I am devpilot's demo model: I follow fixed rules, not AI, so I understand a few kinds of requests. Try:")
	areas := []struct {
		tool, line string
	}{
		{toolListClusters, "Cloud: “what runs in production?”, “scale api to 3”, “deploy api”, “logs of api”, “costs of the last 30 days”, “list functions”"},
		{toolListRepos, "Repositories: “list my repos”, “latest commits”, “open pull requests”, “search commits for login”"},
		{toolListBriefs, "Content: “show the brand of project acme”, “list briefs”, “create a brief about our launch for project acme”, “generate content”"},
		{toolListSpecs, "Specifications: “list my specs”, “generate the next stage”"},
	}
	n := 0
	for _, a := range areas {
		if c.offers(a.tool) {
			b.WriteString("\n- " + a.line)
			n++
		}
	}
	if n == 0 {
		return genericAnswer
	}
	b.WriteString("\nChanges (scale, deploy, create, generate) run only after you approve them.")
	return b.String()
}

func joinAnd(list []string) string {
	switch len(list) {
	case 0:
		return ""
	case 1:
		return list[0]
	}
	if len(list) > 10 {
		return strings.Join(list[:10], ", ") + fmt.Sprintf(" and %d more", len(list)-10)
	}
	return strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// strictArgs gives every property of a strict schema that args leave out a
// null, as a model held to the schema does (nested objects too); args are
// copied, not changed.
func strictArgs(schema json.RawMessage, args map[string]any) map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return args
	}
	return nullsFor(doc, args)
}

func nullsFor(schema, args map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := make(map[string]any, len(props))
	for k, v := range args {
		if sub, ok := v.(map[string]any); ok {
			if ps, ok := props[k].(map[string]any); ok {
				v = nullsFor(ps, sub)
			}
		}
		out[k] = v
	}
	for k := range props {
		if _, ok := out[k]; !ok {
			out[k] = nil
		}
	}
	return out
}
