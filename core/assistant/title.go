package assistant

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

const (
	titlePrompt = `You name conversations. Reply with a title for the conversation below: at most %d characters, in the language of the conversation, no quotes, no trailing period, nothing else.`
	// The title is about how the conversation began: its first few thousand
	// characters are enough.
	titleTranscriptLen = 6000
	titleMaxTokens     = 60
)

// GenerateTitle asks the model for a title of the caller's session (at most
// Config.TitleMaxLen characters), stores it on the session and returns it.
// Errors: invalid (field session_id) for a malformed id; not_found when the
// session is absent or another's; conflict (empty_session) when nothing has
// been said in it; the model's errors (rate_limited, unavailable, …).
func (s *Service) GenerateTitle(ctx context.Context, sessionID string) (string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return "", err
	}
	if f := requireID("session_id", sessionID); f != nil {
		return "", ports.Invalid("invalid request", *f)
	}
	if _, err := s.d.Sessions.GetSession(ctx, p.Owner(), sessionID); err != nil {
		return "", err
	}
	msgs, err := s.d.Messages.ListMessages(ctx, sessionID)
	if err != nil {
		return "", err
	}
	transcript, firstUser := transcriptOf(msgs)
	if transcript == "" {
		return "", &ports.Error{Kind: ports.KindConflict, Code: CodeEmptySession,
			Message: fmt.Sprintf("chat session %s has no messages to name it by", sessionID)}
	}
	ctx = ports.WithAttribution(ctx, ports.Attribution{OrgID: p.OrgID, UserID: p.UserID, Feature: ports.FeatureTitle})
	res, err := s.d.LLM.Chat(ctx, ports.ChatRequest{
		Model: s.cfg.Model,
		Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: fmt.Sprintf(titlePrompt, s.cfg.TitleMaxLen)},
			{Role: ports.MessageUser, Content: transcript},
		},
		MaxTokens: titleMaxTokens,
	}, nil)
	if err != nil {
		return "", err
	}
	title := cleanTitle(res.Content, s.cfg.TitleMaxLen)
	if title == "" {
		title = cleanTitle(firstUser, s.cfg.TitleMaxLen)
	}
	if err := s.d.Sessions.SetSessionTitle(ctx, p.Owner(), sessionID, title, s.d.Clock.Now()); err != nil {
		return "", err
	}
	return title, nil
}

// transcriptOf is what the user and the assistant said, clipped, and the
// user's first message.
func transcriptOf(msgs []ports.ChatMessage) (transcript, firstUser string) {
	var b strings.Builder
	for _, m := range msgs {
		text := strings.TrimSpace(m.Content)
		if text == "" || (m.Role != ports.MessageUser && m.Role != ports.MessageAssistant) {
			continue
		}
		if m.Role == ports.MessageUser && firstUser == "" {
			firstUser = text
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		if m.Role == ports.MessageUser {
			b.WriteString("User: ")
		} else {
			b.WriteString("Assistant: ")
		}
		b.WriteString(text)
		if b.Len() >= titleTranscriptLen {
			break
		}
	}
	return truncate(b.String(), titleTranscriptLen, ""), firstUser
}

const titleQuotes = "\"'`“”‘’«»„*_#"

// cleanTitle makes a model's answer a title: its first line, without a
// "Title:" label, quotes or a trailing period, spaces collapsed, and at most
// max characters (cut at a word with an ellipsis when longer).
func cleanTitle(s string, max int) string {
	for line := range strings.Lines(s) {
		if strings.TrimSpace(line) != "" {
			s = line
			break
		}
	}
	s = strings.TrimSpace(s)
	if len(s) >= 6 && strings.EqualFold(s[:6], "title:") {
		s = s[6:]
	}
	for {
		t := strings.TrimSpace(strings.Trim(strings.TrimSpace(s), titleQuotes))
		t = strings.TrimRight(t, ".")
		if t == s {
			break
		}
		s = t
	}
	return truncate(ports.OneLine(s), max, "…")
}

// truncate cuts s to at most max characters, at a space when there is one in
// the last fifth, ending with tail.
func truncate(s string, max int, tail string) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	keep := max - utf8.RuneCountInString(tail)
	cut := 0
	for i := range s {
		if keep == 0 {
			cut = i
			break
		}
		keep--
	}
	head := s[:cut]
	if sp := strings.LastIndexByte(head, ' '); sp > len(head)*4/5 {
		head = head[:sp]
	}
	return strings.TrimRight(head, " ,;:-") + tail
}
