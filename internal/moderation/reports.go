package moderation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// report is one (report event, target) pair of a NIP-56 report; seq is the
// outbox row that brought it, withdrawn the one that took it away (0: none).
type report struct {
	id, target, targetKind, targetPubkey, reporter, typ string
	createdAt, seq, withdrawn                           int64
	rank                                                int16 // the reporter's trust rank when the report arrived
}

// parseReport reads a kind 1984 event (NIP-56): each `e` tag names a reported
// event (its third element, or else the `p` tag's, is the report type); with
// no `e` tag, each `p` tag names a reported person. Each `x` tag (BUD-09)
// names a reported blob, a Blossom hash, whatever else the report names.
// Unknown or missing types count as "other".
func parseReport(ev *nostr.Event) []report {
	return append(eventReports(ev), blobReports(ev)...)
}

// blobReports reads a report's `x` targets (BUD-09): target is the blob's
// hash, target_pubkey the `p` tag's key ("" without one); the type is the
// tag's third element, or else the `p` tag's.
func blobReports(ev *nostr.Event) []report {
	var pubkey, pType string
	if p := ev.Tags.GetFirst([]string{"p", ""}); p != nil && len((*p)[1]) == 64 {
		pubkey = (*p)[1]
		if len(*p) >= 3 {
			pType = (*p)[2]
		}
	}
	var out []report
	for _, t := range ev.Tags {
		if len(t) < 2 || t[0] != "x" || !isHex64(t[1]) {
			continue
		}
		rt := pType
		if len(t) >= 3 && t[2] != "" {
			rt = t[2]
		}
		if !slices.Contains(ReportTypes, rt) {
			rt = "other"
		}
		out = append(out, report{id: ev.ID, target: t[1], targetKind: "blob", targetPubkey: pubkey,
			reporter: ev.PubKey, typ: rt, createdAt: int64(ev.CreatedAt)})
	}
	return out
}

