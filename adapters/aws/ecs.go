package aws

import (
	"context"
	"fmt"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	ecstypes "github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/devpilot/devpilot/ports"
)

// ECS limits on one request.
const (
	ecsListPage              = 100
	ecsDescribeClustersBatch = 100
	ecsDescribeServicesBatch = 10
)

// ListClusters returns every ECS cluster of the region with its counts.
// Errors: as CloudProvider.
func (p *Provider) ListClusters(ctx context.Context, c ports.CloudCredentials) ([]ports.Cluster, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	client := ecs.NewFromConfig(s.cfg)
	var arns []string
	pages := ecs.NewListClustersPaginator(client, &ecs.ListClustersInput{MaxResults: sdkaws.Int32(ecsListPage)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, nil)
		}
		arns = append(arns, out.ClusterArns...)
	}
	clusters := make([]ports.Cluster, 0, len(arns))
	for batch := range batches(arns, ecsDescribeClustersBatch) {
		out, err := client.DescribeClusters(ctx, &ecs.DescribeClustersInput{Clusters: batch})
		if err != nil {
			return nil, p.fail(ctx, s, err, nil)
		}
		for _, cl := range out.Clusters {
			clusters = append(clusters, ports.Cluster{
				Name:           sdkaws.ToString(cl.ClusterName),
				ARN:            sdkaws.ToString(cl.ClusterArn),
				Status:         sdkaws.ToString(cl.Status),
				ActiveServices: int(cl.ActiveServicesCount),
				RunningTasks:   int(cl.RunningTasksCount),
				PendingTasks:   int(cl.PendingTasksCount),
			})
		}
	}
	return clusters, nil
}

// ListServices returns every service of an ECS cluster with its
// deployments. Errors: not_found for a missing cluster, else as
// CloudProvider.
func (p *Provider) ListServices(ctx context.Context, c ports.CloudCredentials, cluster string) ([]ports.ContainerService, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	res := resources{"": "cluster " + cluster}
	client := ecs.NewFromConfig(s.cfg)
	var arns []string
	pages := ecs.NewListServicesPaginator(client, &ecs.ListServicesInput{Cluster: sdkaws.String(cluster), MaxResults: sdkaws.Int32(ecsListPage)})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.fail(ctx, s, err, res)
		}
		arns = append(arns, out.ServiceArns...)
	}
	services := make([]ports.ContainerService, 0, len(arns))
	for batch := range batches(arns, ecsDescribeServicesBatch) {
		out, err := client.DescribeServices(ctx, &ecs.DescribeServicesInput{Cluster: sdkaws.String(cluster), Services: batch})
		if err != nil {
			return nil, p.fail(ctx, s, err, res)
		}
		for _, svc := range out.Services {
			services = append(services, containerService(svc, cluster))
		}
	}
	for i := range services {
		if services[i].Running >= services[i].Desired {
			continue
		}
		stopped, err := stoppedTasks(ctx, client, cluster, services[i].Name)
		if err != nil {
			return nil, p.fail(ctx, s, err, res)
		}
		services[i].StoppedTasks = stopped
	}
	return services, nil
}

