// Package secretbox implements ports.Cipher with AES-256-GCM. A sealed value
// names the key that sealed it, so keys can rotate: the first key seals, and
// every key opens.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// KeySize is the length in bytes of every key: AES-256.
const KeySize = 32

const (
	version   = "v1"
	nonceSize = 12
)

var b64 = base64.RawURLEncoding

// Box seals and opens secrets. It is safe for concurrent use.
type Box struct {
	sealKID string
	aeads   map[string]cipher.AEAD
}

var _ ports.Cipher = (*Box)(nil)

// New returns a Box over keys: the first seals, all of them open. It returns
// an internal Error when there are no keys, a key is not KeySize bytes, or
// the same key is given twice.
func New(keys ...[]byte) (*Box, error) {
	if len(keys) == 0 {
		return nil, ports.Errorf(ports.KindInternal, "secretbox: no key")
	}
	b := &Box{aeads: make(map[string]cipher.AEAD, len(keys))}
	for i, key := range keys {
		if len(key) != KeySize {
			return nil, ports.Errorf(ports.KindInternal, "secretbox: key %d is %d bytes, want %d", i+1, len(key), KeySize)
		}
		kid := KeyID(key)
		if _, dup := b.aeads[kid]; dup {
			return nil, ports.Errorf(ports.KindInternal, "secretbox: key %d repeats key %s", i+1, kid)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, ports.Wrap(ports.KindInternal, err, "secretbox: creating cipher")
		}
		aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
		if err != nil {
			return nil, ports.Wrap(ports.KindInternal, err, "secretbox: creating GCM")
		}
		b.aeads[kid] = aead
		if i == 0 {
			b.sealKID = kid
		}
	}
	return b, nil
}

// KeyID returns the non-secret id a sealed value names its key by: the first
// 4 bytes of the key's SHA-256, in hex.
func KeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// Seal encrypts and authenticates plaintext bound to aad with the current key
// and returns "v1.<kid>.<base64url(nonce||ciphertext)>". It returns an
// internal Error only when the system's random source fails.
func (b *Box) Seal(plaintext, aad []byte) (string, error) {
	aead := b.aeads[b.sealKID]
	buf := make([]byte, nonceSize, nonceSize+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(buf); err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "secretbox: generating nonce")
	}
	buf = aead.Seal(buf, buf[:nonceSize], plaintext, aad)
	return version + "." + b.sealKID + "." + b64.EncodeToString(buf), nil
}

// Open returns the plaintext of a value sealed by Seal with the same aad. It
// returns an internal Error when the value is malformed, its key is not one of
// the Box's keys, or it was tampered with or sealed with a different aad.
func (b *Box) Open(sealed string, aad []byte) ([]byte, error) {
	ver, rest, ok1 := strings.Cut(sealed, ".")
	kid, body, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || ver != version {
		return nil, ports.Errorf(ports.KindInternal, "secretbox: malformed sealed value")
	}
	aead, ok := b.aeads[kid]
	if !ok {
		return nil, ports.Errorf(ports.KindInternal, "secretbox: unknown key id %q", ports.Quote(kid))
	}
	raw, err := b64.DecodeString(body)
	if err != nil || len(raw) < nonceSize+aead.Overhead() {
		return nil, ports.Errorf(ports.KindInternal, "secretbox: malformed sealed value")
	}
	plain, err := aead.Open(nil, raw[:nonceSize], raw[nonceSize:], aad)
	if err != nil {
		return nil, ports.Errorf(ports.KindInternal, "secretbox: sealed value fails authentication (tampered, wrong key or wrong aad)")
	}
	return plain, nil
}

// GenerateKey returns a new random key of KeySize bytes. It returns an
// internal Error only when the system's random source fails.
func GenerateKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "secretbox: generating key")
	}
	return key, nil
}

// EncodeKey returns key in the standard base64 form ParseKeys and key files use.
func EncodeKey(key []byte) string {
	return base64.StdEncoding.EncodeToString(key)
}

// ParseKeys parses a DEVPILOT_SECRET_KEY value: one or more standard-base64
// keys of KeySize bytes, separated by commas, the current key first. It
// returns an invalid Error naming the position and the problem of the first
// bad key, never echoing the value.
func ParseKeys(s string) ([][]byte, error) {
	if strings.TrimSpace(s) == "" {
		return nil, ports.Errorf(ports.KindInvalid, "secret key is empty")
	}
	parts := strings.Split(s, ",")
	keys := make([][]byte, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for i, part := range parts {
		key, err := parseKey(part)
		if err != nil {
			return nil, ports.Errorf(ports.KindInvalid, "secret key %d of %d: %s", i+1, len(parts), err)
		}
		kid := KeyID(key)
		if seen[kid] {
			return nil, ports.Errorf(ports.KindInvalid, "secret key %d of %d: repeats an earlier key", i+1, len(parts))
		}
		seen[kid] = true
		keys = append(keys, key)
	}
	return keys, nil
}

func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("is empty")
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("is not standard base64")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("decodes to %d bytes, want %d", len(key), KeySize)
	}
	return key, nil
}

// LoadOrCreateKeyFile returns the key stored in base64 in the file at path,
// creating the file first with a new random key when it does not exist: mode
// 0600, its directory 0700 when missing, written to a temporary file and
// renamed so a crash never leaves a partial key. It returns an internal Error
// when the file cannot be read or written, and an invalid Error when it does
// not hold one valid key.
func LoadOrCreateKeyFile(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if !errors.Is(err, os.ErrNotExist) {
		return key, err
	}
	if key, err = GenerateKey(); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "secretbox: creating key directory")
	}
	tmp, err := os.CreateTemp(dir, ".secretkey-*")
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "secretbox: creating key file")
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := writeAndClose(tmp, EncodeKey(key)+"\n"); err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "secretbox: writing key file")
	}
	// Link, unlike rename, fails when another process created the file
	// meanwhile; that process's key then wins.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return readKeyFile(path)
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return nil, ports.Wrap(ports.KindInternal, err, "secretbox: installing key file")
		}
	}
	return key, nil
}

func writeAndClose(f *os.File, content string) error {
	err := f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(content)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readKeyFile returns an error wrapping os.ErrNotExist when the file is absent.
func readKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "secretbox: reading key file")
	}
	key, err := parseKey(string(data))
	if err != nil {
		return nil, ports.Errorf(ports.KindInvalid, "secret key file %s %s", path, err)
	}
	return key, nil
}
