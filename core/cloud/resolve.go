package cloud

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// Where a request leaves out which account (or cluster, or branch) it means,
// the core works it out when only one fits, and otherwise answers malformed
// naming the choices, so that a caller (or the assistant's model) can ask
// again with one of them.

// maxChoicesShown bounds how many choices an error lists.
const maxChoicesShown = 20

// choice is one possible answer to a question the request left open.
type choice struct {
	account ports.CloudAccount
	cluster string // for services
	branch  string // for builds
}

// accountLabel names an account as choices show it: its id and its name.
func accountLabel(a ports.CloudAccount) string { return a.ID + " (" + a.Name + ")" }

// listChoices joins labels, at most maxChoicesShown of them.
func listChoices(labels []string) string {
	if len(labels) > maxChoicesShown {
		return strings.Join(labels[:maxChoicesShown], ", ") + fmt.Sprintf(" and %d more", len(labels)-maxChoicesShown)
	}
	return strings.Join(labels, ", ")
}

// ambiguous is the malformed error of a question with several answers: the
// message says what is ambiguous and lists the choices; each field the
// caller may set to settle it is named with its possible values.
func ambiguous(what string, choices []choice) error {
	var accounts, clusters, branches, places []string
	for _, c := range choices {
		label := accountLabel(c.account)
		if !slices.Contains(accounts, label) {
			accounts = append(accounts, label)
		}
		place := "account " + label
		if c.cluster != "" {
			place = "cluster " + c.cluster + " of " + place
			if !slices.Contains(clusters, c.cluster) {
				clusters = append(clusters, c.cluster)
			}
		}
		if c.branch != "" {
			place = "branch " + c.branch + " of " + place
			if !slices.Contains(branches, c.branch) {
				branches = append(branches, c.branch)
			}
		}
		places = append(places, place)
	}
	var fields []ports.FieldError
	if len(accounts) > 1 {
		fields = append(fields, ports.FieldError{Field: "account_id", Reason: "required: one of " + listChoices(accounts)})
	}
	if len(clusters) > 1 {
		fields = append(fields, ports.FieldError{Field: "cluster", Reason: "required: one of " + listChoices(clusters)})
	}
	if len(branches) > 1 {
		fields = append(fields, ports.FieldError{Field: "branch", Reason: "required: one of " + listChoices(branches)})
	}
	return &ports.Error{Kind: ports.KindMalformed, Message: what + ": " + listChoices(places), Fields: fields}
}

// orgAccounts returns every account of the caller's organisation, by name.
func (s *Service) orgAccounts(ctx context.Context, p ports.Principal) ([]ports.CloudAccount, error) {
	var all []ports.CloudAccount
	page := ports.Page{Limit: MaxPageLimit}
	for {
		list, next, err := s.d.Accounts.ListCloudAccounts(ctx, p.OrgID, page)
		if err != nil {
			return nil, err
		}
		all = append(all, list...)
		if next == "" || len(list) == 0 {
			return all, nil
		}
		page.Cursor = next
	}
}

// noAccounts is the error of a request that names no account in an
// organisation that has none.
func noAccounts() error {
	return &ports.Error{Kind: ports.KindMalformed,
		Message: "account_id is required: the organisation has no cloud account yet (an admin adds one with POST /cloud/accounts)",
		Fields:  []ports.FieldError{{Field: "account_id", Reason: "required: the organisation has no cloud account"}}}
}

// candidates returns the account named, or, with accountID "", every account
// of the organisation. Errors: not_found for the account named; malformed
// when the organisation has none.
func (s *Service) candidates(ctx context.Context, p ports.Principal, accountID string) ([]ports.CloudAccount, error) {
	if accountID != "" {
		a, err := s.account(ctx, p, accountID)
		if err != nil {
			return nil, err
		}
		return []ports.CloudAccount{a}, nil
	}
	all, err := s.orgAccounts(ctx, p)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, noAccounts()
	}
	return all, nil
}

