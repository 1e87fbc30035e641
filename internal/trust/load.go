package trust

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// Snapshot is the graph as of one offset of trust-v1, in compute form.
type Snapshot struct {
	Seq   int64 // every outbox row with seq <= Seq is in it
	Input Input
	index map[int32]int32 // pubkey id -> node (during loading)
	ids   []int32         // node -> pubkey id (-1: a seed the graph never named)
}

// Load reads the graph in one REPEATABLE READ snapshot: the offset of trust-v1
// and the tables agree, because the consumer commits them together. seeds are
// pubkeys; those the graph never named become nodes of their own.
func Load(ctx context.Context, q pgx.Tx, seeds []string) (*Snapshot, error) {
	s := &Snapshot{index: map[int32]int32{}}
	var err error
	if s.Seq, err = consumer.Offset(ctx, q, ConsumerName); err != nil {
		return nil, fmt.Errorf("read trust offset: %w", err)
	}
	// Pubkeys, renumbered by pubkey.
	type pk struct {
		id  int32
		key string
	}
	var keys []pk
	rows, err := q.Query(ctx, `SELECT id, pubkey FROM cn_trust.pubkeys`)
	if err != nil {
		return nil, fmt.Errorf("load pubkeys: %w", err)
	}
	for rows.Next() {
		var k pk
		if err := rows.Scan(&k.id, &k.key); err != nil {
			return nil, fmt.Errorf("load pubkeys: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load pubkeys: %w", err)
	}
	// Sort by pubkey: by the first 16 hex digits as a number (the same order
	// for lowercase hex), then by the whole key on the rare tie.
	prefix := func(k string) uint64 { v, _ := strconv.ParseUint(k[:16], 16, 64); return v }
	type sortKey struct {
		p uint64
		i int32
	}
	order := make([]sortKey, len(keys))
	for i, k := range keys {
		order[i] = sortKey{prefix(k.key), int32(i)}
	}
	slices.SortFunc(order, func(a, b sortKey) int {
		if a.p != b.p {
			return cmp.Compare(a.p, b.p)
		}
		return strings.Compare(keys[a.i].key, keys[b.i].key)
	})
	sorted := make([]pk, len(keys), len(keys)+len(seeds))
	for i, o := range order {
		sorted[i] = keys[o.i]
	}
	keys = sorted
	// Seeds the graph never named become nodes of their own.
	var extra []pk
	for _, sd := range seeds {
		if _, found := slices.BinarySearchFunc(keys, sd, func(k pk, s string) int { return strings.Compare(k.key, s) }); !found {
			extra = append(extra, pk{id: -1, key: sd})
		}
	}
	if len(extra) > 0 {
		keys = append(keys, extra...)
		slices.SortFunc(keys, func(a, b pk) int { return strings.Compare(a.key, b.key) })
		keys = slices.CompactFunc(keys, func(a, b pk) bool { return a.key == b.key })
	}
	in := &s.Input
	in.Pubkeys = make([]string, len(keys))
	s.ids = make([]int32, len(keys))
	var maxID int32
	for _, k := range keys {
		maxID = max(maxID, k.id)
	}
	node := make([]int32, maxID+1) // pubkey id -> node
	for i, k := range keys {
		in.Pubkeys[i], s.ids[i] = k.key, k.id
		if k.id >= 0 {
			node[k.id] = int32(i)
		}
	}
	for _, sd := range seeds {
		i, _ := slices.BinarySearch(in.Pubkeys, sd)
		in.Seeds = append(in.Seeds, int32(i))
	}
	slices.Sort(in.Seeds)
	in.Seeds = slices.Compact(in.Seeds)

	// Sets: raw binary arrays, parsed without an allocation per element.
	in.Follows = make([][]int32, len(keys))
	in.Mutes = make([][]int32, len(keys))
	rows, err = q.Query(ctx, `SELECT author, kind, targets FROM cn_trust.sets`, pgx.QueryResultFormats{pgx.BinaryFormatCode, pgx.BinaryFormatCode, pgx.BinaryFormatCode})
	if err != nil {
		return nil, fmt.Errorf("load sets: %w", err)
	}
	for rows.Next() {
		raw := rows.RawValues()
		author, kind := int32(binary.BigEndian.Uint32(raw[0])), int32(binary.BigEndian.Uint32(raw[1]))
		ts, err := parseIntArray(raw[2], node) // distinct; order does not matter to Compute
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("load sets: %w", err)
		}
		u := node[author]
		if kind == 3 {
			in.Follows[u] = ts
		} else {
			in.Mutes[u] = ts
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load sets: %w", err)
	}

	// Interactions, reports and labels.
	rows, err = q.Query(ctx, `SELECT event_id, author, etype, created_at, targets, coalesce(report_type, '')
		FROM cn_trust.sources WHERE etype <> ALL($1)`, []int16{etPost})
	if err != nil {
		return nil, fmt.Errorf("load sources: %w", err)
	}
	for rows.Next() {
		var id, rtype string
		var author int32
		var etype int16
		var at int64
		var targets []int32
		if err := rows.Scan(&id, &author, &etype, &at, &targets, &rtype); err != nil {
			return nil, fmt.Errorf("load sources: %w", err)
		}
		for _, t := range targets {
			switch etype {
			case etReport:
				in.Reports = append(in.Reports, Report{EventID: id, Reporter: node[author], Subject: node[t], Type: rtype, CreatedAt: at})
			case etLabel:
				in.Labels = append(in.Labels, Report{EventID: id, Reporter: -1, Subject: node[t], Type: "label", CreatedAt: at})
			default: // replies with their mentions, reactions, reposts, zaps
				in.Interactions = append(in.Interactions, Interaction{From: node[author], To: node[t], Count: 1})
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load sources: %w", err)
	}
	return s, nil
}

// parseIntArray reads a one-dimensional int4[] in Postgres's binary format and
// maps every element through node.
func parseIntArray(b []byte, node []int32) ([]int32, error) {
	if len(b) < 12 {
		return nil, errors.New("short array")
	}
	ndim := binary.BigEndian.Uint32(b)
	if ndim == 0 {
		return nil, nil
	}
	if ndim != 1 || len(b) < 20 {
		return nil, fmt.Errorf("array of %d dimensions", ndim)
	}
	n := int(binary.BigEndian.Uint32(b[12:]))
	b = b[20:]
	if len(b) != n*8 {
		return nil, errors.New("array with nulls or of another type")
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = node[int32(binary.BigEndian.Uint32(b[i*8+4:]))]
	}
	return out, nil
}
