//go:build !libsecp256k1

package protocol

import (
	"crypto/sha256"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// parsedPubKey is a BIP-340 public key: its 32 bytes and the curve point they
// lift to (even y, affine), so that a key kept in the cache is lifted once.
type parsedPubKey = *liftedKey

type liftedKey struct {
	x [32]byte
	p btcec.JacobianPoint
}

func parsePubKey(raw *[32]byte) (parsedPubKey, bool) {
	pk, err := schnorr.ParsePubKey(raw[:])
	if err != nil {
		return nil, false
	}
	k := &liftedKey{x: *raw}
	pk.AsJacobian(&k.p)
	return k, true
}

// challengeTag is SHA-256 of BIP-340's challenge tag, the prefix (twice) of
// every challenge hash.
var challengeTag = sha256.Sum256([]byte("BIP0340/challenge"))

// verifySchnorr is BIP-340's Verify(pk, m, sig) for a 32-byte m, step by step
// as btcec's schnorr.Verify does it, with btcec's field, scalar and point
// operations, but from the point parsePubKey lifted: btcec's own lifts the key
// again at every call (a square root in the field, about a tenth of the cost).
// It also refuses s >= n, as BIP-340 and libsecp256k1 do (btcec v2.3.4's
// ParseSignature reduces s mod n). TestBIP340Vectors and
// TestCheckIDAndSignatureAsGoNostr hold it to the BIP's vectors and to go-nostr.
func verifySchnorr(pk parsedPubKey, hash *[32]byte, sig *[64]byte) bool {
	var r btcec.FieldVal
	if overflow := r.SetByteSlice(sig[:32]); overflow { // r < p
		return false
	}
	var s btcec.ModNScalar
	if overflow := s.SetByteSlice(sig[32:]); overflow { // s < n
		return false
	}
	// e = int(tagged_hash("BIP0340/challenge", r || x(P) || m)) mod n
	h := sha256.New()
	h.Write(challengeTag[:])
	h.Write(challengeTag[:])
	h.Write(sig[:32])
	h.Write(pk.x[:])
	h.Write(hash[:])
	var sum [32]byte
	var e btcec.ModNScalar
	e.SetBytes((*[32]byte)(h.Sum(sum[:0])))
	e.Negate()
	// R = s*G - e*P; fail if infinite, if y(R) is odd, or if x(R) != r.
	var sG, eP, R btcec.JacobianPoint
	btcec.ScalarBaseMultNonConst(&s, &sG)
	btcec.ScalarMultNonConst(&e, &pk.p, &eP)
	btcec.AddNonConst(&sG, &eP, &R)
	if (R.X.IsZero() && R.Y.IsZero()) || R.Z.IsZero() {
		return false
	}
	R.ToAffine()
	return !R.Y.IsOdd() && r.Equals(&R.X)
}
