-- At most one unresolved (open or acknowledged) alert per key, enforced by the database: two dashboards that
-- evaluate at once (an evaluation that outlived the leader's lease) can no longer both raise the same alert. Prisma's
-- schema cannot say "partial", so this index exists only here (and in prisma/postgres/migrations for PostgreSQL).
--
-- Duplicates already stored would make the index fail to build: all but the oldest of each key (raisedAt, then id)
-- are resolved first, now, without a webhook.
UPDATE "Alert"
SET "state" = 'resolved', "resolvedAt" = strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
WHERE "state" IN ('open', 'acknowledged')
  AND EXISTS (
    SELECT 1 FROM "Alert" AS "older"
    WHERE "older"."key" = "Alert"."key"
      AND "older"."state" IN ('open', 'acknowledged')
      AND ("older"."raisedAt" < "Alert"."raisedAt"
        OR ("older"."raisedAt" = "Alert"."raisedAt" AND "older"."id" < "Alert"."id"))
  );

-- CreateIndex
CREATE UNIQUE INDEX "Alert_unresolved_key_key" ON "Alert"("key") WHERE "state" IN ('open', 'acknowledged');
