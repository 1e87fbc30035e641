// Package nodekey holds the node's own Nostr key: the key that signs what the
// node says (NIP-32 labels, NIP-85 assertions). The secret lives in a file of its
// own, readable by its owner only, as 64 lowercase hex characters and a newline.
package nodekey

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// DefaultFile is where `make run` keeps the development node's key.
const DefaultFile = ".cn/node.key"

// ErrExists is returned by Generate when the file is already there: a node key
// is never overwritten, since everything the node signed names it.
var ErrExists = errors.New("node key file already exists")

// Key is a node key. The zero Key is not usable.
type Key struct {
	secret string
	PubKey string // hex
}

// Npub returns the public key in NIP-19 form.
func (k Key) Npub() string {
	npub, _ := nip19.EncodePublicKey(k.PubKey) // a valid hex key always encodes
	return npub
}

// Sign sets ev's pubkey, id and signature. Event ids do not depend on the
// signature, so signing the same content twice gives the same id.
func (k Key) Sign(ev *nostr.Event) error {
	if err := ev.Sign(k.secret); err != nil {
		return fmt.Errorf("sign event: %w", err)
	}
	return nil
}

// FromSecret returns the key of a 64-hex-character secret.
func FromSecret(secret string) (Key, error) {
	secret = strings.TrimSpace(secret)
	if !protocol.IsHex64(secret) {
		return Key{}, errors.New("a node key is 64 lowercase hex characters")
	}
	pk, err := nostr.GetPublicKey(secret)
	if err != nil {
		return Key{}, fmt.Errorf("node key: %w", err)
	}
	return Key{secret: secret, PubKey: pk}, nil
}

// Generate creates a new key in path (mode 0600, parent directories 0700 as
// needed) and returns it. It refuses to overwrite an existing file (ErrExists).
func Generate(path string) (Key, error) {
	k, err := FromSecret(nostr.GeneratePrivateKey())
	if err != nil {
		return Key{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Key{}, fmt.Errorf("create node key directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return Key{}, fmt.Errorf("%w: %s", ErrExists, path)
	}
	if err != nil {
		return Key{}, fmt.Errorf("create node key: %w", err)
	}
	if _, err := f.WriteString(k.secret + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return Key{}, fmt.Errorf("write node key: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return Key{}, fmt.Errorf("write node key: %w", err)
	}
	return k, nil
}

// Load reads the key in path. It refuses a file that group or others may read:
// whoever reads it can speak for the node.
func Load(path string) (Key, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Key{}, fmt.Errorf("node key: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return Key{}, fmt.Errorf("node key %s is readable by others (mode %04o): chmod 600 it", path, info.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("node key: %w", err)
	}
	k, err := FromSecret(string(data))
	if err != nil {
		return Key{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadOrGenerate loads the key in path, creating it first when it does not
// exist (the development node's first run).
func LoadOrGenerate(path string) (Key, bool, error) {
	k, err := Load(path)
	if err == nil {
		return k, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return Key{}, false, err
	}
	k, err = Generate(path)
	return k, err == nil, err
}

// Derive returns a key of its own for purpose, computed from k's secret (HMAC-
// SHA256 of the purpose, re-hashed with a counter in the negligible case that a
// value is not a valid secp256k1 secret). The same node key and purpose always
// give the same key, so a service that must sign with a key per algorithm
// (NIP-85 providers) needs no second key file.
func (k Key) Derive(purpose string) (Key, error) {
	if k.secret == "" {
		return Key{}, errors.New("derive from a zero key")
	}
	for i := 0; i < 16; i++ {
		mac := hmac.New(sha256.New, []byte(k.secret))
		fmt.Fprintf(mac, "%s\x00%d", purpose, i)
		if d, err := FromSecret(hex.EncodeToString(mac.Sum(nil))); err == nil {
			return d, nil
		}
	}
	return Key{}, errors.New("derive key: no valid secret")
}
