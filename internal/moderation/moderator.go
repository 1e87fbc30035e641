package moderation

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// ConsumerName is the moderator's consumer (its row in cn_relay.consumer_offsets).
const ConsumerName = "moderation-v1"

// DefaultNamespace is the NIP-32 label namespace (`L`) of the node's labels.
const DefaultNamespace = "social.kukuri.moderation"

// DefaultBatchSize is the moderator's outbox rows per transaction.
const DefaultBatchSize = 500

// Config configures a Moderator.
type Config struct {
	Key       nodekey.Key      // signs the labels and their retractions
	Store     *store.Publisher // writes them (and hides) in the consumer's transaction
	Namespace string           // NIP-32 namespace; DefaultNamespace when empty
	// TopicRules are the rules the labels are stored under (the relay's);
	// protocol.DefaultTopicRules when unset.
	TopicRules protocol.TopicRules
	// Notifier, if set, announces the outbox rows the moderator appended once
	// their batch committed, so relays deliver labels live at once.
	Notifier   *outbox.Notifier
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time // the time recorded with decisions; time.Now when nil
	// Classifier is the optional content classifier (off when its URL is
	// empty); Pool counts its daily budget outside the batch's transaction, so
	// that requests made by a batch that rolls back are still counted.
	Classifier ClassifierConfig
	Pool       *pgxpool.Pool
}

// Moderator is the moderation-v1 handler (pkg/consumer). Per batch, in the
// consumer's transaction, it:
//
//   - runs the content rules on every stored event an upsert row names (never on
//     the node's own events), whatever the event's current state, so that a
//     replay makes the same decisions;
//   - tallies NIP-56 reports (kind 1984) per target and runs the report rules on
//     each reported event that got a report;
//   - emits one NIP-32 label per (rule version, target) through the store: its
//     created_at is the target's, so its id is deterministic and a replayed label
//     is a duplicate; it inherits the target's topics;
//   - hides events (store.Publisher.PublishTx) for `hide` rules unless an operator has
//     decided about them, queues `hold` rules' events for the operator;
//   - takes back (NIP-09, signed by the node) the labels of a target its author
//     deleted or that expired, and withdraws deleted reports from the tally.
//
// Every effect is keyed (label id, report and target, rule decision per event)
// and commits with the offset, so a replay or a crash mid-batch ends in the same
// state.
//
// Within a batch, each event's first upsert row and first delete row (other than
// moderation's own hides) are kept, wherever they are in the batch. Elsewhere
// only rows adjacent in seq for the same event may be collapsed; here any may,
// because of two facts: every effect of an upsert is written once and the first
// write wins (labels, reports, decisions are insert-if-absent, and carry the
// first row's seq), so a later upsert of the same event adds nothing, in this
// batch or a later one; and a delete for a NIP-09 deletion or an expiration is
// final (the event never comes back), so an event has at most one such row. The
// outbox shape `A upsert, B upsert, B delete, A upsert` (version A replaced by
// B, B deleted, A effective again) ends alike in one batch or row by row
// (tested).
type Moderator struct {
	cfg        Config
	m          *metrics
	compiled   map[string]*compiled // by name@version
	classifier *classifier          // nil: none configured

	pending     outbox.Range // appended by the last Handle
	pendingDone counts       // what the last Handle did, counted after its commit
}

// New returns a Moderator.
func New(cfg Config) *Moderator {
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.TopicRules = cfg.TopicRules.OrDefault()
	m := &Moderator{cfg: cfg, m: newMetrics(cfg.Registerer), compiled: map[string]*compiled{}}
	if cfg.Classifier.URL != "" {
		m.classifier = newClassifier(cfg.Classifier, cfg.Pool, cfg.Registerer, cfg.Logger)
	}
	return m
}

// target is a stored event as the rules see it.
type target struct {
	*nostr.Event
	effectiveKey string
	topics       []string
}

// fired is one rule firing on one event, at the outbox row seq.
type fired struct {
	rule   *compiled
	target *target
	seq    int64
	rank   *int16 // a report rule with min_reporter_rank: the lowest reporter rank it counted
}

// counts are the metrics of one batch.
type counts struct {
	labels  map[string]int // by rule
	hides   int
	reports map[string]int // by type
	ruleDur time.Duration
}

