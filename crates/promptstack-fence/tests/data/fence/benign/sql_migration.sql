-- Migration 0042: index orders by customer and date.
BEGIN;
CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_customer_created
    ON orders (customer_id, created_at DESC);
SELECT id, total FROM orders WHERE total <> 0 AND created_at >= now() - interval '30 days';
SELECT ip FROM hosts WHERE ip << inet '10.0.0.0/8';  -- contained-in operator
SELECT '{1,2}'::int[] <@ '{1,2,3}'::int[];
COMMIT;
