import { describe, expect, it } from "vitest";
import { parseReplicaLine, parseReplicationInfo } from "../../agent/sources/redis/replication-info";

/** Captured from redis-server 7.0.15 (a master with one replica, and that replica), CRLF as the server sends it. */
const MASTER = [
  "# Replication",
  "role:master",
  "connected_slaves:1",
  "slave0:ip=127.0.0.1,port=17302,state=online,offset=55,lag=0",
  "master_failover_state:no-failover",
  "master_replid:42bd07066f75b9eabbb642030a0ed7476100fad8",
  "master_replid2:0000000000000000000000000000000000000000",
  "master_repl_offset:55",
  "second_repl_offset:-1",
  "repl_backlog_active:1",
  "repl_backlog_size:1048576",
  "repl_backlog_first_byte_offset:1",
  "repl_backlog_histlen:55",
  "",
].join("\r\n");

const REPLICA = [
  "# Replication",
  "role:slave",
  "master_host:127.0.0.1",
  "master_port:17301",
  "master_link_status:up",
  "master_last_io_seconds_ago:3",
  "master_sync_in_progress:0",
  "slave_read_repl_offset:55",
  "slave_repl_offset:55",
  "slave_priority:100",
  "slave_read_only:1",
  "replica_announced:1",
  "connected_slaves:0",
  "master_failover_state:no-failover",
  "master_repl_offset:55",
  "",
].join("\r\n");

describe("parseReplicationInfo", () => {
  const cases: Array<{ name: string; text: string; want: ReturnType<typeof parseReplicationInfo> }> = [
    {
      name: "a master with one online replica",
      text: MASTER,
      want: {
        role: "master",
        offset: 55,
        replicas: [
          { address: "127.0.0.1:17302", host: "127.0.0.1", port: 17302, state: "online", offset: 55, lagSeconds: 0 },
        ],
      },
    },
    {
      name: "the replica itself",
      text: REPLICA,
      want: { role: "replica", offset: 55, masterAddress: "127.0.0.1:17301", linkUp: true },
    },
    {
      name: "a replica whose link is down (LF only)",
      text: "role:slave\nmaster_host:10.0.0.7\nmaster_port:6379\nmaster_link_status:down\nslave_repl_offset:1\n",
      want: { role: "replica", offset: 1, masterAddress: "10.0.0.7:6379", linkUp: false },
    },
    {
      name: "a master without replicas",
      text: "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n",
      want: { role: "master", offset: 0, replicas: [] },
    },
    {
      name: "a replica still in its first sync, and one on IPv6",
      text: [
        "role:master",
        "slave0:ip=127.0.0.1,port=17302,state=wait_bgsave,offset=0,lag=0",
        "slave1:ip=::1,port=6390,state=online,offset=1200,lag=1",
        "master_repl_offset:1300",
      ].join("\n"),
      want: {
        role: "master",
        offset: 1300,
        replicas: [
          {
            address: "127.0.0.1:17302",
            host: "127.0.0.1",
            port: 17302,
            state: "wait_bgsave",
            offset: 0,
            lagSeconds: 0,
          },
          { address: "[::1]:6390", host: "::1", port: 6390, state: "online", offset: 1200, lagSeconds: 1 },
        ],
      },
    },
    {
      name: "malformed replica lines are left out, not guessed",
      text: [
        "role:master",
        "slave0:ip=127.0.0.1,state=online,offset=5,lag=0",
        "slave1:ip=127.0.0.1,port=99999,state=online",
        "slave2:port=6380,state=online",
        "slave3:garbage",
        "slave4:ip=evil host,port=6380",
        "slave5:ip=127.0.0.1,port=6381,state=online,offset=abc,lag=",
        "master_repl_offset:not-a-number",
      ].join("\n"),
      want: {
        role: "master",
        offset: undefined,
        replicas: [
          {
            address: "127.0.0.1:6381",
            host: "127.0.0.1",
            port: 6381,
            state: "online",
            offset: undefined,
            lagSeconds: undefined,
          },
        ],
      },
    },
    { name: "empty text", text: "", want: null },
    { name: "not INFO replication", text: "# Server\r\nredis_version:7.0.15\r\n", want: null },
    { name: "an unknown role (a Sentinel)", text: "role:sentinel\n", want: null },
    { name: "no colon at all", text: "role master\nslave0 ip=1", want: null },
  ];
  for (const c of cases) {
    it(c.name, () => expect(parseReplicationInfo(c.text)).toEqual(c.want));
  }

  it("survives hostile and huge input", () => {
    const huge = `role:master\n${"slave0:ip=a,port=1,".repeat(10_000)}\n`;
    expect(parseReplicationInfo(huge)?.role).toBe("master");
    expect(parseReplicationInfo("role:master\u0000\n")).toBeNull();
  });
});

describe("parseReplicaLine", () => {
  it("reads the fields in any order", () => {
    expect(parseReplicaLine("lag=2,offset=9,state=send_bulk,port=7000,ip=10.1.2.3")).toMatchObject({
      address: "10.1.2.3:7000",
      state: "send_bulk",
      offset: 9,
      lagSeconds: 2,
    });
  });
  it("says unknown when the state is missing", () => {
    expect(parseReplicaLine("ip=10.1.2.3,port=7000")?.state).toBe("unknown");
  });
});