// Handle applies rows; see Moderator.
func (m *Moderator) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	m.pending, m.pendingDone = outbox.Range{}, counts{labels: map[string]int{}, reports: map[string]int{}}
	// Every decision is taken as of the row that causes it (its seq), never
	// with hindsight, so that batches cut anywhere and replays decide alike.
	var upserts []string
	upsertSeq := map[string]int64{}
	seen := map[string]bool{}
	var deletes []outbox.Row
	for _, r := range rows {
		switch {
		case r.Op == outbox.OpUpsert && !seen[r.EventID]:
			seen[r.EventID] = true
			upserts = append(upserts, r.EventID)
			upsertSeq[r.EventID] = r.Seq
		case r.Op == outbox.OpDelete && r.Reason != outbox.ReasonModeration && !seen["-"+r.EventID]:
			seen["-"+r.EventID] = true
			deletes = append(deletes, r)
		}
	}

	var contentRules, reportRules []*compiled
	targets := map[string]*target{}
	var b pgx.Batch
	b.Queue("SELECT spec, version FROM cn_moderation.rules ORDER BY position, name").Query(func(rows pgx.Rows) error {
		var err error
		contentRules, reportRules, err = m.scanRules(rows)
		return err
	})
	queueLoadTargets(&b, upserts, targets)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("load rules and events: %w", err)
	}

	start := time.Now()
	var fires, awaiting []fired // awaiting: every condition met but the classifier's
	var reports []report
	for _, id := range upserts {
		t := targets[id]
		if t == nil || t.PubKey == m.cfg.Key.PubKey {
			continue
		}
		txt := &text{content: t.Content}
		for _, r := range contentRules {
			if !r.matchesEvent(t, txt) {
				continue
			}
			f := fired{rule: r, target: t, seq: upsertSeq[id]}
			if r.Classifier != nil {
				awaiting = append(awaiting, f)
			} else {
				fires = append(fires, f)
			}
		}
		if t.Kind == nostr.KindReporting {
			for _, rep := range parseReport(t.Event) {
				rep.seq = upsertSeq[id]
				reports = append(reports, rep)
			}
		}
	}
	m.pendingDone.ruleDur = time.Since(start)
	if err := m.classify(ctx, tx, awaiting, &fires); err != nil {
		return err
	}

	if err := m.recordReports(ctx, tx, reports); err != nil {
		return err
	}
	if err := withdrawReports(ctx, tx, deletes); err != nil {
		return err
	}
	if err := m.runReportRules(ctx, tx, reports, reportRules, targets, &fires); err != nil {
		return err
	}
	if err := m.runBlobRules(ctx, tx, reports, reportRules); err != nil {
		return err
	}
	labels, err := m.writeLabels(ctx, tx, fires)
	if err != nil {
		return err
	}
	retractions, err := m.retract(ctx, tx, deletes)
	if err != nil {
		return err
	}
	hides, err := m.decide(ctx, tx, fires)
	if err != nil {
		return err
	}
	banned, err := m.bannedAuthors(ctx, tx, upserts, targets)
	if err != nil {
		return err
	}
	for _, id := range banned {
		if !slices.Contains(hides, id) {
			hides = append(hides, id)
		}
	}

	// Last: the store writes the node's events and hides, ending with the
	// outbox append (which holds the outbox lock until our commit).
	evs := append(labels, retractions...)
	if len(evs) == 0 && len(hides) == 0 {
		return nil
	}
	p, err := m.cfg.Store.PublishTx(ctx, tx, m.cfg.TopicRules, evs, hides, nil)
	if err != nil {
		return err
	}
	for i, v := range p.Verdicts {
		if i < len(labels) && v.OK && v.Message == "" {
			m.pendingDone.labels[fires[i].rule.Name]++
		}
	}
	for _, o := range p.Outcomes {
		if o == store.Hidden {
			m.pendingDone.hides++
		}
	}
	m.pending = p.Range
	return nil
}

