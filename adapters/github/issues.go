package github

import (
	"context"
	"net/http"
	"slices"

	gh "github.com/google/go-github/v84/github"

	"github.com/devpilot/devpilot/ports"
)

// CreateIssue opens an issue with the input's title, body and labels.
// Errors: as the package's mapping; invalid when GitHub refuses the fields
// (422).
func (c *Client) CreateIssue(ctx context.Context, token, owner, repo string, in ports.SCMIssueInput) (ports.SCMIssue, error) {
	if err := checkRepo(owner, repo); err != nil {
		return ports.SCMIssue{}, err
	}
	var is *gh.Issue
	_, err := c.call(ctx, opCreateIssue, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		is, resp, err = api.Issues.Create(ctx, owner, repo, issueRequest(in))
		return resp, err
	})
	if err != nil {
		return ports.SCMIssue{}, writeErr(err)
	}
	return issue(is), nil
}

// UpdateIssue replaces an issue's title, body and labels; its state is left
// alone. Errors: as CreateIssue; not_found for an unknown issue.
func (c *Client) UpdateIssue(ctx context.Context, token, owner, repo string, number int, in ports.SCMIssueInput) (ports.SCMIssue, error) {
	if err := checkRepo(owner, repo); err != nil {
		return ports.SCMIssue{}, err
	}
	if number <= 0 {
		return ports.SCMIssue{}, ports.Invalid("not an issue number", ports.FieldError{Field: "number", Reason: "must be positive"})
	}
	var is *gh.Issue
	_, err := c.call(ctx, opUpdateIssue, token, "GitHub issue", func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		is, resp, err = api.Issues.Edit(ctx, owner, repo, number, issueRequest(in))
		return resp, err
	})
	if err != nil {
		return ports.SCMIssue{}, writeErr(err)
	}
	return issue(is), nil
}

// ListIssuesByLabel returns a page of the repository's issues, open and
// closed, carrying label, oldest first; pull requests are left out.
func (c *Client) ListIssuesByLabel(ctx context.Context, token, owner, repo, label string, page ports.Page) ([]ports.SCMIssue, string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, "", err
	}
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	var list []*gh.Issue
	resp, err := c.call(ctx, opListIssues, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		list, resp, err = api.Issues.ListByRepo(ctx, owner, repo, &gh.IssueListByRepoOptions{
			State: "all", Labels: []string{label}, Sort: "created", Direction: "asc", ListOptions: lo,
		})
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]ports.SCMIssue, 0, len(list))
	for _, is := range list {
		if is.IsPullRequest() {
			continue
		}
		out = append(out, issue(is))
	}
	return out, nextCursor(resp), nil
}

// ListLabels returns a page of the repository's labels.
func (c *Client) ListLabels(ctx context.Context, token, owner, repo string, page ports.Page) ([]ports.SCMLabel, string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, "", err
	}
	lo, err := listOptions(page)
	if err != nil {
		return nil, "", err
	}
	var list []*gh.Label
	resp, err := c.call(ctx, opListLabels, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		list, resp, err = api.Issues.ListLabels(ctx, owner, repo, &lo)
		return resp, err
	})
	if err != nil {
		return nil, "", err
	}
	out := make([]ports.SCMLabel, len(list))
	for i, l := range list {
		out[i] = ports.SCMLabel{Name: l.GetName(), Color: l.GetColor(), Description: l.GetDescription()}
	}
	return out, nextCursor(resp), nil
}

// CreateLabel creates a label. Errors: conflict when the repository has a
// label of that name already; otherwise as CreateIssue.
func (c *Client) CreateLabel(ctx context.Context, token, owner, repo string, l ports.SCMLabel) error {
	if err := checkRepo(owner, repo); err != nil {
		return err
	}
	label := &gh.Label{Name: gh.Ptr(l.Name), Color: gh.Ptr(l.Color)}
	if l.Description != "" {
		label.Description = gh.Ptr(l.Description)
	}
	_, err := c.call(ctx, opCreateLabel, token, "GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		_, resp, err = api.Issues.CreateLabel(ctx, owner, repo, label)
		return resp, err
	})
	return writeErr(err)
}

func issueRequest(in ports.SCMIssueInput) *gh.IssueRequest {
	labels := append([]string{}, in.Labels...)
	return &gh.IssueRequest{Title: gh.Ptr(in.Title), Body: gh.Ptr(in.Body), Labels: &labels}
}

func issue(is *gh.Issue) ports.SCMIssue {
	out := ports.SCMIssue{Number: is.GetNumber(), Title: is.GetTitle(), Body: is.GetBody(), State: is.GetState(), HTMLURL: is.GetHTMLURL()}
	for _, l := range is.Labels {
		out.Labels = append(out.Labels, l.GetName())
	}
	return out
}

// writeErr refines the mapped error of a write: GitHub's 422 is invalid,
// or conflict when it says the resource exists already; 403 without a rate
// limit is forbidden.
func writeErr(err error) error {
	e, ok := ports.AsError(err)
	if !ok || e.Kind != ports.KindUpstream {
		return err
	}
	a, ok := answerOf(err)
	if !ok {
		return err
	}
	switch a.status {
	case http.StatusUnprocessableEntity:
		kind := ports.KindInvalid
		if slices.Contains(a.codes, "already_exists") {
			kind = ports.KindConflict
		}
		out := *e
		out.Kind = kind
		return &out
	case http.StatusForbidden:
		out := *e
		out.Kind = ports.KindForbidden
		return &out
	}
	return err
}
