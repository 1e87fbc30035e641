package trust

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// DefaultAssertMinRank is the rank cutoff: subjects below it get no assertion.
const DefaultAssertMinRank = 1

// ProviderPurpose derives the provider key from the node key (nodekey.Key.Derive).
const ProviderPurpose = "nip85 provider " + Algorithm

// Publisher publishes the NIP-85 assertions of dirty subjects. Only one
// goroutine of one process publishes (the trust daemon's leader), so two
// versions of one subject's assertion are never made concurrently.
type Publisher struct {
	Pool  *pgxpool.Pool
	Store *store.Publisher
	// TopicRules are the rules the assertions are stored under (the relay's);
	// protocol.DefaultTopicRules when unset.
	TopicRules protocol.TopicRules
	Key        nodekey.Key // the provider key
	Notifier   *outbox.Notifier
	MinRank    int // DefaultAssertMinRank when 0
	Batch      int // subjects per transaction; 500 when 0
	Now        func() time.Time
}

// Published counts what one PublishPending call did.
type Published struct {
	Assertions, Deletions, Unchanged int
}

// PublishPending folds the consumer's counter changes (Fold), then publishes
// until no subject is dirty.
func (p *Publisher) PublishPending(ctx context.Context) (Published, error) {
	var total Published
	if _, err := Fold(ctx, p.Pool); err != nil {
		return total, err
	}
	for {
		n, done, err := p.publishBatch(ctx)
		total.Assertions += n.Assertions
		total.Deletions += n.Deletions
		total.Unchanged += n.Unchanged
		if err != nil || done {
			return total, err
		}
	}
}

type pending struct {
	id        int32
	subject   string
	version   int64
	rank      int
	counts    [10]int64
	first     *int64
	pubAt     *int64
	pubTags   []byte
	published bool
}

// claimTags are the NIP-85 tags of one assertion, in a fixed order.
func claimTags(s *pending) nostr.Tags {
	tags := nostr.Tags{{"d", s.subject}, {"rank", strconv.Itoa(s.rank)}}
	names := []string{"followers", "post_cnt", "reply_cnt", "reactions_cnt", "reports_cnt_recd", "reports_cnt_sent",
		"zap_cnt_recd", "zap_amt_recd", "zap_cnt_sent", "zap_amt_sent"}
	for i, name := range names {
		v := s.counts[i]
		if name == "zap_amt_recd" || name == "zap_amt_sent" {
			v /= 1000 // NIP-85 amounts are in sats
		}
		tags = append(tags, nostr.Tag{name, strconv.FormatInt(v, 10)})
	}
	if s.first != nil {
		tags = append(tags, nostr.Tag{"first_created_at", strconv.FormatInt(*s.first, 10)})
	}
	return tags
}

