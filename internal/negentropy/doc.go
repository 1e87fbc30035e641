// Package negentropy serves and runs NIP-77 set reconciliation safely on top of
// go-nostr's nip77/negentropy, which is not hardened against hostile input.
//
// The library panics on inputs a peer controls: a bound whose length varint
// overflows (a negative slice bound), an id list whose count varint is huge
// (an allocation the size of the claim), a frame limit below 4096, and an item
// id that is not 64 hex characters. This package therefore
//
//   - checks every message completely (Check) before the library reads it:
//     lowercase hex of even length, protocol version 0x61, every varint at most
//     9 bytes and below 2^62, bound id prefixes of at most 32 bytes, modes 0..2,
//     whole fingerprints, and id lists no longer than the bytes that follow;
//   - checks every item (64 lowercase hex characters) before it is stored;
//   - clamps the frame limit to at least MinFrameLimit;
//   - runs each library call under recover and turns a panic into an error.
//
// A Server is one session of the relay's side: it holds the sorted items of
// one filter, with prefix sums of their ids (NewServer), or works on a window
// of a Tree's snapshot (NewTreeServer), and answers the client's messages in
// order. Either way a range's fingerprint costs O(1) or O(log n), where
// go-nostr's own storage adds up the range's ids on every call. A Server is safe for
// use by one goroutine at a time; callers serialise Reconcile calls.
package negentropy
