-- The PL/pgSQL recipe people write by hand, as the benchmark's baseline:
-- an unlogged table, INSERT ... ON CONFLICT DO UPDATE ... RETURNING, the
-- window from floor(epoch / period).
CREATE UNLOGGED TABLE recipe_counter (
    name text NOT NULL,
    key text NOT NULL,
    window_id bigint NOT NULL,
    count integer NOT NULL,
    PRIMARY KEY (name, key)
);

CREATE FUNCTION recipe_limit(p_name text, p_key text, p_rate integer, p_period interval)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    w bigint := floor(extract(epoch FROM clock_timestamp()) / extract(epoch FROM p_period));
    c integer;
BEGIN
    INSERT INTO recipe_counter AS r VALUES (p_name, p_key, w, 1)
    ON CONFLICT (name, key) DO UPDATE
        SET window_id = w,
            count = CASE WHEN r.window_id = w THEN r.count + 1 ELSE 1 END
    RETURNING count INTO c;
    RETURN c <= p_rate;
END $$;
