package membership

import "github.com/kukuri/communitynode/internal/protocol"

// The refusals of NIP-43 requests and of the store's membership rules, one
// table: each row is a refusal's code (protocol.Code: its NIP-01 prefix and
// a stable label, which metrics and tests use) with its text (the Reason*
// constant, or for a formatted text the function named on the row), which
// people read and which may change.
var (
	RefuseNodeKind   = reason(protocol.PrefixRestricted, "node_kind", ReasonNodeKind)
	RefuseInviteOnly = reason(protocol.PrefixRestricted, "invite_only", ReasonInviteOnly)
	RefuseBadClaim   = reason(protocol.PrefixRestricted, "bad_claim", ReasonBadClaim)
	RefuseExpired    = reason(protocol.PrefixRestricted, "expired_claim", ReasonExpired)
	RefuseUsed       = reason(protocol.PrefixRestricted, "used_claim", ReasonUsed)
	RefuseRevoked    = reason(protocol.PrefixRestricted, "revoked_claim", ReasonRevoked)
	RefuseBadTime    = reason(protocol.PrefixInvalid, "bad_time", ReasonBadTime)
	RefuseLeaveAuth  = reason(protocol.PrefixAuthRequired, "leave_auth", ReasonLeaveAuth)
	RefuseLeaveOld   = reason(protocol.PrefixInvalid, "leave_old", ReasonLeaveOld)
	RefuseInviteAuth = reason(protocol.PrefixAuthRequired, "invite_auth", ReasonInviteAuth)
	RefuseInviteNon  = reason(protocol.PrefixRestricted, "invite_non_member", ReasonInviteNon)
	RefuseFailed     = reason(protocol.PrefixError, "failed", ReasonFailed)

	CodePending         = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "pending"}           // Service.pendingReason
	CodeClaimsPerMember = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "claims_per_member"} // ReasonClaimsPerMember
	CodeOpenClaims      = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "open_claims"}       // ReasonOpenClaims
)

func reason(prefix, label, text string) protocol.Reason {
	return protocol.Reason{Code: protocol.Code{Prefix: prefix, Label: label}, Text: text}
}
