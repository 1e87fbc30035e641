package relay

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/kukuri/communitynode/internal/protocol"
)

// software is the NIP-11 software URL.
const software = "https://github.com/kukuri/communitynode"

// infoDocument is the NIP-11 relay information document.
type infoDocument struct {
	Name           string      `json:"name,omitempty"`
	Description    string      `json:"description,omitempty"`
	Banner         string      `json:"banner,omitempty"`
	Icon           string      `json:"icon,omitempty"`
	PubKey         string      `json:"pubkey,omitempty"`
	Self           string      `json:"self,omitempty"`
	Contact        string      `json:"contact,omitempty"`
	SupportedNIPs  []int       `json:"supported_nips"`
	Software       string      `json:"software"`
	Version        string      `json:"version,omitempty"`
	Limitation     limitation  `json:"limitation"`
	Retention      []Retention `json:"retention,omitempty"`
	Countries      []string    `json:"relay_countries,omitempty"`
	Languages      []string    `json:"language_tags,omitempty"`
	Tags           []string    `json:"tags,omitempty"`
	PostingPolicy  string      `json:"posting_policy,omitempty"`
	TermsOfService string      `json:"terms_of_service,omitempty"`
	PrivacyPolicy  string      `json:"privacy_policy,omitempty"`
	// TopicPolicy is this node's own field (NIP-11 documents may carry more than
	// the NIP lists): the community's topic rules, so that a client can tell
	// why an event or a REQ is refused before it tries.
	TopicPolicy topicPolicy `json:"topic_policy"`
	// Trust is this node's own field: its NIP-85 provider and spam gate.
	Trust *trustInfo `json:"trust,omitempty"`
	// NIP29 is NIP-29's support detection (present when the relay hosts groups).
	NIP29 *nip29Info `json:"nip29,omitempty"`
	// Blossom is this node's own field: where its Blossom media server is
	// and what it accepts (absent when it serves none).
	Blossom *MediaInfo `json:"blossom,omitempty"`
}

// MediaInfo describes the node's Blossom server in NIP-11 (Config.Media).
type MediaInfo struct {
	// URL is the server's base URL (BUD-01 endpoints at its root).
	URL string `json:"url"`
	// Who may upload, in words ("members": relay members, docs/media.md).
	Uploaders    string `json:"uploaders"`
	MaxBlobBytes int64  `json:"max_blob_bytes,omitempty"`
	QuotaBytes   int64  `json:"quota_bytes,omitempty"`
	QuotaBlobs   int    `json:"quota_blobs,omitempty"`
	// Types are the media types accepted ("image/*"); absent: any.
	Types []string `json:"types,omitempty"`
}

// nip29Info is NIP-29's `nip29` object: this relay hosts subgroups.
type nip29Info struct {
	Subgroups bool `json:"subgroups"`
}

// trustInfo names the node's NIP-85 provider (one key per algorithm) and the
// minimum rank the relay asks of authors (0: none).
type trustInfo struct {
	MinRank   int               `json:"min_rank"`
	Providers []trustedProvider `json:"nip85_providers,omitempty"`
}

type trustedProvider struct {
	Kind      int    `json:"kind"`
	Algorithm string `json:"algorithm"`
	Pubkey    string `json:"pubkey"`
}

