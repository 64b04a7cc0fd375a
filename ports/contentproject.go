package ports

import (
	"strings"
	"time"
)

// ContentProject is a named content project of an organisation: what brand
// settings, briefs, content items and publishing targets belong to by its
// ID. Names are unique in an org ignoring case and runs of white space
// (ContentProjectNameKey). Version counts the changes, from 1, and guards
// updates against lost edits.
//
// Project ids came before project records: a project id used by a write
// (brand settings, a brief) without a record gets one named after the id.
type ContentProject struct {
	ID          string
	OrgID       string
	Name        string
	Description string
	CreatedBy   string
	Version     int
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ContentProjectNameKey is the key under which a project's name is unique
// in its org: lower-cased, trimmed, each run of white space one space.
func ContentProjectNameKey(name string) string {
	return strings.ToLower(strings.Join(strings.Fields(name), " "))
}
