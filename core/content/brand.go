package content

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// DefaultBrand is the brand settings of a project that has none stored:
// a plain, friendly voice and nothing banned or preferred. Its Version is 0
// and its UpdatedAt zero; its lists and map are empty, not nil.
func DefaultBrand(orgID, projectID string) ports.Brand {
	return ports.Brand{
		OrgID:          orgID,
		ProjectID:      projectID,
		Voice:          "Clear, confident and friendly: plain words, short sentences, active voice.",
		Tone:           []string{"professional", "approachable"},
		Values:         []string{},
		BannedWords:    []string{},
		PreferredTerms: map[string]string{},
		Examples:       []string{},
	}
}

// BrandInput is the whole of a project's brand settings, replacing what is
// stored. Text is trimmed; empty list entries are dropped and banned words
// repeated case-insensitively are kept once.
type BrandInput struct {
	Name        string
	Voice       string
	Tone        []string
	Audience    string
	Values      []string
	BannedWords []string
	// BannedWordsBlocking makes a banned word in an item's text block its
	// approval and publication, override or not.
	BannedWordsBlocking bool
	// PreferredTerms maps a term to avoid to the term to use instead.
	PreferredTerms map[string]string
	StyleGuide     string
	Examples       []string
	// IfVersion, when set, makes the replacement conditional: it must equal
	// the stored version (0 when none is stored).
	IfVersion *int
}

// Brand returns the project's brand settings, or DefaultBrand when the
// project has none stored (never not_found). Errors: invalid (field
// project_id) for a malformed project id; the store's errors.
func (s *Service) Brand(ctx context.Context, projectID string) (ports.Brand, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Brand{}, err
	}
	if err := projectIDError(projectID); err != nil {
		return ports.Brand{}, err
	}
	return s.brand(ctx, p.OrgID, projectID)
}

// brand is the stored brand settings of a project or its defaults.
func (s *Service) brand(ctx context.Context, orgID, projectID string) (ports.Brand, error) {
	b, err := s.d.Store.GetBrand(ctx, orgID, projectID)
	if errors.Is(err, ports.ErrNotFound) {
		return DefaultBrand(orgID, projectID), nil
	}
	return b, err
}

// maxBrandRaces bounds how often an unconditional PutBrand re-reads the
// version after losing a race with another replacement.
const maxBrandRaces = 3

// PutBrand replaces the project's brand settings with in, as the next
// version, recorded as updated by the caller, and returns what is stored. A
// project id without a project record gets one, named after the id.
// Errors: invalid (fields project_id, name, voice, tone, tone[i], audience,
// values, values[i], banned_words, banned_words[i], preferred_terms,
// preferred_terms["term"], style_guide, examples, examples[i], version);
// precondition_failed (stale_version) when in.IfVersion is not the stored
// version, or another replacement won a race with a conditional one; the
// store's errors.
func (s *Service) PutBrand(ctx context.Context, projectID string, in BrandInput) (ports.Brand, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Brand{}, err
	}
	b, fields := cleanBrand(in)
	if fe := checkProjectID(projectID); fe != nil {
		fields = append(fieldErrors{*fe}, fields...)
	}
	if in.IfVersion != nil && *in.IfVersion < 0 {
		fields.add("version", "must be 0 or more")
	}
	if err := fields.err(); err != nil {
		return ports.Brand{}, err
	}
	b.OrgID, b.ProjectID, b.UpdatedBy = p.OrgID, projectID, p.UserID
	if err := s.ensureProject(ctx, p, projectID); err != nil {
		return ports.Brand{}, err
	}
	for race := 1; ; race++ {
		cur, err := s.brand(ctx, p.OrgID, projectID)
		if err != nil {
			return ports.Brand{}, err
		}
		if in.IfVersion != nil && *in.IfVersion != cur.Version {
			return ports.Brand{}, staleBrand(projectID, cur.Version, *in.IfVersion)
		}
		b.Version, b.UpdatedAt = cur.Version+1, s.d.Clock.Now()
		err = s.d.Store.PutBrand(ctx, b)
		if err == nil {
			return b, nil
		}
		if !errors.Is(err, ports.ErrPreconditionFailed) {
			return ports.Brand{}, err
		}
		if in.IfVersion != nil || race == maxBrandRaces {
			return ports.Brand{}, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion,
				Message: fmt.Sprintf("the brand settings of project %s changed meanwhile; reload them and apply your change again", projectID), Err: err}
		}
	}
}

func staleBrand(projectID string, stored, named int) error {
	return &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion,
		Message: fmt.Sprintf("the brand settings of project %s are at version %d, not %d; reload them and apply your change again", projectID, stored, named)}
}

// cleanBrand validates in and returns it as brand settings without owner or
// version.
func cleanBrand(in BrandInput) (ports.Brand, fieldErrors) {
	var f fieldErrors
	b := ports.Brand{
		Name:                f.text("name", in.Name, MaxBrandNameLen, false),
		Voice:               f.text("voice", in.Voice, MaxVoiceLen, false),
		Tone:                f.list("tone", in.Tone, MaxToneItems, MaxToneLen, true),
		Audience:            f.text("audience", in.Audience, MaxAudienceLen, false),
		Values:              f.list("values", in.Values, MaxValues, MaxValueLen, false),
		BannedWords:         f.list("banned_words", in.BannedWords, MaxBannedWords, MaxBannedWordLen, true),
		BannedWordsBlocking: in.BannedWordsBlocking,
	}
	b.PreferredTerms = f.terms(in.PreferredTerms)
	b.StyleGuide = f.text("style_guide", in.StyleGuide, MaxStyleGuideLen, false)
	b.Examples = f.list("examples", in.Examples, MaxExamples, MaxExampleLen, false)
	return b, f
}

// terms cleans the preferred terms: both sides trimmed, pairs with both
// sides empty dropped. A term to avoid that repeats another one
// case-insensitively is invalid, as matching ignores case.
func (f *fieldErrors) terms(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	byFold := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		avoid, prefer := strings.TrimSpace(k), strings.TrimSpace(in[k])
		if avoid == "" {
			if prefer != "" {
				f.add("preferred_terms", "a term to avoid must not be empty")
			}
			continue
		}
		field := fmt.Sprintf("preferred_terms[%q]", avoid)
		switch {
		case utf8.RuneCountInString(avoid) > MaxTermLen:
			f.add(field, fmt.Sprintf("the term must be at most %d characters", MaxTermLen))
		case prefer == "":
			f.add(field, "required: the term to use instead")
		case utf8.RuneCountInString(prefer) > MaxTermLen:
			f.add(field, tooLong(MaxTermLen))
		}
		fold := strings.ToLower(avoid)
		if first, dup := byFold[fold]; dup {
			f.add(field, fmt.Sprintf("repeats %q: terms are matched ignoring case", first))
			continue
		}
		byFold[fold] = avoid
		out[avoid] = prefer
	}
	if len(out) > MaxPreferredTerms {
		f.add("preferred_terms", fmt.Sprintf("must have at most %d entries", MaxPreferredTerms))
	}
	return out
}
