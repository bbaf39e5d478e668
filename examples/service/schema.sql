-- The example service's database: two policies and the signups table.
-- Load it into a database with fixed_window available: psql -f schema.sql
CREATE EXTENSION IF NOT EXISTS fixed_window;

-- The clients' API keys, by their SHA-256 digests (the service never keeps
-- a key itself); add one with
--   INSERT INTO api_keys VALUES (sha256(convert_to('the key', 'UTF8')), 'client name');
CREATE TABLE api_keys (
    key_digest bytea PRIMARY KEY,
    client text NOT NULL UNIQUE
);

-- every client with an API key, and every address without, may call 5 times a minute
SELECT fw_define('api', 5, '1 minute', comment => 'example service: GET /hello');
-- every client address may sign up 3 times a day, enforced by the trigger
SELECT fw_define('signup', 3, '1 day', comment => 'example service: POST /signup');

CREATE TABLE signups (
    id bigserial PRIMARY KEY,
    email text NOT NULL,
    ip text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER signup_quota BEFORE INSERT ON signups
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('signup', 'ip');
