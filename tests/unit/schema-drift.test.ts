import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// A Prisma schema has one provider, so PostgreSQL has its own schema file. lib/server/store.ts uses one client type
// for both, which is only sound while the models are the same: this fails the moment one file gains a model, a
// field, a type, an attribute or an index that the other lacks.
const root = path.resolve(import.meta.dirname, "..", "..");
const SQLITE = path.join(root, "prisma", "schema.prisma");
const POSTGRES = path.join(root, "prisma", "postgres", "schema.prisma");

interface Model {
  fields: Record<string, string>;
  blockAttributes: string[];
}

/** model name -> field name -> "type attributes", comments and alignment dropped. */
function parseModels(schema: string): Record<string, Model> {
  const models: Record<string, Model> = {};
  const text = schema.replace(/\/\/.*$/gm, "");
  for (const m of text.matchAll(/^\s*model\s+(\w+)\s*\{([^}]*)\}/gm)) {
    const model: Model = { fields: {}, blockAttributes: [] };
    for (const raw of m[2]!.split("\n")) {
      const line = raw.trim().replace(/\s+/g, " ");
      if (line === "") continue;
      if (line.startsWith("@@")) model.blockAttributes.push(line);
      else {
        const [name, ...rest] = line.split(" ");
        model.fields[name!] = rest.join(" ");
      }
    }
    model.blockAttributes.sort();
    models[m[1]!] = model;
  }
  return models;
}

describe("the SQLite and PostgreSQL schemas", () => {
  const sqlite = parseModels(readFileSync(SQLITE, "utf8"));
  const postgres = parseModels(readFileSync(POSTGRES, "utf8"));

  it("parse to the models the store uses", () => {
    expect(Object.keys(sqlite)).toEqual(expect.arrayContaining(["Event", "Agent", "AuditEntry", "ResourceHour"]));
    expect(sqlite.Event!.fields.id).toBe("String @id");
    expect(sqlite.ResourceHour!.blockAttributes).toContain("@@id([lockId, hour])");
  });

  it("have the same models, fields, types and attributes", () => {
    expect(Object.keys(postgres).sort()).toEqual(Object.keys(sqlite).sort());
    for (const name of Object.keys(sqlite)) {
      expect({ model: name, ...postgres[name] }).toEqual({ model: name, ...sqlite[name] });
    }
  });

  it("differ only in the provider and the generated client's folder", () => {
    const provider = (s: string) => /datasource\s+db\s*\{[^}]*provider\s*=\s*"(\w+)"/.exec(s)?.[1];
    const output = (s: string) => /generator\s+client\s*\{[^}]*output\s*=\s*"([^"]+)"/.exec(s)?.[1];
    const a = readFileSync(SQLITE, "utf8");
    const b = readFileSync(POSTGRES, "utf8");
    expect([provider(a), provider(b)]).toEqual(["sqlite", "postgresql"]);
    expect(path.resolve(path.dirname(SQLITE), output(a)!)).toBe(path.join(root, "lib", "generated", "prisma"));
    expect(path.resolve(path.dirname(POSTGRES), output(b)!)).toBe(
      path.join(root, "lib", "generated", "prisma-postgres"),
    );
  });

  it("would notice a drifted field (the parser is not blind)", () => {
    const drifted = parseModels(readFileSync(POSTGRES, "utf8").replace(/ttlMs(\s+)Int\?/, "ttlMs$1BigInt?"));
    expect(drifted.Event!.fields.ttlMs).toBe("BigInt?");
    expect(drifted.Event).not.toEqual(sqlite.Event);
  });
});

/** Every migration of one store, in order, as one text. */
function migrationsSql(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort()
    .map((d) => readFileSync(path.join(dir, d, "migration.sql"), "utf8"))
    .join("\n");
}

describe("the PostgreSQL migrations", () => {
  it("create every model's table and mention every field (a model added without a migration fails here)", () => {
    const sql = migrationsSql(path.join(root, "prisma", "postgres", "migrations"));
    for (const [name, model] of Object.entries(parseModels(readFileSync(POSTGRES, "utf8")))) {
      expect(sql, `no CREATE TABLE for ${name}`).toContain(`CREATE TABLE "${name}"`);
      for (const field of Object.keys(model.fields)) expect(sql, `${name}.${field}`).toContain(`"${field}"`);
    }
  });
});

describe("what the schemas cannot say", () => {
  it("both stores' migrations keep one unresolved alert per key (a partial unique index)", () => {
    const index =
      /CREATE UNIQUE INDEX "Alert_unresolved_key_key" ON "Alert"\("key"\) WHERE "state" IN \('open', 'acknowledged'\);/;
    expect(migrationsSql(path.join(root, "prisma", "migrations"))).toMatch(index);
    expect(migrationsSql(path.join(root, "prisma", "postgres", "migrations"))).toMatch(index);
  });
});
