package sqlstore

import (
	"database/sql/driver"
	"fmt"
	"time"
)

// timestampLayout is fixed-width RFC 3339 in UTC with microseconds, so on
// SQLite (TEXT columns) text order is time order, and PostgreSQL reads it as
// a TIMESTAMPTZ literal. Microseconds are PostgreSQL's precision.
const timestampLayout = "2006-01-02T15:04:05.000000Z"

// timestamp is how every store writes and reads a time.Time: written as
// timestampLayout (truncated to the microsecond), read back in UTC from
// either a TIMESTAMPTZ (PostgreSQL) or timestampLayout text (SQLite).
type timestamp time.Time

// Value formats the time in UTC as timestampLayout.
func (t timestamp) Value() (driver.Value, error) {
	return time.Time(t).UTC().Format(timestampLayout), nil
}

// Scan reads a time.Time or timestampLayout text; it fails on anything else.
func (t *timestamp) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*t = timestamp(v.UTC())
		return nil
	case string:
		return t.parse(v)
	case []byte:
		return t.parse(string(v))
	}
	return fmt.Errorf("sqlstore: cannot scan %T into a timestamp", src)
}

func (t *timestamp) parse(s string) error {
	v, err := time.Parse(timestampLayout, s)
	if err != nil {
		return fmt.Errorf("sqlstore: bad timestamp %q: %w", s, err)
	}
	*t = timestamp(v)
	return nil
}

// timestampPtr converts an optional time; nil stays nil (SQL NULL).
func timestampPtr(t *time.Time) *timestamp {
	if t == nil {
		return nil
	}
	v := timestamp(*t)
	return &v
}

// timePtr converts an optional scanned timestamp back; nil stays nil.
func (t *timestamp) timePtr() *time.Time {
	if t == nil {
		return nil
	}
	v := time.Time(*t)
	return &v
}
