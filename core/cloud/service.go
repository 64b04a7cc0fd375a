// Package cloud is the core of devpilot's cloud management: the AWS accounts
// an organisation connects, what they cost, and the container services (ECS),
// functions (Lambda) and hosted apps (Amplify) in them.
//
// Every member of an organisation may read and operate its accounts; only an
// admin adds or deletes one. Credentials are built from an account only for
// the duration of one provider call: an access key's secret is sealed with the
// Cipher, bound to the account id, before it reaches the store, and it is never
// returned, logged or put in an error. Every write — deploying or scaling a
// service, invoking a function (a dry run too), deploying an app — is refused
// on a read-only account and recorded in the audit log, whatever its outcome.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Config tunes the cloud core. Zero values take the defaults named.
type Config struct {
	// CostTTL is how long a cost report stays cached (6 hours).
	CostTTL time.Duration
	// MaxCostLookback bounds how far before today a cost query may start
	// (13 calendar months when zero, as far back as Cost Explorer goes).
	MaxCostLookback time.Duration
	// ScaleConfirmAbove is the desired count above which a scale needs the
	// service's name typed (confirm_name), as does one that changes the count
	// by more than ScaleConfirmFactor either way (DefaultScaleConfirmAbove
	// when zero).
	ScaleConfirmAbove int
}

// The defaults and limits of the cloud core.
const (
	DefaultCostTTL = 6 * time.Hour
	// DefaultLookbackMonths is the lookback in calendar months when
	// Config.MaxCostLookback is zero.
	DefaultLookbackMonths = 13
	MaxAccountNameLen     = 100
	DefaultPageLimit      = ports.DefaultPageLimit
	MaxPageLimit          = ports.MaxPageLimit
	DefaultLogLimit       = 100
	MaxLogLimit           = 1000
	MaxDesiredCount       = 1000
	// DefaultScaleConfirmAbove is Config.ScaleConfirmAbove's default.
	DefaultScaleConfirmAbove = 10
	// ScaleConfirmFactor is how many times larger or smaller a desired count
	// may become without the service's name typed.
	ScaleConfirmFactor = 2
	// MaxPayloadBytes bounds a function invocation's payload, as Lambda does.
	MaxPayloadBytes = 256 << 10
)

// ProviderAWS is the one cloud provider devpilot operates.
const ProviderAWS = "aws"

func (c Config) withDefaults() Config {
	if c.CostTTL <= 0 {
		c.CostTTL = DefaultCostTTL
	}
	if c.ScaleConfirmAbove <= 0 {
		c.ScaleConfirmAbove = DefaultScaleConfirmAbove
	}
	return c
}

// Deps are the ports a Service needs. Logger nil discards logs.
type Deps struct {
	Accounts ports.CloudAccountStore
	Costs    ports.CostCacheStore
	Audit    ports.AuditStore
	Provider ports.CloudProvider
	Cipher   ports.Cipher
	Clock    ports.Clock
	IDs      ports.IDs
	Logger   *slog.Logger
}

// Service is the cloud core's use cases. Every method acts for the principal
// in ctx, within its organisation, and fails with unauthenticated without
// one. Errors of the provider pass through with their kinds (rate_limited
// with RetryAfter, upstream, timeout, not_found, invalid).
type Service struct {
	cfg Config
	d   Deps
	log *slog.Logger
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "cloud")}
}

// required names each field whose value is blank; pairs are field, value.
func required(pairs ...string) []ports.FieldError {
	var fields []ports.FieldError
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			fields = append(fields, ports.FieldError{Field: pairs[i], Reason: "required"})
		}
	}
	return fields
}

func checkPage(page ports.Page) (ports.Page, error) { return page.Checked() }

// admin returns the caller when it administers its organisation; forbidden
// otherwise.
func admin(ctx context.Context) (ports.Principal, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return p, err
	}
	if !p.IsAdmin() {
		return p, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may add or delete cloud accounts"}
	}
	return p, nil
}

// account returns the caller's organisation's account, as stored (with its
// sealed secret): not_found when absent or another organisation's.
func (s *Service) account(ctx context.Context, p ports.Principal, id string) (ports.CloudAccount, error) {
	if !ports.IsID(id) {
		return ports.CloudAccount{}, ports.NotFound("cloud account", id)
	}
	return s.d.Accounts.GetCloudAccount(ctx, p.OrgID, id)
}

// credentials builds what a provider call authenticates with. The secret of
// an access key is opened here and must not outlive the call.
func (s *Service) credentials(a ports.CloudAccount) (ports.CloudCredentials, error) {
	c := ports.CloudCredentials{Region: a.Region, Mode: a.Auth.Mode}
	switch a.Auth.Mode {
	case ports.AuthAssumeRole:
		c.RoleARN, c.ExternalID = a.Auth.RoleARN, a.Auth.ExternalID
	case ports.AuthAccessKey:
		secret, err := s.d.Cipher.Open(a.Auth.SealedSecret, []byte(a.ID))
		if err != nil {
			return ports.CloudCredentials{}, ports.Wrap(ports.KindInternal, err, fmt.Sprintf("the credentials of cloud account %s cannot be opened", a.ID))
		}
		c.AccessKeyID, c.SecretAccessKey = a.Auth.AccessKeyID, string(secret)
	default:
		return ports.CloudCredentials{}, ports.Errorf(ports.KindInternal, "cloud account %s has the unknown auth mode %q", a.ID, a.Auth.Mode)
	}
	return c, nil
}

// call runs fn with the account's credentials and returns its error, kind
// kept, with no trace of the secret.
func call[T any](ctx context.Context, s *Service, a ports.CloudAccount, fn func(context.Context, ports.CloudCredentials) (T, error)) (T, error) {
	c, err := s.credentials(a)
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := fn(ctx, c)
	return v, ports.Redact(err, c.SecretAccessKey)
}

// message is what a client may read of err: what ports.Public tells of it,
// but for an ended context, which is said as such rather than as internal.
func message(err error) string {
	switch pub := ports.Public(err); {
	case pub.Kind != ports.KindInternal:
		return pub.Message
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	default:
		return pub.Message
	}
}
