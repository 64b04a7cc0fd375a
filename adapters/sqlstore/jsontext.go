package sqlstore

import (
	"database/sql/driver"
	"fmt"
)

// jsonText is how stores write and read a json.RawMessage: as text, byte for
// byte, with an empty message stored as NULL and NULL read back as nil.
type jsonText []byte

// Value returns the bytes as a string, or NULL when there are none.
func (j jsonText) Value() (driver.Value, error) {
	if len(j) == 0 {
		return nil, nil
	}
	return string(j), nil
}

// Scan reads text or NULL; it fails on anything else.
func (j *jsonText) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case string:
		*j = jsonText(v)
	case []byte:
		*j = append(jsonText(nil), v...)
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into JSON text", src)
	}
	return nil
}
