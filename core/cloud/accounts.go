package cloud

import (
	"context"
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// AuthInput is how devpilot is to authenticate to a new account: a role to
// assume (RoleARN; the external id is the organisation's, which devpilot
// chose: ExternalID may be left out or must equal it) or an access key
// (AccessKeyID and SecretAccessKey, which is sealed before it is stored).
type AuthInput struct {
	Mode            ports.CloudAuthMode
	RoleARN         string
	ExternalID      string
	AccessKeyID     string
	SecretAccessKey string
}

// NewAccount is a cloud account as an admin adds it. Provider "" means "aws".
type NewAccount struct {
	Provider string
	Name     string
	Region   string
	Auth     AuthInput
	ReadOnly bool
}

var (
	regionPattern      = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}$`)
	roleARNPattern     = regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$`)
	externalIDPattern  = regexp.MustCompile(`^[\w+=,.@:/-]+$`)
	accessKeyIDPattern = regexp.MustCompile(`^[A-Z0-9]{16,128}$`)
	secretPattern      = regexp.MustCompile(`^\S{1,256}$`)
)

// check validates in and returns it cleaned (trimmed, provider filled in).
func (in NewAccount) check() (NewAccount, error) {
	var fields []ports.FieldError
	bad := func(field, reason string) { fields = append(fields, ports.FieldError{Field: field, Reason: reason}) }
	in.Provider = strings.TrimSpace(in.Provider)
	if in.Provider == "" {
		in.Provider = ProviderAWS
	} else if in.Provider != ProviderAWS {
		bad("provider", "must be "+ProviderAWS)
	}
	in.Name = strings.TrimSpace(in.Name)
	if n := utf8.RuneCountInString(in.Name); n == 0 {
		bad("name", "required")
	} else if n > MaxAccountNameLen {
		bad("name", fmt.Sprintf("must be at most %d characters", MaxAccountNameLen))
	}
	in.Region = strings.TrimSpace(in.Region)
	if in.Region == "" {
		bad("region", "required")
	} else if !regionPattern.MatchString(in.Region) {
		bad("region", "must be an AWS region such as eu-west-1")
	}

	a := &in.Auth
	for _, v := range []*string{&a.RoleARN, &a.ExternalID, &a.AccessKeyID, &a.SecretAccessKey} {
		*v = strings.TrimSpace(*v)
	}
	// match checks a field its mode needs; banned a field of the other mode,
	// which would otherwise be dropped silently.
	match := func(field, value string, re *regexp.Regexp, reason string) {
		if value == "" {
			bad(field, "required")
		} else if !re.MatchString(value) {
			bad(field, reason)
		}
	}
	banned := func(field, value string) {
		if value != "" {
			bad(field, "not allowed with mode "+string(a.Mode))
		}
	}
	switch a.Mode {
	case ports.AuthAssumeRole:
		if len(a.RoleARN) > 2048 {
			bad("auth.role_arn", "must be at most 2048 characters")
		} else {
			match("auth.role_arn", a.RoleARN, roleARNPattern, "must be an IAM role ARN such as arn:aws:iam::123456789012:role/devpilot")
		}
		if n := len(a.ExternalID); n == 1 || n > 1224 {
			bad("auth.external_id", "must be 2 to 1224 characters")
		} else if n > 0 && !externalIDPattern.MatchString(a.ExternalID) {
			bad("auth.external_id", "must be letters, digits or the characters +=,.@:/-_")
		}
		banned("auth.access_key_id", a.AccessKeyID)
		banned("auth.secret_access_key", a.SecretAccessKey)
	case ports.AuthAccessKey:
		match("auth.access_key_id", a.AccessKeyID, accessKeyIDPattern, "must be 16 to 128 upper-case letters and digits")
		match("auth.secret_access_key", a.SecretAccessKey, secretPattern, "must be 1 to 256 characters without spaces")
		banned("auth.role_arn", a.RoleARN)
		banned("auth.external_id", a.ExternalID)
	case "":
		bad("auth.mode", "required")
	default:
		bad("auth.mode", fmt.Sprintf("must be %s or %s", ports.AuthAssumeRole, ports.AuthAccessKey))
	}
	if err := ports.FieldsError(ports.KindInvalid, fields...); err != nil {
		return NewAccount{}, err
	}
	return in, nil
}

