package scm

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/devpilot/devpilot/ports"
)

// Activity returns a page of a repository's activity, newest first, and the
// next page's cursor: what webhooks recorded merged with what the provider
// reports, each entry once (by id), each URL an absolute http(s) one or ""
// (webURL). repoID is devpilot's id of one of the caller's repositories. A
// zero Limit means 30.
//
// Errors: invalid for a limit outside 1..100 or a bad cursor; not_found when
// the repository is absent or another user's; precondition_failed
// (not_connected) without a connection; upstream (connection_broken) once the
// provider refused the connection's token, which marks it broken; the
// provider's other errors (rate_limited with RetryAfter, ...).
func (s *Service) Activity(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMActivity, string, error) {
	repo, conn, page, err := s.repoCall(ctx, repoID, page)
	if err != nil {
		return nil, "", err
	}
	cur, err := decodeCursor(page)
	if err != nil {
		return nil, "", err
	}
	m := merger{limit: page.Limit, size: cur.N, sources: [2]*source{
		{cursor: cur.S[0], fetch: func(p ports.Page) ([]ports.SCMActivity, string, error) {
			return s.d.Store.ListActivity(ctx, repo.ProviderID, p)
		}},
		{cursor: cur.S[1], fetch: func(p ports.Page) ([]ports.SCMActivity, string, error) {
			return list(ctx, s, conn, func(token string) ([]ports.SCMActivity, string, error) {
				return s.d.Provider.ListActivity(ctx, token, repo.Owner, repo.Name, p)
			})
		}},
	}}
	out, next, err := m.run()
	for i := range out {
		out[i].URL = webURL(out[i].URL)
	}
	return out, next, err
}

// The activity of two sources, each newest first with its own cursor, is
// merged page by page. The cursor of a merged page holds, for each source,
// the cursor of the source's page being read and how many of its entries
// were returned already; the next page fetches that page again and skips
// them. Every source page is fetched with the first request's limit, so the
// skips stay right if a later request asks for another limit.

// activityCursor is the opaque cursor of a merged activity page.
type activityCursor struct {
	N int             `json:"n"`
	S [2]sourceCursor `json:"s"`
}

type sourceCursor struct {
	Cursor string `json:"c,omitempty"`
	Skip   int    `json:"k,omitempty"`
	Done   bool   `json:"d,omitempty"`
}

func decodeCursor(page ports.Page) (activityCursor, error) {
	if page.Cursor == "" {
		return activityCursor{N: page.Limit}, nil
	}
	var c activityCursor
	b, err := base64.RawURLEncoding.DecodeString(page.Cursor)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.N < 1 || c.N > MaxPageLimit || c.S[0].Skip < 0 || c.S[1].Skip < 0 {
		return c, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "cursor", Reason: "is not a cursor this list returned"})
	}
	return c, nil
}

func (c activityCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

type source struct {
	fetch  func(ports.Page) ([]ports.SCMActivity, string, error)
	cursor sourceCursor
	loaded bool
	buf    []ports.SCMActivity // the unread entries of the page at cursor
	next   string
}

// settle moves a source whose page was read to the next page, unloaded.
func (src *source) settle() {
	if !src.loaded || len(src.buf) > 0 {
		return
	}
	if src.next == "" {
		src.cursor = sourceCursor{Done: true}
	} else {
		src.cursor = sourceCursor{Cursor: src.next}
	}
	src.loaded = false
}

type merger struct {
	limit, size int
	sources     [2]*source
}

// maxFetches bounds the source pages one merged page reads, should a
// source return empty pages with a next cursor.
const maxFetches = 6

func (m *merger) run() ([]ports.SCMActivity, string, error) {
	out := make([]ports.SCMActivity, 0, m.limit)
	seen := map[string]bool{}
	fetches := 0
	for len(out) < m.limit {
		for _, src := range m.sources {
			for !src.cursor.Done && len(src.buf) == 0 {
				src.settle()
				if src.cursor.Done {
					break
				}
				if fetches == maxFetches {
					return out, m.cursor(), nil
				}
				fetches++
				items, next, err := src.fetch(ports.Page{Limit: m.size, Cursor: src.cursor.Cursor})
				if err != nil {
					return nil, "", err
				}
				src.loaded, src.next, src.buf = true, next, items[min(src.cursor.Skip, len(items)):]
			}
		}
		var pick *source
		for _, src := range m.sources {
			if len(src.buf) > 0 && (pick == nil || src.buf[0].At.After(pick.buf[0].At)) {
				pick = src
			}
		}
		if pick == nil {
			break
		}
		a := pick.buf[0]
		// An entry both sources know has the same time in both, so it
		// heads the other source now: it is read there too.
		for _, src := range m.sources {
			for len(src.buf) > 0 && src.buf[0].ID == a.ID {
				src.buf = src.buf[1:]
				src.cursor.Skip++
			}
		}
		if !seen[a.ID] {
			seen[a.ID] = true
			out = append(out, a)
		}
	}
	return out, m.cursor(), nil
}

// cursor is the next merged page's cursor, "" when both sources are done.
func (m *merger) cursor() string {
	c := activityCursor{N: m.size}
	done := true
	for i, src := range m.sources {
		src.settle()
		c.S[i] = src.cursor
		done = done && src.cursor.Done
	}
	if done {
		return ""
	}
	return c.encode()
}
