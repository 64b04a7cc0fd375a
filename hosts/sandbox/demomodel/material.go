package demomodel

import (
	"regexp"
	"slices"
	"strings"
)

// input is one piece of raw material of a specification: n is its number
// in the request ("1", "2", …; "" when the request numbers none).
type input struct{ n, kind, title, content string }

// material is a specification's raw material, read with simple rules: the
// first heading names it, list items (or else sentences) are its points,
// questions are open questions.
type material struct{ inputs []input }

// maxPoints bounds the points taken from the material.
const maxPoints = 8

var (
	headingPattern    = regexp.MustCompile(`^#{1,6}\s+(.+)$`)
	bulletPattern     = regexp.MustCompile(`^(?:[-*+•]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.+)$`)
	speakerPattern    = regexp.MustCompile(`^(?:\[[0-9:.]+\]\s*)?[\p{Lu}][\p{L} .'-]{0,30}:\s+`)
	linkPattern       = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	sentenceEnd       = regexp.MustCompile(`([.!?])\s+`)
	outOfScopeHeading = regexp.MustCompile(`(?i)out of scope|non-goals?|not in scope|won'?t do|excluded`)
	outOfScopeLine    = regexp.MustCompile(`(?i)\b(out of scope|not in scope|won'?t|will not|not part of)\b`)
	constraintPattern = regexp.MustCompile(`(?i)\b(constraints?|deadline|budget|complian\w*|gdpr|hipaa|legal|regulat\w*|must be kept|retention)\b`)
)

// line is a cleaned line of the material with what kind it is.
type line struct {
	text    string
	heading bool
	bullet  bool
	section string // the heading above it, in lower case
}

