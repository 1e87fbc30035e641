-- 0011: the trust-v1 consumer (cmd/trust, internal/trust): a web-of-trust graph
-- kept exactly from the outbox, ranks computed from it, NIP-85 assertions.
--
-- Ownership: the trust consumer writes every table here, in the transaction that
-- moves its offset (graph, counters) or in its recompute and publish
-- transactions (scores, runs, published). The relay only reads scores and seeds
-- (its --min-rank gate) and provider (NIP-11). cnctl inserts recompute requests.
CREATE SCHEMA cn_trust;

-- Every pubkey the graph mentions gets a small integer id, in arrival order.
-- Ids never influence a score: the computation renumbers subjects by pubkey.
CREATE TABLE cn_trust.pubkeys (
    id     integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    pubkey text NOT NULL UNIQUE
);

-- The effective version of each author's follow list (kind 3) and mute list
-- (kind 10000): a newer version replaces the row, a deletion or hide of the
-- version in the row removes it. targets: sorted, distinct pubkey ids.
CREATE TABLE cn_trust.sets (
    author     integer NOT NULL,
    kind       integer NOT NULL,
    source_id  text    NOT NULL,
    created_at bigint  NOT NULL,
    targets    integer[] NOT NULL,
    PRIMARY KEY (author, kind)
);
CREATE INDEX sets_source ON cn_trust.sets (source_id);
-- A full computation reads every list: keep long ones out of line but
-- uncompressed (pglz decompression would dominate the graph load).
ALTER TABLE cn_trust.sets ALTER COLUMN targets SET STORAGE EXTERNAL;

-- One row per counted event that is not a set: posts, replies and mentions,
-- reactions, reposts, zap receipts, reports, the node's labels. A delete row of
-- the outbox removes the row and exactly the counts and edges it added.
-- etype: 1 post, 2 reply, 3 reaction, 4 repost, 5 zap, 6 report, 7 label.
CREATE TABLE cn_trust.sources (
    event_id    text     PRIMARY KEY,
    author      integer  NOT NULL, -- for a zap: the sender named in the zap request
    etype       smallint NOT NULL,
    created_at  bigint   NOT NULL,
    targets     integer[] NOT NULL, -- subjects (p tags), sorted, distinct, without the author
    amount_msat bigint   NOT NULL DEFAULT 0,
    report_type text
);
-- The graph load reads sources by type (interactions, reports).
CREATE INDEX sources_etype ON cn_trust.sources (etype);

-- Counter changes as the consumer makes them: appended (COPY, no index) in the
-- transaction that moves the offset, and folded into cn_trust.subjects by the
-- publisher (one statement that deletes what it adds), so the consumer never
-- updates a subject row (a follow list of 2,000 keys would update 2,000 rows).
-- first_created_at: NULL when the change does not touch it.
CREATE TABLE cn_trust.subject_deltas (
    id               integer NOT NULL,
    followers        bigint  NOT NULL,
    post_cnt         bigint  NOT NULL,
    reply_cnt        bigint  NOT NULL,
    reactions_cnt    bigint  NOT NULL,
    reports_cnt_recd bigint  NOT NULL,
    reports_cnt_sent bigint  NOT NULL,
    zap_cnt_recd     bigint  NOT NULL,
    zap_amt_recd     bigint  NOT NULL,
    zap_cnt_sent     bigint  NOT NULL,
    zap_amt_sent     bigint  NOT NULL,
    first_created_at bigint
);

-- Counters per subject (NIP-85 names): the folded deltas. version moves
-- on every change; dirty marks a subject whose assertion may need publishing.
CREATE TABLE cn_trust.subjects (
    id               integer PRIMARY KEY,
    followers        bigint NOT NULL DEFAULT 0,
    post_cnt         bigint NOT NULL DEFAULT 0,
    reply_cnt        bigint NOT NULL DEFAULT 0,
    reactions_cnt    bigint NOT NULL DEFAULT 0, -- reactions received
    reports_cnt_recd bigint NOT NULL DEFAULT 0,
    reports_cnt_sent bigint NOT NULL DEFAULT 0,
    zap_cnt_recd     bigint NOT NULL DEFAULT 0,
    zap_amt_recd     bigint NOT NULL DEFAULT 0, -- millisats
    zap_cnt_sent     bigint NOT NULL DEFAULT 0,
    zap_amt_sent     bigint NOT NULL DEFAULT 0, -- millisats
    first_created_at bigint,                    -- oldest event of the subject seen (never raised by a deletion)
    version          bigint NOT NULL DEFAULT 0,
    dirty            boolean NOT NULL DEFAULT true
);
CREATE INDEX subjects_dirty ON cn_trust.subjects (id) WHERE dirty;

-- Every full computation: its snapshot (every outbox row with seq <= snapshot_seq
-- applied), the as_of time used for decay, the parameters and the algorithm.
CREATE TABLE cn_trust.runs (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    algorithm    text        NOT NULL,
    snapshot_seq bigint      NOT NULL,
    as_of        bigint      NOT NULL,
    params       jsonb       NOT NULL,
    seeds_source text        NOT NULL, -- flag, admins or uniform
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    subjects     integer     NOT NULL,
    edges        bigint      NOT NULL,
    iterations   integer     NOT NULL,
    residual     double precision NOT NULL,
    changed      integer     NOT NULL, -- subjects whose rank or risk changed
    load_ms      integer     NOT NULL,
    compute_ms   integer     NOT NULL
);

-- The result of the latest run, one row per ranked or reported subject.
-- rank 0..100 (0: unreached from the seeds or pushed to the floor by mutes and
-- reports); score: the adjusted personalised PageRank; risk: decayed,
-- rank-weighted reports.
CREATE TABLE cn_trust.scores (
    pubkey text             PRIMARY KEY,
    rank   smallint         NOT NULL,
    score  double precision NOT NULL,
    risk   double precision NOT NULL,
    run_id bigint           NOT NULL
);
-- The relay's gate loads the keys at or above its minimum rank.
CREATE INDEX scores_rank ON cn_trust.scores (rank);

-- The seed set of the latest run (the relay's gate exempts seeds).
CREATE TABLE cn_trust.seeds (
    pubkey text PRIMARY KEY
);

-- The provider key that signs the assertions (NIP-85: one key per algorithm).
CREATE TABLE cn_trust.provider (
    algorithm text PRIMARY KEY,
    pubkey    text NOT NULL
);

-- The assertion last published for each subject: its tags (to publish only
-- what changed) and created_at (a replacement must be newer).
CREATE TABLE cn_trust.published (
    subject    text   PRIMARY KEY,
    event_id   text   NOT NULL,
    created_at bigint NOT NULL,
    tags       jsonb  NOT NULL
);

-- Recompute requests (cnctl trust recompute); the daemon takes the oldest.
CREATE TABLE cn_trust.requests (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    requested_at timestamptz NOT NULL DEFAULT now(),
    requested_by text        NOT NULL,
    as_of        bigint,              -- optional explicit as_of
    run_id       bigint               -- set when served
);
