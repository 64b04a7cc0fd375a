package demomodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxListed bounds the items a summary lists one by one.
const maxListed = 8

func marshal(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

// failureText answers tool results of the last round that failed: a
// rejected or expired approval, or an error. It is "" when none failed.
func failureText(c *conversation) string {
	var failed, fine []string
	for _, r := range c.lastRound {
		if r.ok {
			if s := summarise(r); s != "" {
				fine = append(fine, s)
			}
			continue
		}
		what := describe(r)
		lower := strings.ToLower(r.err)
		switch {
		case strings.Contains(lower, "rejected"):
			failed = append(failed, fmt.Sprintf("OK, I did not go ahead with %s, as you rejected it.", what))
		case strings.Contains(lower, "expired"):
			failed = append(failed, fmt.Sprintf("%s did not run: the approval expired. Ask me again if you still want it.", capitalise(what)))
		case strings.Contains(lower, "awaiting"):
			failed = append(failed, fmt.Sprintf("%s is waiting for your approval.", capitalise(what)))
		default:
			msg := strings.TrimRight(oneLine(r.err), ".")
			if msg == "" {
				msg = "no reason was given"
			}
			failed = append(failed, fmt.Sprintf("%s failed: %s.", capitalise(what), msg))
		}
	}
	if len(failed) == 0 {
		return ""
	}
	return strings.Join(append(failed, fine...), "\n\n")
}

// describe names what a call was doing, for a sentence.
func describe(r result) string {
	a := r.args
	switch r.call.Name {
	case toolScaleService:
		n := num(a, "desired_count")
		return fmt.Sprintf("scaling %s to %d %s", cmpOr(str(a, "service"), "the service"), n, plural(n, "task"))
	case toolDeployService:
		return "deploying " + cmpOr(str(a, "service"), "the service")
	case toolCreateBrief:
		return fmt.Sprintf("creating the brief %q", str(a, "title"))
	case toolGenerateDraft:
		return "writing the draft"
	case toolGenerateStage:
		if st := str(a, "stage"); st != "" {
			return "generating the " + st + " stage"
		}
		return "generating the next specification stage"
	case "":
		return "the tool call"
	}
	return "the " + r.call.Name + " call"
}

// report summarises the successful results of this turn's calls of the
// tools named (of every tool when none is named), each call once.
func report(c *conversation, names ...string) string {
	var parts []string
	seen := map[string]bool{}
	results := c.turnResults()
	for i := len(results) - 1; i >= 0; i-- {
		r := results[i]
		if !r.ok || (len(names) > 0 && !slices.Contains(names, r.call.Name)) {
			continue
		}
		key, _ := marshal([]any{r.call.Name, r.args})
		if seen[key] {
			continue
		}
		seen[key] = true
		if s := summarise(r); s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "Done."
	}
	slices.Reverse(parts)
	return strings.Join(parts, "\n\n")
}

// summarise says what one successful result holds, in a few lines.
func summarise(r result) string {
	obj, _ := r.value.(map[string]any)
	list := items(r.value)
	switch r.call.Name {
	case toolListAccounts:
		if len(list) == 0 {
			return noAccounts
		}
		return bullets(fmt.Sprintf("You have %s:", count(len(list), "cloud account")), list, func(it map[string]any) string {
			extra := []string{str(it, "region")}
			if it["read_only"] == true {
				extra = append(extra, "read-only")
			}
			if s := str(it, "status"); s != "" {
				extra = append(extra, "connection "+s)
			}
			return fmt.Sprintf("**%s** (%s)", cmpOr(str(it, "name"), str(it, "id")), strings.Join(nonEmpty(extra), ", "))
		})
	case toolListClusters:
		if len(list) == 0 {
			return "There is no ECS cluster in this account."
		}
		return bullets(fmt.Sprintf("There %s %s:", isAre(len(list)), count(len(list), "ECS cluster")), list, clusterLine)
	case toolListServices:
		cl := str(r.args, "cluster")
		if len(list) == 0 {
			return fmt.Sprintf("Cluster **%s** runs no services.", cl)
		}
		return bullets(fmt.Sprintf("Cluster **%s** runs %s:", cl, count(len(list), "service")), list, serviceLine)
	case toolServiceLogs:
		if len(list) == 0 {
			return fmt.Sprintf("Service **%s** has logged nothing recently.", str(r.args, "service"))
		}
		var b strings.Builder
		fmt.Fprintf(&b, "The latest log events of **%s**:\n```", str(r.args, "service"))
		for _, it := range list[max(0, len(list)-10):] {
			b.WriteString("\n" + oneLine(str(it, "timestamp")+" "+str(it, "message")))
		}
		b.WriteString("\n```")
		return b.String()
	case toolCosts:
		return costsSummary(obj)
	case toolListFunctions:
		if len(list) == 0 {
			return "There is no Lambda function in this account."
		}
		return bullets(fmt.Sprintf("There %s %s:", isAre(len(list)), count(len(list), "Lambda function")), list, func(it map[string]any) string {
			return fmt.Sprintf("**%s** (%s)", str(it, "name"), strings.Join(nonEmpty([]string{str(it, "runtime"), str(it, "state")}), ", "))
		})
	case toolListApps:
		if len(list) == 0 {
			return "There is no Amplify app in this account."
		}
		return bullets(fmt.Sprintf("There %s %s:", isAre(len(list)), count(len(list), "Amplify app")), list, func(it map[string]any) string {
			return fmt.Sprintf("**%s** (%s; branches %s)", str(it, "name"), cmpOr(str(it, "default_domain"), "no domain"), cmpOr(strings.Join(strs(it, "branches"), ", "), "none"))
		})
	case toolDeployService:
		return fmt.Sprintf("Done: a new deployment of **%s** has started (deployment %s, status %s). Ask me about the services again in a minute to see it roll out.",
			str(r.args, "service"), cmpOr(str(obj, "deployment_id"), "?"), cmpOr(str(obj, "status"), "unknown"))
	case toolScaleService:
		return fmt.Sprintf("Done: **%s** in cluster %s is set to %d %s (%d running right now).",
			cmpOr(str(obj, "name"), str(r.args, "service")), str(r.args, "cluster"), num(r.args, "desired_count"),
			plural(num(r.args, "desired_count"), "task"), num(obj, "running"))
	case toolListRepos:
		if len(list) == 0 {
			return "No GitHub repository is connected yet."
		}
		return bullets(fmt.Sprintf("You have %s connected:", count(len(list), "repository")), list, func(it map[string]any) string {
			line := "**" + str(it, "full_name") + "**"
			if d := str(it, "description"); d != "" {
				line += " — " + cutWords(oneLine(d), 100)
			}
			return line
		})
	case toolListCommits, toolSearchCommits:
		if len(list) == 0 {
			return "No commits found."
		}
		head := fmt.Sprintf("The latest %s:", count(len(list), "commit"))
		if r.call.Name == toolSearchCommits {
			head = fmt.Sprintf("%s match %q:", capitalise(count(len(list), "commit")), str(r.args, "q"))
		}
		return bullets(head, list, func(it map[string]any) string {
			sha := str(it, "sha")
			sha = sha[:min(len(sha), 7)]
			msg, _, _ := strings.Cut(str(it, "message"), "\n")
			return fmt.Sprintf("`%s` %s (%s)", sha, cutWords(oneLine(msg), 80), cmpOr(str(it, "author_login"), str(it, "author")))
		})
	case toolListPulls:
		if len(list) == 0 {
			return "There are no pull requests."
		}
		return bullets(fmt.Sprintf("%s:", capitalise(count(len(list), "pull request"))), list, func(it map[string]any) string {
			state := str(it, "state")
			if it["merged"] == true {
				state = "merged"
			} else if it["draft"] == true {
				state = "draft"
			}
			return fmt.Sprintf("#%d %s (%s, by %s)", num(it, "number"), cutWords(oneLine(str(it, "title")), 80), state, str(it, "author"))
		})
	case toolRepoActivity:
		if len(list) == 0 {
			return "Nothing has happened in this repository lately."
		}
		return bullets("Recent activity:", list, func(it map[string]any) string {
			return fmt.Sprintf("%s (%s)", cutWords(oneLine(str(it, "summary")), 100), cmpOr(str(it, "actor"), str(it, "kind")))
		})
	case toolGetBrand:
		return brandSummary(obj)
	case toolListBriefs:
		if len(list) == 0 {
			return "There is no content brief yet."
		}
		return bullets(fmt.Sprintf("There %s %s:", isAre(len(list)), count(len(list), "brief")), list, func(it map[string]any) string {
			return fmt.Sprintf("**%s** (%s)", str(it, "title"), strings.Join(nonEmpty([]string{str(it, "format"), str(it, "channel"), "project " + str(it, "project_id")}), ", "))
		})
	case toolListContent:
		if len(list) == 0 {
			return "There is no content yet."
		}
		return bullets(fmt.Sprintf("There %s %s:", isAre(len(list)), count(len(list), "content item")), list, func(it map[string]any) string {
			return fmt.Sprintf("**%s** — %s, version %d, %d words", cmpOr(str(it, "title"), "(untitled)"), str(it, "status"), num(it, "version"), num(it, "words"))
		})
	case toolCreateBrief:
		return fmt.Sprintf("Done: the brief **%s** is created in project %s. Say “generate content for %s” to have a draft written.",
			str(obj, "title"), str(obj, "project_id"), str(obj, "title"))
	case toolGenerateDraft:
		n := len(list)
		return fmt.Sprintf("Done: %s being written in the background. Ask me to list the content in a moment to see %s.",
			map[bool]string{true: "one draft is", false: strconv.Itoa(n) + " drafts are"}[n <= 1], map[bool]string{true: "it", false: "them"}[n <= 1])
	case toolListSpecs:
		if len(list) == 0 {
			return "You have no specification session yet."
		}
		return bullets(fmt.Sprintf("You have %s:", count(len(list), "specification session")), list, func(it map[string]any) string {
			line := fmt.Sprintf("**%s** — %s", str(it, "name"), str(it, "status"))
			if cur := str(it, "current_stage"); cur != "" {
				line += ", last stage " + cur
			}
			if next := str(it, "next_stage"); next != "" {
				line += ", next " + next
			}
			return line
		})
	case toolGetSpec:
		return specSummary(obj)
	case toolGenerateStage:
		return fmt.Sprintf("Done: the %s stage is being generated in the background. Ask me about the specification again in a minute.",
			cmpOr(str(obj, "stage"), "next"))
	}
	if len(list) > 0 {
		return fmt.Sprintf("Done: %s returned %s.", r.call.Name, count(len(list), "item"))
	}
	return fmt.Sprintf("Done: %s succeeded.", r.call.Name)
}

func clusterLine(it map[string]any) string {
	return fmt.Sprintf("**%s** (%s): %s, %d running %s", str(it, "name"), cmpOr(str(it, "status"), "unknown"),
		count(num(it, "active_services"), "service"), num(it, "running_tasks"), plural(num(it, "running_tasks"), "task"))
}

func serviceLine(it map[string]any) string {
	return fmt.Sprintf("**%s**: %d of %d %s running (%s)", str(it, "name"), num(it, "running"), num(it, "desired"),
		plural(num(it, "desired"), "task"), cmpOr(str(it, "status"), "unknown"))
}

// productionReport says what runs in an account: its clusters and the
// services of those listed in this turn.
func productionReport(c *conversation, acct account, clusters []cluster, clustersOnly bool) string {
	if len(clusters) == 0 {
		return fmt.Sprintf("%s has no ECS cluster, so nothing runs there on ECS.", capitalise(acct.label()))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "In %s (%s) there %s %s:", acct.label(), cmpOr(acct.Region, "no region"), isAre(len(clusters)), count(len(clusters), "ECS cluster"))
	for i, cl := range clusters {
		if i == maxListed {
			fmt.Fprintf(&b, "\n- … and %d more", len(clusters)-maxListed)
			break
		}
		fmt.Fprintf(&b, "\n- **%s** (%s): %s, %d running %s", cl.Name, cmpOr(cl.Status, "unknown"), count(cl.Services, "service"),
			cl.Running, plural(cl.Running, "task"))
		if clustersOnly || !c.called(toolListServices, map[string]any{"account_id": acct.ID, "cluster": cl.Name}) {
			continue
		}
		for _, s := range c.kb.servicesOf(acct.ID, cl.Name) {
			fmt.Fprintf(&b, "\n  - **%s**: %d of %d %s running (%s)", s.Name, s.Running, s.Desired, plural(s.Desired, "task"), cmpOr(s.Status, "unknown"))
		}
	}
	if len(clusters) > maxClusters && !clustersOnly {
		fmt.Fprintf(&b, "\n\nI listed the services of the first %d clusters only.", maxClusters)
	}
	if !clustersOnly {
		b.WriteString("\n\nSay “scale <service> to <n>” or “deploy <service>” to change one; I will ask for your approval first.")
	}
	return b.String()
}

func costsSummary(obj map[string]any) string {
	total, currency := str(obj, "total"), cmpOr(str(obj, "currency"), "USD")
	var b strings.Builder
	fmt.Fprintf(&b, "Costs from %s to %s: **%s %s**.", str(obj, "start_date"), str(obj, "end_date"), formatAmount(total), currency)
	sums := map[string]float64{}
	var keys []string
	periods, _ := obj["periods"].([]any)
	for _, p := range periods {
		pm, _ := p.(map[string]any)
		groups, _ := pm["groups"].([]any)
		for _, g := range groups {
			gm, _ := g.(map[string]any)
			key := str(gm, "key")
			amount, err := strconv.ParseFloat(str(gm, "amount"), 64)
			if key == "" || err != nil {
				continue
			}
			if _, ok := sums[key]; !ok {
				keys = append(keys, key)
			}
			sums[key] += amount
		}
	}
	if len(keys) == 0 {
		return b.String()
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		switch {
		case sums[a] > sums[b]:
			return -1
		case sums[a] < sums[b]:
			return 1
		}
		return strings.Compare(a, b)
	})
	b.WriteString(" The largest:")
	for _, k := range keys[:min(len(keys), 5)] {
		fmt.Fprintf(&b, "\n- %s: %.2f %s", k, sums[k], currency)
	}
	return b.String()
}

