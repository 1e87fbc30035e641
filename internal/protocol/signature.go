package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// VerifyEvent reports whether ev is exactly what its author signed: its hex
// fields and kind well formed, its id the hash of its content, and its
// signature valid for that id and its pubkey. It returns "" or the Reason* of
// the first failure, and checks nothing else (no limits, times or topics):
// it is for events that passed ValidateEvent elsewhere and reach this process
// through a channel that could alter them, such as the bridge's stream.
func VerifyEvent(ev *nostr.Event) string {
	if ev == nil {
		return ReasonNoEvent
	}
	if r := checkFormat(ev); r != "" {
		return r
	}
	return checkIDAndSignature(ev)
}

// checkIDAndSignature needs checkFormat to have passed. It answers exactly as
// go-nostr's Event.CheckID and then Event.CheckSignature would (ReasonBadID,
// then ReasonBadSignature also for a pubkey that is not a curve point or a
// signature that does not parse), but hashes the serialized event once (the id
// it checked is the message the signature signs) and keeps parsed public keys
// (pubKeys): an import or a busy relay sees the same authors again and again.
// The signature check is BIP-340 verification, by btcec in the pure-Go build
// and by libsecp256k1 with the `libsecp256k1` build tag, as in go-nostr.
func checkIDAndSignature(ev *nostr.Event) string {
	hash := sha256.Sum256(ev.Serialize())
	var id [32]byte
	if _, err := hex.Decode(id[:], []byte(ev.ID)); err != nil || id != hash {
		return ReasonBadID
	}
	var sig [64]byte
	if _, err := hex.Decode(sig[:], []byte(ev.Sig)); err != nil {
		return ReasonBadSignature
	}
	pk, ok := pubKeys.get(ev.PubKey)
	if !ok {
		return ReasonBadSignature
	}
	if !verifySchnorr(pk, &hash, &sig) {
		return ReasonBadSignature
	}
	return ""
}

// pubKeyCacheSize bounds the parsed keys kept (a few hundred bytes each); the
// cache starts over when it is full.
const pubKeyCacheSize = 1 << 14

// pubKeyCache maps a public key in hex to its parsed form. Keys that do not
// parse are not kept.
type pubKeyCache struct {
	mu   sync.RWMutex
	keys map[string]parsedPubKey
}

var pubKeys = pubKeyCache{keys: map[string]parsedPubKey{}}

func (c *pubKeyCache) get(hexKey string) (parsedPubKey, bool) {
	c.mu.RLock()
	pk, ok := c.keys[hexKey]
	c.mu.RUnlock()
	if ok {
		return pk, true
	}
	var raw [32]byte
	if _, err := hex.Decode(raw[:], []byte(hexKey)); err != nil {
		return pk, false
	}
	pk, ok = parsePubKey(&raw)
	if !ok {
		return pk, false
	}
	c.mu.Lock()
	if len(c.keys) >= pubKeyCacheSize {
		clear(c.keys)
	}
	c.keys[hexKey] = pk
	c.mu.Unlock()
	return pk, true
}