// public is the account as it may leave the service: without its sealed
// secret.
func public(a ports.CloudAccount) ports.CloudAccount {
	a.Auth.SealedSecret = ""
	return a
}

// CreateAccount adds an account to the caller's organisation, untested, and
// returns it without its secret. An access key's secret is sealed with the
// Cipher, bound to the new account's id. A role is assumed with the
// organisation's external id (ExternalID): devpilot generates it, so that no
// organisation can name another's (AWS's guard against the confused deputy).
// Errors: forbidden unless the caller is an admin; invalid (fields provider,
// name: 1..100 characters, region, auth.mode, auth.role_arn,
// auth.access_key_id, auth.secret_access_key, each required by its mode and
// refused by the other; auth.external_id when it is not the organisation's);
// conflict when the organisation has an account of that name.
func (s *Service) CreateAccount(ctx context.Context, in NewAccount) (ports.CloudAccount, error) {
	p, err := admin(ctx)
	if err != nil {
		return ports.CloudAccount{}, err
	}
	if in, err = in.check(); err != nil {
		return ports.CloudAccount{}, err
	}
	if in.Auth.Mode == ports.AuthAssumeRole {
		ext, err := s.orgExternalID(ctx, p)
		if err != nil {
			return ports.CloudAccount{}, err
		}
		if in.Auth.ExternalID != "" && in.Auth.ExternalID != ext {
			return ports.CloudAccount{}, ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "auth.external_id",
				Reason: "must be left out or be " + ext + ", the external id devpilot gives this organisation's roles (GET /cloud/external-id)"})
		}
		in.Auth.ExternalID = ext
	}
	now := s.d.Clock.Now()
	a := ports.CloudAccount{
		ID: s.d.IDs.NewID(), OrgID: p.OrgID, Provider: in.Provider, Name: in.Name, Region: in.Region,
		Auth:     ports.CloudAuth{Mode: in.Auth.Mode, RoleARN: in.Auth.RoleARN, ExternalID: in.Auth.ExternalID, AccessKeyID: in.Auth.AccessKeyID},
		ReadOnly: in.ReadOnly, Status: ports.CloudUntested, CreatedAt: now, UpdatedAt: now,
	}
	if in.Auth.Mode == ports.AuthAccessKey {
		sealed, err := s.d.Cipher.Seal([]byte(in.Auth.SecretAccessKey), []byte(a.ID))
		if err != nil {
			return ports.CloudAccount{}, ports.Wrap(ports.KindInternal, err, "the secret access key cannot be sealed")
		}
		a.Auth.SealedSecret = sealed
	}
	if err := s.d.Accounts.CreateCloudAccount(ctx, a); err != nil {
		return ports.CloudAccount{}, err
	}
	s.audit(ctx, p, a, op{action: "account.create", resource: a.Name, args: accountArgs(a)}, now, ports.AuditOK, "")
	return public(a), nil
}

// accountArgs are the audited arguments of an account change: everything
// but the secret.
func accountArgs(a ports.CloudAccount) map[string]any {
	return map[string]any{
		"provider": a.Provider, "name": a.Name, "region": a.Region, "read_only": a.ReadOnly,
		"auth": map[string]any{"mode": a.Auth.Mode, "role_arn": a.Auth.RoleARN, "external_id": a.Auth.ExternalID, "access_key_id": a.Auth.AccessKeyID},
	}
}

// ListAccounts returns a page of the caller's organisation's accounts by
// name, without secrets, and the next page's cursor ("" at the end). A zero
// Limit means 50. Errors: invalid for a limit outside 1..200 or a bad cursor.
func (s *Service) ListAccounts(ctx context.Context, page ports.Page) ([]ports.CloudAccount, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	if page, err = checkPage(page); err != nil {
		return nil, "", err
	}
	list, next, err := s.d.Accounts.ListCloudAccounts(ctx, p.OrgID, page)
	if err != nil {
		return nil, "", err
	}
	out := make([]ports.CloudAccount, len(list))
	for i, a := range list {
		out[i] = public(a)
	}
	return out, next, nil
}

