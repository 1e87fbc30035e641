// Package blossom is the node's Blossom media server (docs/media.md): blobs
// addressed by their SHA-256, uploaded by members with a signed kind 24242
// authorization, served to anyone.
//
// Endpoints (Server.ServeHTTP; internal/node mounts it on the relay's
// address, or on its own with --blossom-listen):
//
//	GET, HEAD /<sha256>[.ext]   BUD-01: the blob, with the content type it was
//	                            uploaded with, range requests (http.ServeContent)
//	PUT /upload                 BUD-02: store a blob; its descriptor (BUD-08 nip94 tags)
//	HEAD /upload                BUD-06: would this upload be accepted
//	PUT /mirror                 BUD-04: fetch {"url"} and store it as an upload
//	GET /list/<pubkey>          BUD-02/12: the key's blobs (?since, ?until)
//	DELETE /<sha256>            BUD-02/12: take the key's claim away
//	OPTIONS (any of them)       the CORS preflight BUD-01 asks for
//
// Promises:
//
//   - Every answer carries Access-Control-Allow-Origin: *; a refusal is a
//     4xx or 5xx with an X-Reason header and a JSON body {"error": reason}.
//   - Before anything else, a request from a client address Deps.IPBlocked
//     names (NIP-86 blockip; the address is Deps.ClientIP's, the relay's)
//     is refused 403, and one past Config.RequestRatePerIP or, for an
//     upload, Config.UploadRatePerIP 429 with Retry-After; the body of a
//     refused upload is not read.
//   - An upload or a delete needs an authorization (BUD-11) that passes every
//     check: kind 24242, valid id and signature, created_at not in the
//     future, an expiration tag in the future (and at most
//     Config.MaxAuthLifetime ahead, so that remembering it is bounded), a `t`
//     tag with the endpoint's verb, a `server` tag naming this host if it has
//     any, and an `x` tag naming the blob (for an upload: the hash of the
//     bytes received, and X-SHA-256 when sent). An authorization is used once:
//     its id is kept in cn_blossom.auth_seen until it expires, and a second
//     upload or delete with it is refused (401), on any relay process
//     sharing the database. GET, HEAD and list need none.
//   - Only a key Deps.MayUpload admits (the node wires the one notion of a
//     relay member, membership.Service.IsMember) and that is not banned may
//     upload.
//   - An upload is streamed into a file under <dir>/tmp while it is hashed,
//     never held in memory; it is cut off with 413 as soon as it passes the
//     largest blob or what the key's byte quota leaves, and with 408 when the
//     body takes longer than Config.UploadTimeout. The file is fsynced,
//     renamed to <dir>/<hh>/<sha256> and its directory fsynced before the
//     metadata commits and the descriptor is returned.
//   - A blob is stored once however many keys upload it: cn_blossom.blobs
//     has one row per hash, cn_blossom.owners one per (hash, key). Quotas
//     count each key's claims (bytes and number); they are checked again
//     under a per-key lock in the transaction that records the claim, so
//     concurrent uploads cannot pass them together.
//   - A mirror (PUT /mirror) is an upload whose body the server fetches: the
//     same authorization, member, quota, type and streaming rules, the whole
//     fetch bounded by Config.UploadTimeout; the fetched hash must be the
//     x tag's. It fetches only http(s) URLs, and connects only to public
//     addresses (checked on each connection, after DNS) unless
//     Config.MirrorPrivate.
//   - Deleting takes only the deleter's claim away; the file is removed when
//     no claim remains. Upload and delete of one hash serialise on its
//     cn_blossom.blobs row lock, and the file is moved into place (upload) or
//     aside (delete) while that lock is held, so a concurrent upload of a hash
//     being deleted ends with the file and its row both present.
//   - A hidden blob (moderation: a NIP-56 report with an `x` tag that a
//     report rule acts on; or an operator, `cnctl blobs hide`) and a blob
//     whose every owner is banned are answered 451, are left out of lists and
//     cannot be uploaded again while hidden.
//   - Every upload, delete, hide, unhide and purge appends a row to
//     cn_blossom.log in the same transaction.
package blossom
