-- AlterTable: an outbox row is claimed by one dashboard before it is sent (no second send on a leader handover).
ALTER TABLE "OutboxMessage" ADD COLUMN "claimedBy" TEXT;
ALTER TABLE "OutboxMessage" ADD COLUMN "claimedUntil" DATETIME;