// pick returns the account named, or, with accountID "", the organisation's
// only account. Errors: not_found for the account named; malformed when the
// organisation has none, or several (naming them).
func (s *Service) pick(ctx context.Context, p ports.Principal, accountID string) (ports.CloudAccount, error) {
	list, err := s.candidates(ctx, p, accountID)
	if err != nil {
		return ports.CloudAccount{}, err
	}
	if len(list) > 1 {
		choices := make([]choice, len(list))
		for i, a := range list {
			choices[i] = choice{account: a}
		}
		return ports.CloudAccount{}, ambiguous(fmt.Sprintf("account_id is required: the organisation has %d cloud accounts", len(list)), choices)
	}
	return list[0], nil
}

// searchFailed is the error of a search for where something is that could
// not ask one of the accounts: its kind, with a message that names the
// account and how to skip the search.
func searchFailed(err error, a ports.CloudAccount, what, skip string) error {
	msg := message(err)
	kind := ports.KindOf(err)
	if kind == "" {
		kind = ports.KindInternal
	}
	out := &ports.Error{Kind: kind, Message: fmt.Sprintf("looking for %s in cloud account %s: %s; %s to skip the search", what, accountLabel(a), msg, skip), Err: err}
	if e, ok := ports.AsError(err); ok {
		out.RetryAfter = e.RetryAfter
	}
	return out
}

// locateService finds the account and cluster of a service the request does
// not fully place: with both given, they are taken as they are; otherwise
// each candidate account's clusters (or the one given) are searched for the
// service, by name or ARN. Errors: malformed when several clusters run it
// (naming them) or the organisation has no account; else, when an account
// could not be searched, that provider error, naming the account (the one
// match elsewhere may not be the only one); not_found when no cluster runs
// it.
func (s *Service) locateService(ctx context.Context, p ports.Principal, in ServiceRef) (ports.CloudAccount, string, error) {
	if in.AccountID != "" && in.Cluster != "" {
		a, err := s.account(ctx, p, in.AccountID)
		return a, in.Cluster, err
	}
	accounts, err := s.candidates(ctx, p, in.AccountID)
	if err != nil {
		return ports.CloudAccount{}, "", err
	}
	if len(accounts) == 1 && in.Cluster != "" {
		return accounts[0], in.Cluster, nil
	}
	what := "service " + in.Service
	var found []choice
	var failed error
	for _, a := range accounts {
		clusters := []string{in.Cluster}
		if in.Cluster == "" {
			list, err := call(ctx, s, a, s.d.Provider.ListClusters)
			if err != nil {
				failed = cmp.Or(failed, searchFailed(err, a, what, "pass account_id and cluster"))
				continue
			}
			clusters = clusters[:0]
			for _, c := range list {
				clusters = append(clusters, c.Name)
			}
		}
		for _, cluster := range clusters {
			services, err := call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.ContainerService, error) {
				return s.d.Provider.ListServices(ctx, c, cluster)
			})
			if ports.IsKind(err, ports.KindNotFound) {
				continue
			}
			if err != nil {
				failed = cmp.Or(failed, searchFailed(err, a, what, "pass account_id and cluster"))
				break
			}
			if slices.ContainsFunc(services, func(v ports.ContainerService) bool { return v.Name == in.Service || v.ARN == in.Service }) {
				found = append(found, choice{account: a, cluster: cluster})
			}
		}
	}
	switch {
	case len(found) > 1:
		return ports.CloudAccount{}, "", ambiguous(fmt.Sprintf("%s runs in %d places; pass account_id and cluster", what, len(found)), found)
	case failed != nil:
		return ports.CloudAccount{}, "", failed
	case len(found) == 0:
		return ports.CloudAccount{}, "", ports.NotFound("container service", in.Service)
	}
	return found[0].account, found[0].cluster, nil
}

