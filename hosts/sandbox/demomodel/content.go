package demomodel

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// briefPrompt is what core/content's prompt says about the piece to write.
type briefPrompt struct {
	audience                                    string
	title, goal, briefAudience, channel, format string
	keywords                                    []string
	cta                                         string
	minWords, maxWords                          int
	variant                                     int
	banned                                      []string
	preferred                                   [][2]string // avoid → use
}

var (
	quotedString     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	preferredLine    = regexp.MustCompile(`^- ("(?:[^"\\]|\\.)*") → ("(?:[^"\\]|\\.)*")$`)
	lengthBothWords  = regexp.MustCompile(`(\d+) to (\d+) words`)
	lengthMinWords   = regexp.MustCompile(`at least (\d+) words`)
	lengthMaxWords   = regexp.MustCompile(`at most (\d+) words`)
	variantPattern   = regexp.MustCompile(`this is variant (\d+)`)
	bannedLinePrefix = "Never use these words or phrases: "
)

func readBriefPrompt(req *fakeopenai.Request) briefPrompt {
	b := briefPrompt{variant: 1}
	for _, msg := range req.Messages {
		switch msg.Role {
		case "system":
			inBrand := false
			for l := range strings.SplitSeq(msg.Content, "\n") {
				if l == "# Brand" {
					inBrand = true
					continue
				}
				if !inBrand {
					continue
				}
				if rest, ok := strings.CutPrefix(l, bannedLinePrefix); ok {
					for _, q := range quotedString.FindAllString(rest, -1) {
						if w, err := strconv.Unquote(q); err == nil && strings.TrimSpace(w) != "" {
							b.banned = append(b.banned, w)
						}
					}
				} else if m := preferredLine.FindStringSubmatch(l); m != nil {
					avoid, err1 := strconv.Unquote(m[1])
					use, err2 := strconv.Unquote(m[2])
					if err1 == nil && err2 == nil && strings.TrimSpace(avoid) != "" {
						b.preferred = append(b.preferred, [2]string{avoid, use})
					}
				}
				field(l, "Audience: ", &b.audience)
			}
		case "user":
			if !strings.Contains(msg.Content, "<brief>") {
				continue
			}
			body, _, _ := strings.Cut(msg.Content[strings.Index(msg.Content, "<brief>"):], "</brief>")
			for l := range strings.SplitSeq(body, "\n") {
				field(l, "Title: ", &b.title)
				field(l, "Goal: ", &b.goal)
				field(l, "Audience: ", &b.briefAudience)
				field(l, "Channel: ", &b.channel)
				field(l, "Format: ", &b.format)
				field(l, "Call to action: ", &b.cta)
				var kw, length string
				if field(l, "Keywords to work in: ", &kw) {
					for k := range strings.SplitSeq(kw, ",") {
						if k = strings.TrimSpace(k); k != "" {
							b.keywords = append(b.keywords, k)
						}
					}
				}
				if field(l, "Length: ", &length) {
					if m := lengthBothWords.FindStringSubmatch(length); m != nil {
						b.minWords, _ = strconv.Atoi(m[1])
						b.maxWords, _ = strconv.Atoi(m[2])
					} else if m := lengthMinWords.FindStringSubmatch(length); m != nil {
						b.minWords, _ = strconv.Atoi(m[1])
					} else if m := lengthMaxWords.FindStringSubmatch(length); m != nil {
						b.maxWords, _ = strconv.Atoi(m[1])
					}
				}
			}
			if m := variantPattern.FindStringSubmatch(msg.Content); m != nil {
				b.variant, _ = strconv.Atoi(m[1])
			}
		}
	}
	return b
}

// field sets *dst to the rest of l when l starts with name and *dst is
// still empty; it reports whether it did.
func field(l, name string, dst *string) bool {
	if rest, ok := strings.CutPrefix(l, name); ok && *dst == "" {
		*dst = strings.TrimSpace(rest)
		return true
	}
	return false
}

// shortFormats are the formats and channels written as plain short copy.
var shortFormats = regexp.MustCompile(`(?i)\b(post|ad|ads|tweet|social|linkedin|twitter|x|instagram|facebook|sms|push|banner|caption)\b`)

// draft is the JSON answer core/content asks for.
type draft struct {
	Title string `json:"title"`
	Body  string `json:"body"`
}