// classify settles the firings that wait for the classifier: each event's
// recorded outcome is used (a replay never asks again); events without one are
// classified now, within the batch deadline, and their outcomes recorded in the
// batch's transaction. With no classifier configured such rules never fire.
func (m *Moderator) classify(ctx context.Context, tx consumer.Tx, awaiting []fired, fires *[]fired) error {
	if len(awaiting) == 0 {
		return nil
	}
	ids := map[string]*target{}
	for _, f := range awaiting {
		ids[f.target.ID] = f.target
	}
	rows, err := tx.Query(ctx, "SELECT event_id, outcome = 'classified', labels, reason FROM cn_moderation.classifications WHERE event_id = ANY($1)",
		slices.Sorted(maps.Keys(ids)))
	if err != nil {
		return fmt.Errorf("load classifications: %w", err)
	}
	outcomes := map[string]Classification{}
	for rows.Next() {
		var id string
		var c Classification
		if err := rows.Scan(&id, &c.Classified, &c.Labels, &c.Reason); err != nil {
			return fmt.Errorf("load classifications: %w", err)
		}
		outcomes[id] = c
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load classifications: %w", err)
	}
	if m.classifier != nil {
		var items []classifyItem
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			if _, done := outcomes[id]; !done {
				items = append(items, classifyItem{id: id, kind: ids[id].Kind, content: ids[id].Content})
			}
		}
		if len(items) > 0 {
			fresh := m.classifier.classify(ctx, items)
			var rid, routcome, rreason []string
			var rlabels [][]byte
			for _, it := range items {
				c := fresh[it.id]
				outcomes[it.id] = c
				labels, _ := json.Marshal(c.Labels)
				if c.Labels == nil {
					labels = []byte("[]")
				}
				outcome := "unclassified"
				if c.Classified {
					outcome = "classified"
				}
				rid, routcome, rlabels, rreason = append(rid, it.id), append(routcome, outcome), append(rlabels, labels), append(rreason, c.Reason)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO cn_moderation.classifications (event_id, outcome, labels, reason, at)
				SELECT id, o, l::jsonb, r, $5 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(id, o, l, r)
				ON CONFLICT DO NOTHING`, rid, routcome, bytesToStrings(rlabels), rreason, m.cfg.Now()); err != nil {
				return fmt.Errorf("record classifications: %w", err)
			}
		}
	}
	for _, f := range awaiting {
		if c, ok := outcomes[f.target.ID]; ok && f.rule.classified(c) {
			*fires = append(*fires, f)
		}
	}
	return nil
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// bannedAuthors finds events whose authors are banned (relay management,
// cn_admin.pubkeys) and records them as hidden by the ban: the relay refuses a
// banned pubkey within a second of the ban, and this catches what it stored in
// that second. Lifting the ban shows them again.
func (m *Moderator) bannedAuthors(ctx context.Context, tx consumer.Tx, upserts []string, targets map[string]*target) ([]string, error) {
	authors := map[string]bool{}
	for _, id := range upserts {
		if t := targets[id]; t != nil && t.PubKey != m.cfg.Key.PubKey {
			authors[t.PubKey] = true
		}
	}
	if len(authors) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT pubkey FROM cn_admin.pubkeys WHERE status = 'banned' AND pubkey = ANY($1)",
		slices.Sorted(maps.Keys(authors)))
	if err != nil {
		return nil, fmt.Errorf("load bans: %w", err)
	}
	bannedKeys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(bannedKeys) == 0 {
		return nil, err
	}
	var ids, pks []string
	for _, id := range upserts {
		if t := targets[id]; t != nil && slices.Contains(bannedKeys, t.PubKey) {
			ids, pks = append(ids, id), append(pks, t.PubKey)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cn_admin.ban_hides (pubkey, event_id)
		SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING`, pks, ids); err != nil {
		return nil, fmt.Errorf("record ban hides: %w", err)
	}
	return ids, nil
}

// AfterCommit announces what the last batch appended and counts what it did.
func (m *Moderator) AfterCommit() {
	if m.pending.Last > 0 && m.cfg.Notifier != nil {
		m.cfg.Notifier.Notify(m.pending.Last)
	}
	for rule, n := range m.pendingDone.labels {
		m.m.labels.WithLabelValues(rule).Add(float64(n))
	}
	m.m.hides.WithLabelValues("rule").Add(float64(m.pendingDone.hides))
	for typ, n := range m.pendingDone.reports {
		m.m.reports.WithLabelValues(typ).Add(float64(n))
	}
	m.m.ruleSeconds.Observe(m.pendingDone.ruleDur.Seconds())
	m.pending, m.pendingDone = outbox.Range{}, counts{}
}

// scanRules compiles the stored rules (cached by name@version).
func (m *Moderator) scanRules(rows pgx.Rows) (content, reports []*compiled, err error) {
	sr, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredRule, error) {
		var s StoredRule
		var spec []byte
		if err := row.Scan(&spec, &s.Version); err != nil {
			return s, err
		}
		return s, json.Unmarshal(spec, &s.Rule)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load rules: %w", err)
	}
	for _, s := range sr {
		key := s.Name + "@" + strconv.Itoa(s.Version)
		c := m.compiled[key]
		if c == nil {
			if c, err = compile(s.Rule, s.Version); err != nil {
				return nil, nil, err
			}
			m.compiled[key] = c
		}
		if c.IsReportRule() {
			reports = append(reports, c)
		} else {
			content = append(content, c)
		}
	}
	return content, reports, nil
}

