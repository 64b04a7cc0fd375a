package ports

import (
	"fmt"
	"slices"
	"strings"
)

// Scopes bound what an API token may do. The grammar is small:
//
//	scope  = "read" | "write" | area | area ":read" | area ":write"
//	area   = "assistant" | "spec" | "cloud" | "content" | "voice" | "scm"
//
// "read" reads every area and the account (the caller's tokens, the
// organisation's members, usage and audit); "write" writes them, and reads
// them too. An area alone is the area's read and write; "area:write" writes
// the area and reads it; "area:read" only reads it. A token with
// DefaultScopes (["read","write"]) can do whatever its user can, as every
// token could before scopes. Console sign-in sessions are not scoped.

// ScopeArea is a part of the product a scope names. The empty area is the
// account (tokens, members, invitations, usage, budget, audit), which only
// the plain "read" and "write" scopes cover.
type ScopeArea string

// The areas a scope may name.
const (
	ScopeAccount   ScopeArea = ""
	ScopeAssistant ScopeArea = "assistant"
	ScopeSpec      ScopeArea = "spec"
	ScopeCloud     ScopeArea = "cloud"
	ScopeContent   ScopeArea = "content"
	ScopeVoice     ScopeArea = "voice"
	ScopeSCM       ScopeArea = "scm"
)

// ScopeAreas lists the areas a scope may name, in the order they are shown.
var ScopeAreas = []ScopeArea{ScopeAssistant, ScopeSpec, ScopeCloud, ScopeContent, ScopeVoice, ScopeSCM}

// The plain scopes.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
)

// DefaultScopes are a token's scopes when none are asked for: everything
// its user may do.
var DefaultScopes = []string{ScopeRead, ScopeWrite}

// CodeInsufficientScope is the code of a request refused because the
// token's scopes do not cover it (RFC 6750's insufficient_scope).
const CodeInsufficientScope = "insufficient_scope"

// MaxScopes bounds how many scopes one token lists.
const MaxScopes = 32

// ValidScope reports whether s is a scope of the grammar above.
func ValidScope(s string) bool {
	if s == ScopeRead || s == ScopeWrite {
		return true
	}
	area, access, hasAccess := strings.Cut(s, ":")
	if hasAccess && access != ScopeRead && access != ScopeWrite {
		return false
	}
	return slices.Contains(ScopeAreas, ScopeArea(area))
}

// CheckScopes validates the scopes a token is asked for and returns them
// without duplicates, in the order given; none at all is DefaultScopes.
// Errors: invalid (field scopes, or scopes[i] for the first unknown one).
func CheckScopes(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return slices.Clone(DefaultScopes), nil
	}
	if len(scopes) > MaxScopes {
		return nil, Invalid("invalid scopes", FieldError{Field: "scopes", Reason: fmt.Sprintf("must list at most %d scopes", MaxScopes)})
	}
	out := make([]string, 0, len(scopes))
	for i, s := range scopes {
		if !ValidScope(s) {
			return nil, Invalid(fmt.Sprintf("unknown scope %q", OneLine(s)), FieldError{Field: fmt.Sprintf("scopes[%d]", i),
				Reason: `unknown scope: use read, write, or an area (assistant, spec, cloud, content, voice, scm) alone or with :read or :write`})
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// ScopesAllow reports whether scopes cover reading (write false) or
// writing (write true) area. Nil scopes are unscoped and allow everything.
func ScopesAllow(scopes []string, area ScopeArea, write bool) bool {
	if scopes == nil {
		return true
	}
	for _, s := range scopes {
		switch {
		case s == ScopeWrite, s == ScopeRead && !write:
			return true
		case area == ScopeAccount:
		case s == string(area), s == string(area)+":write", s == string(area)+":read" && !write:
			return true
		}
	}
	return false
}

// NeededScope is the narrowest scope that allows the access: "area:read"
// or "area:write", or "read" or "write" for the account.
func NeededScope(area ScopeArea, write bool) string {
	access := ScopeRead
	if write {
		access = ScopeWrite
	}
	if area == ScopeAccount {
		return access
	}
	return string(area) + ":" + access
}

// ScopesWithin reports whether every access want allows, have allows too:
// a token may only make tokens that can do no more than itself.
func ScopesWithin(want, have []string) bool {
	if have == nil {
		return true
	}
	if want == nil {
		want = DefaultScopes
	}
	for _, area := range append([]ScopeArea{ScopeAccount}, ScopeAreas...) {
		for _, write := range []bool{false, true} {
			if ScopesAllow(want, area, write) && !ScopesAllow(have, area, write) {
				return false
			}
		}
	}
	return true
}

// InsufficientScope is the forbidden Error of an access that the caller's
// token scopes do not cover; its message names the scope needed.
func InsufficientScope(area ScopeArea, write bool, what string) *Error {
	need := NeededScope(area, write)
	return &Error{Kind: KindForbidden, Code: CodeInsufficientScope,
		Message: fmt.Sprintf("this token's scopes do not allow %s: it needs the scope %s (or %s)", what, need, plainScope(write))}
}

func plainScope(write bool) string {
	if write {
		return ScopeWrite
	}
	return ScopeRead
}

// Allows reports whether p may read (write false) or write area: a
// console session or an unscoped token may do anything, a scoped token
// what its scopes allow.
func (p Principal) Allows(area ScopeArea, write bool) bool {
	if p.Session {
		return true
	}
	return ScopesAllow(p.Scopes, area, write)
}
