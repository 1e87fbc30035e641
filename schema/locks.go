package schema

// Advisory locks: every pg_advisory_* lock the node takes is listed here, so
// that a new one cannot collide with an old one unnoticed and an operator can
// tell from pg_locks who holds what.
//
// A fixed key is the eight ASCII bytes "cn_xxxxx" read as a big-endian int64
// (pg_locks shows it as classid = 0x636e5f.., objid = the last four bytes);
// TestLockKeys checks the convention and that no two keys are equal. Keys that
// Postgres derives from text (hashtext, hashtextextended) are listed as the SQL
// expression that computes them.
const (
	// OutboxLock serialises outbox appends (transaction level, held to commit):
	// seq order equals commit order (pkg/outbox.Append).
	OutboxLock int64 = 0x636e5f6f7574626f // "cn_outbo"
	// PruneLock serialises outbox retention runs (session level,
	// pkg/outbox.Prune); moving a consumer offset backwards takes it too
	// (pkg/consumer.ExecuteReset), so that it never races a prune.
	PruneLock int64 = 0x636e5f7072756e65 // "cn_prune"
	// MigrateLock serialises migrators (session level, Migrate).
	MigrateLock int64 = 0x636e5f6d69677274 // "cn_migrt"
	// RolesLock serialises privilege rebuilds (transaction level,
	// internal/dbroles.Apply).
	RolesLock int64 = 0x636e5f726f6c6573 // "cn_roles"
	// SweepLock makes one relay at a time sweep expired events (transaction
	// level, try-lock: internal/store Sweep).
	SweepLock int64 = 0x636e5f7377656570 // "cn_sweep"
	// StatsLock makes one relay at a time analyse the query tables
	// (transaction level, try-lock: internal/store AnalyzeStale).
	StatsLock int64 = 0x636e5f7374617473 // "cn_stats"
	// IndexSwitchLock: every index batch holds it shared, a rebuild's
	// switch-over exclusively (transaction level, internal/indexer).
	IndexSwitchLock int64 = 0x636e5f696e646578 // "cn_index"
	// IndexRebuildLock makes one rebuild of the search index run at a time
	// (session level, try-lock: internal/indexer.Rebuild).
	IndexRebuildLock int64 = 0x636e5f7265696478 // "cn_reidx"
	// TrustPublisherLock makes one trust process the one that recomputes and
	// publishes; others wait as standbys (session level, try-lock:
	// internal/trust). It was 0x74727573 ("trus") before issue 21: during a
	// rolling upgrade an old and a new trust process do not exclude each other.
	TrustPublisherLock int64 = 0x636e5f7472757374 // "cn_trust"
	// ModerationRulesLock serialises rule-set changes (transaction level,
	// internal/moderation). It was 0x636e6d6f64 ("cnmod") before issue 21.
	ModerationRulesLock int64 = 0x636e5f72756c6573 // "cn_rules"
	// ClaimsLock serialises the minting of NIP-43 claims for members' kind
	// 28935 REQs (transaction level, internal/membership Service.Invite), so
	// that the open-claims caps hold across relay processes.
	ClaimsLock int64 = 0x636e5f636c61696d // "cn_claim"
	// GroupTreeLock guards the NIP-29 subgroup tree (transaction level,
	// internal/groups): every store batch with a group event holds it shared,
	// one with a 9002 or 9008 (which may change the tree) and
	// internal/groups.Replace exclusively, before any GroupLockSQL. So while a
	// batch holds it exclusively no other holds any group's lock, and it may
	// read any group and lock more groups without deadlock.
	GroupTreeLock int64 = 0x636e5f6774726565 // "cn_gtree"
	// WriterLeaseLock orders the renewals and registrations of the relays'
	// writer lease (transaction level, internal/writerlease): each reads the
	// others' rows and writes its own under it (schema 0037).
	WriterLeaseLock int64 = 0x636e5f6c65617365 // "cn_lease"
)

// Keys that Postgres derives from text, as the SQL expressions that compute
// them.
const (
	// PartitionsLockSQL is the transaction-level lock that
	// cn_relay.outbox_ensure_partitions (migration 0001) takes before it reads
	// the outbox's tables; internal/dbroles takes it first, so that its owner
	// changes queue behind partition creation instead of deadlocking with it.
	PartitionsLockSQL = "hashtext('cn_relay.outbox_ensure_partitions')"
	// EffectiveKeyLockSQL is the transaction-level lock of one effective key
	// ($1, e.g. "0:<pubkey>"), taken by every store batch that reads or
	// changes that key's versions, in sorted key order.
	EffectiveKeyLockSQL = "hashtextextended($1, 0)"
	// GroupLockSQL is the transaction-level lock of one NIP-29 group ($1, its
	// id), taken by every store batch that decides an event of that group and
	// by internal/groups.Replace, in sorted id order, after GroupTreeLock and
	// before any EffectiveKeyLockSQL: whoever holds it may read and write the
	// group's row of cn_relay.groups.
	GroupLockSQL = "hashtextextended('group:' || $1, 0)"
	// GroupCreatorLockSQL is the transaction-level lock of one creator of
	// NIP-29 groups ($1, the pubkey of a 9007's author), taken by every store
	// batch with a 9007 of that author, in sorted order, after the group locks
	// and before any EffectiveKeyLockSQL, before it counts the groups the key
	// created (groups.Limits): so the count holds across relay processes.
	GroupCreatorLockSQL = "hashtextextended('group-creator:' || $1, 0)"
	// TurnLockSQL is the transaction-level lock of one write pipeline ($1, a
	// random name per pipeline: the relay's group commit, one per process),
	// taken as the first statement of each of its transactions and held to
	// commit (pkg/outbox.WithTurn): a transaction's reads wait, on the server,
	// until the pipeline's previous transaction has committed (or rolled back).
	TurnLockSQL = "hashtextextended('turn:' || $1, 0)"
	// TemplateLockSQL serialises test binaries that build the migrated
	// template database (internal/pgtest, session level).
	TemplateLockSQL = "hashtext('cn_pgtest_template')"
)

// FixedLocks lists every fixed key with its name, for the convention test and
// for tools that explain pg_locks.
var FixedLocks = map[string]int64{
	"OutboxLock": OutboxLock, "PruneLock": PruneLock, "MigrateLock": MigrateLock, "RolesLock": RolesLock,
	"SweepLock": SweepLock, "StatsLock": StatsLock, "IndexSwitchLock": IndexSwitchLock,
	"IndexRebuildLock": IndexRebuildLock, "TrustPublisherLock": TrustPublisherLock,
	"ModerationRulesLock": ModerationRulesLock, "GroupTreeLock": GroupTreeLock,
	"ClaimsLock": ClaimsLock, "WriterLeaseLock": WriterLeaseLock,
}
