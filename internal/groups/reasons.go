package groups

import "github.com/kukuri/communitynode/internal/protocol"

// The refusals of group events (Decide's and the store's group checks), one
// table: each row is a refusal's code (protocol.Code: its NIP-01 prefix and
// a stable label, which metrics and tests use) with its text (the Reason*
// constant, or for a formatted text the Reason* function named on the row),
// which people read and which may change. The three pending review answers
// share the label pending (the request is kept; the text says why).
var (
	RefuseNoGroups      = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "no_groups"}, Text: ReasonNoGroups}
	RefuseStateKind     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "state_kind"}, Text: ReasonStateKind}
	RefuseNoHTag        = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_h_tag"}, Text: ReasonNoHTag}
	RefuseManyHTags     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "many_h_tags"}, Text: ReasonManyHTags}
	RefuseBadID         = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "bad_id"}, Text: ReasonBadID}
	RefuseUnknown       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "unknown_group"}, Text: ReasonUnknown}
	RefuseDeleted       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "deleted_group"}, Text: ReasonDeleted}
	RefuseDeletedID     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "deleted_id"}, Text: ReasonDeletedID}
	RefuseExists        = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixDuplicate, Label: "exists"}, Text: ReasonExists}
	RefuseMember        = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixDuplicate, Label: "already_member"}, Text: ReasonMember}
	RefuseNotMember     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "not_member"}, Text: ReasonNotMember}
	RefuseRestricted    = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "members_only"}, Text: ReasonRestricted}
	RefusePrivate       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "private_members_only"}, Text: ReasonPrivate}
	RefuseManyParents   = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "many_parents"}, Text: ReasonManyParents}
	RefuseBadParent     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "bad_parent"}, Text: ReasonBadParent}
	RefuseBadChild      = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "bad_child"}, Text: ReasonBadChild}
	RefuseDupChild      = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "duplicate_child"}, Text: ReasonDupChild}
	RefuseSelfParent    = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "self_parent"}, Text: ReasonSelfParent}
	RefuseCycle         = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "cycle"}, Text: ReasonCycle}
	RefuseNoPinTarget   = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_pin_target"}, Text: ReasonNoPinTarget}
	RefusePinKind       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "pin_kind"}, Text: ReasonPinKind}
	RefuseBadPrevious   = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "bad_previous"}, Text: ReasonBadPrevious}
	RefuseLivekit       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "livekit_unsupported"}, Text: ReasonLivekit}
	RefuseBadKinds      = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "bad_supported_kinds"}, Text: ReasonBadKinds}
	RefuseNoUsers       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_users"}, Text: ReasonNoUsers}
	RefuseNoCode        = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_code"}, Text: ReasonNoCode}
	RefuseNoTargets     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_targets"}, Text: ReasonNoTargets}
	RefuseTargetKind    = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "target_kind"}, Text: ReasonTargetKind}
	RefuseStale         = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "stale"}, Text: ReasonStale}
	RefusePending       = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: ResultPending}, Text: ReasonPending}
	RefusePendingCode   = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: ResultPending}, Text: ReasonPendingCode}
	RefuseAdminsCreate  = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "admins_create"}, Text: ReasonAdminsCreate}
	RefuseMembersCreate = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixRestricted, Label: "members_create"}, Text: ReasonMembersCreate}
	RefuseManyRoles     = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "many_roles"}, Text: ReasonManyRoles}
	RefuseManyPins      = protocol.Reason{Code: protocol.Code{Prefix: protocol.PrefixInvalid, Label: "many_pins"}, Text: ReasonManyPins}

	CodePendingRank      = protocol.Code{Prefix: protocol.PrefixRestricted, Label: ResultPending}        // ReasonPendingRank
	CodeUnsupportedKind  = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "unsupported_kind"}   // ReasonUnsupportedKind
	CodeKindNotSupported = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "kind_not_supported"} // ReasonKindNotSupported
	CodeNoParent         = protocol.Code{Prefix: protocol.PrefixInvalid, Label: "no_parent"}             // ReasonNoParent
	CodeParentAdmin      = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "parent_admin"}       // ReasonParentAdmin
	CodeMissingChild     = protocol.Code{Prefix: protocol.PrefixInvalid, Label: "missing_child"}         // ReasonMissingChild
	CodeNotChild         = protocol.Code{Prefix: protocol.PrefixInvalid, Label: "not_child"}             // ReasonNotChild
	CodeLate             = protocol.Code{Prefix: protocol.PrefixInvalid, Label: "late"}                  // ReasonLate
	CodeUnknownPrevious  = protocol.Code{Prefix: protocol.PrefixInvalid, Label: "unknown_previous"}      // ReasonUnknownPrevious
	CodeFewPrevious      = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "few_previous"}       // ReasonFewPrevious
	CodeRole             = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "role"}               // reasonRole
	CodeCreatedPerDay    = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "created_per_day"}    // ReasonCreatedPerDay
	CodeCreatedInAll     = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "created_in_all"}     // ReasonCreatedInAll
	CodeMembersCap       = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "members_cap"}        // ReasonMembersCap
	CodeDepth            = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "depth"}              // ReasonDepth
	CodeCodesPerInvite   = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "codes_per_invite"}   // ReasonCodesPerInvite
	CodeOpenCodes        = protocol.Code{Prefix: protocol.PrefixRestricted, Label: "open_codes"}         // ReasonOpenCodes
)
