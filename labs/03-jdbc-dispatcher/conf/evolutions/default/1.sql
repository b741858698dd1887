-- Lab 03 schema and seed data: a small shop's products and orders.
-- The data is computed, not random, so every run (and every reader) queries
-- the same rows and PostgreSQL does the same work per request.

-- !Ups

CREATE TABLE products (
  id        integer PRIMARY KEY,
  name      text    NOT NULL,
  category  text    NOT NULL,
  price     numeric(10, 2) NOT NULL
);

CREATE TABLE orders (
  id          bigint  PRIMARY KEY,
  product_id  integer NOT NULL REFERENCES products (id),
  region      integer NOT NULL,
  quantity    integer NOT NULL,
  ordered_at  timestamp NOT NULL
);

CREATE INDEX orders_region ON orders (region);

INSERT INTO products (id, name, category, price)
SELECT n,
       'product ' || n,
       (ARRAY['books', 'games', 'garden', 'kitchen', 'music', 'office', 'outdoor', 'sports', 'tools', 'toys'])[1 + n % 10],
       round((3 + (n * 7919) % 9700 / 100.0)::numeric, 2)
FROM generate_series(1, 200) AS n;

INSERT INTO orders (id, product_id, region, quantity, ordered_at)
SELECT n,
       1 + (n::bigint * 104729) % 200,
       1 + n % 16,
       1 + (n * 31) % 5,
       timestamp '2024-01-01' + (n % 525600) * interval '1 minute'
FROM generate_series(1, 96000) AS n;

ANALYZE products;
ANALYZE orders;

-- !Downs

DROP TABLE orders;
DROP TABLE products;
