-- settings made before the library is loaded in a session (this file's
-- first statements: nothing has loaded it yet) are checked when it loads:
-- a configuration that does not exist is an error at every use, never a
-- quiet fall back to the default
SET gpuidx.text_config = 'no_such_config';
SELECT 'a fox'::text @@& 'fox';
SHOW gpuidx.text_config;
CREATE TABLE settings_t (body text);
CREATE INDEX ON settings_t USING gpuidx (body);
RESET gpuidx.text_config;
SELECT 'a fox'::text @@& 'fox';
-- once loaded, such a value is refused when set, and so is a malformed one
SET gpuidx.text_config = 'no_such_config';
SET gpuidx.text_config = 'a.b.c';
SHOW gpuidx.text_config;
-- the prefix is reserved: a misspelt setting is an error
SET gpuidx.text_confg = 'english';
DROP TABLE settings_t;
