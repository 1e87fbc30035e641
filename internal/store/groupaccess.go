package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
)

// GroupAccess reads cn_relay.group_access: the rule of every private,
// hidden or deleted group (ids nil), or of the groups ids (a group absent from the
// answer is read by everyone). The relay keeps its copy of it
// (protocol.GroupGate) for live delivery and the event cache.
func (s *Reader) GroupAccess(ctx context.Context, ids []string) (map[string]protocol.GroupRule, error) {
	sql := `SELECT scope, private, hidden, readers, deleted FROM cn_relay.group_access`
	var args []any
	if ids != nil {
		scopes := make([]string, len(ids))
		for i, id := range ids {
			scopes[i] = groups.Scope(id)
		}
		sql += ` WHERE scope = ANY($1)`
		args = append(args, scopes)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read group access: %w", err)
	}
	defer rows.Close()
	out := map[string]protocol.GroupRule{}
	for rows.Next() {
		var scope string
		var r protocol.GroupRule
		if err := rows.Scan(&scope, &r.Private, &r.Hidden, &r.Readers, &r.Deleted); err != nil {
			return nil, fmt.Errorf("read group access: %w", err)
		}
		out[strings.TrimPrefix(scope, groups.ScopePrefix)] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read group access: %w", err)
	}
	return out, nil
}