// GetAccount returns an account of the caller's organisation, without its
// secret. Errors: not_found when absent or another organisation's.
func (s *Service) GetAccount(ctx context.Context, id string) (ports.CloudAccount, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.CloudAccount{}, err
	}
	a, err := s.account(ctx, p, id)
	if err != nil {
		return ports.CloudAccount{}, err
	}
	return public(a), nil
}

// DeleteAccount deletes an account of the caller's organisation with its
// cached costs; its audit entries stay. Errors: forbidden unless the caller
// is an admin; not_found when absent or another organisation's.
func (s *Service) DeleteAccount(ctx context.Context, id string) error {
	p, err := admin(ctx)
	if err != nil {
		return err
	}
	a, err := s.account(ctx, p, id)
	if err != nil {
		return err
	}
	at := s.d.Clock.Now()
	if err := s.d.Accounts.DeleteCloudAccount(ctx, p.OrgID, a.ID); err != nil {
		return err
	}
	s.audit(ctx, p, a, op{action: "account.delete", resource: a.Name, args: accountArgs(a)}, at, ports.AuditOK, "")
	return nil
}

// TestResult is the outcome of a connection test. AccountID and ARN are who
// the credentials authenticate as in the provider (the AWS account number and
// the caller's ARN), set once the identity check passed. Error says why a
// test failed.
type TestResult struct {
	OK        bool   `json:"ok"`
	AccountID string `json:"account_id"`
	ARN       string `json:"arn"`
	LatencyMS int64  `json:"latency_ms"`
	Error     string `json:"error,omitempty"`
}

// TestAccount checks that devpilot can reach an account of the caller's
// organisation — who the credentials are, then one cheap read, never a paid
// API — and records the status (ok or failed), the error message and when.
// A failing check is a result with OK false, not an error. Errors: not_found
// when the account is absent or another organisation's; internal when its
// credentials cannot be opened.
func (s *Service) TestAccount(ctx context.Context, id string) (TestResult, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return TestResult{}, err
	}
	a, err := s.account(ctx, p, id)
	if err != nil {
		return TestResult{}, err
	}
	c, err := s.credentials(a)
	if err != nil {
		return TestResult{}, err
	}
	start := s.d.Clock.Now()
	var res TestResult
	check := "identity check"
	ident, err := s.d.Provider.CallerIdentity(ctx, c)
	if err == nil {
		res.AccountID, res.ARN = ident.Account, ident.ARN
		check = "read check"
		err = s.d.Provider.Probe(ctx, c)
	}
	res.LatencyMS = s.d.Clock.Now().Sub(start).Milliseconds()
	err = ports.Redact(err, c.SecretAccessKey)
	if err != nil && ctx.Err() != nil {
		return TestResult{}, err // the caller gave up: that says nothing about the account
	}
	status := ports.CloudOK
	if err != nil {
		status = ports.CloudFailed
		res.Error = check + " failed: " + message(err)
	} else {
		res.OK = true
	}
	if err := s.d.Accounts.RecordCloudTest(ctx, p.OrgID, a.ID, status, res.Error, start); err != nil {
		return TestResult{}, err
	}
	return res, nil
}

// externalIDPrefix starts every external id devpilot generates.
const externalIDPrefix = "devpilot-"

// ExternalID returns the external id of the caller's organisation: the one
// to put in the trust policy of a role devpilot is to assume (the condition
// sts:ExternalId), and the one every assume_role account of the organisation
// uses. devpilot generates it the first time it is asked for: 128 random
// bits, stable from then on, never another organisation's. Errors: those of
// the store.
func (s *Service) ExternalID(ctx context.Context) (string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return "", err
	}
	return s.orgExternalID(ctx, p)
}

// orgExternalID returns the organisation's external id, generating it when
// it has none. Should the random candidate be taken (it never is), another
// is tried.
func (s *Service) orgExternalID(ctx context.Context, p ports.Principal) (string, error) {
	var err error
	for range 3 {
		var id string
		id, err = s.d.Accounts.OrgExternalID(ctx, p.OrgID, externalIDPrefix+rand.Text(), s.d.Clock.Now())
		if !ports.IsKind(err, ports.KindConflict) {
			return id, err
		}
	}
	return "", err
}