// topicPolicy describes protocol.TopicRules to clients.
type topicPolicy struct {
	// EventsNeedTopic: an event needs a topic, its own (t tags) or inherited.
	EventsNeedTopic bool `json:"events_need_topic"`
	// InheritFrom lists the tags through which an event without t tags takes the
	// topics of stored events it references.
	InheritFrom []string `json:"inherit_from"`
	// IdentityKinds are the person scope (no topic needed). IdentityWriters says
	// whose are published at once: "members" (authors who have posted in a
	// topic here, or were admitted) or "any"; under "members" a newcomer's are
	// answered OK true "pending: ..." and published when the key becomes a
	// member (NewcomerIdentity says so).
	IdentityKinds    string `json:"identity_kinds"`
	IdentityWriters  string `json:"identity_writers"`
	NewcomerIdentity string `json:"newcomer_identity"`
	// PersonKinds without a topic of their own or inherited are stored in the
	// person scope when a p tag names a member (DMs, gift wraps, reports of
	// users, labels of users, profile zaps).
	PersonKinds []int `json:"person_kinds"`
	// PrivateKinds are served (REQ, COUNT, live) only to a reader
	// authenticated (NIP-42) as a recipient (p tag) or, for kind 4, the author;
	// a filter asking for them without AUTH is CLOSED "auth-required: ...".
	PrivateKinds []int `json:"private_kinds"`
	// Ephemeral says what happens to kinds 20000-29999.
	Ephemeral string `json:"ephemeral"`
	// TagT says what #t matches.
	TagT string `json:"tag_t"`
	// DefaultTopic, when set, receives events that have no topic and nothing to
	// inherit (single-community mode).
	DefaultTopic string `json:"default_topic,omitempty"`
	// ReqRequiresTopic: every REQ/COUNT filter needs #t (identity-kind filters
	// excepted).
	ReqRequiresTopic bool `json:"req_requires_topic"`
	// AllowedTopics, when present, are the only enabled topics.
	AllowedTopics []string `json:"allowed_topics,omitempty"`
}

// limitation is NIP-11's `limitation` object, with the values the relay enforces.
type limitation struct {
	MaxMessageLength    int   `json:"max_message_length"`
	MaxSubscriptions    int   `json:"max_subscriptions"`
	MaxFilters          int   `json:"max_filters"`
	MaxLimit            int   `json:"max_limit"`
	DefaultLimit        int   `json:"default_limit"`
	MaxSubidLength      int   `json:"max_subid_length"`
	MaxEventTags        int   `json:"max_event_tags"`
	MaxContentLength    int   `json:"max_content_length"`
	AuthRequired        bool  `json:"auth_required"`
	PaymentRequired     bool  `json:"payment_required"`
	RestrictedWrites    bool  `json:"restricted_writes"`
	CreatedAtLowerLimit int64 `json:"created_at_lower_limit,omitempty"` // seconds before now
	CreatedAtUpperLimit int64 `json:"created_at_upper_limit,omitempty"` // seconds after now
}

// supportedNIPs lists what this configuration implements: NIP-42 only when AUTH
// is enabled, NIP-50 only when search is, NIP-86 only when management is,
// NIP-77 only when negentropy sync is served, NIP-29 only when the store hosts
// groups.
func (c Config) supportedNIPs(management, negentropy bool) []int {
	nips := []int{1, 9, 11, 40, 45, 70}
	if c.Groups {
		nips = append(nips, 29)
	}
	if c.Membership != "" {
		nips = append(nips, 43)
	}
	if negentropy {
		nips = append(nips, 77)
	}
	if management {
		nips = append(nips, 86)
	}
	if c.Auth.Enabled {
		nips = append(nips, 42)
	}
	if c.Limits.Search {
		nips = append(nips, 50)
	}
	slices.Sort(nips)
	return nips
}

// managementEnabled reports whether NIP-86 is offered: a Management handler
// that, if it can tell (Enabled), has someone to serve.
func (r *Relay) managementEnabled() bool {
	if r.management == nil {
		return false
	}
	e, ok := r.management.(interface{ Enabled() bool })
	return !ok || e.Enabled()
}

