-- The sample data `make run` puts in a new demo database.
CREATE TABLE languages (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL UNIQUE,
  year    INTEGER NOT NULL,
  typed   BOOLEAN NOT NULL,
  rating  DECIMAL(4,2),
  added   TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO languages (name, year, typed, rating) VALUES
  ('C', 1972, true, 8.50),
  ('SQL', 1974, true, 9.00),
  ('C++', 1985, true, 8.75),
  ('Python', 1991, false, 9.25),
  ('Rust', 2015, true, 9.10);