// contentDraft writes a piece from the brief in the prompt: the brief's
// goal, audience, keywords and call to action in a fixed structure, as
// long as the brief asks, with the brand's preferred terms and without its
// banned words.
func contentDraft(req *fakeopenai.Request) any {
	b := readBriefPrompt(req)
	w := newWriter(b)
	topic := cmpOr(strings.TrimSpace(b.title), "our news")
	short := shortFormats.MatchString(b.format + " " + b.channel)
	audience := cmpOr(b.briefAudience, b.audience)

	title := topic
	switch b.variant {
	case 2:
		title = "A story about " + lowerFirst(topic)
	case 3:
		title = "Why " + lowerFirst(topic) + " matters now"
	}
	title = cutWords(w.scrub(title), 200)
	if title == "" {
		title = "A note for " + cmpOr(w.scrub(audience), "our readers")
		if title = cutWords(w.scrub(title), 200); title == "" {
			title = "Draft"
		}
	}

	var keywords []string
	for _, k := range b.keywords {
		if k = w.scrub(k); k != "" {
			keywords = append(keywords, k)
		}
	}
	subject := lowerFirst(topic)
	if w.scrub(subject) != subject {
		subject = "this"
	}

	var opening []string
	switch b.variant {
	case 2:
		opening = append(opening, fmt.Sprintf("Picture the moment %s finally clicks for you.", subject))
	case 3:
		opening = append(opening, fmt.Sprintf("Most teams underestimate %s, and it costs them.", subject))
	}
	if g := strings.TrimSpace(b.goal); g != "" {
		opening = append(opening, sentence(g))
	} else {
		opening = append(opening, sentence("This piece is about "+subject))
	}
	if audience != "" {
		opening = append(opening, sentence("It is written for "+lowerFirst(strings.TrimRight(audience, "."))))
	}
	for _, k := range keywords {
		opening = append(opening, fmt.Sprintf("Consider what %s can do for you.", k))
	}

	target, limit := b.lengthGoal(short)
	ctaText := ""
	if c := strings.TrimSpace(b.cta); c != "" {
		ctaText = sentence(w.scrub(c))
		if strings.Trim(ctaText, ". ") == "" {
			ctaText = ""
		}
	}
	limit -= words(ctaText)

	var body bodyBuilder
	body.headings = !short
	body.keywords = keywords
	add := func(s string) bool {
		s = w.apply(s)
		if s == "" || w.uses(s) {
			return true // skipped, not too long
		}
		return body.add(s, limit)
	}
	for _, s := range opening {
		if body.words >= target || !add(s) {
			break
		}
	}
	for i := 0; body.words < target && i < 4000; i++ {
		if !add(filler(i, subject, keywords)) {
			break
		}
	}
	text := body.String()
	if text == "" { // the brief allows fewer words than a sentence has
		text = w.scrub(strings.Join(strings.Fields(opening[0])[:min(words(opening[0]), max(1, limit))], " "))
		if text == "" {
			text = "Draft."
		}
	}
	if ctaText != "" {
		text += "\n\n" + ctaText
	}
	return draft{Title: title, Body: text}
}

// lengthGoal is how many words to write and the most allowed.
func (b briefPrompt) lengthGoal(short bool) (target, limit int) {
	limit = 1 << 30
	if b.maxWords > 0 {
		limit = b.maxWords
	}
	switch {
	case b.minWords > 0 && b.maxWords > 0:
		return (b.minWords + b.maxWords) / 2, limit
	case b.minWords > 0:
		return b.minWords + 20, limit
	case b.maxWords > 0:
		return max(1, min(b.maxWords*4/5, 300)), limit
	case short:
		return 60, limit
	}
	return 250, limit
}

// fillerTemplates are the sentences that make up the body after its
// opening; %s is a keyword (or the subject).
var fillerTemplates = []string{
	"Start small with %s and build on what works.",
	"Teams that get %s right spend less time on busywork and more on what matters.",
	"A clear plan for %s helps everyone see the next step.",
	"Measure the results of %s early, and adjust as you learn.",
	"Share what you learn about %s with the people who depend on it.",
	"Keep %s simple enough that a newcomer understands it in minutes.",
	"The best results with %s come from steady habits, not big bangs.",
	"Ask the people closest to the work how %s could help them.",
	"Write down what good looks like for %s before you begin.",
	"Small, regular improvements to %s add up over a quarter.",
	"Make %s visible, so progress is easy to celebrate.",
	"Review %s together once a month and drop what no longer helps.",
}

// connectors open the repeated rounds of the templates, so that no sentence
// is said twice.
var connectors = []string{"", "In practice, ", "Over time, ", "Above all, ", "Once more: ", "In short, ", "Remember: ", "Put simply, "}

// filler is the i-th sentence of the body after its opening.
func filler(i int, subject string, keywords []string) string {
	n := len(fillerTemplates)
	round, t := i/n, i%n
	kw := subject
	if len(keywords) > 0 {
		kw = keywords[(i+round)%len(keywords)]
	}
	s := fmt.Sprintf(fillerTemplates[t], kw)
	if round == 0 {
		return s
	}
	c := connectors[round%len(connectors)]
	s = c + lowerFirst(s)
	if round >= len(connectors) {
		s = strings.TrimSuffix(s, ".") + fmt.Sprintf(" (%d).", round/len(connectors)+1)
	}
	return s
}

// bodyBuilder lays sentences out in paragraphs of three, with a subheading
// before every second paragraph of long formats, counting words as
// strings.Fields does.
type bodyBuilder struct {
	headings  bool
	keywords  []string
	paras     [][]string
	headingOf map[int]string
	words     int
}

