package content

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// fieldErrors collects the problems of a request, so one answer names them
// all.
type fieldErrors []ports.FieldError

func (f *fieldErrors) add(field, reason string) {
	*f = append(*f, ports.FieldError{Field: field, Reason: reason})
}

func tooLong(max int) string { return fmt.Sprintf("must be at most %d characters", max) }

// text returns s trimmed, noting when it is longer than max characters or,
// if required, empty.
func (f *fieldErrors) text(field, s string, max int, required bool) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && required:
		f.add(field, "required")
	case len(s) > max && utf8.RuneCountInString(s) > max:
		f.add(field, tooLong(max))
	}
	return s
}

// list returns the entries of in trimmed, without empty ones and, if
// dedupe, without case-insensitive repeats (the first is kept); it notes
// entries longer than maxLen (by their index in in) and more than maxItems
// entries. The result is never nil.
func (f *fieldErrors) list(field string, in []string, maxItems, maxLen int, dedupe bool) []string {
	out := make([]string, 0, len(in))
	seen := map[string]bool{}
	for i, s := range in {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if len(s) > maxLen && utf8.RuneCountInString(s) > maxLen {
			f.add(fmt.Sprintf("%s[%d]", field, i), tooLong(maxLen))
		}
		if dedupe {
			key := strings.ToLower(s)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		out = append(out, s)
	}
	if len(out) > maxItems {
		f.add(field, fmt.Sprintf("must have at most %d entries", maxItems))
	}
	return out
}

func (f fieldErrors) err() error { return invalid(f) }

// clipRunes cuts s to at most max characters.
func clipRunes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := 0
	for i := range s {
		if n == max {
			return s[:i]
		}
		n++
	}
	return s
}
