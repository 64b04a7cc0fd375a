package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/amplify"
	amplifytypes "github.com/aws/aws-sdk-go-v2/service/amplify/types"

	"github.com/devpilot/devpilot/ports"
)

// Bounds of build logs.
const (
	amplifyListPage = 100
	maxStepLog      = 64 << 10
	maxBuildLog     = 256 << 10
	logFetchTimeout = 10 * time.Second
	truncatedMarker = "\n[log truncated]"
)

// ListApps returns every Amplify app of the region with its branches'
// names. Errors: as CloudProvider.
func (p *Provider) ListApps(ctx context.Context, c ports.CloudCredentials) ([]ports.App, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	client := amplify.NewFromConfig(s.cfg)
	apps := []ports.App{}
	pages := amplify.NewListAppsPaginator(client, &amplify.ListAppsInput{MaxResults: amplifyListPage})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, nil)
		}
		for _, a := range out.Apps {
			app := ports.App{
				ID:            sdkaws.ToString(a.AppId),
				Name:          sdkaws.ToString(a.Name),
				ARN:           sdkaws.ToString(a.AppArn),
				Platform:      string(a.Platform),
				DefaultDomain: sdkaws.ToString(a.DefaultDomain),
				Repository:    sdkaws.ToString(a.Repository),
				Branches:      []string{},
			}
			if a.UpdateTime != nil {
				app.UpdatedAt = a.UpdateTime.UTC()
			}
			branches := amplify.NewListBranchesPaginator(client, &amplify.ListBranchesInput{AppId: a.AppId, MaxResults: amplifyListPage})
			for branches.HasMorePages() {
				bout, err := branches.NextPage(ctx)
				if err != nil {
					return nil, p.fail(ctx, s, err, resources{"": "app " + app.ID})
				}
				for _, b := range bout.Branches {
					app.Branches = append(app.Branches, sdkaws.ToString(b.BranchName))
				}
			}
			apps = append(apps, app)
		}
	}
	return apps, nil
}

// ListBranches returns an Amplify app's branches with their stages.
// Errors: not_found for a missing app, else as CloudProvider.
func (p *Provider) ListBranches(ctx context.Context, c ports.CloudCredentials, appID string) ([]ports.AppBranch, error) {
	if appID == "" {
		return nil, ports.Invalid("aws: an app id is required")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	out := []ports.AppBranch{}
	pages := amplify.NewListBranchesPaginator(amplify.NewFromConfig(s.cfg), &amplify.ListBranchesInput{AppId: sdkaws.String(appID), MaxResults: amplifyListPage})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, resources{"": "app " + appID})
		}
		for _, b := range page.Branches {
			out = append(out, ports.AppBranch{Name: sdkaws.ToString(b.BranchName), Stage: string(b.Stage)})
		}
	}
	return out, nil
}

// DeployApp starts a release job of an Amplify app's branch. Errors:
// not_found for a missing app or branch, else as CloudProvider.
func (p *Provider) DeployApp(ctx context.Context, c ports.CloudCredentials, appID, branch string) (ports.Build, error) {
	if appID == "" || branch == "" {
		return ports.Build{}, ports.Invalid("aws: an app id and a branch are required")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.Build{}, err
	}
	defer cancel()
	out, err := amplify.NewFromConfig(s.cfg).StartJob(ctx, &amplify.StartJobInput{
		AppId:      sdkaws.String(appID),
		BranchName: sdkaws.String(branch),
		JobType:    amplifytypes.JobTypeRelease,
	})
	if err != nil {
		return ports.Build{}, p.fail(ctx, s, err, resources{"": fmt.Sprintf("branch %s of app %s", branch, appID)})
	}
	b := ports.Build{AppID: appID, Branch: branch, Steps: []ports.BuildStep{}}
	if out.JobSummary != nil {
		b.ID, b.Status = sdkaws.ToString(out.JobSummary.JobId), string(out.JobSummary.Status)
	}
	return b, nil
}

