//go:build !libsecp256k1

package protocol

import (
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
)

// parsedPubKey is a BIP-340 public key lifted to a curve point.
type parsedPubKey = *btcec.PublicKey

func parsePubKey(raw *[32]byte) (parsedPubKey, bool) {
	pk, err := schnorr.ParsePubKey(raw[:])
	return pk, err == nil
}

func verifySchnorr(pk parsedPubKey, hash *[32]byte, sig *[64]byte) bool {
	s, err := schnorr.ParseSignature(sig[:])
	return err == nil && s.Verify(hash[:], pk)
}