func (p *Publisher) publishBatch(ctx context.Context) (Published, bool, error) {
	var out Published
	batch := p.Batch
	if batch == 0 {
		batch = 500
	}
	minRank := p.MinRank
	if minRank == 0 {
		minRank = DefaultAssertMinRank
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	var rng outbox.Range
	done := false
	// (The commit, which may carry outbox rows, is never cancelled: outbox.Commit.)
	err := pgx.BeginFunc(context.WithoutCancel(ctx), p.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT s.id, k.pubkey, s.version, coalesce(sc.rank, 0),
				s.followers, s.post_cnt, s.reply_cnt, s.reactions_cnt, s.reports_cnt_recd, s.reports_cnt_sent,
				s.zap_cnt_recd, s.zap_amt_recd, s.zap_cnt_sent, s.zap_amt_sent, s.first_created_at,
				pb.created_at, pb.tags
			FROM cn_trust.subjects s
			JOIN cn_trust.pubkeys k ON k.id = s.id
			LEFT JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
			LEFT JOIN cn_trust.published pb ON pb.subject = k.pubkey
			WHERE s.dirty ORDER BY s.id LIMIT $1`, batch)
		if err != nil {
			return fmt.Errorf("load dirty subjects: %w", err)
		}
		var subs []*pending
		for rows.Next() {
			s := &pending{}
			c := &s.counts
			if err := rows.Scan(&s.id, &s.subject, &s.version, &s.rank, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9],
				&s.first, &s.pubAt, &s.pubTags); err != nil {
				return fmt.Errorf("load dirty subjects: %w", err)
			}
			s.published = s.pubAt != nil
			subs = append(subs, s)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("load dirty subjects: %w", err)
		}
		done = len(subs) < batch
		var evs []*nostr.Event
		var pubSubject, pubID, pubTags []string
		var pubAt []int64
		var unpublish []string
		var ids []int32
		var versions []int64
		ts := now().Unix()
		for _, s := range subs {
			ids, versions = append(ids, s.id), append(versions, s.version)
			if s.rank < minRank {
				if !s.published {
					out.Unchanged++
					continue
				}
				del := &nostr.Event{Kind: nostr.KindDeletion, CreatedAt: nostr.Timestamp(max(ts, *s.pubAt)),
					Tags: nostr.Tags{{"a", fmt.Sprintf("%d:%s:%s", protocol.KindUserAssertion, p.Key.PubKey, s.subject)},
						{"k", strconv.Itoa(protocol.KindUserAssertion)}}}
				if err := p.Key.Sign(del); err != nil {
					return err
				}
				evs = append(evs, del)
				unpublish = append(unpublish, s.subject)
				out.Deletions++
				continue
			}
			tags := claimTags(s)
			if s.published {
				var old nostr.Tags
				if json.Unmarshal(s.pubTags, &old) == nil && slices.EqualFunc(old, tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) }) {
					out.Unchanged++
					continue
				}
			}
			at := ts
			if s.pubAt != nil {
				at = max(ts, *s.pubAt+1)
			}
			ev := &nostr.Event{Kind: protocol.KindUserAssertion, CreatedAt: nostr.Timestamp(at), Tags: tags}
			if err := p.Key.Sign(ev); err != nil {
				return err
			}
			evs = append(evs, ev)
			raw, _ := json.Marshal(tags)
			pubSubject, pubID, pubAt, pubTags = append(pubSubject, s.subject), append(pubID, ev.ID), append(pubAt, at), append(pubTags, string(raw))
			out.Assertions++
		}
		var b pgx.Batch
		if len(unpublish) > 0 {
			b.Queue(`DELETE FROM cn_trust.published WHERE subject = ANY($1)`, unpublish)
		}
		if len(pubSubject) > 0 {
			b.Queue(`INSERT INTO cn_trust.published (subject, event_id, created_at, tags)
				SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::jsonb[])
				ON CONFLICT (subject) DO UPDATE SET event_id = excluded.event_id, created_at = excluded.created_at, tags = excluded.tags`,
				pubSubject, pubID, pubAt, pubTags)
		}
		// A subject changed again since we read it stays dirty (its version moved).
		b.Queue(`UPDATE cn_trust.subjects s SET dirty = false FROM unnest($1::integer[], $2::bigint[]) AS u(id, v)
			WHERE s.id = u.id AND s.version = u.v`, ids, versions)
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("record assertions: %w", err)
		}
		if len(evs) > 0 {
			res, err := p.Store.PublishTx(ctx, tx, p.TopicRules.OrDefault(), evs, nil, nil)
			if err != nil {
				return err
			}
			for i, v := range res.Verdicts {
				if !v.OK {
					return fmt.Errorf("assertion %s refused by the store: %s", evs[i].ID, v.Message)
				}
			}
			rng = res.Range
		}
		return nil
	})
	if err != nil {
		return out, true, err
	}
	if rng.Last > 0 && p.Notifier != nil {
		p.Notifier.Notify(rng.Last)
	}
	return out, done, nil
}

// ProviderProfile is the kind 0 content of the provider key (NIP-85: the
// provider's profile describes its algorithm).
func ProviderProfile(nodeName string) string {
	name := "trust-v1"
	if nodeName != "" {
		name = nodeName + " · trust-v1"
	}
	raw, _ := json.Marshal(map[string]string{
		"name": name,
		"about": "NIP-85 trusted assertions (kind 30382) of this community node, algorithm trust-v1: a personalised " +
			"PageRank over follow lists (interactions at weight 0.1, capped at 0.5 per pair) teleporting to the node's seeds; " +
			"mutes and reports from ranked keys lower a rank; rank = 100 + 100/6 * log10(score / top score), 0 when unreached. " +
			"Subjects below rank 1 get no assertion. Counts follow NIP-85 names.",
	})
	return string(raw)
}

// PublishProvider records the provider key and publishes its kind 0 when the
// stored one differs.
func (p *Publisher) PublishProvider(ctx context.Context, nodeName string) error {
	content := ProviderProfile(nodeName)
	var rng outbox.Range
	// (The commit, which may carry outbox rows, is never cancelled: outbox.Commit.)
	err := pgx.BeginFunc(context.WithoutCancel(ctx), p.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO cn_trust.provider (algorithm, pubkey) VALUES ($1, $2)
			ON CONFLICT (algorithm) DO UPDATE SET pubkey = excluded.pubkey`, Algorithm, p.Key.PubKey); err != nil {
			return fmt.Errorf("record provider: %w", err)
		}
		var old string
		var oldAt int64
		// The current version, even deleted or hidden: an operator's hide stays.
		err := tx.QueryRow(ctx, `SELECT e.content, e.created_at FROM cn_relay.events e
			WHERE e.pubkey = $1 AND e.kind = 0 AND `+schema.CurrentSQL+` ORDER BY e.created_at DESC LIMIT 1`, p.Key.PubKey).Scan(&old, &oldAt)
		if err == nil && old == content {
			return nil
		}
		if err != nil && err != pgx.ErrNoRows {
			return fmt.Errorf("read provider profile: %w", err)
		}
		ev := &nostr.Event{Kind: 0, CreatedAt: nostr.Timestamp(max(time.Now().Unix(), oldAt+1)), Content: content, Tags: nostr.Tags{}}
		if err := p.Key.Sign(ev); err != nil {
			return err
		}
		res, err := p.Store.PublishTx(ctx, tx, p.TopicRules.OrDefault(), []*nostr.Event{ev}, nil, nil)
		if err != nil {
			return err
		}
		if !res.Verdicts[0].OK {
			return fmt.Errorf("provider profile refused by the store: %s", res.Verdicts[0].Message)
		}
		rng = res.Range
		return nil
	})
	if err == nil && rng.Last > 0 && p.Notifier != nil {
		p.Notifier.Notify(rng.Last)
	}
	return err
}
