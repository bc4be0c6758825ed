-- Every message has a number as well as its id: `/fcm/send` answers it as `multicast_id` (and as a topic
-- message's `message_id`), both integers at FCM. SQLite has it as the implicit `rowid`; PostgreSQL gets a column
-- of the same name, so `SELECT id FROM messages WHERE rowid = …` reads the same on both engines. Numbering the
-- rows already there rewrites the table once.
ALTER TABLE messages ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY;
