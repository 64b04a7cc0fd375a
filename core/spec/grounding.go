package spec

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// Bounds on what of a linked repository goes into a PRP call.
const (
	// maxTreeLines is how many paths of the tree one PRP call shows.
	maxTreeLines = 120
	// maxSimilarFiles is how many files similar to what a story touches one
	// PRP call shows, each cut at maxFileBytes.
	maxSimilarFiles = 3
	maxFileBytes    = 4 << 10
	// maxBuildFileBytes bounds the build files read for commands.
	maxBuildFileBytes = 32 << 10
	// maxCommands bounds the commands found.
	maxCommands = 24
)

// repoView is what a PRP stage knows of the linked repository: its files,
// the commands its build files show, and a reader for file contents.
type repoView struct {
	fullName  string
	files     []ports.SCMTreeEntry
	paths     map[string]bool
	truncated bool
	// commands are the test, lint and build commands the repository shows
	// (Makefile targets, package scripts, CI run lines), in that order.
	commands []string
	read     func(ctx context.Context, path string) (string, error)

	mu    sync.Mutex
	cache map[string]string
}

// has reports whether the repository has the file p.
func (r *repoView) has(p string) bool { return r.paths[strings.TrimPrefix(p, "./")] }

// content returns a file's content, cut at maxFileBytes, reading each file
// once; "" when it cannot be read.
func (r *repoView) content(ctx context.Context, p string) string {
	r.mu.Lock()
	c, ok := r.cache[p]
	r.mu.Unlock()
	if ok {
		return c
	}
	c, err := r.read(ctx, p)
	if err != nil {
		c = ""
	}
	r.mu.Lock()
	r.cache[p] = c
	r.mu.Unlock()
	return c
}

// loadRepo reads the session's linked repository for the PRP stage with its
// owner's connection. It returns nil, and a finding to keep with the
// artifact, when the session is linked but the repository cannot be read;
// nil and "" when it is not linked or grounding is not wired.
func (s *Service) loadRepo(ctx context.Context, owner ports.Owner, sess ports.SpecSession, log *slog.Logger) (*repoView, string) {
	if sess.RepoID == "" || s.d.Repos == nil || s.d.SCM == nil || s.d.Cipher == nil {
		return nil, ""
	}
	repo, err := s.d.Repos.GetRepository(ctx, owner, sess.RepoID)
	if err != nil {
		log.WarnContext(ctx, "the linked repository is gone; PRPs are not grounded", "repo_id", sess.RepoID, "err", err)
		return nil, "the linked repository is no longer connected; the PRPs are not grounded in it"
	}
	conn, err := s.d.Repos.GetConnection(ctx, owner, s.cfg.SCMProvider)
	if err != nil || conn.Status == ports.SCMBroken {
		log.WarnContext(ctx, "no working connection for the linked repository", "repo", repo.FullName, "err", err)
		return nil, fmt.Sprintf("the connection to %s is missing or broken; the PRPs are not grounded in %s", s.cfg.SCMProvider, repo.FullName)
	}
	token, err := s.d.Cipher.Open(conn.SealedToken, []byte(conn.ID))
	if err != nil {
		log.ErrorContext(ctx, "the connection's token cannot be opened", "connection_id", conn.ID, "err", err)
		return nil, "the repository connection's token cannot be opened; the PRPs are not grounded in " + repo.FullName
	}
	files, truncated, err := s.d.SCM.ReadTree(ctx, string(token), repo.Owner, repo.Name, "")
	if err != nil {
		log.WarnContext(ctx, "the linked repository's tree cannot be read", "repo", repo.FullName, "err", err)
		return nil, fmt.Sprintf("the tree of %s could not be read (%s); the PRPs are not grounded in it", repo.FullName, ports.KindOf(err))
	}
	v := &repoView{fullName: repo.FullName, files: files, truncated: truncated, paths: make(map[string]bool, len(files)), cache: map[string]string{}}
	for _, f := range files {
		v.paths[f.Path] = true
	}
	v.read = func(ctx context.Context, p string) (string, error) {
		f, err := s.d.SCM.ReadFile(ctx, string(token), repo.Owner, repo.Name, "", p, maxBuildFileBytes)
		return f.Content, err
	}
	v.commands = findCommands(ctx, v)
	log.InfoContext(ctx, "grounding PRPs in the linked repository", "repo", repo.FullName, "files", len(files), "commands", len(v.commands))
	return v, ""
}

