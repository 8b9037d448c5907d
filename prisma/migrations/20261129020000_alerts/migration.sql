-- CreateTable
CREATE TABLE "Alert" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "key" TEXT NOT NULL,
    "rule" TEXT NOT NULL,
    "severity" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "lockId" TEXT,
    "backend" TEXT,
    "source" TEXT NOT NULL,
    "resource" TEXT,
    "message" TEXT NOT NULL,
    "evidence" TEXT NOT NULL,
    "raisedAt" DATETIME NOT NULL,
    "ackedAt" DATETIME,
    "ackedBy" TEXT,
    "resolvedAt" DATETIME
);

-- CreateTable
CREATE TABLE "OutboxMessage" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "alertId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" DATETIME NOT NULL,
    "deliveredAt" DATETIME,
    "lastError" TEXT
);

-- CreateTable
CREATE TABLE "ResourceHour" (
    "lockId" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "hour" DATETIME NOT NULL,
    "acquisitions" INTEGER NOT NULL DEFAULT 0,
    "releases" INTEGER NOT NULL DEFAULT 0,
    "expiries" INTEGER NOT NULL DEFAULT 0,
    "ownerChanges" INTEGER NOT NULL DEFAULT 0,
    "holdCount" INTEGER NOT NULL DEFAULT 0,
    "holdMsSum" REAL NOT NULL DEFAULT 0,
    "holdMsMax" REAL NOT NULL DEFAULT 0,

    PRIMARY KEY ("lockId", "hour")
);

-- CreateIndex
CREATE INDEX "Alert_state_raisedAt_idx" ON "Alert"("state", "raisedAt");

-- CreateIndex
CREATE INDEX "Alert_key_state_idx" ON "Alert"("key", "state");

-- CreateIndex
CREATE INDEX "OutboxMessage_deliveredAt_nextAttemptAt_idx" ON "OutboxMessage"("deliveredAt", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "ResourceHour_hour_idx" ON "ResourceHour"("hour");