// queueLoadTargets queues the read of events by id (any state) with their topics.
func queueLoadTargets(b *pgx.Batch, ids []string, into map[string]*target) {
	if len(ids) == 0 {
		return
	}
	b.Queue(`SELECT `+schema.EventColumns+`, coalesce(e.effective_key, ''), `+schema.ScopeTopicsSQL+`
		FROM cn_relay.events e WHERE e.id = ANY($1)`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			ev := &nostr.Event{}
			t := &target{Event: ev}
			var createdAt int64
			var kind int32
			if err := rows.Scan(&ev.ID, &ev.PubKey, &createdAt, &kind, &ev.Tags, &ev.Content, &ev.Sig, &t.effectiveKey, &t.topics); err != nil {
				return fmt.Errorf("load events: %w", err)
			}
			ev.CreatedAt, ev.Kind = nostr.Timestamp(createdAt), int(kind)
			into[ev.ID] = t
		}
		return rows.Err()
	})
}

// labelEvent is the node's NIP-32 label of t by rule r. Everything in it comes
// from (r, t), so the same rule version labelling the same event always makes
// the same event id.
func (m *Moderator) labelEvent(r *compiled, t *target) (*nostr.Event, error) {
	ns := m.cfg.Namespace
	tags := nostr.Tags{{"L", ns}, {"l", r.Label, ns}, {"e", t.ID}, {"p", t.PubKey}}
	if t.effectiveKey != "" && protocol.ClassOf(t.Kind) == protocol.Addressable {
		tags = append(tags, nostr.Tag{"a", t.effectiveKey})
	}
	if r.Expire > 0 {
		tags = append(tags, nostr.Tag{"expiration", strconv.FormatInt(int64(t.CreatedAt)+int64(time.Duration(r.Expire)/time.Second), 10)})
	}
	ev := &nostr.Event{
		Kind:      1985,
		CreatedAt: t.CreatedAt,
		Tags:      tags,
		Content:   fmt.Sprintf("rule %s version %d", r.Name, r.version),
	}
	if err := m.cfg.Key.Sign(ev); err != nil {
		return nil, err
	}
	return ev, nil
}

// writeLabels signs the labels of fires (in order) and records them.
func (m *Moderator) writeLabels(ctx context.Context, tx consumer.Tx, fires []fired) ([]*nostr.Event, error) {
	if len(fires) == 0 {
		return nil, nil
	}
	labels := make([]*nostr.Event, len(fires))
	ids, targets, rules, labelValues := make([]string, len(fires)), make([]string, len(fires)), make([]string, len(fires)), make([]string, len(fires))
	versions := make([]int32, len(fires))
	seqs := make([]int64, len(fires))
	for i, f := range fires {
		ev, err := m.labelEvent(f.rule, f.target)
		if err != nil {
			return nil, err
		}
		labels[i] = ev
		ids[i], targets[i], rules[i], labelValues[i], versions[i] = ev.ID, f.target.ID, f.rule.Name, f.rule.Label, int32(f.rule.version)
		seqs[i] = f.seq
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cn_moderation.labels (label_id, target_id, rule, rule_version, label, seq)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::bigint[]) ON CONFLICT DO NOTHING`,
		ids, targets, rules, versions, labelValues, seqs); err != nil {
		return nil, fmt.Errorf("record labels: %w", err)
	}
	return labels, nil
}

// retract takes back, with one NIP-09 deletion per target, the labels of targets
// their author deleted or that expired: the labels made before the deletion's
// row (a label made after it, by a later report, stays).
func (m *Moderator) retract(ctx context.Context, tx consumer.Tx, deletes []outbox.Row) ([]*nostr.Event, error) {
	if len(deletes) == 0 {
		return nil, nil
	}
	ids := make([]string, len(deletes))
	deleted := map[string]outbox.Row{}
	for i, r := range deletes {
		ids[i] = r.EventID
		deleted[r.EventID] = r
	}
	rows, err := tx.Query(ctx, `SELECT target_id, label_id, seq FROM cn_moderation.labels
		WHERE target_id = ANY($1) AND retracted_by IS NULL ORDER BY target_id, label_id`, ids)
	if err != nil {
		return nil, fmt.Errorf("find labels to retract: %w", err)
	}
	byTarget := map[string][]string{}
	for rows.Next() {
		var tid, lid string
		var seq int64
		if err := rows.Scan(&tid, &lid, &seq); err != nil {
			return nil, fmt.Errorf("find labels to retract: %w", err)
		}
		if seq < deleted[tid].Seq {
			byTarget[tid] = append(byTarget[tid], lid)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find labels to retract: %w", err)
	}
	var out []*nostr.Event
	var labelIDs, by []string
	for _, tid := range slices.Sorted(maps.Keys(byTarget)) {
		tags := nostr.Tags{}
		for _, lid := range byTarget[tid] {
			tags = append(tags, nostr.Tag{"e", lid})
		}
		tags = append(tags, nostr.Tag{"k", "1985"})
		del := &nostr.Event{Kind: nostr.KindDeletion, CreatedAt: nostr.Timestamp(deleted[tid].CreatedAt), Tags: tags,
			Content: "the labelled event was deleted"}
		if err := m.cfg.Key.Sign(del); err != nil {
			return nil, err
		}
		out = append(out, del)
		for _, lid := range byTarget[tid] {
			labelIDs, by = append(labelIDs, lid), append(by, del.ID)
		}
	}
	if len(labelIDs) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE cn_moderation.labels l SET retracted_by = u.by
			FROM unnest($1::text[], $2::text[]) AS u(id, by) WHERE l.label_id = u.id`, labelIDs, by); err != nil {
			return nil, fmt.Errorf("record retractions: %w", err)
		}
	}
	return out, nil
}

