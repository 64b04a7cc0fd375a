package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// askStage asks for args.Stage. With Config.BatchConcurrency set, stories
// come from one call per epic and PRPs from one call per story, each call
// given only its own context (its epic or story, the requirements it names,
// the PRD's summary and glossary, its context pack, and for a PRP the linked
// repository), run at most BatchConcurrency at a time, each after the calls
// it depends on, and assembled into one document; every other stage, and a
// stage whose earlier artifact cannot be read, is one call
// (askWithinBudget). For the PRP stage it reads the linked repository into
// prior.repo, so the checks see it, and shows it to the model in either
// mode. notes are findings about the generation itself to keep with the
// artifact.
func (s *Service) askStage(ctx context.Context, args GenerateStageArgs, sess ports.SpecSession, inputs []ports.SpecInput,
	before map[ports.Stage]ports.SpecArtifact, standards []ports.Standard, prior *earlier, findings findingsFunc, log *slog.Logger) (output, ports.ChatResult, []string, error) {
	var notes []string
	if args.Stage == ports.StagePRPs {
		var note string
		prior.repo, note = s.loadRepo(ctx, ports.Owner{OrgID: args.OrgID, UserID: args.UserID}, sess, log)
		if note != "" {
			notes = append(notes, note)
		}
	}
	if s.cfg.BatchConcurrency > 0 {
		switch {
		case args.Stage == ports.StageStories && prior.epics != nil && prior.prd != nil && len(prior.epics.Epics) > 0:
			out, res, err := s.askStoriesByEpic(ctx, inputs, standards, prior, log)
			return out, res, notes, err
		case args.Stage == ports.StagePRPs && prior.stories != nil && len(prior.stories.Stories) > 0:
			out, res, err := s.askPRPsByStory(ctx, inputs, standards, prior, log)
			return out, res, notes, err
		}
	}
	// One call for the whole stage: the PRPs see the repository the
	// findings check them against, for the words of every story.
	section := ""
	if args.Stage == ports.StagePRPs && prior.repo != nil && prior.stories != nil {
		section = "\n" + prior.repo.groundingSection(ctx, prior.stories.Stories...)
	}
	out, res, err := s.askWithinBudget(ctx, args, inputs, before, standards, section, findings, log)
	return out, res, notes, err
}

// chat makes one model exchange, bounded by Config.CallTimeout: each call of
// a stage (a batch, a repair turn, a digest's map or reduce step) gets the
// whole timeout, not a share of one. Within a stage's generation it sends
// the stage's temperature and seed, and counts the call (see genStats).
func (s *Service) chat(ctx context.Context, req ports.ChatRequest) (ports.ChatResult, error) {
	stats := statsOf(ctx)
	stats.sample(&req)
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	res, err := s.d.LLM.Chat(ctx, req, nil)
	stats.called(res)
	return res, err
}

// callContext bounds one model exchange by Config.CallTimeout.
func (s *Service) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.CallTimeout > 0 {
		return context.WithTimeout(ctx, s.cfg.CallTimeout)
	}
	return context.WithCancel(ctx)
}

// batchResult is one batch's answer.
type batchResult struct {
	out output
	res ports.ChatResult
	err error
}

