package admission

import (
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

type policy struct{ bannedPubkey, bannedEvent string }

func (p policy) PubkeyBanned(pk string) bool { return pk == p.bannedPubkey }
func (p policy) EventBanned(id string) bool  { return id == p.bannedEvent }
func (p policy) KindAccepted(kind int) bool  { return kind != 7 }

type ranks struct{ admit bool }

func (r ranks) Admit(string) bool { return r.admit }
func (r ranks) Threshold() int    { return 10 }
func (r ranks) Provider() string  { return "" }

// conn records what the chain asked of it.
type conn struct {
	author, protected string
	asked             []string
}

func (c *conn) AuthorReason(string) string { c.asked = append(c.asked, "author"); return c.author }
func (c *conn) ProtectedReason(*nostr.Event) string {
	c.asked = append(c.asked, "protected")
	return c.protected
}

func signed(t *testing.T, kind int, tags nostr.Tags) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Now(), Tags: append(tags, nostr.Tag{"t", "go"}), Content: "x"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	return ev
}

// TestChainOrder: the first refusal in the documented order wins, and the
// connection's budget is spent only by events that passed the checks before it.
func TestChainOrder(t *testing.T) {
	t.Parallel()
	now := time.Now()
	note := signed(t, 1, nil)
	forged := *note
	forged.Content = "changed"

	c := &conn{author: "rate-limited: author"}
	chain := &Chain{Limits: protocol.DefaultLimits(), Policy: policy{bannedPubkey: note.PubKey}, Ranks: ranks{}}
	require.True(t, strings.HasPrefix(chain.Check(&forged, now, c), "invalid: "), "validation first")
	require.Equal(t, ReasonBannedPubkey, chain.Check(note, now, c), "then the policy")
	require.Empty(t, c.asked, "refused events spend no budget")

	chain.Policy = policy{}
	require.Contains(t, chain.Check(note, now, c), "web-of-trust rank of at least 10", "then the rank gate")
	require.Empty(t, c.asked)
	require.Equal(t, ReasonKindNotAccepted, chain.Check(signed(t, 7, nostr.Tags{{"e", note.ID}}), now, c))

	chain.Ranks = ranks{admit: true}
	require.Equal(t, "rate-limited: author", chain.Check(note, now, c), "then the author's budget")
	c.author = ""
	protected := signed(t, 1, nostr.Tags{{"-"}})
	c.protected = "restricted: not yours"
	c.asked = nil
	require.Equal(t, "restricted: not yours", chain.Check(protected, now, c), "then NIP-70")
	require.Equal(t, []string{"author", "protected"}, c.asked)
	require.Empty(t, chain.Check(note, now, c))

	require.Equal(t, ReasonProtected, chain.Check(protected, now, nil), "without a connection nobody authenticated")
	require.Empty(t, chain.Check(note, now, nil))
	require.Empty(t, (&Chain{Limits: protocol.DefaultLimits()}).Check(note, now, nil), "no policy, no gate")
}
