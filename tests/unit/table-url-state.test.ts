import { describe, expect, it } from "vitest";
import {
  DEFAULT_SORT,
  nextSort,
  parseSort,
  parseTableState,
  serializeTableState,
  type TableState,
} from "../../components/locks/table-url-state";

const parse = (qs: string) => parseTableState(new URLSearchParams(qs));
const DEFAULT: TableState = { q: "", backend: "all", hazardsOnly: false, sort: DEFAULT_SORT, links: {} };

describe("table URL state", () => {
  it("an empty URL is the default view: hazards first", () => {
    expect(parse("")).toEqual(DEFAULT);
    expect(DEFAULT_SORT).toEqual({ key: "hazards", desc: true });
    expect(serializeTableState(DEFAULT)).toBe("");
  });

  it("round-trips every part of the view", () => {
    const s: TableState = {
      q: "orders & co/ä",
      backend: "zookeeper",
      hazardsOnly: true,
      sort: { key: "ttl", desc: true },
      links: { pattern: "lock:order:*", source: "redis://127.0.0.1:6379/0", library: "redisson", hazard: "no-ttl" },
    };
    const qs = serializeTableState(s);
    expect(qs).toContain("sort=-ttl");
    expect(qs).toContain("hazardsOnly=1");
    expect(parse(qs)).toEqual(s);
  });

  it("leaves the default sort out and keeps a resource sort", () => {
    expect(serializeTableState({ ...DEFAULT, sort: { key: "hazards", desc: true } })).toBe("");
    expect(serializeTableState({ ...DEFAULT, sort: { key: "resource", desc: false } })).toBe("sort=resource");
    expect(parse("sort=resource").sort).toEqual({ key: "resource", desc: false });
  });

  it.each([
    ["sort=bogus", { sort: DEFAULT_SORT }],
    ["sort=-", { sort: DEFAULT_SORT }],
    ["sort=--ttl", { sort: DEFAULT_SORT }],
    ["sort=", { sort: DEFAULT_SORT }],
    ["backend=etcd", { backend: "all" }],
    ["backend=REDIS", { backend: "all" }],
    ["hazardsOnly=yes", { hazardsOnly: false }],
    ["hazardsOnly=true", { hazardsOnly: true }],
    ["source=", { links: {} }],
    ["q=a&q=b", { q: "a" }],
    ["%E0%A4%A=1&q=x", { q: "x" }],
    ["unknown=1&pattern=lock:*", { links: { pattern: "lock:*" } }],
  ])("malformed or odd %s falls back per parameter", (qs, want) => {
    expect(parse(qs)).toEqual({ ...DEFAULT, ...want });
  });

  it("cuts an over-long query to what the API accepts and drops an over-long link filter", () => {
    expect(parse(`q=${"x".repeat(1000)}`).q).toHaveLength(256);
    expect(parse(`source=${"s".repeat(5000)}`).links).toEqual({});
  });

  it("parseSort and nextSort", () => {
    expect(parseSort("-held")).toEqual({ key: "held", desc: true });
    expect(parseSort(null)).toEqual(DEFAULT_SORT);
    expect(nextSort(DEFAULT_SORT, "hazards")).toEqual({ key: "hazards", desc: false });
    expect(nextSort(DEFAULT_SORT, "ttl")).toEqual({ key: "ttl", desc: false });
    expect(nextSort({ key: "ttl", desc: false }, "ttl")).toEqual({ key: "ttl", desc: true });
    expect(nextSort(DEFAULT_SORT, "waiters")).toEqual({ key: "waiters", desc: true });
  });
});
