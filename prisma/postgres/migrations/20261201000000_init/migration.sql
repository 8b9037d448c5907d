-- CreateTable
CREATE TABLE "Event" (
    "id" TEXT NOT NULL,
    "agentId" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "lockId" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "owner" TEXT,
    "previousOwner" TEXT,
    "library" TEXT,
    "ttlMs" INTEGER,
    "at" TIMESTAMP(3) NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "detail" TEXT,

    CONSTRAINT "Event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Agent" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "firstSeen" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastSeen" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Agent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "via" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "lockId" TEXT NOT NULL,
    "backend" TEXT,
    "source" TEXT,
    "resource" TEXT,
    "observedOwner" TEXT,
    "reason" TEXT NOT NULL,
    "dryRun" BOOLEAN NOT NULL,
    "outcome" TEXT NOT NULL,
    "message" TEXT,
    "perNode" TEXT,
    "clientAddress" TEXT,

    CONSTRAINT "AuditEntry_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Alert" (
    "id" TEXT NOT NULL,
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
    "raisedAt" TIMESTAMP(3) NOT NULL,
    "ackedAt" TIMESTAMP(3),
    "ackedBy" TEXT,
    "resolvedAt" TIMESTAMP(3),

    CONSTRAINT "Alert_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OutboxMessage" (
    "id" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "alertId" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL,
    "deliveredAt" TIMESTAMP(3),
    "lastError" TEXT,

    CONSTRAINT "OutboxMessage_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ResourceHour" (
    "lockId" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "backend" TEXT NOT NULL,
    "hour" TIMESTAMP(3) NOT NULL,
    "acquisitions" INTEGER NOT NULL DEFAULT 0,
    "releases" INTEGER NOT NULL DEFAULT 0,
    "expiries" INTEGER NOT NULL DEFAULT 0,
    "ownerChanges" INTEGER NOT NULL DEFAULT 0,
    "holdCount" INTEGER NOT NULL DEFAULT 0,
    "holdMsSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "holdMsMax" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "ResourceHour_pkey" PRIMARY KEY ("lockId","hour")
);

-- CreateIndex
CREATE INDEX "Event_lockId_at_idx" ON "Event"("lockId", "at");

-- CreateIndex
CREATE INDEX "Event_resource_at_idx" ON "Event"("resource", "at");

-- CreateIndex
CREATE INDEX "Event_at_idx" ON "Event"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_at_idx" ON "AuditEntry"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_actor_at_idx" ON "AuditEntry"("actor", "at");

-- CreateIndex
CREATE INDEX "AuditEntry_lockId_at_idx" ON "AuditEntry"("lockId", "at");

-- CreateIndex
CREATE INDEX "Alert_state_raisedAt_idx" ON "Alert"("state", "raisedAt");

-- CreateIndex
CREATE INDEX "Alert_key_state_idx" ON "Alert"("key", "state");

-- CreateIndex
CREATE INDEX "OutboxMessage_deliveredAt_nextAttemptAt_idx" ON "OutboxMessage"("deliveredAt", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "ResourceHour_hour_idx" ON "ResourceHour"("hour");

