-- CreateTable
CREATE TABLE "AuditEntry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "at" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
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
    "clientAddress" TEXT
);

-- CreateIndex
CREATE INDEX "AuditEntry_at_idx" ON "AuditEntry"("at");

-- CreateIndex
CREATE INDEX "AuditEntry_actor_at_idx" ON "AuditEntry"("actor", "at");

-- CreateIndex
CREATE INDEX "AuditEntry_lockId_at_idx" ON "AuditEntry"("lockId", "at");