func formatAmount(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return cmpOr(s, "0")
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

func brandSummary(obj map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Brand settings of project %s (version %d):", str(obj, "project_id"), num(obj, "version"))
	line := func(name, value string) {
		if value = strings.TrimSpace(value); value != "" {
			fmt.Fprintf(&b, "\n- %s: %s", name, cutWords(oneLine(value), 160))
		}
	}
	line("Name", str(obj, "name"))
	line("Voice", str(obj, "voice"))
	line("Tone", strings.Join(strs(obj, "tone"), ", "))
	line("Audience", str(obj, "audience"))
	line("Banned words", strings.Join(strs(obj, "banned_words"), ", "))
	if b.Len() > 0 && !strings.Contains(b.String(), "\n") {
		b.WriteString(" nothing is set yet; drafts use neutral defaults.")
	}
	return b.String()
}

func specSummary(obj map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** is %s", str(obj, "name"), cmpOr(str(obj, "status"), "unknown"))
	inputs, _ := obj["inputs"].([]any)
	fmt.Fprintf(&b, ", with %s.", count(len(inputs), "input"))
	arts, _ := obj["artifacts"].([]any)
	for _, a := range arts {
		am, _ := a.(map[string]any)
		fmt.Fprintf(&b, "\n- %s, version %d", str(am, "stage"), num(am, "version"))
		if am["stale"] == true {
			b.WriteString(" (stale)")
		}
		if checks := strs(am, "checks"); len(checks) > 0 {
			fmt.Fprintf(&b, ": %s", count(len(checks), "traceability warning"))
		}
	}
	if next := str(obj, "next_stage"); next != "" {
		fmt.Fprintf(&b, "\n\nThe next stage is %s; say “generate the next stage of %s” to start it.", next, str(obj, "name"))
	}
	return b.String()
}

// bullets is a heading and one line per item, at most maxListed of them.
func bullets(head string, list []map[string]any, line func(map[string]any) string) string {
	var b strings.Builder
	b.WriteString(head)
	for i, it := range list {
		if i == maxListed {
			fmt.Fprintf(&b, "\n- … and %d more", len(list)-maxListed)
			break
		}
		b.WriteString("\n- " + line(it))
	}
	return b.String()
}

func count(n int, word string) string {
	if n != 1 && strings.HasSuffix(word, "y") && !strings.ContainsRune("aeiou", rune(word[max(0, len(word)-2)])) {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %s", n, plural(n, word))
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func nonEmpty(list []string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return strings.TrimSpace(s) == "" })
}