// stoppedTasks returns up to ports.MaxStoppedTasks recently stopped tasks
// of a service, newest first, with why they stopped.
func stoppedTasks(ctx context.Context, client *ecs.Client, cluster, service string) ([]ports.StoppedTask, error) {
	list, err := client.ListTasks(ctx, &ecs.ListTasksInput{Cluster: sdkaws.String(cluster), ServiceName: sdkaws.String(service),
		DesiredStatus: ecstypes.DesiredStatusStopped, MaxResults: sdkaws.Int32(ports.MaxStoppedTasks)})
	if err != nil {
		return nil, err
	}
	if len(list.TaskArns) == 0 {
		return nil, nil
	}
	out, err := client.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: sdkaws.String(cluster), Tasks: list.TaskArns})
	if err != nil {
		return nil, err
	}
	tasks := make([]ports.StoppedTask, 0, len(out.Tasks))
	for _, t := range out.Tasks {
		arn := sdkaws.ToString(t.TaskArn)
		st := ports.StoppedTask{ARN: arn, TaskID: arn[strings.LastIndex(arn, "/")+1:], LastStatus: sdkaws.ToString(t.LastStatus),
			StopCode: string(t.StopCode), StoppedReason: ports.Line(sdkaws.ToString(t.StoppedReason), 500),
			StoppedAt: sdkaws.ToTime(t.StoppedAt).UTC(), ContainerReasons: []string{}}
		for _, ct := range t.Containers {
			why := sdkaws.ToString(ct.Name) + ":"
			if ct.ExitCode != nil {
				why += fmt.Sprintf(" exit %d", *ct.ExitCode)
			}
			if r := sdkaws.ToString(ct.Reason); r != "" {
				why += " (" + ports.Line(r, 300) + ")"
			}
			if why != sdkaws.ToString(ct.Name)+":" {
				st.ContainerReasons = append(st.ContainerReasons, why)
			}
		}
		tasks = append(tasks, st)
	}
	slices.SortStableFunc(tasks, func(a, b ports.StoppedTask) int { return b.StoppedAt.Compare(a.StoppedAt) })
	return tasks, nil
}

// DeployService forces a new deployment of an ECS service and returns the
// new primary deployment: its id, and its rollout state (IN_PROGRESS) as
// the status, or the deployment status when ECS reports no rollout state.
// Errors: not_found for a missing cluster or service, else as CloudProvider.
func (p *Provider) DeployService(ctx context.Context, c ports.CloudCredentials, cluster, service string) (ports.Deployment, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.Deployment{}, err
	}
	defer cancel()
	out, err := ecs.NewFromConfig(s.cfg).UpdateService(ctx, &ecs.UpdateServiceInput{
		Cluster:            sdkaws.String(cluster),
		Service:            sdkaws.String(service),
		ForceNewDeployment: true,
	})
	if err != nil {
		return ports.Deployment{}, p.fail(ctx, s, err, serviceResources(cluster, service))
	}
	if out.Service != nil {
		for _, d := range out.Service.Deployments {
			if sdkaws.ToString(d.Status) != "PRIMARY" {
				continue
			}
			status := string(d.RolloutState)
			if status == "" {
				status = sdkaws.ToString(d.Status)
			}
			return ports.Deployment{ID: sdkaws.ToString(d.Id), Status: status}, nil
		}
	}
	return ports.Deployment{}, ports.Errorf(ports.KindUpstream, "aws: ECS reported no primary deployment of service %s", service)
}

// ScaleService sets an ECS service's desired count and returns the service.
// Errors: invalid for a negative count, not_found for a missing cluster or
// service, else as CloudProvider.
func (p *Provider) ScaleService(ctx context.Context, c ports.CloudCredentials, cluster, service string, desired int) (ports.ContainerService, error) {
	if desired < 0 || desired > 1<<31-1 {
		return ports.ContainerService{}, ports.Invalid("aws: the desired count must be between 0 and 2147483647",
			ports.FieldError{Field: "desired_count", Reason: "out_of_range"})
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.ContainerService{}, err
	}
	defer cancel()
	out, err := ecs.NewFromConfig(s.cfg).UpdateService(ctx, &ecs.UpdateServiceInput{
		Cluster:      sdkaws.String(cluster),
		Service:      sdkaws.String(service),
		DesiredCount: sdkaws.Int32(int32(desired)),
	})
	if err != nil {
		return ports.ContainerService{}, p.fail(ctx, s, err, serviceResources(cluster, service))
	}
	if out.Service == nil {
		return ports.ContainerService{}, ports.Errorf(ports.KindUpstream, "aws: ECS returned no service")
	}
	return containerService(*out.Service, cluster), nil
}

