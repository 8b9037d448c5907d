import { describe, expect, it } from "vitest";
import { checksum, planMigrations, type MigrationFile } from "../../lib/server/pg-migrate";

const file = (name: string, sql = `-- ${name}\nSELECT 1;`): MigrationFile => ({ name, sql, checksum: checksum(sql) });

describe("planMigrations", () => {
  const init = file("20261201000000_init");
  const sessions = file("20261202000000_sessions");

  it("applies everything, in name order, on a fresh database", () => {
    expect(planMigrations([sessions, init], []).pending.map((m) => m.name)).toEqual([init.name, sessions.name]);
  });

  it("applies only what is new on an upgrade", () => {
    const plan = planMigrations([init, sessions], [{ name: init.name, checksum: init.checksum }]);
    expect(plan).toEqual({ pending: [sessions], changed: [], unknown: [] });
  });

  it("applies nothing when all is applied", () => {
    const applied = [init, sessions].map((m) => ({ name: m.name, checksum: m.checksum }));
    expect(planMigrations([init, sessions], applied)).toEqual({ pending: [], changed: [], unknown: [] });
  });

  it("names an applied migration whose file was edited since", () => {
    const plan = planMigrations([init], [{ name: init.name, checksum: checksum("something else") }]);
    expect(plan.changed).toEqual([init.name]);
    expect(plan.pending).toEqual([]);
  });

  it("reports migrations a newer version applied, without treating them as pending", () => {
    const plan = planMigrations(
      [init],
      [init, sessions].map((m) => ({ name: m.name, checksum: m.checksum })),
    );
    expect(plan).toEqual({ pending: [], changed: [], unknown: [sessions.name] });
  });

  it("ignores line-ending differences in the checksum (a checkout on Windows is the same migration)", () => {
    expect(checksum("A;\r\nB;\r\n")).toBe(checksum("A;\nB;\n"));
    expect(checksum("A;\nB;\n")).not.toBe(checksum("A;\nC;\n"));
  });
});
