package scm

import (
	"context"
	"errors"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// ConnectionState is what the caller's link to the provider is: whether the
// server can connect to the provider at all, whether the caller has
// connected, and if so as whom, with which scopes and how many
// repositories recorded.
type ConnectionState struct {
	// Configured reports whether connecting is set up on the server;
	// when it is not, Setup says what an admin must set.
	Configured bool
	Setup      string
	// Connected reports whether the caller has a connection (active or
	// broken); Status is its status and Error why it broke.
	Connected bool
	Status    string
	Error     string
	Login     string
	// Scopes are the OAuth scopes the provider granted, in its order.
	Scopes []string
	// Repositories is how many repositories the connection sees, as
	// recorded when it was made.
	Repositories int
}

// countPages bounds the pages of repositories counted for a state, as many
// as a connection records (repoPages of repoPageSize).
const countPages = repoPages * repoPageSize / MaxPageLimit

// Connection returns the state of the caller's connection to the provider.
// It calls the provider for nothing but to learn whether it is configured.
// Errors: unauthenticated without a principal; the store's.
func (s *Service) Connection(ctx context.Context) (ConnectionState, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ConnectionState{}, err
	}
	st := ConnectionState{Configured: true, Scopes: []string{}}
	if err := s.configured(); err != nil {
		st.Configured, st.Setup = false, errMessage(err)
	} else if _, err := s.d.Provider.AuthorizeURL("probe", "probe", s.redirectURI()); err != nil {
		var pe *ports.Error
		if !errors.As(err, &pe) || pe.Kind != ports.KindUnavailable {
			return ConnectionState{}, err
		}
		st.Configured, st.Setup = false, errMessage(err)
	}
	conn, err := s.d.Store.GetConnection(ctx, p.Owner(), s.cfg.Provider)
	if errors.Is(err, ports.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return ConnectionState{}, err
	}
	st.Connected, st.Status, st.Login = true, conn.Status, conn.Login
	if conn.Status == ports.SCMBroken {
		st.Error = "the provider no longer accepts the connection's token: connect again"
	}
	st.Scopes = splitScopes(conn.Scopes)
	cursor := ""
	for range countPages {
		repos, next, err := s.d.Store.ListRepositories(ctx, p.Owner(), ports.Page{Limit: MaxPageLimit, Cursor: cursor})
		if err != nil {
			return ConnectionState{}, err
		}
		st.Repositories += len(repos)
		if cursor = next; cursor == "" {
			break
		}
	}
	return st, nil
}

// errMessage is the message of a ports.Error, or the error's text.
func errMessage(err error) string {
	var pe *ports.Error
	if errors.As(err, &pe) && pe.Message != "" {
		return pe.Message
	}
	return err.Error()
}

// splitScopes reads a provider's scope list, separated by commas or spaces.
func splitScopes(s string) []string {
	// Never nil: an empty list is encoded as [], not null.
	return append([]string{}, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
}