// decide records the rules' hide and hold decisions and returns the events to
// hide: those of `hide` rules about which no operator has decided.
func (m *Moderator) decide(ctx context.Context, tx consumer.Tx, fires []fired) ([]string, error) {
	var ids, actions, actors, reasons []string
	var ranks []*float64
	for _, f := range fires {
		if f.rule.Action == ActionLabel {
			continue
		}
		var rank *float64
		if f.rank != nil {
			v := float64(*f.rank)
			rank = &v
		}
		ranks = append(ranks, rank)
		ids = append(ids, f.target.ID)
		actions = append(actions, f.rule.Action)
		actors = append(actors, f.rule.ref())
		reasons = append(reasons, "label "+f.rule.Label)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	decided := map[string]bool{}
	rows, err := tx.Query(ctx, "SELECT DISTINCT event_id FROM cn_moderation.actions WHERE event_id = ANY($1) AND source = 'operator'", ids)
	if err != nil {
		return nil, fmt.Errorf("load operator decisions: %w", err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("load operator decisions: %w", err)
		}
		decided[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load operator decisions: %w", err)
	}
	var hide []string
	var keep []int
	for i, id := range ids {
		if decided[id] {
			continue // the operator's decision stands
		}
		keep = append(keep, i)
		if actions[i] == ActionHide && !slices.Contains(hide, id) {
			hide = append(hide, id)
		}
	}
	pick := func(s []string) []string {
		out := make([]string, len(keep))
		for j, i := range keep {
			out[j] = s[i]
		}
		return out
	}
	if len(keep) > 0 {
		keptRanks := make([]*float64, len(keep))
		for j, i := range keep {
			keptRanks[j] = ranks[i]
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_moderation.actions (event_id, action, source, actor, reason, at, rank)
			SELECT id, a, 'rule', actor, reason, $5, rank FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $6::float8[]) AS u(id, a, actor, reason, rank)
			ON CONFLICT DO NOTHING`, pick(ids), pick(actions), pick(actors), pick(reasons), m.cfg.Now(), keptRanks); err != nil {
			return nil, fmt.Errorf("record decisions: %w", err)
		}
	}
	sort.Strings(hide)
	return hide, nil
}

// SetClassifierLimits installs cfg's timeout, batch deadline, concurrency,
// daily budget and content cut in the running classifier (a configuration
// reload): the batches that start after it use them, the batch being
// classified keeps the old ones. The URL is not changed (a restart is), and
// without a classifier it does nothing.
func (m *Moderator) SetClassifierLimits(cfg ClassifierConfig) {
	if m.classifier != nil {
		m.classifier.setLimits(cfg)
	}
}
