// Package membership is the node's NIP-43 relay membership (a relay member,
// not a community member of cn_relay.members nor a NIP-29 group member:
// docs/architecture.md "Words"): who is a member
// (Register, one per key: the newest of the node's 8000/8001 naming it), the
// roles operators define (Role: the node's newest 33534 per id, unless its
// NIP-09 deletion covers it) and assign to members (the role ids after each
// pubkey of the 13534; no access effect), the events the node signs to say
// so (AddEvent, RemoveEvent, ListEvent, RoleEvent, RoleDeletion; the
// store signs and stores them in the transaction of the change, see
// store.Publisher.MembershipTx), how the registers are recomputed from the
// stored events (Project, ProjectRoles, ProjectAssignments, StoredState,
// LiveState, Replace), and the Service that answers
// join (28934), leave (28936) and invite (28935) requests and the admins'
// NIP-86 methods.
//
// Promises (docs/membership.md): a relay member is the node, an admin, a key
// whose register says member, or a key without a register that is in
// cn_relay.members; in invite mode the store refuses everyone else's events.
// Every change commits its 8000/8001, the new 13534, the register and what it
// used up (a claim, a pending request, the admin's log row) in one
// transaction; so does every role change with its 33534 or deletion and the
// new 13534. Only defined roles are assigned, only to members; a key removed
// loses its roles. Claims are single-use, expire (DefaultInviteTTL), and only
// their SHA-256 is stored. A member's kind 28935 REQ gets a claim only
// once the relay has accepted the REQ, and only while the member holds fewer
// than Service.ClaimsPerMember open claims and the relay fewer than
// Service.OpenClaims (counted under schema.ClaimsLock, so across relay
// processes); the claim is stored only with its signed 28935. Apply is commutative, so Project of the stored
// events equals the registers the relay kept.
package membership