func (r *Relay) info() infoDocument {
	l := r.limits()
	base := l.Limitation()
	var allowed []string
	for t := range l.AllowedTopics {
		allowed = append(allowed, t)
	}
	slices.Sort(allowed)
	name, description, icon := r.cfg.Info.Name, r.cfg.Info.Description, r.cfg.Info.Icon
	if r.policy != nil { // NIP-86 changerelay* override the flags
		n, d, i := r.policy.InfoOverride()
		name, description, icon = cmp.Or(n, name), cmp.Or(d, description), cmp.Or(i, icon)
	}
	var ti *trustInfo
	if r.ranks != nil {
		ti = &trustInfo{MinRank: r.ranks.Threshold()}
		if pk := r.ranks.Provider(); pk != "" {
			ti.Providers = []trustedProvider{{Kind: 30382, Algorithm: "trust-v1", Pubkey: pk}}
		}
	}
	// pubkey defaults to the node key: NIP-29 apps on nostr-tools (loadGroup,
	// fetchGroup*Event) look the group's state up by NIP-11 pubkey, where the
	// NIP says self; an operator who sets --pubkey for contact gets that
	// instead (docs/groups.md, "Apps").
	pubkey := r.cfg.Info.PubKey
	if pubkey == "" {
		pubkey = r.cfg.Info.Self
	}
	var n29 *nip29Info
	if r.cfg.Groups {
		n29 = &nip29Info{Subgroups: true}
	}
	return infoDocument{
		Blossom:        r.cfg.Media,
		NIP29:          n29,
		Trust:          ti,
		Name:           name,
		Description:    description,
		Icon:           icon,
		Banner:         r.cfg.Info.Banner,
		PubKey:         pubkey,
		Self:           r.cfg.Info.Self,
		Contact:        r.cfg.Info.Contact,
		Retention:      r.cfg.Info.Retention,
		Countries:      r.cfg.Info.Countries,
		Languages:      r.cfg.Info.Languages,
		Tags:           r.cfg.Info.Tags,
		PostingPolicy:  r.cfg.Info.PostingPolicy,
		TermsOfService: r.cfg.Info.TermsOfServ,
		PrivacyPolicy:  r.cfg.Info.PrivacyPolicy,
		SupportedNIPs:  r.cfg.supportedNIPs(r.managementEnabled(), r.sync != nil),
		Software:       software,
		Version:        r.cfg.Info.Version,
		Limitation: limitation{
			MaxMessageLength: base.MaxMessageLength,
			MaxSubscriptions: r.lv().MaxSubscriptions,
			MaxFilters:       base.MaxFilters,
			MaxLimit:         base.MaxLimit,
			DefaultLimit:     l.DefaultLimit,
			MaxSubidLength:   base.MaxSubidLength,
			MaxEventTags:     base.MaxEventTags,
			MaxContentLength: base.MaxContentLength,
			// NIP-11: auth_required means nothing at all works without AUTH.
			AuthRequired:        r.cfg.Auth.RequiredForReads && r.cfg.Auth.RequiredForWrites,
			RestrictedWrites:    base.RestrictedWrites || r.cfg.Auth.RequiredForWrites || r.cfg.Membership == "invite",
			CreatedAtLowerLimit: int64(l.MaxPastAge.Seconds()),
			CreatedAtUpperLimit: int64(l.MaxFutureSkew.Seconds()),
		},
		TopicPolicy: topicPolicy{
			EventsNeedTopic:  l.RequireTopic,
			InheritFrom:      []string{"e", "E", "a", "A", "q"},
			IdentityKinds:    protocol.IdentityKindsText,
			IdentityWriters:  string(l.IdentityWriters),
			NewcomerIdentity: newcomerIdentity(l.IdentityWriters),
			PersonKinds:      []int{protocol.KindEncryptedDM, protocol.KindGiftWrap, protocol.KindReport, protocol.KindLabel, protocol.KindZapReceipt},
			PrivateKinds:     []int{protocol.KindEncryptedDM, protocol.KindGiftWrap},
			Ephemeral:        "delivered live to every matching subscription of every relay of this node; never stored",
			TagT:             "an event's own t tags, every kind (identity events included); never inherited topics",
			DefaultTopic:     l.DefaultTopic,
			ReqRequiresTopic: l.RequireTopicInREQ,
			AllowedTopics:    allowed,
		},
	}
}

// newcomerIdentity describes what happens to a non-member's identity events.
func newcomerIdentity(w protocol.IdentityWriters) string {
	if w == protocol.IdentityWritersAny {
		return "published"
	}
	return "pending until the key is a member (its first post in a topic, an operator's allowpubkey, or a trust rank at the relay's gate)"
}

func (r *Relay) serveInfo(w http.ResponseWriter) {
	h := w.Header()
	setCORS(h)
	h.Set("Content-Type", "application/nostr+json")
	body, err := json.Marshal(r.info())
	if err != nil {
		http.Error(w, "could not encode the relay information", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(body)
}