func (m material) lines() []line {
	var out []line
	for _, in := range m.inputs {
		section := ""
		inFence := false
		for raw := range strings.SplitSeq(in.content, "\n") {
			t := strings.TrimSpace(raw)
			if strings.HasPrefix(t, "```") {
				inFence = !inFence
				continue
			}
			if t == "" || inFence {
				continue
			}
			if h := headingPattern.FindStringSubmatch(t); h != nil {
				text := clean(h[1])
				section = strings.ToLower(text)
				out = append(out, line{text: text, heading: true, section: section})
				continue
			}
			l := line{section: section}
			if b := bulletPattern.FindStringSubmatch(t); b != nil {
				l.bullet, t = true, b[1]
			}
			if in.kind == "transcript" {
				t = speakerPattern.ReplaceAllString(t, "")
			}
			if l.text = clean(t); l.text != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// clean removes Markdown from a line of text.
func clean(s string) string {
	s = linkPattern.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("**", "", "__", "", "`", "", "> ", "").Replace(s)
	s = strings.TrimLeft(s, "> ")
	return strings.TrimSpace(oneLine(s))
}

func splitSentences(s string) []string {
	var out []string
	for part := range strings.SplitSeq(sentenceEnd.ReplaceAllString(s, "$1\n"), "\n") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func words(s string) int { return len(strings.Fields(s)) }

func isQuestion(s string) bool { return strings.HasSuffix(strings.TrimSpace(s), "?") }

// topic names the material: the first input's first heading, or its title.
func (m material) topic() string {
	if len(m.inputs) > 0 {
		for _, l := range (material{inputs: m.inputs[:1]}).lines() {
			if l.heading {
				return cutWords(l.text, 120)
			}
		}
	}
	if len(m.inputs) > 0 {
		t := strings.TrimSpace(m.inputs[0].title)
		for _, ext := range []string{".md", ".markdown", ".txt", ".pdf"} {
			t = strings.TrimSuffix(t, ext)
		}
		if t = strings.TrimSpace(strings.NewReplacer("_", " ", "-", " ").Replace(t)); t != "" {
			return capitalise(cutWords(t, 120))
		}
	}
	return "Product initiative"
}

// problem is the first sentences of the first prose in the material.
func (m material) problem(title string) string {
	for _, l := range m.lines() {
		if l.heading || l.bullet || isQuestion(l.text) || words(l.text) < 4 {
			continue
		}
		s := splitSentences(l.text)
		return cutWords(strings.Join(s[:min(len(s), 2)], " "), 400)
	}
	return sentence("The team needs " + lowerFirst(title) + ", as the raw material describes")
}

// points are the statements the scope and requirements are made of: the
// material's list items, or else its sentences, questions and out-of-scope
// items left out.
func (m material) points() []string {
	var out []string
	add := func(s string) {
		s = cutWords(strings.TrimRight(strings.TrimSpace(s), ".;:"), 200)
		if len(out) >= maxPoints || words(s) < 3 || isQuestion(s) || outOfScopeLine.MatchString(s) ||
			slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, s) }) {
			return
		}
		out = append(out, s)
	}
	lines := m.lines()
	for _, l := range lines {
		if l.bullet && !outOfScopeHeading.MatchString(l.section) {
			add(l.text)
		}
	}
	if len(out) < 3 {
		for _, l := range lines {
			if l.heading || l.bullet || outOfScopeHeading.MatchString(l.section) {
				continue
			}
			for _, s := range splitSentences(l.text) {
				if words(s) >= 4 {
					add(s)
				}
			}
		}
	}
	if len(out) == 0 {
		out = []string{"Deliver " + lowerFirst(m.topic())}
	}
	return out
}

// outOfScope are the items under an out-of-scope heading, and the lines
// that say something is out of scope.
func (m material) outOfScope() []string {
	var out []string
	for _, l := range m.lines() {
		if l.heading || isQuestion(l.text) {
			continue
		}
		if outOfScopeHeading.MatchString(l.section) || outOfScopeLine.MatchString(l.text) {
			if s := cutWords(strings.TrimRight(l.text, "."), 200); s != "" && len(out) < 5 {
				out = append(out, s)
			}
		}
	}
	return out
}

// matching are up to n sentences of the material that match pattern.
func (m material) matching(pattern *regexp.Regexp, n int) []string {
	var out []string
	for _, l := range m.lines() {
		if l.heading {
			continue
		}
		for _, s := range splitSentences(l.text) {
			if len(out) < n && pattern.MatchString(s) && !isQuestion(s) && !slices.Contains(out, sentence(s)) {
				out = append(out, sentence(cutWords(s, 200)))
			}
		}
	}
	return out
}

// questions are the questions the material asks.
func (m material) questions() []string {
	var out []string
	for _, l := range m.lines() {
		for _, s := range splitSentences(l.text) {
			if isQuestion(s) && len(out) < 5 && !slices.Contains(out, s) {
				out = append(out, cutWords(s, 200))
			}
		}
	}
	return out
}

// personaWords are the roles the material may name, with the persona each
// stands for.
var personaWords = []struct{ word, persona string }{
	{"customer", "Customer"}, {"client", "Client"}, {"employee", "Employee"}, {"manager", "Manager"},
	{"admin", "Administrator"}, {"administrator", "Administrator"}, {"developer", "Developer"}, {"engineer", "Engineer"},
	{"finance", "Finance officer"}, {"accountant", "Accountant"}, {"support", "Support agent"}, {"operator", "Operator"},
	{"designer", "Designer"}, {"marketer", "Marketer"}, {"student", "Student"}, {"teacher", "Teacher"},
	{"patient", "Patient"}, {"doctor", "Doctor"}, {"nurse", "Nurse"}, {"buyer", "Buyer"}, {"seller", "Seller"},
	{"driver", "Driver"}, {"guest", "Guest"}, {"member", "Member"}, {"user", "User"},
}

// personas are the roles the material names, in order of appearance (at
// most three), or "User".
func (m material) personas() []string {
	var text strings.Builder
	for _, in := range m.inputs {
		text.WriteString(strings.ToLower(in.content))
		text.WriteString("\n")
	}
	all := text.String()
	type found struct {
		at      int
		persona string
	}
	var hits []found
	for _, pw := range personaWords {
		at := -1
		for _, form := range []string{pw.word, pw.word + "s"} {
			if i := wordIndex(all, form); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
		if at >= 0 && !slices.ContainsFunc(hits, func(f found) bool { return f.persona == pw.persona }) {
			hits = append(hits, found{at, pw.persona})
		}
	}
	slices.SortStableFunc(hits, func(a, b found) int { return a.at - b.at })
	var out []string
	for _, h := range hits[:min(len(hits), 3)] {
		out = append(out, h.persona)
	}
	if len(out) == 0 {
		out = []string{"User"}
	}
	return out
}

// needs is what a persona needs: the first of points that names the role,
// or the initiative itself.
func needs(persona, title string, points []string) string {
	key := strings.ToLower(strings.Fields(persona)[0])
	for _, pw := range personaWords {
		if pw.persona == persona {
			key = pw.word
			break
		}
	}
	for _, p := range points {
		lower := strings.ToLower(p)
		if wordIndex(lower, key) >= 0 || wordIndex(lower, key+"s") >= 0 {
			return sentence(p)
		}
	}
	return sentence("A dependable way to work with " + lowerFirst(title))
}

// wordIndex is where word first stands as a whole word in text, or -1.
func wordIndex(text, word string) int {
	for from := 0; ; {
		i := strings.Index(text[from:], word)
		if i < 0 {
			return -1
		}
		start, end := from+i, from+i+len(word)
		if (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end])) {
			return start
		}
		from = start + 1
	}
}
