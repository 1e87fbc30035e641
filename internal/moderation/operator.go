package moderation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// ErrNotFound is returned when an operator names an event that is not stored.
var ErrNotFound = errors.New("no such event")

// Decide applies an operator's decision about an event ("hide", "unhide" or
// "dismiss": looked at, leave it) and records it (who, when, why) in
// cn_moderation.actions, in one transaction; then it announces the outbox rows.
// An operator's decision is final for the rules: the moderator never hides an
// event an operator decided about. It returns what happened to the event.
func Decide(ctx context.Context, pool *pgxpool.Pool, st *store.Publisher, eventID, action, actor, reason string) (store.Outcome, error) {
	var hide, unhide []string
	switch action {
	case "hide":
		hide = []string{eventID}
	case "unhide":
		unhide = []string{eventID}
	case "dismiss":
	default:
		return "", fmt.Errorf("unknown decision %q", action)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: %w", action, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.events WHERE id = $1)", eventID).Scan(&exists); err != nil {
		return "", fmt.Errorf("%s: %w", action, err)
	}
	if !exists {
		return store.NotFound, fmt.Errorf("%w: %s", ErrNotFound, eventID)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO cn_moderation.actions (event_id, action, source, actor, reason, at)
		VALUES ($1, $2, 'operator', $3, $4, $5)`, eventID, action, actor, reason, time.Now()); err != nil {
		return "", fmt.Errorf("record %s: %w", action, err)
	}
	outcome := store.Unchanged
	var r outbox.Range
	if hide != nil || unhide != nil {
		p, err := st.ModerateTx(ctx, tx, hide, unhide)
		if err != nil {
			return "", err
		}
		outcome, r = p.Outcomes[eventID], p.Range
	}
	if err := outbox.Commit(ctx, tx); err != nil {
		return "", fmt.Errorf("%s: %w", action, err)
	}
	if r.Last > 0 {
		// A wake-up only: consumers also poll, so a lost NOTIFY loses nothing.
		_, _ = pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, fmt.Sprint(r.Last))
	}
	return outcome, nil
}

// QueueItem is an event that needs an operator's decision: it has open reports
// or a rule put it on hold, and no operator has decided about it yet.
type QueueItem struct {
	EventID   string         `json:"event_id"`
	Reporters int            `json:"reporters"`
	Reports   map[string]int `json:"reports"` // by NIP-56 type
	Held      []string       `json:"held_by,omitempty"`
	Hidden    bool           `json:"hidden"`
	LastAt    int64          `json:"last_report_at"` // created_at of the newest report (0: none)
}

type queryer interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// Queue lists the events waiting for an operator, newest report first.
func Queue(ctx context.Context, q queryer, limit int) ([]QueueItem, error) {
	return GroupQueue(ctx, q, limit, "")
}

// GroupQueue is Queue for the events sent to one NIP-29 group (scope
// groups.Scope(group); "" for every event): the reported or held event is in
// the group, wherever its reports are stored (a report with the group's h tag
// is in the group too; one without it is in the reported person's scope, or
// was refused: see docs/groups.md "Pipeline").
func GroupQueue(ctx context.Context, q queryer, limit int, group string) ([]QueueItem, error) {
	scope := ""
	if group != "" {
		scope = groups.Scope(group)
	}
	return queue(ctx, q, limit, scope, "", nil, "")
}

// QueuePage is one page of Queue for the console: at most limit items after
// (afterAt, afterID) in the queue's order (the newest report first, then by
// event id; afterAt nil: from the start), of the events of group
// (protocol.GroupOf, as the store placed them: schema.GroupOfSQL; "": every
// event; "node": the events in no group). The page costs one
// aggregate over the open reports, wherever it is in the queue.
func QueuePage(ctx context.Context, q queryer, limit int, group string, afterAt *int64, afterID string) ([]QueueItem, error) {
	return queue(ctx, q, limit, "", group, afterAt, afterID)
}

// OpenReport is one open report (not withdrawn) about an event.
type OpenReport struct {
	Target   string // the reported event
	Reporter string
	Type     string // its NIP-56 type
	At       int64  // the report's created_at
	RankThen int    // the reporter's trust rank when the report arrived (0: unranked)
	ReportID string
}

// OpenReports reads the open reports about the events targets, newest
// first, then by reporter.
func OpenReports(ctx context.Context, q queryer, targets []string) ([]OpenReport, error) {
	rows, err := q.Query(ctx, `SELECT target, reporter, report_type, created_at, reporter_rank, report_id
		FROM cn_moderation.reports WHERE target = ANY($1) AND target_kind = 'event' AND withdrawn_seq IS NULL
		ORDER BY created_at DESC, reporter`, targets)
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OpenReport, error) {
		var r OpenReport
		var rank int16
		err := row.Scan(&r.Target, &r.Reporter, &r.Type, &r.At, &rank, &r.ReportID)
		r.RankThen = int(rank)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	return out, nil
}

// PublishedLabel is a NIP-32 label the node published about an event.
type PublishedLabel struct {
	Target    string // the labelled event
	Label     string
	Rule      string // the rule that fired, as name@version
	ID        string // the label event's id
	Retracted bool
}

// LabelsOf reads the labels the node published about the events targets,
// in the order it published them (retracted ones included).
func LabelsOf(ctx context.Context, q queryer, targets []string) ([]PublishedLabel, error) {
	rows, err := q.Query(ctx, `SELECT target_id, label, rule || '@' || rule_version, label_id, retracted_by IS NOT NULL
		FROM cn_moderation.labels WHERE target_id = ANY($1) ORDER BY seq`, targets)
	if err != nil {
		return nil, fmt.Errorf("read labels: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PublishedLabel, error) {
		var l PublishedLabel
		err := row.Scan(&l.Target, &l.Label, &l.Rule, &l.ID, &l.Retracted)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read labels: %w", err)
	}
	return out, nil
}

func queue(ctx context.Context, q queryer, limit int, scope, hGroup string, afterAt *int64, afterID string) ([]QueueItem, error) {
	rows, err := q.Query(ctx, `
		WITH open AS (
			SELECT target AS event_id, count(DISTINCT reporter) AS reporters, max(created_at) AS last_at
			FROM cn_moderation.reports WHERE target_kind = 'event' AND withdrawn_seq IS NULL GROUP BY target
		), types AS (
			SELECT target AS event_id, jsonb_object_agg(report_type, n) AS types
			FROM (SELECT target, report_type, count(*) AS n FROM cn_moderation.reports
			      WHERE target_kind = 'event' AND withdrawn_seq IS NULL GROUP BY target, report_type) t
			GROUP BY target
		), held AS (
			SELECT event_id, array_agg(actor ORDER BY actor) AS held_by FROM cn_moderation.actions
			WHERE source = 'rule' AND action = 'hold' GROUP BY event_id
		), queue AS (
			SELECT coalesce(o.event_id, h.event_id) AS event_id, coalesce(o.reporters, 0) AS reporters,
			       coalesce((SELECT types FROM types t WHERE t.event_id = o.event_id), '{}'::jsonb) AS types,
			       coalesce(h.held_by, '{}') AS held_by, coalesce(o.last_at, 0) AS last_at
			FROM open o FULL JOIN held h ON h.event_id = o.event_id
		)
		SELECT event_id, reporters, types, held_by, last_at,
		       EXISTS (SELECT 1 FROM cn_relay.events e WHERE e.id = queue.event_id AND `+schema.HiddenSQL+`)
		FROM queue
		WHERE NOT EXISTS (SELECT 1 FROM cn_moderation.actions a
		                  WHERE a.event_id = queue.event_id AND a.source = 'operator')
		  AND ($2 = '' OR EXISTS (SELECT 1 FROM cn_relay.event_topics tt
		                          WHERE tt.event_id = queue.event_id AND tt.topic_id = $2))
		  AND ($3 = '' OR `+schema.GroupOfSQL("queue.event_id")+` = CASE WHEN $3 = 'node' THEN '' ELSE $3 END)
		  AND ($4::bigint IS NULL OR last_at < $4 OR (last_at = $4 AND event_id > $5))
		ORDER BY last_at DESC, event_id
		LIMIT $1`, limit, scope, hGroup, afterAt, afterID)
	if err != nil {
		return nil, fmt.Errorf("moderation queue: %w", err)
	}
	items, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (QueueItem, error) {
		var it QueueItem
		err := row.Scan(&it.EventID, &it.Reporters, &it.Reports, &it.Held, &it.LastAt, &it.Hidden)
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("moderation queue: %w", err)
	}
	return items, nil
}
