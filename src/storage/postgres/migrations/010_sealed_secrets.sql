-- Secrets the management API shows again (issue 14): a messaging account's password and a search
-- index's two tokens, sealed with AES-256-GCM under Ferry's secret key (core/secret-box.ts), next
-- to the SHA-256 hashes that authentication keeps using. Mirrors
-- storage/sqlite/migrations/010_sealed_secrets.sql.
--
-- NULL where a row predates this migration: only its hash was stored, so the secret cannot be
-- recovered; the API shows "" for it until the account's token or the index's password is reset.
ALTER TABLE accounts ADD COLUMN password_sealed TEXT;
ALTER TABLE search_indexes ADD COLUMN token_sealed TEXT;
ALTER TABLE search_indexes ADD COLUMN read_only_token_sealed TEXT;