// isHex64 reports whether s is 64 lower-case hex digits (a blob hash).
func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// eventReports reads a report's event targets, or else its person targets.
func eventReports(ev *nostr.Event) []report {
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

// recordReports records the reports of this batch (once: a replay changes
// nothing) and counts the new ones.
func (m *Moderator) recordReports(ctx context.Context, tx consumer.Tx, reports []report) error {
	if len(reports) == 0 {
		return nil
	}
	n := len(reports)
	ids, tgts, kinds, pks, reporters, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ats, seqs := make([]int64, n), make([]int64, n)
	for i, r := range reports {
		ids[i], tgts[i], kinds[i], pks[i], reporters[i], types[i] = r.id, r.target, r.targetKind, r.targetPubkey, r.reporter, r.typ
		ats[i], seqs[i] = r.createdAt, r.seq
	}
	// The reporter's rank is read as the report arrives (the trust daemon's
	// latest run) and kept: a replay over these rows decides as this run did.
	rows, err := tx.Query(ctx, `INSERT INTO cn_moderation.reports
			(report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq, reporter_rank)
		SELECT u.*, coalesce((SELECT s.rank FROM cn_trust.scores s WHERE s.pubkey = u.reporter), 0)
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
			AS u(report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq)
		ON CONFLICT DO NOTHING RETURNING report_type`, ids, tgts, kinds, pks, reporters, types, ats, seqs)
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
	return nil
}

// withdrawReports marks the reports whose events were deleted (or expired) as
// withdrawn from the row that deleted them on.
func withdrawReports(ctx context.Context, tx consumer.Tx, deletes []outbox.Row) error {
	var ids []string
	var seqs []int64
	for _, r := range deletes {
		if r.Kind == nostr.KindReporting {
			ids, seqs = append(ids, r.EventID), append(seqs, r.Seq)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE cn_moderation.reports r SET withdrawn_seq = u.seq
		FROM unnest($1::text[], $2::bigint[]) AS u(id, seq) WHERE r.report_id = u.id AND r.withdrawn_seq IS NULL`, ids, seqs); err != nil {
		return fmt.Errorf("withdraw reports: %w", err)
	}
	return nil
}

// runReportRules runs the report rules on every reported event that got a
// report in this batch, as of each such report's row: the reports counted are
// those brought by rows up to it and not withdrawn by then. What fires is
// appended to fires, once per (rule, event) and batch.
func (m *Moderator) runReportRules(ctx context.Context, tx consumer.Tx, reports []report, rules []*compiled,
	targets map[string]*target, fires *[]fired) error {
	triggers := map[string][]int64{} // reported event -> seqs of this batch's reports about it
	for _, r := range reports {
		if r.targetKind == "event" {
			triggers[r.target] = append(triggers[r.target], r.seq)
		}
	}
	if len(rules) == 0 || len(triggers) == 0 {
		return nil
	}
	tally := map[string][]report{}
	var missing []string
	for id := range triggers {
		if targets[id] == nil {
			missing = append(missing, id)
		}
	}
	var b pgx.Batch
	b.Queue(`SELECT target, reporter, report_type, created_at, seq, coalesce(withdrawn_seq, 0), reporter_rank FROM cn_moderation.reports
		WHERE target = ANY($1) AND target_kind = 'event'`, slices.Sorted(maps.Keys(triggers))).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var r report
				if err := rows.Scan(&r.target, &r.reporter, &r.typ, &r.createdAt, &r.seq, &r.withdrawn, &r.rank); err != nil {
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
	for _, id := range slices.Sorted(maps.Keys(triggers)) {
		t := targets[id]
		if t == nil || t.PubKey == m.cfg.Key.PubKey {
			continue // not stored here, or the node's own
		}
		seqs := triggers[id]
		slices.Sort(seqs)
		txt := &text{content: t.Content}
		for _, r := range rules {
			if !r.matchesEvent(t, txt) {
				continue
			}
			for _, s := range seqs {
				if met, lowest := r.thresholdMet(openAt(tally[id], s)); met {
					f := fired{rule: r, target: t, seq: s}
					if r.MinReporterRank > 0 {
						f.rank = &lowest
					}
					*fires = append(*fires, f)
					break
				}
			}
		}
	}
	return nil
}

// openAt returns the reports open as of row seq.
func openAt(all []report, seq int64) []report {
	var out []report
	for _, r := range all {
		if r.seq <= seq && (r.withdrawn == 0 || r.withdrawn > seq) {
			out = append(out, r)
		}
	}
	return out
}

// thresholdMet reports whether at least MinReports distinct reporters (of
// ReportTypes, if set, ranked at least MinReporterRank, if set) reported within
// one ReportWindow, and the lowest reporter rank among the reports it counted.
// The answer depends only on the set of reports, not on the order they arrived
// in: with a window, every report is tried as the window's end.
func (c *compiled) thresholdMet(reports []report) (bool, int16) {
	var rs []report
	for _, r := range reports {
		if (len(c.ReportTypes) == 0 || slices.Contains(c.ReportTypes, r.typ)) && int(r.rank) >= c.MinReporterRank {
			rs = append(rs, r)
		}
	}
	lowest := func(in []report) int16 {
		low := int16(100)
		for _, r := range in {
			low = min(low, r.rank)
		}
		return low
	}
	distinct := func(in []report) int {
		who := map[string]bool{}
		for _, r := range in {
			who[r.reporter] = true
		}
		return len(who)
	}
	if c.ReportWindow == 0 {
		return distinct(rs) >= c.MinReports, lowest(rs)
	}
	slices.SortFunc(rs, func(a, b report) int { return int(a.createdAt - b.createdAt) })
	window := int64(time.Duration(c.ReportWindow) / time.Second)
	start := 0
	for end := range rs {
		for rs[end].createdAt-rs[start].createdAt > window {
			start++
		}
		if distinct(rs[start:end+1]) >= c.MinReports {
			return true, lowest(rs[start : end+1])
		}
	}
	return false, 0
}
