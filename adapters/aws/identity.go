package aws

import (
	"context"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/devpilot/devpilot/ports"
)

// CallerIdentity returns who c authenticates as (STS GetCallerIdentity): for
// an assumed role, the role session.
func (p *Provider) CallerIdentity(ctx context.Context, c ports.CloudCredentials) (ports.CallerIdentity, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.CallerIdentity{}, err
	}
	defer cancel()
	out, err := sts.NewFromConfig(s.cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return ports.CallerIdentity{}, p.fail(ctx, s, err, nil)
	}
	return ports.CallerIdentity{
		Account: sdkaws.ToString(out.Account),
		ARN:     sdkaws.ToString(out.Arn),
		UserID:  sdkaws.ToString(out.UserId),
	}, nil
}

// Probe lists at most one ECS cluster: a free read that proves the
// credentials work in the region.
func (p *Provider) Probe(ctx context.Context, c ports.CloudCredentials) error {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := ecs.NewFromConfig(s.cfg).ListClusters(ctx, &ecs.ListClustersInput{MaxResults: sdkaws.Int32(1)}); err != nil {
		return p.fail(ctx, s, err, nil)
	}
	return nil
}
