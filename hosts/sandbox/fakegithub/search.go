package fakegithub

import (
	"strings"
)

// searchQuery is a parsed commit-search q: free-text terms, all of which a
// commit message must contain (case-insensitively; "quoted phrases" count as
// one term), and the qualifiers repo:OWNER/NAME, org:OWNER, user:OWNER,
// author:LOGIN, author-name:NAME, author-email:EMAIL and hash:SHA (a prefix).
// Other qualifiers are ignored, as GitHub ignores the ones it does not know
// of.
type searchQuery struct {
	terms        []string
	repos        []string
	owners       []string
	authors      []string
	authorNames  []string
	authorEmails []string
	hashes       []string
}

func parseSearch(q string) searchQuery {
	var sq searchQuery
	for _, tok := range tokenize(q) {
		key, value, ok := strings.Cut(tok, ":")
		if !ok || value == "" || strings.ContainsAny(key, " \"") {
			sq.terms = append(sq.terms, strings.ToLower(strings.Trim(tok, `"`)))
			continue
		}
		value = strings.Trim(value, `"`)
		switch strings.ToLower(key) {
		case "repo":
			sq.repos = append(sq.repos, value)
		case "org", "user":
			sq.owners = append(sq.owners, value)
		case "author":
			sq.authors = append(sq.authors, value)
		case "author-name":
			sq.authorNames = append(sq.authorNames, strings.ToLower(value))
		case "author-email":
			sq.authorEmails = append(sq.authorEmails, value)
		case "hash":
			sq.hashes = append(sq.hashes, strings.ToLower(value))
		}
	}
	return sq
}

// tokenize splits q at spaces outside double quotes.
func tokenize(q string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range q {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '\t') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func (sq searchQuery) matchRepo(r *Repo) bool {
	if len(sq.repos) > 0 && !anyFold(sq.repos, r.FullName()) {
		return false
	}
	return len(sq.owners) == 0 || anyFold(sq.owners, r.owner.login)
}

func (sq searchQuery) matchCommit(c Commit) bool {
	msg := strings.ToLower(c.Message)
	for _, t := range sq.terms {
		if !strings.Contains(msg, t) {
			return false
		}
	}
	if len(sq.authors) > 0 && !anyFold(sq.authors, c.Author) ||
		len(sq.authorEmails) > 0 && !anyFold(sq.authorEmails, c.AuthorEmail) {
		return false
	}
	for _, n := range sq.authorNames {
		if !strings.Contains(strings.ToLower(c.AuthorName), n) {
			return false
		}
	}
	for _, h := range sq.hashes {
		if !strings.HasPrefix(c.SHA, h) {
			return false
		}
	}
	return true
}

func anyFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
