package spec

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// DerivedTitleLen is about how many characters a title derived from an
// input's content has at most (DeriveTitle cuts on a word boundary and adds
// an ellipsis).
const DerivedTitleLen = 80

// DeriveTitle is the title of an input sent without one: the first line of
// content with text, trimmed, its Markdown heading marks removed, control
// characters turned to spaces and runs of spaces collapsed, and cut at
// DerivedTitleLen characters on a word boundary with "…" when longer. A
// content without text (only spaces or heading marks) is "Untitled note"
// ("Untitled document", "Untitled transcript" for those kinds).
func DeriveTitle(kind ports.InputKind, content string) string {
	for line := range strings.Lines(content) {
		if t := titleOf(line); t != "" {
			return clipTitle(t)
		}
	}
	switch kind {
	case ports.InputDocument, ports.InputTranscript:
		return "Untitled " + string(kind)
	}
	return "Untitled note"
}

// titleOf is a line as a title: its text without ATX heading marks
// ("## Goals ##" is "Goals") or control characters, spaces collapsed; "" for
// a line without text.
func titleOf(line string) string {
	line = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, line)
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "#") {
		line = strings.TrimLeft(line, "#")
		if closed := strings.TrimRight(line, "#"); closed != line && (closed == "" || strings.HasSuffix(closed, " ")) {
			line = closed
		}
	}
	return strings.Join(strings.Fields(line), " ")
}

// clipTitle cuts t after at most DerivedTitleLen characters, at the last
// space within them when there is one, and marks the cut with "…".
func clipTitle(t string) string {
	r := []rune(t)
	if len(r) <= DerivedTitleLen {
		return t
	}
	cut := string(r[:DerivedTitleLen])
	if r[DerivedTitleLen] != ' ' {
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i]
		}
	}
	return strings.TrimRight(cut, " ") + "…"
}
