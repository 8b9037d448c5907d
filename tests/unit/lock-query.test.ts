import { describe, expect, it } from "vitest";
import { encodeCursor, parseLockQuery } from "../../lib/server/lock-query";

const parse = (qs: string) => parseLockQuery(new URLSearchParams(qs));

describe("parseLockQuery", () => {
  it("defaults: no filter, resource ascending, 100 rows from the start", () => {
    expect(parse("")).toEqual({
      ok: true,
      query: { filter: {}, sort: { key: "resource", desc: false }, limit: 100, cursor: null, offset: 0 },
    });
  });

  it("reads every filter, lower-cases q, and treats empty values as no filter", () => {
    const r = parse(
      "q=Order&backend=redis&library=redisson&source=redis://h:1/0&hazard=any&pattern=lock:*&id=a_b-1&sort=-ttl&limit=1000",
    );
    expect(r).toEqual({
      ok: true,
      query: {
        filter: {
          q: "order",
          backend: "redis",
          library: "redisson",
          source: "redis://h:1/0",
          hazard: "any",
          pattern: "lock:*",
          id: "a_b-1",
        },
        sort: { key: "ttl", desc: true },
        limit: 1000,
        cursor: null,
        offset: 0,
      },
    });
    expect(parse("q=&backend=")).toMatchObject({ ok: true, query: { filter: {} } });
  });

  it.each([
    ["limit=1001", "limit", "limit must be a whole number from 0 to 1000"],
    ["limit=-1", "limit", "limit must be a whole number from 0 to 1000"],
    ["limit=ten", "limit", "limit must be a whole number from 0 to 1000"],
    ["limit=1.5", "limit", "limit must be a whole number from 0 to 1000"],
    ["offset=x", "offset", "offset must be a whole number from 0 to 1000000"],
    ["sort=owner", "sort", "sort must be one of resource, ttl, held, waiters, hazards, with - for descending"],
    ["sort=--ttl", "sort", "sort must be one of resource, ttl, held, waiters, hazards, with - for descending"],
    ["backend=etcd", "backend", "backend must be one of redis, redlock, zookeeper, postgres, mysql"],
    ["hazard=No TTL", "hazard", "hazard must be a hazard code (like no-ttl) or any"],
    ["id=../x", "id", "id must be URL-safe (A-Z a-z 0-9 _ -)"],
    [
      "hazrd=any",
      "hazrd",
      "unknown parameter hazrd; known: q, backend, library, source, hazard, pattern, id, sort, limit, cursor, offset",
    ],
    ["limit=1&limit=2", "limit", "limit is given more than once"],
    [`q=${"x".repeat(257)}`, "q", "q is longer than 256 characters"],
    [`source=${"x".repeat(5000)}`, "source", "source is longer than 4096"],
    ["cursor=not-a-cursor", "cursor", "cursor is not one this API gave out (pass nextCursor unchanged)"],
    ["cursor=abc&offset=5", "cursor", "give cursor or offset, not both"],
  ])("refuses %s, naming %s", (qs, param, error) => {
    expect(parse(qs)).toEqual({ ok: false, param, error });
  });

  it("accepts its own cursor only with the sort it was made for", () => {
    const c = encodeCursor({ key: "ttl", desc: true }, { value: 1234, seq: 9 });
    expect(parse(`sort=-ttl&cursor=${c}`)).toMatchObject({ ok: true, query: { cursor: { value: 1234, seq: 9 } } });
    expect(parse(`sort=ttl&cursor=${c}`)).toEqual({
      ok: false,
      param: "cursor",
      error: "cursor belongs to sort=-ttl, not sort=ttl",
    });
    const forged = Buffer.from(JSON.stringify({ a: 1 })).toString("base64url");
    expect(parse(`cursor=${forged}`)).toMatchObject({ ok: false, param: "cursor" });
  });
});
