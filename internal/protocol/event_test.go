package protocol_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/audience"
	"github.com/kukuri/communitynode/internal/protocol"
)

func TestValidateEvent(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	other := signed(t, nostr.GeneratePrivateKey(), nil)
	now := testNow.Unix()
	defaults := protocol.DefaultLimits()

	for _, tc := range []struct {
		name   string
		ev     func() *nostr.Event
		limits func(*protocol.Limits)
		want   string
	}{
		{name: "valid", ev: func() *nostr.Event { return signed(t, sk, nil) }},
		{name: "valid at the future skew limit", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(now + 15*60) })
		}},
		{name: "valid old event (November 2020)", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = 1604188800 })
		}},
		{name: "valid at the past limit", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.CreatedAt = nostr.Timestamp(now - int64(protocol.DefaultMaxPastAge/time.Second))
			})
		}},
		{name: "created_at 1 (1970)", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = 1 })
		}, want: protocol.ReasonPast},
		{name: "negative created_at", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = -5 })
		}, want: protocol.ReasonPast},
		{name: "one second beyond the past limit", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.CreatedAt = nostr.Timestamp(now - int64(protocol.DefaultMaxPastAge/time.Second) - 1)
			})
		}, want: protocol.ReasonPast},
		{name: "a tighter past limit", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(now - 3601) })
		}, limits: func(l *protocol.Limits) { l.MaxPastAge = time.Hour }, want: protocol.ReasonPast},
		{name: "valid with 8 topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = topicTags(8) })
		}},
		{name: "valid with 9 t tags naming 8 topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(topicTags(8), nostr.Tag{"t", "TOPIC0"}) })
		}},
		{name: "9 topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = topicTags(9) })
		}, want: "invalid: too many topics (9 distinct t tags; this relay accepts at most 8 per event)"},
		{name: "1000 topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = topicTags(1000) })
		}, want: "invalid: too many topics (1000 distinct t tags; this relay accepts at most 8 per event)"},
		{name: "an identity event's t tags are not topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 10015; ev.Tags = topicTags(50) })
		}},
		{name: "valid addressable", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 30023; ev.Tags = append(ev.Tags, nostr.Tag{"d", "x"}) })
		}},
		{name: "valid addressable with empty d", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 30023; ev.Tags = append(ev.Tags, nostr.Tag{"d"}) })
		}},
		{name: "valid future expiration", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.Tags = append(ev.Tags, nostr.Tag{"expiration", strconv.FormatInt(now+1, 10)})
			})
		}},
		{name: "valid deletion without topic", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 5; ev.Tags = nostr.Tags{{"e", hex64('1')}} })
		}},
		{name: "valid without topic when not required", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nil })
		}, limits: func(l *protocol.Limits) { l.RequireTopic = false }},
		{name: "valid enabled topic", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "ＧＯ"}} })
		}, limits: func(l *protocol.Limits) { l.AllowedTopics = map[string]bool{"go": true} }},
		{name: "reaction without topic: the store decides inheritance", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 7; ev.Tags = nostr.Tags{{"e", hex64('1')}, {"p", hex64('2')}} })
		}},
		{name: "comment with only a root address", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 1111; ev.Tags = nostr.Tags{{"A", "30023:" + hex64('2') + ":post"}} })
		}},
		{name: "quote by id", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"q", hex64('1')}} })
		}},
		{name: "profile without topic", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 0; ev.Tags = nil })
		}},
		{name: "interest list: its t tags are not community topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 10015; ev.Tags = nostr.Tags{{"t", "rust"}} })
		}, limits: func(l *protocol.Limits) { l.AllowedTopics = map[string]bool{"go": true} }},
		{name: "valid long non-indexed tag", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"alt", strings.Repeat("x", 5000)}) })
		}},
		{name: "valid max content and tags", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.Content = strings.Repeat("x", 65536)
				for len(ev.Tags) < 2000 {
					ev.Tags = append(ev.Tags, nostr.Tag{"p", hex64('2')})
				}
			})
		}},
		{name: "valid protected", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"-"}) })
		}},

		{name: "nil", ev: func() *nostr.Event { return nil }, want: protocol.ReasonNoEvent},
		{name: "upper-case id", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.ID = strings.ToUpper(ev.ID)
			return ev
		}, want: protocol.ReasonMalformedID},
		{name: "short id", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.ID = ev.ID[:63]
			return ev
		}, want: protocol.ReasonMalformedID},
		{name: "bad pubkey", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.PubKey = "npub1xyz"
			return ev
		}, want: protocol.ReasonMalformedPubKey},
		{name: "bad sig", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Sig = ev.Sig[:126]
			return ev
		}, want: protocol.ReasonMalformedSig},
		{name: "negative kind", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = -1 })
		}, want: protocol.ReasonKindOutOfRange},
		{name: "kind above 65535", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 65536 })
		}, want: protocol.ReasonKindOutOfRange},
		{name: "auth kind", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 22242 })
		}, want: protocol.ReasonAuthKind},
		{name: "created_at too far in the future", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(now + 15*60 + 1) })
		}, want: protocol.ReasonFuture},
		{name: "content too long", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Content = strings.Repeat("x", 65537) })
		}, want: protocol.ReasonContentTooLong},
		{name: "too many tags", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				for len(ev.Tags) < 2001 {
					ev.Tags = append(ev.Tags, nostr.Tag{"p", hex64('2')})
				}
			})
		}, want: protocol.ReasonTooManyTags},
		{name: "NUL in content", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Content = "a\x00b" })
		}, want: protocol.ReasonBadText},
		{name: "invalid UTF-8 in a tag", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"alt", "\xff"}) })
		}, want: protocol.ReasonBadText},
		{name: "empty tag", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{}) })
		}, want: protocol.ReasonEmptyTag},
		{name: "indexed tag value too long", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"r", strings.Repeat("x", 1025)}) })
		}, want: protocol.ReasonTagValueTooLong},
		{name: "addressable without d tag", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 30023 })
		}, want: protocol.ReasonNoDTag},
		{name: "malformed expiration", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "tomorrow"}) })
		}, want: protocol.ReasonBadExpiration},
		{name: "expires now", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.Tags = append(ev.Tags, nostr.Tag{"expiration", strconv.FormatInt(now, 10)})
			})
		}, want: protocol.ReasonExpired},
		{name: "expired", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = append(ev.Tags, nostr.Tag{"expiration", "1000"}) })
		}, want: protocol.ReasonExpired},
		{name: "missing topic", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"p", hex64('2')}} })
		}, want: protocol.ReasonMissingTopic},
		{name: "only empty topics", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", " \u3000"}, {"t"}} })
		}, want: protocol.ReasonMissingTopic},
		{name: "deletion without topic or reference when not exempt", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Kind = 5; ev.Tags = nostr.Tags{{"k", "1"}} })
		}, limits: func(l *protocol.Limits) { l.TopicExemptKinds = nil }, want: protocol.ReasonMissingTopic},
		{name: "malformed references give no topic", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) {
				ev.Kind = 7
				ev.Tags = nostr.Tags{{"e", "abc"}, {"a", "1:" + hex64('2') + ":x"}, {"q", "nope"}}
			})
		}, want: protocol.ReasonMissingTopic},
		{name: "topic too long once normalised", ev: func() *nostr.Event {
			// U+FDFA is 3 bytes and expands to 33 under NFKC.
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", strings.Repeat("\ufdfa", 300)}} })
		}, want: protocol.ReasonTopicTooLong},
		{name: "topic not enabled", ev: func() *nostr.Event {
			return signed(t, sk, func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"t", "go"}, {"t", "rust"}} })
		}, limits: func(l *protocol.Limits) { l.AllowedTopics = map[string]bool{"go": true} }, want: protocol.ReasonTopicNotEnabled},
		{name: "content changed after signing", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Content = "tampered"
			return ev
		}, want: protocol.ReasonBadID},
		{name: "id of another event", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.ID = other.ID
			return ev
		}, want: protocol.ReasonBadID},
		{name: "signature of another event", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Sig = other.Sig
			return ev
		}, want: protocol.ReasonBadSignature},
		{name: "signature by another key", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.PubKey = other.PubKey
			ev.ID = ev.GetID()
			return ev
		}, want: protocol.ReasonBadSignature},
		{name: "pubkey not on the curve", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.PubKey = hex64('f')
			ev.ID = ev.GetID()
			return ev
		}, want: protocol.ReasonBadSignature},
		{name: "zero signature", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Sig = hex64('0') + hex64('0')
			return ev
		}, want: protocol.ReasonBadSignature},
		{name: "the id before the rules", ev: func() *nostr.Event {
			ev := signed(t, sk, func(ev *nostr.Event) { ev.CreatedAt = nostr.Timestamp(now + 3600) })
			ev.Content = "tampered"
			return ev
		}, want: protocol.ReasonBadID},
		{name: "the id before the topic rules", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Tags = nostr.Tags{}
			return ev
		}, want: protocol.ReasonBadID},
		{name: "the signature before the rules", ev: func() *nostr.Event {
			ev := signed(t, sk, func(ev *nostr.Event) { ev.Tags = nil })
			ev.Sig = other.Sig
			return ev
		}, want: protocol.ReasonBadSignature},
		{name: "id before signature", ev: func() *nostr.Event {
			ev := signed(t, sk, nil)
			ev.Content = "tampered"
			ev.Sig = other.Sig
			return ev
		}, want: protocol.ReasonBadID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := defaults
			if tc.limits != nil {
				tc.limits(&l)
			}
			require.Equal(t, tc.want, protocol.ValidateEvent(tc.ev(), testNow, l))
		})
	}
}

