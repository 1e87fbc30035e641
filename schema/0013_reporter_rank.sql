-- 0013: report rules may count only reporters with a trust-v1 rank of at least
-- min_reporter_rank. The rank a reporter had when the report arrived is kept
-- with the report (0: unranked, or no trust run yet), so a replay over the
-- recorded reports decides as the live run did; the lowest rank a fired rule
-- relied on is kept with its decision (cn_moderation.actions.rank).
ALTER TABLE cn_moderation.reports ADD COLUMN reporter_rank smallint NOT NULL DEFAULT 0;
