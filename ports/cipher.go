package ports

//go:generate go tool mockgen -typed -destination ../testkit/mocks/cipher.go -package mocks . Cipher

// Cipher seals secrets (cloud credentials, OAuth tokens, webhook secrets)
// before they reach a store. A sealed value names the key that sealed it, so
// keys can rotate while old values stay readable.
type Cipher interface {
	// Seal encrypts and authenticates plaintext, binding it to aad (for
	// example the id of the record that holds it).
	Seal(plaintext, aad []byte) (string, error)
	// Open returns the plaintext of a value sealed with the same aad;
	// an internal Error when it was tampered with or its key is unknown.
	Open(sealed string, aad []byte) ([]byte, error)
}
