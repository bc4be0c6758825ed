-- Every message has a number as well as its id: `/fcm/send` answers it as `multicast_id` (and as a topic
-- message's `message_id`), both integers at FCM. On SQLite it is the table's implicit `rowid`, there since
-- 0001; this migration exists so both engines' migrations keep the same numbers (PostgreSQL's 0006 adds the
-- column it lacks).
SELECT 1;
