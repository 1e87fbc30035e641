package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/relaysync"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/storerules"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// ImportOptions is what Import needs besides the input. The callbacks are how
// the caller reports; each may be nil.
type ImportOptions struct {
	// Pool is the node's database (the caller opened it with dbpool).
	Pool *pgxpool.Pool
	// Rules are the store's rules, the relay's (storerules.FromFlags).
	Rules storerules.Config
	// Groups, when set, makes the import host NIP-29 groups moved or forked
	// from another relay (cnctl import --group-history).
	Groups *store.Groups
	// DryRun decides everything in one transaction that is rolled back.
	DryRun bool
	// BatchSize is the events per transaction (0: DefaultImportBatchSize).
	BatchSize int
	// Workers parse and verify signatures (0: one per CPU).
	Workers int
	// OnProgress is called about every ProgressEvery with the counts so far.
	OnProgress    func(bulk.Stats)
	ProgressEvery time.Duration
	// OnRefused is called for every refused line (bulk.Importer.OnRefused).
	OnRefused func(bulk.Refusal)
	// OnAnalyzed is called for each query table the import analysed.
	OnAnalyzed func(store.Analyzed)
	Logger     *slog.Logger
}

// Import stores the JSON Lines events of in as the relay stores an EVENT: the
// relay management state (bans, kinds) loaded once, the store built with the
// relay's topic rules and pending limits, an outbox writer running alongside
// (it keeps partitions ahead; the importer announces the final head itself).
// It returns the counts so far with any error: batches committed before an
// error stay.
func Import(ctx context.Context, in io.Reader, o ImportOptions) (bulk.Stats, error) {
	im, stop, err := newImporter(ctx, o.Pool, o.Rules, o.Groups, orDiscard(o.Logger))
	if err != nil {
		return bulk.Stats{}, err
	}
	defer stop()
	im.DryRun, im.BatchSize, im.Workers = o.DryRun, o.BatchSize, o.Workers
	if im.BatchSize == 0 {
		im.BatchSize = DefaultImportBatchSize
	}
	im.OnRefused, im.OnProgress, im.ProgressEvery, im.OnAnalyzed = o.OnRefused, o.OnProgress, o.ProgressEvery, o.OnAnalyzed
	return im.Run(ctx, in)
}

// SyncOptions is what Sync needs.
type SyncOptions struct {
	// Pool is the node's database (the caller opened it with dbpool).
	Pool *pgxpool.Pool
	// Rules are the store's rules, the relay's (storerules.FromFlags): the
	// filter's limits, and how downloaded events are stored.
	Rules storerules.Config
	// Sync is the session with the other relay (URL, filter, direction,
	// timeout, progress).
	Sync relaysync.Options
	// MaxEvents bounds the local events the reconciliation covers (the
	// relay's --max-sync-events).
	MaxEvents int
	// Progress receives relaysync's progress lines (nil: none).
	Progress io.Writer
	// OnRefused is called for every downloaded event the store refused.
	OnRefused func(bulk.Refusal)
	Logger    *slog.Logger
}

// ErrStoringDownloads wraps the error that stopped Sync storing the events it
// downloaded (as against an error of the session itself).
var ErrStoringDownloads = errors.New("storing downloaded events")

// Sync reconciles the public view of this node's store (what an
// unauthenticated reader may see) with another relay over NIP-77 and moves
// the missing events: up, published there as EVENTs; down, stored here
// through Import's path (the relay's checks, rules and store, an outbox writer
// alongside). stored is the import's counts when events moved down, else nil.
func Sync(ctx context.Context, o SyncOptions) (res relaysync.Result, stored *bulk.Stats, err error) {
	limits := o.Rules.Limits(protocol.DefaultLimits())
	local := syncLocal{r: store.NewReader(o.Pool), limits: limits, max: o.MaxEvents}
	if o.Sync.Direction == relaysync.Up {
		res, err = relaysync.Run(ctx, local, o.Sync, nil, o.Progress)
		return res, nil, err
	}
	im, stop, err := newImporter(ctx, o.Pool, o.Rules, nil, orDiscard(o.Logger))
	if err != nil {
		return res, nil, err
	}
	defer stop()
	im.OnRefused = o.OnRefused
	im.StatsEvery = -1
	pr, pw := io.Pipe()
	type imported struct {
		st  bulk.Stats
		err error
	}
	done := make(chan imported, 1)
	go func() {
		st, err := im.Run(ctx, pr)
		_ = pr.CloseWithError(err) // unblocks the downloader if the import stopped
		done <- imported{st, err}
	}()
	res, err = relaysync.Run(ctx, local, o.Sync, pw, o.Progress)
	_ = pw.Close()
	imp := <-done
	if err != nil {
		return res, nil, err
	}
	if imp.err != nil {
		return res, nil, fmt.Errorf("%w: %w", ErrStoringDownloads, imp.err)
	}
	return res, &imp.st, nil
}

// newImporter is the import path that Import and Sync share: the relay
// management state, an outbox writer running until stop, and the store with
// the rules' topic rules, pending limits and groups.
func newImporter(ctx context.Context, pool *pgxpool.Pool, rules storerules.Config, groups *store.Groups, logger *slog.Logger) (im *bulk.Importer, stop func(), err error) {
	policy, err := relayadmin.Load(ctx, pool)
	if err != nil {
		return nil, nil, err
	}
	limits := rules.Limits(protocol.DefaultLimits())
	writer := outbox.NewWriter(pool, outbox.WriterConfig{Logger: logger})
	events := store.New(pool, writer, limits.TopicRules)
	events.SetPendingLimits(rules.Pending)
	if groups != nil {
		if err := events.SetGroups(*groups); err != nil {
			return nil, nil, err
		}
	}
	wctx, stopWriter := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.Run(wctx) }()
	stop = func() {
		stopWriter()
		<-writerDone
	}
	return &bulk.Importer{Store: events, Pool: pool, Limits: limits, Policy: policy, StatsEvery: DefaultImportStatsInterval}, stop, nil
}

// syncLocal is this node's side of a sync: the public view of its store.
type syncLocal struct {
	r      *store.Reader
	limits protocol.Limits
	max    int
}

func (l syncLocal) Items(ctx context.Context, f nostr.Filter) ([]negentropy.Item, error) {
	vf, reason := protocol.ValidateFilter(f, l.limits)
	if reason != "" {
		return nil, errors.New(reason)
	}
	return l.r.SyncItems(ctx, vf, protocol.Viewer{}, l.max, nil)
}

func (l syncLocal) Events(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	return l.r.Events(ctx, ids)
}
