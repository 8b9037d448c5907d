import { describe, expect, it } from "vitest";
import { loadRedlockConfig } from "../../agent/sources/redlock/redlock-config";
import { configError } from "../harness/config-error";

const three = "redis://127.0.0.1:7001,redis://127.0.0.1:7002,redis://127.0.0.1:7003";

describe("loadRedlockConfig", () => {
  it("no REDLOCK_NODES and no file: no groups", () => {
    expect(loadRedlockConfig({})).toEqual({ groups: [] });
    expect(loadRedlockConfig({ REDLOCK_NODES: " " })).toEqual({ groups: [] });
    expect(loadRedlockConfig({}, {})).toEqual({ groups: [] });
  });

  it("REDLOCK_NODES forms the group named default, with credentials kept out of the ids", () => {
    const c = loadRedlockConfig({
      REDLOCK_NODES: `redis://:secret@127.0.0.1:7001, redis://127.0.0.1:7002/0 ,redis://127.0.0.1:7003`,
    });
    expect(c.groups).toHaveLength(1);
    expect(c.groups[0]!.name).toBe("default");
    expect(c.groups[0]!.nodes.map((n) => n.id)).toEqual([
      "redis://127.0.0.1:7001/0",
      "redis://127.0.0.1:7002/0",
      "redis://127.0.0.1:7003/0",
    ]);
    expect(c.groups[0]!.nodes[0]!.url).toBe("redis://:secret@127.0.0.1:7001");
  });

  it("adds the config file's groups after it", () => {
    const c = loadRedlockConfig(
      { REDLOCK_NODES: three },
      {
        redlockGroups: [
          {
            name: "payments",
            nodes: [
              "redis://127.0.0.1:8001",
              "redis://127.0.0.1:8002",
              "redis://127.0.0.1:8003",
              "redis://127.0.0.1:8004",
              "redis://127.0.0.1:8005",
            ],
          },
        ],
      },
    );
    expect(c.groups.map((g) => [g.name, g.nodes.length])).toEqual([
      ["default", 3],
      ["payments", 5],
    ]);
  });

  it.each([
    {
      name: "two nodes",
      env: { REDLOCK_NODES: "redis://127.0.0.1:1,redis://127.0.0.1:2" },
      variable: "REDLOCK_NODES",
      problem: /at least 3/,
    },
    { name: "not a URL", env: { REDLOCK_NODES: `${three},nope` }, variable: "REDLOCK_NODES", problem: /not a URL/ },
    {
      name: "wrong scheme",
      env: { REDLOCK_NODES: `${three},http://127.0.0.1:1` },
      variable: "REDLOCK_NODES",
      problem: /redis:\/\//,
    },
    {
      name: "same node twice",
      env: { REDLOCK_NODES: `${three},redis://127.0.0.1:7001` },
      variable: "REDLOCK_NODES",
      problem: /listed twice/,
    },
    {
      name: "same server under two database numbers",
      env: { REDLOCK_NODES: "redis://127.0.0.1:1/0,redis://127.0.0.1:1/1,redis://127.0.0.1:2" },
      variable: "REDLOCK_NODES",
      problem: /listed twice/,
    },
  ])("REDLOCK_NODES: $name", ({ env, variable, problem }) => {
    const e = configError(() => loadRedlockConfig(env));
    expect(e.variable).toBe(variable);
    expect(e.problem).toMatch(problem);
  });

  it.each([
    { name: "top level not an object", file: [1], variable: "config file" },
    { name: "redlockGroups not an array", file: { redlockGroups: {} }, variable: "redlockGroups" },
    { name: "entry not an object", file: { redlockGroups: ["x"] }, variable: "redlockGroups[0]" },
    { name: "name missing", file: { redlockGroups: [{ nodes: three.split(",") }] }, variable: "redlockGroups[0].name" },
    {
      name: "bad name",
      file: { redlockGroups: [{ name: "a b", nodes: three.split(",") }] },
      variable: "redlockGroups[0].name",
    },
    {
      name: "nodes not strings",
      file: { redlockGroups: [{ name: "g", nodes: [1, 2, 3] }] },
      variable: "redlockGroups[0].nodes",
    },
    {
      name: "too few nodes in the second group",
      file: {
        redlockGroups: [
          { name: "a", nodes: three.split(",") },
          { name: "b", nodes: ["redis://127.0.0.1:1"] },
        ],
      },
      variable: "redlockGroups[1].nodes",
    },
    {
      name: "two groups with one name",
      file: {
        redlockGroups: [
          { name: "a", nodes: three.split(",") },
          { name: "a", nodes: three.split(",") },
        ],
      },
      variable: "redlockGroups",
    },
  ])("file: $name", ({ file, variable }) => {
    expect(configError(() => loadRedlockConfig({}, file)).variable).toBe(variable);
  });

  it("a file group named default collides with REDLOCK_NODES", () => {
    const e = configError(() =>
      loadRedlockConfig({ REDLOCK_NODES: three }, { redlockGroups: [{ name: "default", nodes: three.split(",") }] }),
    );
    expect(e.variable).toBe("REDLOCK_NODES and redlockGroups");
  });
});
