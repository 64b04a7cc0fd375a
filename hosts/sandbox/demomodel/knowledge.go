package demomodel

import (
	"fmt"
	"slices"
	"strings"
)

// knowledge is what the tool results of a conversation tell about the
// user's resources: the ids and names later calls need. A later listing
// replaces what an earlier one said.
type knowledge struct {
	accounts []account
	clusters []cluster
	services []service
	repos    []repo
	briefs   []brief
	sessions []specSession
}

type account struct {
	ID, Name, Region, Status string
	ReadOnly                 bool
}

type cluster struct {
	Account, Name, Status      string
	Services, Running, Pending int
}

type service struct {
	Account, Cluster, Name, Status string
	Desired, Running, Pending      int
}

type repo struct{ ID, FullName, Description string }

type brief struct{ ID, ProjectID, Title, Format, Channel string }

type specSession struct{ ID, Name, Status, Current, Next string }

func learn(results []result) knowledge {
	var k knowledge
	for _, r := range results {
		if !r.ok {
			continue
		}
		obj, _ := r.value.(map[string]any)
		switch r.call.Name {
		case toolListAccounts:
			for _, it := range items(r.value) {
				a := account{ID: str(it, "id"), Name: str(it, "name"), Region: str(it, "region"), Status: str(it, "status"), ReadOnly: it["read_only"] == true}
				if a.ID != "" {
					k.accounts = upsert(k.accounts, a, func(x account) bool { return x.ID == a.ID })
				}
			}
		case toolListClusters:
			acct := str(r.args, "account_id")
			k.clusters = slices.DeleteFunc(k.clusters, func(x cluster) bool { return x.Account == acct })
			for _, it := range items(r.value) {
				if name := str(it, "name"); name != "" {
					k.clusters = append(k.clusters, cluster{Account: acct, Name: name, Status: str(it, "status"),
						Services: num(it, "active_services"), Running: num(it, "running_tasks"), Pending: num(it, "pending_tasks")})
				}
			}
		case toolListServices:
			acct, cl := str(r.args, "account_id"), str(r.args, "cluster")
			k.services = slices.DeleteFunc(k.services, func(x service) bool { return x.Account == acct && x.Cluster == cl })
			for _, it := range items(r.value) {
				if s := serviceOf(acct, cl, it); s.Name != "" {
					k.services = append(k.services, s)
				}
			}
		case toolScaleService, toolDeployService:
			if s := serviceOf(str(r.args, "account_id"), str(r.args, "cluster"), obj); s.Name != "" {
				k.services = upsert(k.services, s, func(x service) bool { return x.Account == s.Account && x.Cluster == s.Cluster && x.Name == s.Name })
			}
		case toolListRepos:
			for _, it := range items(r.value) {
				rp := repo{ID: str(it, "id"), FullName: str(it, "full_name"), Description: str(it, "description")}
				if rp.ID != "" {
					k.repos = upsert(k.repos, rp, func(x repo) bool { return x.ID == rp.ID })
				}
			}
		case toolListBriefs, toolCreateBrief:
			list := items(r.value)
			if r.call.Name == toolCreateBrief && obj != nil {
				list = []map[string]any{obj}
			}
			for _, it := range list {
				b := brief{ID: str(it, "id"), ProjectID: str(it, "project_id"), Title: str(it, "title"), Format: str(it, "format"), Channel: str(it, "channel")}
				if b.ID != "" {
					k.briefs = upsert(k.briefs, b, func(x brief) bool { return x.ID == b.ID })
				}
			}
		case toolListSpecs, toolGetSpec:
			list := items(r.value)
			if r.call.Name == toolGetSpec && obj != nil {
				list = []map[string]any{obj}
			}
			for _, it := range list {
				s := specSession{ID: str(it, "id"), Name: str(it, "name"), Status: str(it, "status"), Current: str(it, "current_stage"), Next: str(it, "next_stage")}
				if s.ID != "" {
					k.sessions = upsert(k.sessions, s, func(x specSession) bool { return x.ID == s.ID })
				}
			}
		}
	}
	return k
}

func serviceOf(acct, cl string, it map[string]any) service {
	if it == nil {
		return service{}
	}
	return service{Account: acct, Cluster: cl, Name: str(it, "name"), Status: str(it, "status"),
		Desired: num(it, "desired"), Running: num(it, "running"), Pending: num(it, "pending")}
}

// upsert replaces the element same finds with v, or appends v.
func upsert[T any](list []T, v T, same func(T) bool) []T {
	if i := slices.IndexFunc(list, same); i >= 0 {
		list[i] = v
		return list
	}
	return append(list, v)
}

func (k knowledge) clustersOf(acct string) []cluster {
	var out []cluster
	for _, c := range k.clusters {
		if c.Account == acct {
			out = append(out, c)
		}
	}
	return out
}

func (k knowledge) servicesOf(acct, cl string) []service {
	var out []service
	for _, s := range k.services {
		if s.Account == acct && s.Cluster == cl {
			out = append(out, s)
		}
	}
	return out
}

// items is the "items" list of a listing result.
func items(v any) []map[string]any {
	obj, _ := v.(map[string]any)
	list, _ := obj["items"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, it := range list {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// str is a field of a JSON object as text ("" when absent or null).
func str(m map[string]any, key string) string {
	switch v := m[key].(type) {
	case string:
		return v
	case nil:
		return ""
	case float64:
		return fmt.Sprint(v)
	case bool:
		return fmt.Sprint(v)
	}
	return ""
}

func num(m map[string]any, key string) int {
	switch v := m[key].(type) {
	case float64:
		return int(v)
	case string:
		var n int
		_, _ = fmt.Sscan(v, &n)
		return n
	}
	return 0
}

func strs(m map[string]any, key string) []string {
	list, _ := m[key].([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
