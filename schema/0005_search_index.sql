-- 0005: the search index kept by the index-v1 consumer (cmd/indexer).
--
-- One document per visible event of an indexed kind (document_id = event_id): the
-- effective version of a replaceable or addressable key, not deleted; expired
-- documents are filtered out at query time until the relay's sweeper deletes them.
-- Documents carry no content: searches join cn_relay.events for the text and for
-- the final visibility check, so the index can lag without leaking deleted events.
CREATE SCHEMA cn_index;

CREATE TABLE cn_index.documents (
    event_id      text     NOT NULL,
    pubkey        text     NOT NULL,
    kind          integer  NOT NULL,
    created_at    bigint   NOT NULL,
    -- every normalised topic of the event (cn_relay.event_topics), for results
    topics        text[]   NOT NULL,
    -- 'kind:pubkey[:d]' for replaceable and addressable kinds, else NULL
    effective_key text,
    expires_at    bigint,
    -- lexemes from internal/textsearch.WithTopics: CJK bigrams and stemmed words of
    -- the text, plus one '#t:<topic>' lexeme per topic, so that one GIN index
    -- serves the text and the topic filter
    tsv           tsvector NOT NULL,
    CONSTRAINT documents_pkey PRIMARY KEY (event_id)
);
CREATE INDEX documents_tsv_idx ON cn_index.documents USING gin (tsv);
CREATE UNIQUE INDEX documents_effective_key_idx ON cn_index.documents (effective_key)
    WHERE effective_key IS NOT NULL;
ALTER TABLE cn_index.documents SET (autovacuum_analyze_scale_factor = 0.05);

-- One row per `cnctl reindex`, for the operator's record.
CREATE TABLE cn_index.rebuilds (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at    timestamptz NOT NULL DEFAULT now(),
    snapshot_seq  bigint,      -- outbox head the stored events were read at
    switched_seq  bigint,      -- index-v1 offset at the switch-over
    documents     bigint,      -- documents in the new index at the switch-over
    finished_at   timestamptz,
    requested_by  text        NOT NULL
);
