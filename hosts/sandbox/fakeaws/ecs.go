package fakeaws

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

func ecsClusterARN(rq *request, name string) string {
	return fmt.Sprintf("arn:aws:ecs:%s:%s:cluster/%s", rq.region, rq.account().id, name)
}

func ecsServiceARN(rq *request, cluster, name string) string {
	return fmt.Sprintf("arn:aws:ecs:%s:%s:service/%s/%s", rq.region, rq.account().id, cluster, name)
}

func ecsTaskDefARN(rq *request, td string) string {
	if strings.HasPrefix(td, "arn:") || td == "" {
		return td
	}
	return fmt.Sprintf("arn:aws:ecs:%s:%s:task-definition/%s", rq.region, rq.account().id, td)
}

// lastSegment is what follows the last '/' of an ARN, or s itself.
func lastSegment(s string) string {
	if strings.HasPrefix(s, "arn:") {
		return s[strings.LastIndex(s, "/")+1:]
	}
	return s
}

// ecsCluster finds the cluster a request names (by name or ARN; "default"
// when absent). The caller holds the lock.
func ecsCluster(rq *request) (*cluster, *apiError) {
	name := str(rq.input, "cluster")
	if name == "" {
		name = "default"
	}
	c := rq.account().clusters[lastSegment(name)]
	if c == nil {
		return nil, errf(http.StatusBadRequest, "ClusterNotFoundException", "Cluster not found.")
	}
	return c, nil
}

func ecsClusterJSON(rq *request, c *cluster) map[string]any {
	var active, running, pending int
	for _, svc := range c.services {
		if svc.Status == "ACTIVE" {
			active++
		}
		running += svc.Running
		pending += svc.Pending
	}
	return map[string]any{
		"clusterArn":                        ecsClusterARN(rq, c.name),
		"clusterName":                       c.name,
		"status":                            "ACTIVE",
		"registeredContainerInstancesCount": 0,
		"runningTasksCount":                 running,
		"pendingTasksCount":                 pending,
		"activeServicesCount":               active,
		"statistics":                        []any{},
		"tags":                              []any{},
		"settings":                          []any{map[string]any{"name": "containerInsights", "value": "disabled"}},
		"capacityProviders":                 []any{"FARGATE", "FARGATE_SPOT"},
		"defaultCapacityProviderStrategy":   []any{},
	}
}

func ecsServiceJSON(rq *request, c *cluster, svc *Service) map[string]any {
	deployments := make([]any, 0, len(svc.Deployments))
	for _, d := range svc.Deployments {
		deployments = append(deployments, map[string]any{
			"id":                 d.ID,
			"status":             d.Status,
			"taskDefinition":     ecsTaskDefARN(rq, d.TaskDefinition),
			"desiredCount":       d.Desired,
			"pendingCount":       d.Pending,
			"runningCount":       d.Running,
			"failedTasks":        0,
			"createdAt":          epochSeconds(d.CreatedAt),
			"updatedAt":          epochSeconds(d.CreatedAt),
			"launchType":         "FARGATE",
			"platformVersion":    "1.4.0",
			"platformFamily":     "Linux",
			"rolloutState":       d.RolloutState,
			"rolloutStateReason": "ECS deployment " + d.ID + " " + strings.ToLower(d.RolloutState) + ".",
		})
	}
	return map[string]any{
		"serviceArn":        ecsServiceARN(rq, c.name, svc.Name),
		"serviceName":       svc.Name,
		"clusterArn":        ecsClusterARN(rq, c.name),
		"loadBalancers":     []any{},
		"serviceRegistries": []any{},
		"status":            svc.Status,
		"desiredCount":      svc.Desired,
		"runningCount":      svc.Running,
		"pendingCount":      svc.Pending,
		"launchType":        "FARGATE",
		"platformVersion":   "LATEST",
		"platformFamily":    "Linux",
		"taskDefinition":    ecsTaskDefARN(rq, svc.TaskDefinition),
		"deploymentConfiguration": map[string]any{
			"deploymentCircuitBreaker": map[string]any{"enable": false, "rollback": false},
			"maximumPercent":           200,
			"minimumHealthyPercent":    100,
		},
		"deployments":          deployments,
		"events":               ecsEventsJSON(svc),
		"createdAt":            epochSeconds(seedTime),
		"placementConstraints": []any{},
		"placementStrategy":    []any{},
		"schedulingStrategy":   "REPLICA",
		"deploymentController": map[string]any{"type": "ECS"},
		"enableECSManagedTags": false,
		"propagateTags":        "NONE",
		"enableExecuteCommand": false,
	}
}

