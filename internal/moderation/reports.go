package moderation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/consumer"
)

// report is one (report event, target) pair of a NIP-56 report.
type report struct {
	id, target, targetKind, targetPubkey, reporter, typ string
	createdAt                                           int64
}

// parseReport reads a kind 1984 event (NIP-56): each `e` tag names a reported
// event (its third element, or else the `p` tag's, is the report type); with
// no `e` tag, each `p` tag names a reported person. Unknown or missing types
// count as "other".
func parseReport(ev *nostr.Event) []report {
	var pubkey, pType string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && len(t[1]) == 64 {
			pubkey = t[1]
			if len(t) >= 3 {
				pType = t[2]
			}
			break
		}
	}
	typ := func(v string) string {
		if slices.Contains(ReportTypes, v) {
			return v
		}
		return "other"
	}
	var out []report
	for _, t := range ev.Tags {
		if len(t) < 2 || t[0] != "e" || len(t[1]) != 64 || pubkey == "" {
			continue
		}
		rt := pType
		if len(t) >= 3 && t[2] != "" {
			rt = t[2]
		}
		out = append(out, report{id: ev.ID, target: t[1], targetKind: "event", targetPubkey: pubkey,
			reporter: ev.PubKey, typ: typ(rt), createdAt: int64(ev.CreatedAt)})
	}
	if len(out) > 0 {
		return out
	}
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && len(t[1]) == 64 {
			rt := ""
			if len(t) >= 3 {
				rt = t[2]
			}
			out = append(out, report{id: ev.ID, target: t[1], targetKind: "pubkey", targetPubkey: t[1],
				reporter: ev.PubKey, typ: typ(rt), createdAt: int64(ev.CreatedAt)})
		}
	}
	return out
}

// tallyReports records reports and runs the report rules on every reported
// event that got one, appending what fires to fires.
func (m *Moderator) tallyReports(ctx context.Context, tx consumer.Tx, reports []report, rules []*compiled,
	targets map[string]*target, fires *[]fired) error {
	if len(reports) == 0 {
		return nil
	}
	n := len(reports)
	ids, tgts, kinds, pks, reporters, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ats := make([]int64, n)
	touched := map[string]bool{}
	for i, r := range reports {
		ids[i], tgts[i], kinds[i], pks[i], reporters[i], types[i], ats[i] = r.id, r.target, r.targetKind, r.targetPubkey, r.reporter, r.typ, r.createdAt
		if r.targetKind == "event" {
			touched[r.target] = true
		}
	}
	rows, err := tx.Query(ctx, `INSERT INTO cn_moderation.reports (report_id, target, target_kind, target_pubkey, reporter, report_type, created_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[])
		ON CONFLICT DO NOTHING RETURNING report_type`, ids, tgts, kinds, pks, reporters, types, ats)
	if err != nil {
		return fmt.Errorf("record reports: %w", err)
	}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return fmt.Errorf("record reports: %w", err)
		}
		m.pendingDone.reports[t]++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("record reports: %w", err)
	}
	if len(rules) == 0 || len(touched) == 0 {
		return nil
	}

	// Every open report about the touched events, and the events themselves.
	tally := map[string][]report{}
	var missing []string
	for id := range touched {
		if targets[id] == nil {
			missing = append(missing, id)
		}
	}
	var b pgx.Batch
	b.Queue(`SELECT target, reporter, report_type, created_at FROM cn_moderation.reports
		WHERE target = ANY($1) AND target_kind = 'event' AND NOT withdrawn`, slices.Sorted(maps.Keys(touched))).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r report
				if err := rows.Scan(&r.target, &r.reporter, &r.typ, &r.createdAt); err != nil {
					return err
				}
				tally[r.target] = append(tally[r.target], r)
			}
			return rows.Err()
		})
	queueLoadTargets(&b, missing, targets)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("tally reports: %w", err)
	}
	for _, id := range slices.Sorted(maps.Keys(touched)) {
		t := targets[id]
		if t == nil || t.PubKey == m.cfg.Key.PubKey {
			continue // not stored here, or the node's own
		}
		lower := func() string { return strings.ToLower(t.Content) }
		for _, r := range rules {
			if r.matchesEvent(t, lower) && r.thresholdMet(tally[id]) {
				*fires = append(*fires, fired{rule: r, target: t})
			}
		}
	}
	return nil
}

// thresholdMet reports whether at least MinReports distinct reporters (of
// ReportTypes, if set) reported within one ReportWindow. The answer depends only
// on the set of reports, not on the order they arrived in: with a window, every
// report is tried as the window's end.
func (c *compiled) thresholdMet(reports []report) bool {
	var rs []report
	for _, r := range reports {
		if len(c.ReportTypes) == 0 || slices.Contains(c.ReportTypes, r.typ) {
			rs = append(rs, r)
		}
	}
	distinct := func(in []report) int {
		who := map[string]bool{}
		for _, r := range in {
			who[r.reporter] = true
		}
		return len(who)
	}
	if c.ReportWindow == 0 {
		return distinct(rs) >= c.MinReports
	}
	slices.SortFunc(rs, func(a, b report) int { return int(a.createdAt - b.createdAt) })
	window := int64(time.Duration(c.ReportWindow) / time.Second)
	start := 0
	for end := range rs {
		for rs[end].createdAt-rs[start].createdAt > window {
			start++
		}
		if distinct(rs[start:end+1]) >= c.MinReports {
			return true
		}
	}
	return false
}