func TestValidateAuthEvent(t *testing.T) {
	t.Parallel()
	sk := nostr.GeneratePrivateKey()
	const relay = "wss://relay.example.com/"
	auth := func(edit func(*nostr.Event)) *nostr.Event {
		return signed(t, sk, func(ev *nostr.Event) {
			ev.Kind = 22242
			ev.Content = ""
			ev.Tags = nostr.Tags{{"relay", relay}, {"challenge", "c1"}}
			if edit != nil {
				edit(ev)
			}
		})
	}
	for _, tc := range []struct {
		name      string
		ev        *nostr.Event
		challenge string
		relayURL  string
		want      string
	}{
		{"valid", auth(nil), "c1", relay, ""},
		{"host compared without case, https for wss", auth(func(ev *nostr.Event) {
			ev.Tags[0][1] = "https://Relay.Example.com"
		}), "c1", relay, ""},
		{"another port of the host", auth(func(ev *nostr.Event) {
			ev.Tags[0][1] = "ws://relay.example.com:7777/"
		}), "c1", relay, protocol.ReasonAuthRelay},
		{"another path of the host", auth(func(ev *nostr.Event) {
			ev.Tags[0][1] = "wss://relay.example.com/other"
		}), "c1", relay, protocol.ReasonAuthRelay},
		{"a hostile relay's name (its client signed for it)", auth(func(ev *nostr.Event) {
			ev.Tags[0][1] = "wss://evil.example/"
		}), "c1", relay, protocol.ReasonAuthRelay},
		{"relay tag without scheme", auth(func(ev *nostr.Event) { ev.Tags[0][1] = "relay.example.com" }), "c1", relay, ""},
		{"ten minutes old", auth(func(ev *nostr.Event) { ev.CreatedAt -= 600 }), "c1", relay, ""},
		{"nil", nil, "c1", relay, protocol.ReasonNoEvent},
		{"wrong kind", auth(func(ev *nostr.Event) { ev.Kind = 1 }), "c1", relay, protocol.ReasonAuthNotAuthKind},
		{"stale", auth(func(ev *nostr.Event) { ev.CreatedAt -= 601 }), "c1", relay, protocol.ReasonAuthStale},
		{"from the future", auth(func(ev *nostr.Event) { ev.CreatedAt += 601 }), "c1", relay, protocol.ReasonAuthStale},
		{"other challenge", auth(nil), "c2", relay, protocol.ReasonAuthChallenge},
		{"no challenge tag", auth(func(ev *nostr.Event) { ev.Tags = ev.Tags[:1] }), "c1", relay, protocol.ReasonAuthChallenge},
		{"empty challenge never matches", auth(func(ev *nostr.Event) { ev.Tags[1][1] = "" }), "", relay, protocol.ReasonAuthChallenge},
		{"other relay", auth(nil), "c1", "wss://other.example.com", protocol.ReasonAuthRelay},
		{"no relay tag", auth(func(ev *nostr.Event) { ev.Tags = ev.Tags[1:] }), "c1", relay, protocol.ReasonAuthRelay},
		{"relay URL not configured", auth(nil), "c1", "", protocol.ReasonAuthMissingRelay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var aud audience.Set
			if tc.relayURL != "" {
				var err error
				aud, err = audience.Parse([]string{tc.relayURL})
				require.NoError(t, err)
			}
			require.Equal(t, tc.want, protocol.ValidateAuthEvent(tc.ev, tc.challenge, aud, testNow))
		})
	}

	aud, err := audience.Parse([]string{relay})
	require.NoError(t, err)
	tampered := auth(nil)
	tampered.Tags[1][1] = "c9"
	require.Equal(t, protocol.ReasonBadID, protocol.ValidateAuthEvent(tampered, "c9", aud, testNow))
	forged := auth(nil)
	forged.Sig = auth(func(ev *nostr.Event) { ev.Content = "x" }).Sig
	require.Equal(t, protocol.ReasonBadSignature, protocol.ValidateAuthEvent(forged, "c1", aud, testNow))
	badHex := auth(nil)
	badHex.PubKey = "xyz"
	require.Equal(t, protocol.ReasonMalformedPubKey, protocol.ValidateAuthEvent(badHex, "c1", aud, testNow))
}

// BenchmarkValidateEvent reports the cost of a full validation, signature included.
func BenchmarkValidateEvent(b *testing.B) {
	ev := signed(b, nostr.GeneratePrivateKey(), nil)
	l := protocol.DefaultLimits()
	for b.Loop() {
		if r := protocol.ValidateEvent(ev, testNow, l); r != "" {
			b.Fatal(r)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// topicTags returns n t tags naming distinct topics (topic0, topic1, ...).
func topicTags(n int) nostr.Tags {
	tags := make(nostr.Tags, n)
	for i := range tags {
		tags[i] = nostr.Tag{"t", "topic" + strconv.Itoa(i)}
	}
	return tags
}