func ecsListClusters(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 100 {
		return nil, invalidParameter("maxResults must be between 1 and 100")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	clusters := rq.account().sortedClusters()
	start, end, next, aerr := rq.s.page("ListClusters", str(rq.input, "nextToken"), len(clusters), int(limit), 100)
	if aerr != nil {
		return nil, aerr
	}
	arns := []string{}
	for _, c := range clusters[start:end] {
		arns = append(arns, ecsClusterARN(rq, c.name))
	}
	out := map[string]any{"clusterArns": arns}
	if next != "" {
		out["nextToken"] = next
	}
	return &reply{body: out}, nil
}

func ecsDescribeClusters(rq *request) (*reply, *apiError) {
	names, aerr := strList(rq.input, "clusters")
	if aerr != nil {
		return nil, aerr
	}
	if len(names) > 100 {
		return nil, invalidParameter("clusters can have at most 100 items.")
	}
	if len(names) == 0 {
		names = []string{"default"}
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	clusters, failures := []any{}, []any{}
	for _, n := range names {
		if c := rq.account().clusters[lastSegment(n)]; c != nil {
			clusters = append(clusters, ecsClusterJSON(rq, c))
		} else {
			failures = append(failures, map[string]any{"arn": n, "reason": "MISSING"})
		}
	}
	return &reply{body: map[string]any{"clusters": clusters, "failures": failures}}, nil
}

func ecsListServices(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 100 {
		return nil, invalidParameter("maxResults must be between 1 and 100")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	c, aerr := ecsCluster(rq)
	if aerr != nil {
		return nil, aerr
	}
	services := c.sortedServices()
	start, end, next, aerr := rq.s.page("ListServices", str(rq.input, "nextToken"), len(services), int(limit), 10)
	if aerr != nil {
		return nil, aerr
	}
	arns := []string{}
	for _, svc := range services[start:end] {
		arns = append(arns, ecsServiceARN(rq, c.name, svc.Name))
	}
	out := map[string]any{"serviceArns": arns}
	if next != "" {
		out["nextToken"] = next
	}
	return &reply{body: out}, nil
}

func ecsDescribeServices(rq *request) (*reply, *apiError) {
	names, aerr := strList(rq.input, "services")
	if aerr != nil {
		return nil, aerr
	}
	if len(names) == 0 || len(names) > 10 {
		return nil, invalidParameter("services must have between 1 and 10 items.")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	c, aerr := ecsCluster(rq)
	if aerr != nil {
		return nil, aerr
	}
	services, failures := []any{}, []any{}
	for _, n := range names {
		if svc := c.services[lastSegment(n)]; svc != nil {
			services = append(services, ecsServiceJSON(rq, c, svc))
		} else {
			failures = append(failures, map[string]any{"arn": n, "reason": "MISSING"})
		}
	}
	return &reply{body: map[string]any{"services": services, "failures": failures}}, nil
}

func ecsUpdateService(rq *request) (*reply, *apiError) {
	s := rq.s
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := ecsCluster(rq)
	if aerr != nil {
		return nil, aerr
	}
	svc := c.services[lastSegment(str(rq.input, "service"))]
	if svc == nil {
		return nil, errf(http.StatusBadRequest, "ServiceNotFoundException", "Service not found.")
	}
	if svc.Status != "ACTIVE" {
		return nil, errf(http.StatusBadRequest, "ServiceNotActiveException", "Service was not ACTIVE.")
	}
	desired, setDesired, aerr := num(rq.input, "desiredCount")
	if aerr != nil {
		return nil, aerr
	}
	if setDesired && desired < 0 {
		return nil, invalidParameter("desiredCount must be at least 0")
	}
	if setDesired {
		svc.Desired = int(desired)
		for i := range svc.Deployments {
			if svc.Deployments[i].Status == "PRIMARY" {
				svc.Deployments[i].Desired = svc.Desired
			}
		}
	}
	if force, _ := rq.input["forceNewDeployment"].(bool); force {
		for i := range svc.Deployments {
			if svc.Deployments[i].Status == "PRIMARY" {
				svc.Deployments[i].Status = "ACTIVE"
			}
		}
		s.seq++
		svc.Deployments = append([]Deployment{{
			ID: fmt.Sprintf("ecs-svc/%019d", s.seq), Status: "PRIMARY", RolloutState: "IN_PROGRESS",
			TaskDefinition: svc.TaskDefinition, Desired: svc.Desired, CreatedAt: time.Now().UTC(),
		}}, svc.Deployments...)
	}
	return &reply{body: map[string]any{"service": ecsServiceJSON(rq, c, svc)}}, nil
}

func ecsDescribeTaskDefinition(rq *request) (*reply, *apiError) {
	ref := lastSegment(str(rq.input, "taskDefinition"))
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	acct := rq.account()
	td := acct.taskDefs[ref]
	if td == nil && !strings.Contains(ref, ":") {
		for _, cand := range acct.taskDefs {
			if cand.Family == ref && (td == nil || cand.Revision > td.Revision) {
				td = cand
			}
		}
	}
	if td == nil {
		return nil, errf(http.StatusBadRequest, "ClientException", "Unable to describe task definition.")
	}
	containers := []any{}
	for _, ct := range td.Containers {
		def := map[string]any{
			"name": ct.Name, "image": ct.Image, "cpu": 0, "essential": true,
			"portMappings": []any{}, "environment": []any{}, "mountPoints": []any{}, "volumesFrom": []any{},
		}
		if lc := ct.LogConfiguration; lc != nil {
			opts := map[string]string{}
			for k, v := range lc.Options {
				opts[k] = v
			}
			def["logConfiguration"] = map[string]any{"logDriver": lc.LogDriver, "options": opts, "secretOptions": []any{}}
		}
		containers = append(containers, def)
	}
	family := fmt.Sprintf("%s:%d", td.Family, td.Revision)
	return &reply{body: map[string]any{"taskDefinition": map[string]any{
		"taskDefinitionArn":    ecsTaskDefARN(rq, family),
		"containerDefinitions": containers,
		"family":               td.Family,
		"revision":             td.Revision,
		"volumes":              []any{},
		"status":               "ACTIVE",
		"requiresAttributes":   []any{},
		"placementConstraints": []any{},
		"compatibilities":      []any{"EC2", "FARGATE"},
		"registeredAt":         epochSeconds(seedTime),
	}}}, nil
}

func ecsEventsJSON(svc *Service) []any {
	out := []any{}
	for _, e := range svc.Events {
		out = append(out, map[string]any{"id": e.ID, "createdAt": epochSeconds(e.CreatedAt), "message": e.Message})
	}
	return out
}

func ecsTaskARN(rq *request, cluster, id string) string {
	return fmt.Sprintf("arn:aws:ecs:%s:%s:task/%s/%s", rq.region, rq.account().id, cluster, id)
}

// ecsListTasks lists a cluster's tasks: only stopped tasks of services are
// kept, so a request for another desiredStatus lists none.
func ecsListTasks(rq *request) (*reply, *apiError) {
	limit, _, aerr := num(rq.input, "maxResults")
	if aerr != nil {
		return nil, aerr
	}
	if limit < 0 || limit > 100 {
		return nil, invalidParameter("maxResults must be between 1 and 100")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	c, aerr := ecsCluster(rq)
	if aerr != nil {
		return nil, aerr
	}
	var tasks []StoppedTask
	if str(rq.input, "desiredStatus") == "STOPPED" {
		name := lastSegment(str(rq.input, "serviceName"))
		for _, svc := range c.sortedServices() {
			if name == "" || svc.Name == name {
				tasks = append(tasks, svc.StoppedTasks...)
			}
		}
	}
	start, end, next, aerr := rq.s.page("ListTasks", str(rq.input, "nextToken"), len(tasks), int(limit), 100)
	if aerr != nil {
		return nil, aerr
	}
	arns := []string{}
	for _, t := range tasks[start:end] {
		arns = append(arns, ecsTaskARN(rq, c.name, t.ID))
	}
	out := map[string]any{"taskArns": arns}
	if next != "" {
		out["nextToken"] = next
	}
	return &reply{body: out}, nil
}

func ecsDescribeTasks(rq *request) (*reply, *apiError) {
	names, aerr := strList(rq.input, "tasks")
	if aerr != nil {
		return nil, aerr
	}
	if len(names) == 0 || len(names) > 100 {
		return nil, invalidParameter("tasks must have between 1 and 100 items.")
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	c, aerr := ecsCluster(rq)
	if aerr != nil {
		return nil, aerr
	}
	byID := map[string]StoppedTask{}
	group := map[string]string{}
	for _, svc := range c.services {
		for _, t := range svc.StoppedTasks {
			byID[t.ID] = t
			group[t.ID] = "service:" + svc.Name
		}
	}
	tasks, failures := []any{}, []any{}
	for _, n := range names {
		t, ok := byID[lastSegment(n)]
		if !ok {
			failures = append(failures, map[string]any{"arn": n, "reason": "MISSING"})
			continue
		}
		arn := ecsTaskARN(rq, c.name, t.ID)
		ct := map[string]any{"name": t.Container, "taskArn": arn, "lastStatus": "STOPPED"}
		if t.ExitCode != nil {
			ct["exitCode"] = *t.ExitCode
		}
		if t.Reason != "" {
			ct["reason"] = t.Reason
		}
		tasks = append(tasks, map[string]any{
			"taskArn": arn, "clusterArn": ecsClusterARN(rq, c.name), "group": group[t.ID],
			"lastStatus": "STOPPED", "desiredStatus": "STOPPED", "launchType": "FARGATE",
			"stopCode": t.StopCode, "stoppedReason": t.StoppedReason,
			"stoppedAt": epochSeconds(t.StoppedAt), "createdAt": epochSeconds(t.StoppedAt.Add(-time.Minute)),
			"containers": []any{ct},
		})
	}
	return &reply{body: map[string]any{"tasks": tasks, "failures": failures}}, nil
}