// BuildLogs returns an Amplify job with each step's log, downloaded from the
// step's log URL: at most 64 KiB a step and 256 KiB in all, cut with a
// "[log truncated]" marker. A log that cannot be downloaded reads
// "[log unavailable: ...]" and does not fail the call. Errors: not_found for
// a missing app, branch or job, else as CloudProvider.
func (p *Provider) BuildLogs(ctx context.Context, c ports.CloudCredentials, appID, branch, buildID string) (ports.Build, error) {
	if appID == "" || branch == "" || buildID == "" {
		return ports.Build{}, ports.Invalid("aws: an app id, a branch and a build id are required")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.Build{}, err
	}
	defer cancel()
	out, err := amplify.NewFromConfig(s.cfg).GetJob(ctx, &amplify.GetJobInput{
		AppId: sdkaws.String(appID), BranchName: sdkaws.String(branch), JobId: sdkaws.String(buildID),
	})
	if err != nil {
		return ports.Build{}, p.fail(ctx, s, err, resources{"": fmt.Sprintf("build %s of app %s branch %s", buildID, appID, branch)})
	}
	b := ports.Build{ID: buildID, AppID: appID, Branch: branch, Steps: []ports.BuildStep{}}
	if out.Job == nil {
		return b, nil
	}
	if out.Job.Summary != nil {
		b.Status = string(out.Job.Summary.Status)
	}
	budget := maxBuildLog
	for _, st := range out.Job.Steps {
		step := ports.BuildStep{Name: sdkaws.ToString(st.StepName), Status: string(st.Status)}
		if u := sdkaws.ToString(st.LogUrl); u != "" {
			step.Log, budget = p.stepLog(ctx, u, budget)
		}
		b.Steps = append(b.Steps, step)
	}
	return b, nil
}

// ListBuilds returns a page of an Amplify branch's jobs, newest first.
// Errors: not_found for a missing app or branch, invalid for a bad token,
// else as CloudProvider.
func (p *Provider) ListBuilds(ctx context.Context, c ports.CloudCredentials, appID, branch string, limit int, token string) ([]ports.Build, string, error) {
	if appID == "" || branch == "" || limit < 1 || limit > 50 {
		return nil, "", ports.Invalid("aws: an app id, a branch and a limit of 1 to 50 are required")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, "", err
	}
	defer cancel()
	in := &amplify.ListJobsInput{AppId: sdkaws.String(appID), BranchName: sdkaws.String(branch), MaxResults: int32(limit)}
	if token != "" {
		in.NextToken = sdkaws.String(token)
	}
	out, err := amplify.NewFromConfig(s.cfg).ListJobs(ctx, in)
	if err != nil {
		return nil, "", p.fail(ctx, s, err, resources{"": fmt.Sprintf("branch %s of app %s", branch, appID)})
	}
	builds := make([]ports.Build, 0, len(out.JobSummaries))
	for _, j := range out.JobSummaries {
		builds = append(builds, ports.Build{
			ID: sdkaws.ToString(j.JobId), AppID: appID, Branch: branch, Status: string(j.Status), Steps: []ports.BuildStep{},
			CommitID: sdkaws.ToString(j.CommitId), CommitMessage: ports.Line(sdkaws.ToString(j.CommitMessage), 500),
			JobType: string(j.JobType), StartedAt: sdkaws.ToTime(j.StartTime).UTC(), EndedAt: sdkaws.ToTime(j.EndTime).UTC(),
		})
	}
	return builds, sdkaws.ToString(out.NextToken), nil
}

// stepLog downloads a step's log within the remaining budget and returns it
// with what is left of the budget. The URL is presigned, so it is never
// quoted: it carries credentials.
func (p *Provider) stepLog(ctx context.Context, url string, budget int) (string, int) {
	limit := min(maxStepLog, budget)
	if limit <= 0 {
		return truncatedMarker[1:], budget
	}
	ctx, cancel := context.WithTimeout(ctx, logFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "[log unavailable: malformed log URL]", budget
	}
	resp, err := p.httpClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "[log unavailable: the download timed out]", budget
		}
		return "[log unavailable: the download failed]", budget
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("[log unavailable: HTTP %d]", resp.StatusCode), budget
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return "[log unavailable: the download failed]", budget
	}
	truncated := len(data) > limit
	if truncated {
		data = data[:limit]
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size > 1 {
				break
			}
			data = data[:len(data)-1]
		}
	}
	text := string(data)
	budget -= len(data)
	if truncated {
		text += truncatedMarker
	}
	return text, budget
}
