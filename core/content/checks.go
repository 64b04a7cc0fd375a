package content

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// The kinds of ports.ContentCheck.
const (
	CheckBannedWord    = "banned_word"
	CheckPreferredTerm = "preferred_term"
	CheckLength        = "length"
)

// Check runs the brand checks on a content item's text and returns the
// findings, never nil: one banned_word check per banned word or phrase found
// in the title or body (ignoring case, as whole words), in the brand's
// order, with how often it occurs; one preferred_term check per term to
// avoid that is found, ordered by term; and a length check when the body's
// words (as strings.Fields counts them) are fewer than brief.MinWords or
// more than brief.MaxWords, where those are set.
func Check(b ports.Brand, brief ports.Brief, title, body string) []ports.ContentCheck {
	out := []ports.ContentCheck{}
	text := title + "\n" + body
	for _, w := range b.BannedWords {
		if n := countTerm(text, w); n > 0 {
			out = append(out, ports.ContentCheck{Kind: CheckBannedWord, Term: w,
				Message: fmt.Sprintf("uses the banned %s %q %s", wordOrPhrase(w), w, times(n))})
		}
	}
	for _, avoid := range slices.Sorted(maps.Keys(b.PreferredTerms)) {
		if countTerm(text, avoid) > 0 {
			out = append(out, ports.ContentCheck{Kind: CheckPreferredTerm, Term: avoid,
				Message: fmt.Sprintf("uses %q; the brand prefers %q", avoid, b.PreferredTerms[avoid])})
		}
	}
	words := len(strings.Fields(body))
	switch {
	case brief.MinWords > 0 && words < brief.MinWords:
		out = append(out, ports.ContentCheck{Kind: CheckLength,
			Message: fmt.Sprintf("the body has %d %s; the brief asks for at least %d", words, plural(words, "word"), brief.MinWords)})
	case brief.MaxWords > 0 && words > brief.MaxWords:
		out = append(out, ports.ContentCheck{Kind: CheckLength,
			Message: fmt.Sprintf("the body has %d %s; the brief asks for at most %d", words, plural(words, "word"), brief.MaxWords)})
	}
	return out
}

func wordOrPhrase(term string) string {
	if len(strings.Fields(term)) > 1 {
		return "phrase"
	}
	return "word"
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

var apostrophes = strings.NewReplacer("'", "['’]", "’", "['’]")

// termPattern matches term ignoring case, with any run of whitespace
// between its words and either apostrophe (' or ’) for one; nil for a term
// without words.
func termPattern(term string) *regexp.Regexp {
	words := strings.Fields(term)
	if len(words) == 0 {
		return nil
	}
	for i, w := range words {
		words[i] = apostrophes.Replace(regexp.QuoteMeta(w))
	}
	return regexp.MustCompile(`(?i)` + strings.Join(words, `\s+`))
}

// countTerm counts the occurrences of term in text as a whole word or
// phrase: where the term begins (ends) with a letter or digit, the text must
// not continue it with another one, so "cheap" is not found in "cheaper".
// Scripts written without spaces between words (Chinese, Japanese, Thai, …)
// have no such boundaries, so there any occurrence counts.
func countTerm(text, term string) int {
	re := termPattern(term)
	if re == nil {
		return 0
	}
	n := 0
	for pos := 0; pos < len(text); {
		loc := re.FindStringIndex(text[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if wholeWord(text, start, end) {
			n++
			pos = end
			continue
		}
		_, size := utf8.DecodeRuneInString(text[start:])
		pos = start + size
	}
	return n
}

// wholeWord reports whether text[start:end] is not part of a longer word.
func wholeWord(text string, start, end int) bool {
	first, _ := utf8.DecodeRuneInString(text[start:end])
	last, _ := utf8.DecodeLastRuneInString(text[start:end])
	if start > 0 && wordRune(first) && !unspaced(first) {
		if before, _ := utf8.DecodeLastRuneInString(text[:start]); wordRune(before) {
			return false
		}
	}
	if end < len(text) && wordRune(last) && !unspaced(last) {
		if after, _ := utf8.DecodeRuneInString(text[end:]); wordRune(after) {
			return false
		}
	}
	return true
}

func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
}

// unspaced reports whether r belongs to a script written without spaces
// between words.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}
