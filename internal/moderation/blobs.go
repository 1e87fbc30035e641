package moderation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// blobRule reports whether a report rule applies to blobs (Blossom media,
// docs/media.md): a hide rule with no condition on an event, only on the
// reports (min_reports, report_types, report_window, min_reporter_rank).
// A blob has no event to label or queue, so label and hold rules do not.
func blobRule(c *compiled) bool {
	r := c.Rule
	return r.Action == ActionHide && r.MinReports > 0 && len(r.Kinds) == 0 && len(r.Topics) == 0 && len(r.Groups) == 0 &&
		len(r.Authors) == 0 && r.ContentRegex == "" && len(r.Keywords) == 0 && len(r.Tags) == 0 &&
		r.ContentWarning == nil && r.Classifier == nil
}

// runBlobRules hides the blobs that got a report in this batch and, as of
// that report's row, meet a blob rule's threshold (blossom.Hide, in the
// consumer's transaction: a replay finds them hidden and changes nothing).
// A blob no longer stored here is passed over; one an operator unhid stays
// served.
func (m *Moderator) runBlobRules(ctx context.Context, tx consumer.Tx, reports []report, rules []*compiled) error {
	triggers := map[string][]int64{}
	for _, r := range reports {
		if r.targetKind == "blob" {
			triggers[r.target] = append(triggers[r.target], r.seq)
		}
	}
	var apply []*compiled
	for _, r := range rules {
		if blobRule(r) {
			apply = append(apply, r)
		}
	}
	if len(apply) == 0 || len(triggers) == 0 {
		return nil
	}
	hashes := slices.Sorted(maps.Keys(triggers))
	tally := map[string][]report{}
	rows, err := tx.Query(ctx, `SELECT target, reporter, report_type, created_at, seq, coalesce(withdrawn_seq, 0), reporter_rank
		FROM cn_moderation.reports WHERE target = ANY($1) AND target_kind = 'blob'`, hashes)
	if err != nil {
		return fmt.Errorf("tally blob reports: %w", err)
	}
	for rows.Next() {
		var r report
		if err := rows.Scan(&r.target, &r.reporter, &r.typ, &r.createdAt, &r.seq, &r.withdrawn, &r.rank); err != nil {
			rows.Close()
			return fmt.Errorf("tally blob reports: %w", err)
		}
		tally[r.target] = append(tally[r.target], r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("tally blob reports: %w", err)
	}
	for _, h := range hashes {
		seqs := triggers[h]
		slices.Sort(seqs)
	rules:
		for _, r := range apply {
			for _, s := range seqs {
				if met, _ := r.thresholdMet(openAt(tally[h], s)); !met {
					continue
				}
				actor := r.Name + "@" + strconv.Itoa(r.version)
				_, err := blossom.Hide(ctx, tx, h, actor, "report rule "+actor+": "+r.Label, true, time.Now())
				if err != nil && !errors.Is(err, blossom.ErrNotFound) {
					return err
				}
				break rules
			}
		}
	}
	return nil
}
