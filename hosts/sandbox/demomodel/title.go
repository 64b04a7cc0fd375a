package demomodel

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The assistant asks for a conversation's title with a system message that
// begins so (core/assistant/title.go), and sends the conversation as lines
// "User: …" and "Assistant: …".
const (
	titleMarker     = "You name conversations"
	defaultTitleLen = 60
)

var titleLenPattern = regexp.MustCompile(`at most (\d+) characters`)

func isTitleRequest(req *fakeopenai.Request) bool {
	for _, msg := range req.Messages {
		if msg.Role == "system" && strings.Contains(msg.Content, titleMarker) {
			return true
		}
	}
	return false
}

// title names a conversation after the first thing the user said: its first
// sentence, without a trailing question mark or period, capitalised, and cut
// at a word to the length asked for (at most 60 characters).
func title(req *fakeopenai.Request) string {
	limit := defaultTitleLen
	var transcript string
	for _, msg := range req.Messages {
		switch msg.Role {
		case "system":
			if m := titleLenPattern.FindStringSubmatch(msg.Content); m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
					limit = min(limit, n)
				}
			}
		case "user":
			if transcript == "" {
				transcript = msg.Content
			}
		}
	}
	first := transcript
	for para := range strings.SplitSeq(transcript, "\n\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(para), "User:"); ok {
			first = rest
			break
		}
	}
	t := firstSentence(oneLine(first))
	t = strings.TrimRight(t, " .?!:;,")
	t = strings.Trim(t, "\"'`“”‘’")
	if t == "" {
		return "New conversation"
	}
	return capitalise(cutWords(t, limit))
}

// firstSentence is s up to the end of its first sentence.
func firstSentence(s string) string {
	for i, r := range s {
		if r == '.' || r == '?' || r == '!' {
			if next := i + 1; next == len(s) || s[next] == ' ' {
				return s[:i]
			}
		}
	}
	return s
}

// cutWords cuts s to at most limit characters, at a space when it can.
func cutWords(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	cut, n := 0, 0
	for i := range s {
		if n == limit {
			cut = i
			break
		}
		n++
	}
	head := s[:cut]
	if sp := strings.LastIndexByte(head, ' '); sp > len(head)/2 {
		head = head[:sp]
	}
	return strings.TrimRight(head, " ,;:-")
}

func capitalise(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

func lowerFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || size == len(s) {
		return strings.ToLower(s)
	}
	if s == "I" || strings.HasPrefix(s, "I ") {
		return s
	}
	// Keep acronyms ("API gateway") as they are.
	if next, _ := utf8.DecodeRuneInString(s[size:]); unicode.IsUpper(next) {
		return s
	}
	return string(unicode.ToLower(r)) + s[size:]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
