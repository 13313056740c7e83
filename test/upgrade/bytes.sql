-- The stored bytes of every posting list, which pg_upgrade keeps as they
-- are (pg_dump writes the ids, and a restore encodes them anew)
\set ON_ERROR_STOP on
SELECT 'pl_bytes', word, pl_codec(ids), pl_codec(ids_ef), pl_codec(ids_lrc), pl_codec(ids_raw),
       md5(ids::bytea), md5(ids_ef::bytea), md5(ids_lrc::bytea), md5(ids_raw::bytea)
FROM lists ORDER BY word;