// add appends s unless that would take the body over limit words; it
// reports whether it did.
func (b *bodyBuilder) add(s string, limit int) bool {
	n := words(s)
	newPara := len(b.paras) == 0 || len(b.paras[len(b.paras)-1]) == 3
	heading := ""
	if newPara && b.headings && len(b.paras) > 0 && len(b.paras)%2 == 0 {
		heading = "## " + b.headingText(len(b.paras)/2)
		n += words(heading)
	}
	if b.words+n > limit {
		return false
	}
	if newPara {
		b.paras = append(b.paras, nil)
		if heading != "" {
			if b.headingOf == nil {
				b.headingOf = map[int]string{}
			}
			b.headingOf[len(b.paras)-1] = heading
		}
	}
	b.paras[len(b.paras)-1] = append(b.paras[len(b.paras)-1], s)
	b.words += n
	return true
}

func (b *bodyBuilder) headingText(i int) string {
	if len(b.keywords) > 0 {
		return capitalise(b.keywords[(i-1)%len(b.keywords)])
	}
	return []string{"Why it matters", "How to start", "What to measure", "What comes next"}[(i-1)%4]
}

func (b *bodyBuilder) String() string {
	var out []string
	for i, p := range b.paras {
		if h := b.headingOf[i]; h != "" {
			out = append(out, h)
		}
		out = append(out, strings.Join(p, " "))
	}
	return strings.Join(out, "\n\n")
}

// writer applies the brand's word rules.
type writer struct {
	preferred []preferredTerm
	banned    []*regexp.Regexp
}

type preferredTerm struct {
	avoid *regexp.Regexp
	use   string
}

func newWriter(b briefPrompt) writer {
	var w writer
	for _, p := range b.preferred {
		if re := termPattern(p[0]); re != nil {
			w.preferred = append(w.preferred, preferredTerm{re, p[1]})
		}
	}
	for _, t := range b.banned {
		if re := termPattern(t); re != nil {
			w.banned = append(w.banned, re)
		}
	}
	return w
}

// apply replaces the terms the brand avoids with the ones it prefers.
func (w writer) apply(s string) string {
	for _, p := range w.preferred {
		s = replaceTerm(s, p.avoid, p.use, true)
	}
	return s
}

// uses reports whether s holds a banned word or phrase anywhere, even
// inside a longer word: stricter than core/content's check, which counts
// whole words only (outside scripts written without spaces).
func (w writer) uses(s string) bool {
	for _, re := range w.banned {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// scrub applies the preferred terms and removes every banned word or
// phrase from s: whole words first, then what is left inside longer ones.
func (w writer) scrub(s string) string {
	s = w.apply(s)
	for _, re := range w.banned {
		s = replaceTerm(s, re, "", true)
		s = replaceTerm(s, re, "", false)
	}
	return strings.Trim(oneLine(strings.NewReplacer(" ,", ",", " .", ".").Replace(oneLine(s))), " ,;:-")
}

// termPattern matches a term as core/content's checks find it: ignoring
// case, with any run of space between its words and either apostrophe.
func termPattern(term string) *regexp.Regexp {
	ws := strings.Fields(term)
	if len(ws) == 0 {
		return nil
	}
	for i, w := range ws {
		ws[i] = strings.NewReplacer("'", "['’]", "’", "['’]").Replace(regexp.QuoteMeta(w))
	}
	return regexp.MustCompile(`(?i)` + strings.Join(ws, `\s+`))
}

// termAt finds re in s from pos, as a whole word or phrase when whole is
// set: [start, end], or nil.
func termAt(s string, re *regexp.Regexp, pos int, whole bool) []int {
	for pos < len(s) {
		loc := re.FindStringIndex(s[pos:])
		if loc == nil {
			return nil
		}
		start, end := pos+loc[0], pos+loc[1]
		if !whole || wholeWord(s, start, end) {
			return []int{start, end}
		}
		_, size := utf8.DecodeRuneInString(s[start:])
		pos = start + size
	}
	return nil
}

func replaceTerm(s string, re *regexp.Regexp, with string, whole bool) string {
	for pos := 0; ; {
		loc := termAt(s, re, pos, whole)
		if loc == nil {
			return s
		}
		s = s[:loc[0]] + with + s[loc[1]:]
		pos = loc[0] + len(with)
	}
}

func wholeWord(text string, start, end int) bool {
	first, _ := utf8.DecodeRuneInString(text[start:end])
	last, _ := utf8.DecodeLastRuneInString(text[start:end])
	if start > 0 && wordRune(first) {
		if before, _ := utf8.DecodeLastRuneInString(text[:start]); wordRune(before) {
			return false
		}
	}
	if end < len(text) && wordRune(last) {
		if after, _ := utf8.DecodeRuneInString(text[end:]); wordRune(after) {
			return false
		}
	}
	return true
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
}
