package ports

import "time"

// ClientTimeReason is the reason ParseClientTime gives for a value it
// refuses.
const ClientTimeReason = "must be an RFC 3339 time, such as 2030-01-02T15:04:05Z"

// ParseClientTime reads value, a time a client sent in the field or query
// parameter field, as RFC 3339 with or without fractions of a second and
// with any offset, and returns it in UTC. A value that is not such a time is
// an invalid Error (422, like every present but unacceptable value) naming
// field. It is the one parser of a client's time: a time in a body or a
// query is read through it.
func ParseClientTime(field, value string) (time.Time, error) {
	// time.RFC3339 accepts fractions of a second when parsing.
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, Invalid(field+" is not a time", FieldError{Field: field, Reason: ClientTimeReason})
	}
	return t.UTC(), nil
}
