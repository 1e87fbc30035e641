package protocol

import (
	"fmt"
	"strings"

	"github.com/nbd-wtf/go-nostr/nip19"
)

// ParsePubkey reads a public key given by a person (a flag, a config file): 64
// lowercase hex characters or an npub (NIP-19), surrounding space ignored. It
// returns the hex form.
func ParsePubkey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "npub1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "npub" {
			return "", fmt.Errorf("%q is not a valid npub", s)
		}
		return v.(string), nil
	}
	if !IsHex64(s) {
		return "", fmt.Errorf("%q is not a 64-character lowercase hex pubkey or an npub", s)
	}
	return s, nil
}

// IsHex64 reports whether s is 64 lowercase hex characters (an event id or a
// pubkey, NIP-01).
func IsHex64(s string) bool { return isLowerHex(s, 64) }
