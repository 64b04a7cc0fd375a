package sqlstore

// StoreErr exposes storeErr to the external tests.
var StoreErr = storeErr

// Timestamp exposes timestamp to the external tests.
type Timestamp = timestamp
