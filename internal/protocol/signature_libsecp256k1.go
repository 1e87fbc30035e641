//go:build libsecp256k1

package protocol

/*
#cgo LDFLAGS: -lsecp256k1
#include <secp256k1.h>
#include <secp256k1_schnorrsig.h>
#include <secp256k1_extrakeys.h>
*/
import "C"

import "unsafe"

// verifyContext is libsecp256k1's context for verification; it is only read
// after it is made, so every goroutine can use it.
var verifyContext = C.secp256k1_context_create(C.SECP256K1_CONTEXT_VERIFY)

// parsedPubKey is libsecp256k1's parsed x-only public key (a value without Go
// pointers, so C may read it).
type parsedPubKey = C.secp256k1_xonly_pubkey

func parsePubKey(raw *[32]byte) (parsedPubKey, bool) {
	var pk C.secp256k1_xonly_pubkey
	ok := C.secp256k1_xonly_pubkey_parse(verifyContext, &pk, (*C.uchar)(unsafe.Pointer(&raw[0]))) == 1
	return pk, ok
}

func verifySchnorr(pk parsedPubKey, hash *[32]byte, sig *[64]byte) bool {
	return C.secp256k1_schnorrsig_verify(verifyContext, (*C.uchar)(unsafe.Pointer(&sig[0])),
		(*C.uchar)(unsafe.Pointer(&hash[0])), 32, &pk) == 1
}
