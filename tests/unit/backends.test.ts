import { describe, expect, it } from "vitest";
import { BACKEND_MODULES } from "../../agent/sources/backends";
import { BACKEND_LABELS, BACKENDS, isBackend } from "../../lib/contract/lock";

describe("the backend list", () => {
  it("has one agent module per name, each name in the contract's list", () => {
    const names = BACKEND_MODULES.map((m) => m.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(BACKENDS).toContain(n);
  });

  it("labels every backend and recognises only listed names", () => {
    for (const b of BACKENDS) expect(BACKEND_LABELS[b]).toMatch(/\S/);
    expect(isBackend("postgres")).toBe(true);
    expect(isBackend("etcd")).toBe(false);
  });

  it("loads only what is configured: Redis by default, the others when their variables are set", () => {
    const byName = new Map(BACKEND_MODULES.map((m) => [m.name, m]));
    expect(byName.get("redis")!.load({}, null)).toEqual([
      { id: "redis://127.0.0.1:6379/0", url: "redis://127.0.0.1:6379", db: 0 },
    ]);
    expect(byName.get("redlock")!.load({}, null)).toBeNull();
    expect(byName.get("zookeeper")!.load({}, null)).toBeNull();
    expect(byName.get("zookeeper")!.load({ ZK_CONNECT: "127.0.0.1:2181" }, null)).not.toBeNull();
    expect(() => byName.get("redis")!.load({ REDIS_URLS: "http://x" }, null)).toThrow(/REDIS_URLS/);
  });
});