// ServiceLogs returns the newest log events of an ECS service, read with
// CloudWatch Logs from the awslogs configuration of the first container of
// its task definition that has one. Errors: not_found for a missing
// cluster, service or log group; invalid when no container logs with
// awslogs; else as CloudProvider.
func (p *Provider) ServiceLogs(ctx context.Context, c ports.CloudCredentials, cluster, service string, q ports.LogQuery) ([]ports.LogEvent, error) {
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cancel()
	res := serviceResources(cluster, service)
	client := ecs.NewFromConfig(s.cfg)
	out, err := client.DescribeServices(ctx, &ecs.DescribeServicesInput{Cluster: sdkaws.String(cluster), Services: []string{service}})
	if err != nil {
		return nil, p.fail(ctx, s, err, res)
	}
	if len(out.Services) == 0 || out.Services[0].TaskDefinition == nil {
		return nil, ports.NotFound("service", service+" in cluster "+cluster)
	}
	taskDef := sdkaws.ToString(out.Services[0].TaskDefinition)
	td, err := client.DescribeTaskDefinition(ctx, &ecs.DescribeTaskDefinitionInput{TaskDefinition: sdkaws.String(taskDef)})
	if err != nil {
		return nil, p.fail(ctx, s, err, resources{"": "task definition " + taskDef})
	}
	var group, prefix, region string
	if td.TaskDefinition != nil {
		for _, ct := range td.TaskDefinition.ContainerDefinitions {
			lc := ct.LogConfiguration
			if lc == nil || lc.LogDriver != ecstypes.LogDriverAwslogs || lc.Options["awslogs-group"] == "" {
				continue
			}
			group, prefix, region = lc.Options["awslogs-group"], lc.Options["awslogs-stream-prefix"], lc.Options["awslogs-region"]
			break
		}
	}
	if group == "" {
		return nil, ports.Invalid(fmt.Sprintf("aws: service %s has no awslogs log configuration in task definition %s", service, taskDef))
	}
	if prefix != "" {
		prefix += "/"
	}
	return p.filterLogs(ctx, s, region, group, prefix, q)
}

func serviceResources(cluster, service string) resources {
	return resources{
		"ClusterNotFoundException": "cluster " + cluster,
		"ServiceNotFoundException": "service " + service + " in cluster " + cluster,
		"":                         "service " + service + " in cluster " + cluster,
	}
}

func containerService(svc ecstypes.Service, cluster string) ports.ContainerService {
	if arn := sdkaws.ToString(svc.ClusterArn); arn != "" {
		if _, name, ok := strings.Cut(arn, ":cluster/"); ok {
			cluster = name
		}
	}
	out := ports.ContainerService{
		Name:           sdkaws.ToString(svc.ServiceName),
		ARN:            sdkaws.ToString(svc.ServiceArn),
		Cluster:        cluster,
		Status:         sdkaws.ToString(svc.Status),
		TaskDefinition: sdkaws.ToString(svc.TaskDefinition),
		Desired:        int(svc.DesiredCount),
		Running:        int(svc.RunningCount),
		Pending:        int(svc.PendingCount),
		Deployments:    make([]ports.ServiceDeployment, 0, len(svc.Deployments)),
	}
	for _, e := range svc.Events[:min(len(svc.Events), ports.MaxServiceEvents)] {
		out.Events = append(out.Events, ports.ServiceEvent{ID: sdkaws.ToString(e.Id), CreatedAt: sdkaws.ToTime(e.CreatedAt).UTC(),
			Message: ports.Line(sdkaws.ToString(e.Message), 1000)})
	}
	for _, d := range svc.Deployments {
		out.Deployments = append(out.Deployments, ports.ServiceDeployment{
			ID:             sdkaws.ToString(d.Id),
			Status:         sdkaws.ToString(d.Status),
			RolloutState:   string(d.RolloutState),
			TaskDefinition: sdkaws.ToString(d.TaskDefinition),
			Desired:        int(d.DesiredCount),
			Running:        int(d.RunningCount),
			Pending:        int(d.PendingCount),
			CreatedAt:      sdkaws.ToTime(d.CreatedAt).UTC(),
		})
	}
	return out
}

// batches yields xs in consecutive slices of at most n.
func batches(xs []string, n int) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for len(xs) > 0 {
			k := min(n, len(xs))
			if !yield(xs[:k:k]) {
				return
			}
			xs = xs[k:]
		}
	}
}