// locateFunction finds the account of a function: the one named, the
// organisation's only one, or the one whose functions include it (by name or
// ARN). Errors: not_found when no account has it; malformed when several do
// (naming them) or the organisation has no account; the search's provider
// errors, naming the account.
func (s *Service) locateFunction(ctx context.Context, p ports.Principal, accountID, name string) (ports.CloudAccount, error) {
	accounts, err := s.candidates(ctx, p, accountID)
	if err != nil {
		return ports.CloudAccount{}, err
	}
	if len(accounts) == 1 {
		return accounts[0], nil
	}
	what := "function " + name
	var found []choice
	var failed error
	for _, a := range accounts {
		fns, err := call(ctx, s, a, s.d.Provider.ListFunctions)
		if err != nil {
			failed = cmp.Or(failed, searchFailed(err, a, what, "pass account_id"))
			continue
		}
		if slices.ContainsFunc(fns, func(f ports.Function) bool { return f.Name == name || f.ARN == name }) {
			found = append(found, choice{account: a})
		}
	}
	switch {
	case len(found) > 1:
		return ports.CloudAccount{}, ambiguous(fmt.Sprintf("%s exists in %d cloud accounts; pass account_id", what, len(found)), found)
	case failed != nil:
		return ports.CloudAccount{}, failed
	case len(found) == 0:
		return ports.CloudAccount{}, ports.NotFound("function", name)
	}
	return found[0].account, nil
}

// appHome is an account holding an app, with the app's branches.
type appHome struct {
	account  ports.CloudAccount
	branches []ports.AppBranch
}

// locateApp returns the accounts holding an app, each with the app's
// branches: of the account named, or of every account of the organisation.
// Errors: not_found when none holds it; malformed when the organisation has
// no account; the provider's errors, naming the account when it searched.
func (s *Service) locateApp(ctx context.Context, p ports.Principal, accountID, appID string) ([]appHome, error) {
	accounts, err := s.candidates(ctx, p, accountID)
	if err != nil {
		return nil, err
	}
	var homes []appHome
	var failed error
	for _, a := range accounts {
		branches, err := call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.AppBranch, error) {
			return s.d.Provider.ListBranches(ctx, c, appID)
		})
		switch {
		case ports.IsKind(err, ports.KindNotFound):
			continue
		case err != nil && accountID != "":
			return nil, err
		case err != nil:
			failed = cmp.Or(failed, searchFailed(err, a, "app "+appID, "pass account_id"))
			continue
		}
		homes = append(homes, appHome{account: a, branches: branches})
	}
	switch {
	case len(homes) > 1:
		return homes, nil
	case failed != nil:
		return nil, failed
	case len(homes) == 0:
		return nil, ports.NotFound("app", appID)
	}
	return homes, nil
}

// releaseBranch is the branch a deploy without one means: the app's only
// branch, or else its only production branch. Errors: malformed naming the
// branches when neither settles it.
func releaseBranch(h appHome, appID string) (string, error) {
	if len(h.branches) == 1 {
		return h.branches[0].Name, nil
	}
	var prod []string
	for _, b := range h.branches {
		if b.Stage == ports.BranchStageProduction {
			prod = append(prod, b.Name)
		}
	}
	if len(prod) == 1 {
		return prod[0], nil
	}
	if len(h.branches) == 0 {
		return "", &ports.Error{Kind: ports.KindInvalid, Message: "app " + appID + " has no branch to deploy",
			Fields: []ports.FieldError{{Field: "branch", Reason: "the app has no branch"}}}
	}
	choices := make([]choice, len(h.branches))
	names := make([]string, len(h.branches))
	for i, b := range h.branches {
		choices[i] = choice{account: h.account, branch: b.Name}
		names[i] = b.Name
	}
	why := fmt.Sprintf("branch is required: app %s has %d branches", appID, len(h.branches))
	if len(prod) > 1 {
		why += fmt.Sprintf(", %d of them production", len(prod))
	}
	return "", ambiguous(why, choices)
}