// runBatches runs ask for each of n batches, at most BatchConcurrency at a
// time, and returns their results in order, or the first batch's error
// (which cancels the batches still running or waiting). Batch i starts only
// once the batches deps(i) names have finished; only earlier batches count
// (a later or unknown one is ignored, so no batch waits on one that waits
// on it). Batches start in document order, so with a bound of 1 they run
// one after the other in document order. ask is given done(j): batch j's
// answer, when batch i waited for j and it succeeded.
func (s *Service) runBatches(ctx context.Context, n int, deps func(i int) []int,
	ask func(ctx context.Context, i int, done func(j int) (output, bool)) (output, ports.ChatResult, error)) ([]batchResult, ports.ChatResult, error) {
	ctx, cancelAll := context.WithCancel(ctx)
	defer cancelAll()
	results := make([]batchResult, n)
	finished := make([]chan struct{}, n)
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	sem := make(chan struct{}, s.cfg.BatchConcurrency)
	// ready waits until batch i may start: its dependencies finished and a
	// place is free. An error is the cancellation that stopped it.
	ready := func(waited []int) error {
		for _, j := range waited {
			select {
			case <-finished[j]:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := ctx.Err(); err != nil {
			return err // a dependency failed
		}
		select {
		case sem <- struct{}{}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var wg sync.WaitGroup
	for i := range n {
		var waited []int
		if deps != nil {
			for _, j := range deps(i) {
				if j >= 0 && j < i && !slices.Contains(waited, j) {
					waited = append(waited, j)
				}
			}
		}
		if err := ready(waited); err != nil {
			results[i].err = err
			close(finished[i])
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(finished[i])
			defer func() { <-sem }()
			done := func(j int) (output, bool) {
				if !slices.Contains(waited, j) || results[j].err != nil {
					return output{}, false
				}
				return results[j].out, true
			}
			r := &results[i]
			r.out, r.res, r.err = ask(ctx, i, done)
			if r.err != nil {
				cancelAll()
			}
		}()
	}
	wg.Wait()
	var total ports.ChatResult
	var firstErr error
	for _, r := range results {
		if r.err != nil && firstErr == nil {
			firstErr = r.err
		}
		addUsage(&total, r.res)
	}
	// A batch cancelled because another failed reports the other's error.
	for _, r := range results {
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			return results, total, r.err
		}
	}
	return results, total, firstErr
}

// addUsage adds the usage of res to total, taking its model when total
// has none.
func addUsage(total *ports.ChatResult, res ports.ChatResult) {
	if total.Model == "" {
		total.Model = res.Model
	}
	total.Usage.PromptTokens += res.Usage.PromptTokens
	total.Usage.CompletionTokens += res.Usage.CompletionTokens
}

// assemble validates the document the batches made as the stage's answer.
func assemble(st ports.Stage, doc any) (output, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return output{}, ports.Wrap(ports.KindInternal, err, "encode the assembled "+string(st))
	}
	out, problems := parseOutput(st, string(b))
	if problems != nil {
		return output{}, &failure{Code: CodeInvalidOutput, Message: invalidOutputMessage(st, problems)}
	}
	return out, nil
}

// prdBrief is the part of the PRD every batch call gets: title, summary,
// glossary and the non-functional requirements.
func prdBrief(p *prdDoc) string {
	brief := struct {
		Title         string          `json:"title"`
		Summary       string          `json:"summary"`
		Glossary      []term          `json:"glossary"`
		NonFunctional []nfRequirement `json:"non_functional_requirements"`
	}{p.Title, p.Summary, p.Glossary, p.NonFunctional}
	b, _ := json.Marshal(brief)
	return "<prd_summary>\n" + genjob.Fenced(string(b), "prd_summary") + "\n</prd_summary>\n"
}

func requirementsOf(p *prdDoc, ids []string) []requirement {
	var out []requirement
	for _, r := range p.Functional {
		for _, id := range ids {
			if r.ID == id {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

func tagged(tag string, v any) string {
	b, _ := json.Marshal(v)
	return "<" + tag + ">\n" + genjob.Fenced(string(b), tag) + "\n</" + tag + ">\n"
}

// batchMessages is a batch call: the stage's system message (with its
// standards) and a user message of the batch's own context.
func batchMessages(st ports.Stage, standards []ports.Standard, user string) []ports.Message {
	system := buildMessages(st, nil, nil, standards)[0]
	return []ports.Message{system, {Role: ports.MessageUser, Content: user}}
}

// askStoriesByEpic writes the stories one epic per call, an epic after
// the epics it depends on, so its call is given their stories' ids.
func (s *Service) askStoriesByEpic(ctx context.Context, inputs []ports.SpecInput, standards []ports.Standard, prior *earlier, log *slog.Logger) (output, ports.ChatResult, error) {
	epics := prior.epics.Epics
	m := newMaterial(inputs)
	outline := make([]map[string]any, len(epics))
	index := make(map[string]int, len(epics))
	for i, e := range epics {
		outline[i] = map[string]any{"id": e.ID, "title": e.Title, "order": e.Order, "depends_on": e.DependsOn}
		if _, dup := index[e.ID]; !dup {
			index[e.ID] = i
		}
	}
	deps := func(i int) []int { return indexesOf(epics[i].DependsOn, index) }
	results, total, err := s.runBatches(ctx, len(epics), deps, func(ctx context.Context, i int, done func(int) (output, bool)) (output, ports.ChatResult, error) {
		ep := epics[i]
		n := strings.TrimPrefix(ep.ID, "EP-")
		// The stories of the epics it depends on, written already.
		var known []story
		related := []relatedStory{}
		for _, j := range deps(i) {
			if out, ok := done(j); ok {
				for _, st := range storiesOf(out.doc.(*storiesDoc), epics[j].ID) {
					known = append(known, st)
					related = append(related, relatedStory{ID: st.ID, EpicID: st.EpicID, Title: st.Title})
				}
			}
		}
		pack := newContextPack(prior, m, ep.RequirementIDs, related, nil)
		pack.bound(s.packBudget())
		var u strings.Builder
		u.WriteString("# PRD\n" + prdBrief(prior.prd))
		u.WriteString("\n# The epic to break into stories\n" + tagged("epic", ep))
		u.WriteString("\n# Its requirements\n" + tagged("requirements", requirementsOf(prior.prd, ep.RequirementIDs)))
		u.WriteString("\n# Its context\n" + pack.element())
		u.WriteString("\n# All epics, for dependencies\n" + tagged("epics", outline))
		fmt.Fprintf(&u, "\nWrite the stories of %s only, numbered ST-%s.1, ST-%s.2, … with epic_id %s. A story's depends_on names earlier stories of %s, or the related_stories of the context pack (the stories of the epics %s depends on). "+
			"Carry the facts of the context pack's source passages into the stories and their acceptance criteria, and keep within its constraints, out_of_scope and non_goals.", ep.ID, n, n, ep.ID, ep.ID, ep.ID)
		only := &epicsDoc{Epics: []epic{ep}}
		findings := func(doc any) []string {
			// Stories of other epics are left out, not repaired.
			var c checks
			mine := &storiesDoc{Stories: storiesOf(doc.(*storiesDoc), ep.ID)}
			storiesChecks(&c, mine, only, prior.prd)
			storyRulesKnowing(&c, mine, prior.epics, known)
			return c.list
		}
		return s.askRepairing(ctx, ports.StageStories, batchMessages(ports.StageStories, standards, u.String()), findings, log.With("epic", ep.ID))
	})
	if err != nil {
		return output{}, ports.ChatResult{}, err
	}
	var all storiesDoc
	for i, r := range results {
		mine := storiesOf(r.out.doc.(*storiesDoc), epics[i].ID)
		if len(mine) == 0 {
			return output{}, ports.ChatResult{}, &failure{Code: CodeInvalidOutput, Message: fmt.Sprintf("the model's stories for %s named none of that epic", epics[i].ID)}
		}
		all.Stories = append(all.Stories, mine...)
	}
	log.InfoContext(ctx, "stories assembled", "calls", len(epics), "stories", len(all.Stories))
	out, err := assemble(ports.StageStories, &all)
	return out, total, err
}

// indexesOf is the indexes ids have in index, those it has.
func indexesOf(ids []string, index map[string]int) []int {
	var out []int
	for _, id := range ids {
		if j, ok := index[id]; ok {
			out = append(out, j)
		}
	}
	return out
}

func storiesOf(d *storiesDoc, epicID string) []story {
	var out []story
	for _, s := range d.Stories {
		if s.EpicID == epicID {
			out = append(out, s)
		}
	}
	return out
}

// askPRPsByStory writes the PRPs one story per call, each grounded in the
// linked repository when there is one, a story's after those of the stories
// it depends on, so its call is given the paths their PRPs plan.
func (s *Service) askPRPsByStory(ctx context.Context, inputs []ports.SpecInput, standards []ports.Standard, prior *earlier, log *slog.Logger) (output, ports.ChatResult, error) {
	stories := prior.stories.Stories
	m := newMaterial(inputs)
	epicByID := map[string]epic{}
	if prior.epics != nil {
		for _, e := range prior.epics.Epics {
			epicByID[e.ID] = e
		}
	}
	index := make(map[string]int, len(stories))
	for i, st := range stories {
		if _, dup := index[st.ID]; !dup {
			index[st.ID] = i
		}
	}
	deps := func(i int) []int { return indexesOf(stories[i].DependsOn, index) }
	// sent[i] is the request of story i's call, for a repair turn later.
	sent := make([][]ports.Message, len(stories))
	// planned[i] are the paths the PRPs of story i's dependencies create.
	planned := make([]map[string]bool, len(stories))
	ownFindings := func(doc any, i int) []string {
		st := stories[i]
		var c checks
		mine := prpsOf(doc.(*prpsDoc), st.ID)
		if len(mine) == 0 {
			c.add(FindingMissing, "the answer has no PRP for %s; write %s", st.ID, prpIDOf(st.ID))
		}
		groundingChecks(&c, &prpsDoc{PRPs: mine}, prior.repo, planned[i])
		return c.list
	}
	results, total, err := s.runBatches(ctx, len(stories), deps, func(ctx context.Context, i int, done func(int) (output, bool)) (output, ports.ChatResult, error) {
		st := stories[i]
		want := prpIDOf(st.ID)
		related := []relatedStory{}
		for _, o := range stories {
			if o.EpicID == st.EpicID && o.ID != st.ID {
				related = append(related, relatedStory{ID: o.ID, EpicID: o.EpicID, Title: o.Title})
			}
		}
		var dependencies []dependency
		planned[i] = map[string]bool{}
		for _, id := range st.DependsOn {
			j, ok := index[id]
			if !ok || id == st.ID {
				continue
			}
			d := dependency{StoryID: id, Title: stories[j].Title, PRPID: prpIDOf(id), PlannedPaths: []plannedPath{}}
			if out, ok := done(j); ok {
				if theirs := prpsOf(out.doc.(*prpsDoc), id); len(theirs) > 0 {
					d.PRPID = theirs[0].ID
					for _, t := range theirs[0].Tasks {
						d.PlannedPaths = append(d.PlannedPaths, plannedPath{Action: t.Action, Path: t.Path})
						if t.Action == actionCreate {
							planned[i][strings.TrimPrefix(strings.TrimSpace(t.Path), "./")] = true
						}
					}
				}
			}
			dependencies = append(dependencies, d)
		}
		pack := newContextPack(prior, m, st.RequirementIDs, related, dependencies)
		pack.bound(s.packBudget())
		var u strings.Builder
		if prior.prd != nil {
			u.WriteString("# PRD\n" + prdBrief(prior.prd))
			u.WriteString("\n# The story's requirements\n" + tagged("requirements", requirementsOf(prior.prd, st.RequirementIDs)))
		}
		if e, ok := epicByID[st.EpicID]; ok {
			u.WriteString("\n# Its epic\n" + tagged("epic", map[string]any{"id": e.ID, "title": e.Title, "goal": e.Goal}))
		}
		u.WriteString("\n# The story\n" + tagged("story", st))
		u.WriteString("\n# Its context\n" + pack.element())
		if prior.repo != nil {
			u.WriteString(prior.repo.groundingSection(ctx, st))
		} else {
			u.WriteString("\nNo repository is linked: reference no file paths as facts, name the files to create by the conventions the material states, and leave validation.commands empty with the reason in none_reason unless the material names the project's commands.\n")
		}
		fmt.Fprintf(&u, "\nWrite the PRP of %s only: id %s, story_id %s, its acceptance criteria carried over word for word. "+
			"Carry the facts of the context pack's source passages into it, keep within its constraints, out_of_scope and non_goals, "+
			"and build on its dependencies: modify a path their PRPs create instead of creating it again.", st.ID, want, st.ID)
		sent[i] = batchMessages(ports.StagePRPs, standards, u.String())
		findings := func(doc any) []string { return ownFindings(doc, i) }
		return s.askRepairing(ctx, ports.StagePRPs, sent[i], findings, log.With("story", st.ID))
	})
	if err != nil {
		return output{}, ports.ChatResult{}, err
	}
	var all prpsDoc
	for i, r := range results {
		mine := prpsOf(r.out.doc.(*prpsDoc), stories[i].ID)
		if len(mine) == 0 {
			return output{}, ports.ChatResult{}, &failure{Code: CodeInvalidOutput, Message: "the model's PRP for " + stories[i].ID + " was for another story"}
		}
		p := mine[0]
		p.AcceptanceCriteria = stories[i].AcceptanceCriteria
		all.PRPs = append(all.PRPs, p)
	}
	log.InfoContext(ctx, "PRPs assembled", "calls", len(stories), "prps", len(all.PRPs), "grounded", prior.repo != nil)
	if conflicts := crossPRPFindings(&all, prior.stories); len(conflicts) > 0 {
		res := s.repairCrossPRPs(ctx, &all, stories, sent, results, conflicts, ownFindings, prior, log)
		addUsage(&total, res)
	}
	out, err := assemble(ports.StagePRPs, &all)
	return out, total, err
}

// repairCrossPRPs asks the call of each PRP conflicts name once more, in a
// repair turn that lists its conflicts with the other PRPs, and keeps the
// answer with fewer findings (its conflicts with the others, and its own);
// what is left stays for the stage's checks. all.PRPs[i] is the PRP of
// stories[i], asked with sent[i] and answered with results[i]. A repair
// call that fails keeps the first answer. It returns the calls' usage.
func (s *Service) repairCrossPRPs(ctx context.Context, all *prpsDoc, stories []story, sent [][]ports.Message, results []batchResult,
	conflicts []crossFinding, own func(doc any, i int) []string, prior *earlier, log *slog.Logger) ports.ChatResult {
	byPRP := map[string][]string{}
	for _, f := range conflicts {
		byPRP[f.prpID] = append(byPRP[f.prpID], f.msg)
	}
	var involved []int
	for i, p := range all.PRPs {
		if len(byPRP[p.ID]) > 0 {
			involved = append(involved, i)
		}
	}
	log.InfoContext(ctx, "the PRPs conflict with each other; asking for a repair", "conflicts", len(conflicts), "prps", len(involved), "first", conflicts[0].msg)
	// score is the findings PRP i has with p in its place.
	score := func(i int, p prp) int {
		doc := &prpsDoc{PRPs: slices.Clone(all.PRPs)}
		doc.PRPs[i] = p
		n := len(own(&prpsDoc{PRPs: []prp{p}}, i))
		for _, f := range crossPRPFindings(doc, prior.stories) {
			if f.prpID == p.ID {
				n++
			}
		}
		return n
	}
	repaired := make([]*prp, len(involved))
	_, total, _ := s.runBatches(ctx, len(involved), nil, func(ctx context.Context, k int, _ func(int) (output, bool)) (output, ports.ChatResult, error) {
		i := involved[k]
		st, first := stories[i], all.PRPs[i]
		msgs := append(slices.Clone(sent[i]),
			ports.Message{Role: ports.MessageAssistant, Content: string(results[i].out.data)},
			ports.Message{Role: ports.MessageUser, Content: crossRepairMessage(byPRP[first.ID])})
		statsOf(ctx).repairTurn()
		out, res, err := s.askRepairing(asRepairAsk(ctx), ports.StagePRPs, msgs, nil, log.With("story", st.ID))
		if err != nil {
			log.WarnContext(ctx, "the conflict repair call failed; keeping the first answer", "story", st.ID, "err", err)
			return output{}, res, nil
		}
		mine := prpsOf(out.doc.(*prpsDoc), st.ID)
		if len(mine) == 0 {
			return output{}, res, nil
		}
		p := mine[0]
		p.AcceptanceCriteria = st.AcceptanceCriteria
		if before, after := score(i, first), score(i, p); after < before {
			repaired[k] = &p
		} else {
			log.InfoContext(ctx, "the conflict repair did not help; keeping the first answer", "story", st.ID, "findings_before", before, "findings_after", after)
		}
		return out, res, nil
	})
	for k, p := range repaired {
		if p != nil {
			all.PRPs[involved[k]] = *p
		}
	}
	return total
}

// crossRepairMessage tells a PRP's call how its PRP conflicts with the
// PRPs of other stories, and asks for it again.
func crossRepairMessage(conflicts []string) string {
	var b strings.Builder
	b.WriteString("Your PRP is valid, but it conflicts with the PRPs written for other stories:\n")
	for i, f := range conflicts {
		if i == maxProblems {
			fmt.Fprintf(&b, "- … and %d more\n", len(conflicts)-maxProblems)
			break
		}
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("Fix every one of these: create a path only where no other story's PRP creates it; modify a path the PRP of a story yours depends on creates; " +
		"leave a path to the story that creates it when yours does not depend on that story. Keep everything else as it is. " +
		"Answer again with the complete, corrected JSON object and nothing else.")
	return b.String()
}

// prpIDOf is the id of the PRP of story id: PRP-e.n for ST-e.n.
func prpIDOf(storyID string) string { return "PRP-" + strings.TrimPrefix(storyID, "ST-") }

func prpsOf(d *prpsDoc, storyID string) []prp {
	var out []prp
	for _, p := range d.PRPs {
		if p.StoryID == storyID {
			out = append(out, p)
		}
	}
	return out
}
