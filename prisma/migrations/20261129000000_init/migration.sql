-- CreateTable
CREATE TABLE "Event" (
    "id" TEXT NOT NULL PRIMARY KEY,
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
    "at" DATETIME NOT NULL,
    "receivedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "detail" TEXT
);

-- CreateTable
CREATE TABLE "Agent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "version" TEXT NOT NULL,
    "firstSeen" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastSeen" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "Event_lockId_at_idx" ON "Event"("lockId", "at");

-- CreateIndex
CREATE INDEX "Event_resource_at_idx" ON "Event"("resource", "at");

-- CreateIndex
CREATE INDEX "Event_at_idx" ON "Event"("at");

