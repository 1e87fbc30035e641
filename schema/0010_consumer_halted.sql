-- 0010: a consumer that halts (policy halt, a row that keeps failing) says so in
-- its offset row, so that `cnctl status` and the dashboard show it without the
-- process's metrics. The next instance that takes the lease clears it.
ALTER TABLE cn_relay.consumer_offsets ADD COLUMN halted_at timestamptz, ADD COLUMN halted_reason text;