var (
	makeTarget   = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_./-]*)\s*:([^=]|$)`)
	runLine      = regexp.MustCompile(`^\s*(?:-\s+)?run:\s*(.*)$`)
	workflowPath = regexp.MustCompile(`^\.github/workflows/[^/]+\.ya?ml$`)
)

// findCommands lists the commands the repository's build files show: the
// Makefile's targets as "make target", package.json's scripts with the
// package manager its lock file names, and the run lines of its CI
// workflows. It invents none.
func findCommands(ctx context.Context, v *repoView) []string {
	var out []string
	add := func(c string) {
		c = strings.TrimSpace(c)
		if c != "" && !slices.Contains(out, c) && len(out) < maxCommands {
			out = append(out, c)
		}
	}
	if v.has("Makefile") {
		for _, l := range strings.Split(v.content(ctx, "Makefile"), "\n") {
			if m := makeTarget.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], ".") && !strings.Contains(m[1], "%") {
				add("make " + m[1])
			}
		}
	}
	if v.has("package.json") {
		var pkg struct {
			Scripts map[string]string `json:"scripts"`
		}
		if json.Unmarshal([]byte(v.content(ctx, "package.json")), &pkg) == nil {
			runner := "npm run"
			switch {
			case v.has("pnpm-lock.yaml"):
				runner = "pnpm run"
			case v.has("yarn.lock"):
				runner = "yarn"
			}
			names := make([]string, 0, len(pkg.Scripts))
			for name := range pkg.Scripts {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				add(runner + " " + name)
			}
		}
	}
	for _, f := range v.files {
		if !workflowPath.MatchString(f.Path) {
			continue
		}
		lines := strings.Split(v.content(ctx, f.Path), "\n")
		for i := 0; i < len(lines); i++ {
			m := runLine.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			if r := strings.TrimSpace(m[1]); r != "|" && r != ">" && r != "|-" && r != ">-" {
				add(strings.Trim(r, `"'`))
				continue
			}
			indent := -1
			for i+1 < len(lines) {
				next := lines[i+1]
				trimmed := strings.TrimLeft(next, " ")
				ind := len(next) - len(trimmed)
				if strings.TrimSpace(next) == "" || indent >= 0 && ind < indent || indent < 0 && ind <= len(lines[i])-len(strings.TrimLeft(lines[i], " ")) {
					break
				}
				if indent < 0 {
					indent = ind
				}
				add(trimmed)
				i++
			}
		}
	}
	return out
}

var wordPattern = regexp.MustCompile(`[\p{L}\p{N}]+`)

// stopWords are words that say nothing about which files a story touches.
var stopWords = map[string]bool{"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "from": true,
	"into": true, "can": true, "want": true, "when": true, "then": true, "given": true, "user": true, "users": true, "their": true,
	"they": true, "are": true, "was": true, "has": true, "have": true, "not": true, "all": true, "any": true, "who": true,
	"will": true, "must": true, "should": true, "able": true, "its": true, "our": true, "your": true, "you": true, "new": true}

// tokens are the distinct lower-case words of text worth matching against
// paths, with simple plurals folded.
func tokens(text string) []string {
	var out []string
	for _, w := range wordPattern.FindAllString(strings.ToLower(text), -1) {
		if len(w) < 3 || stopWords[w] {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = w[:len(w)-1]
		}
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// sourceExt are the extensions of files worth showing as examples.
var sourceExt = map[string]bool{".go": true, ".ts": true, ".tsx": true, ".js": true, ".jsx": true, ".py": true, ".rb": true,
	".java": true, ".kt": true, ".rs": true, ".cs": true, ".php": true, ".swift": true, ".vue": true, ".svelte": true, ".sql": true}

// relevance scores a path against a story's words: each word found in a
// path segment counts, a word in the file's name twice.
func relevance(p string, words []string) int {
	lower := strings.ToLower(p)
	base := path.Base(lower)
	score := 0
	for _, w := range words {
		if strings.Contains(base, w) {
			score += 2
		} else if strings.Contains(lower, w) {
			score++
		}
	}
	return score
}

// ranked returns the repository's paths by relevance to words, the most
// relevant first, only those that match; source files only when sources.
func (r *repoView) ranked(words []string, sources bool) []string {
	type scored struct {
		path  string
		score int
	}
	var list []scored
	for _, f := range r.files {
		if sources && (!sourceExt[path.Ext(f.Path)] || f.Size > 256<<10) {
			continue
		}
		if sc := relevance(f.Path, words); sc > 0 {
			list = append(list, scored{f.Path, sc})
		}
	}
	slices.SortStableFunc(list, func(a, b scored) int {
		return cmp.Or(b.score-a.score, strings.Count(a.path, "/")-strings.Count(b.path, "/"), strings.Compare(a.path, b.path))
	})
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.path
	}
	return out
}

// treeExcerpt is the part of the tree a story's PRP call sees: the build
// and CI files, the top-level layout, and the paths most relevant to the
// story, at most maxTreeLines of them, sorted.
func (r *repoView) treeExcerpt(words []string) []string {
	picked := map[string]bool{}
	var out []string
	pick := func(p string) {
		if !picked[p] && len(out) < maxTreeLines {
			picked[p] = true
			out = append(out, p)
		}
	}
	for _, f := range r.files {
		if !strings.Contains(f.Path, "/") || workflowPath.MatchString(f.Path) {
			pick(f.Path)
		}
	}
	for _, p := range r.ranked(words, false) {
		pick(p)
	}
	// The rest of the layout: one file per directory, so every part of
	// the code is named.
	dirs := map[string]bool{}
	for _, f := range r.files {
		if d := path.Dir(f.Path); !dirs[d] {
			dirs[d] = true
			pick(f.Path)
		}
	}
	slices.Sort(out)
	return out
}

// groundingSection is the repository part of a PRP call's prompt: the tree
// excerpt, files similar to what the stories touch, and the commands.
func (r *repoView) groundingSection(ctx context.Context, stories ...story) string {
	var words []string
	for _, st := range stories {
		for _, w := range storyWords(st) {
			if !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n# Repository %s\n\nThe PRPs are implemented in this repository. Name only paths listed here in file references and modify tasks; a created file goes where the layout says it belongs.\n", r.fullName)
	excerpt := r.treeExcerpt(words)
	fmt.Fprintf(&b, "\n<tree files=\"%d\" shown=\"%d\"%s>\n%s\n</tree>\n", len(r.files), len(excerpt), map[bool]string{true: ` truncated="true"`}[r.truncated], genjob.Fenced(strings.Join(excerpt, "\n"), "tree"))
	for i, p := range r.ranked(words, true) {
		if i == maxSimilarFiles {
			break
		}
		c := r.content(ctx, p)
		if c == "" {
			continue
		}
		if clipped, cut := ports.ClipBytes(c, maxFileBytes); cut {
			c = clipped + "\n…"
		}
		fmt.Fprintf(&b, "\n<file path=%q>\n%s\n</file>\n", p, genjob.Fenced(c, "file"))
	}
	if len(r.commands) > 0 {
		fmt.Fprintf(&b, "\n<commands source=\"Makefile, package scripts, CI workflows\">\n%s\n</commands>\n\nValidation commands and task validations come from these commands (narrowed to a package or a file where the tool allows it); do not invent others.\n",
			genjob.Fenced(strings.Join(r.commands, "\n"), "commands"))
	} else {
		b.WriteString("\nThe repository shows no test or build commands: leave validation.commands empty and say why in none_reason.\n")
	}
	return b.String()
}

// storyWords are the words of a story worth matching against paths.
func storyWords(st story) []string {
	words := tokens(strings.Join([]string{st.Title, st.IWant, st.SoThat}, " "))
	for _, c := range st.AcceptanceCriteria {
		words = append(words, tokens(c.When+" "+c.Then)...)
	}
	return words
}

// groundingChecks lists the PRPs' references and tasks that do not fit the
// linked repository: a file reference or a modified path it does not have
// and no task creates (a task of these PRPs, or a path planned, which the
// PRPs of the stories they depend on create), a created path it has
// already, and a validation command whose program none of its commands
// uses. Whether a PRP may build on another's path is the cross-PRP checks'
// question, not grounding's.
func groundingChecks(c *checks, d *prpsDoc, r *repoView, planned map[string]bool) {
	if r == nil {
		return
	}
	programs := map[string]bool{}
	for _, cmd := range r.commands {
		programs[program(cmd)] = true
	}
	exists := func(p string) bool { return r.has(p) || planned[strings.TrimPrefix(p, "./")] || r.truncated }
	created := map[string]bool{}
	for _, p := range d.PRPs {
		for _, t := range p.Tasks {
			if t.Action == actionCreate {
				created[strings.TrimPrefix(strings.TrimSpace(t.Path), "./")] = true
			}
		}
	}
	for _, p := range d.PRPs {
		for _, ref := range p.Context.References {
			if tg := strings.TrimSpace(ref.Target); ref.Kind == refFile && !exists(tg) && !created[strings.TrimPrefix(tg, "./")] {
				c.add(FindingGroundingPath, "%s references %s, which %s does not have", p.ID, tg, r.fullName)
			}
		}
		for _, t := range p.Tasks {
			pth := strings.TrimSpace(t.Path)
			switch {
			case t.Action == actionModify && !exists(pth) && !created[strings.TrimPrefix(pth, "./")]:
				c.add(FindingGroundingPath, "%s task %s modifies %s, which %s does not have", p.ID, t.ID, pth, r.fullName)
			case t.Action == actionCreate && r.has(pth):
				c.add(FindingGroundingPath, "%s task %s creates %s, which %s has already", p.ID, t.ID, pth, r.fullName)
			}
		}
		if len(programs) == 0 {
			continue
		}
		for _, v := range p.Validation.Commands {
			if !programs[program(v.Command)] {
				c.add(FindingGroundingCommand, "%s validation command %q uses none of the commands %s shows", p.ID, ports.OneLine(v.Command), r.fullName)
			}
		}
	}
}

// program is the program a command line runs: its first word after any
// environment assignments.
func program(cmd string) string {
	for _, f := range strings.Fields(cmd) {
		if !strings.Contains(f, "=") {
			return f
		}
	}
	return ""
}
