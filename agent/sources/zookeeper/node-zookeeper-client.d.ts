/**
 * node-zookeeper-client 1.1.3 ships no types. This declares the part the agent and its test harness call, checked
 * against the package's index.js; 64-bit fields (ids, zxids, times) are 8-byte big-endian Buffers there.
 */
declare module "node-zookeeper-client" {
  import type { EventEmitter } from "node:events";

  namespace zookeeper {
    interface Stat {
      czxid: Buffer;
      mzxid: Buffer;
      ctime: Buffer;
      mtime: Buffer;
      version: number;
      cversion: number;
      aversion: number;
      ephemeralOwner: Buffer;
      dataLength: number;
      numChildren: number;
      pzxid: Buffer;
    }

    interface Exception extends Error {
      code: number;
      getCode(): number;
      getName(): string;
    }

    interface Event {
      type: number;
      name: string;
      path: string;
      getType(): number;
      getName(): string;
      getPath(): string;
    }

    interface State {
      name: string;
      code: number;
    }

    type Watcher = (event: Event) => void;
    type ACLList = unknown[];

    interface Client extends EventEmitter {
      connect(): void;
      close(): void;
      getState(): State;
      getSessionId(): Buffer;
      getSessionTimeout(): number;
      addAuthInfo(scheme: string, auth: Buffer): void;
      create(path: string, callback: (error: Exception | null, path: string) => void): void;
      create(path: string, data: Buffer, callback: (error: Exception | null, path: string) => void): void;
      create(path: string, mode: number, callback: (error: Exception | null, path: string) => void): void;
      create(path: string, data: Buffer, mode: number, callback: (error: Exception | null, path: string) => void): void;
      create(
        path: string,
        data: Buffer | null,
        acls: ACLList,
        mode: number,
        callback: (error: Exception | null, path: string) => void,
      ): void;
      remove(path: string, callback: (error: Exception | null) => void): void;
      remove(path: string, version: number, callback: (error: Exception | null) => void): void;
      /** Tests only: cleans up a test's tree. */
      removeRecursive(path: string, callback: (error: Exception | null) => void): void;
      setData(path: string, data: Buffer, callback: (error: Exception | null, stat: Stat) => void): void;
      getData(path: string, callback: (error: Exception | null, data: Buffer | undefined, stat: Stat) => void): void;
      getData(
        path: string,
        watcher: Watcher,
        callback: (error: Exception | null, data: Buffer | undefined, stat: Stat) => void,
      ): void;
      exists(path: string, callback: (error: Exception | null, stat: Stat | null) => void): void;
      exists(path: string, watcher: Watcher, callback: (error: Exception | null, stat: Stat | null) => void): void;
      getChildren(path: string, callback: (error: Exception | null, children: string[], stat: Stat) => void): void;
      getChildren(
        path: string,
        watcher: Watcher,
        callback: (error: Exception | null, children: string[], stat: Stat) => void,
      ): void;
      mkdirp(path: string, callback: (error: Exception | null, path: string) => void): void;
      mkdirp(path: string, data: Buffer, callback: (error: Exception | null, path: string) => void): void;
    }

    interface ClientOptions {
      sessionTimeout?: number;
      spinDelay?: number;
      retries?: number;
    }
  }

  const zookeeper: {
    createClient(connectionString: string, options?: zookeeper.ClientOptions): zookeeper.Client;
    CreateMode: { PERSISTENT: 0; EPHEMERAL: 1; PERSISTENT_SEQUENTIAL: 2; EPHEMERAL_SEQUENTIAL: 3 };
    Exception: {
      NO_NODE: -101;
      NODE_EXISTS: -110;
      CONNECTION_LOSS: -4;
      SESSION_EXPIRED: -112;
      NO_AUTH: -102;
      BAD_VERSION: -103;
      NOT_EMPTY: -111;
    };
    State: {
      DISCONNECTED: zookeeper.State;
      SYNC_CONNECTED: zookeeper.State;
      AUTH_FAILED: zookeeper.State;
      CONNECTED_READ_ONLY: zookeeper.State;
      EXPIRED: zookeeper.State;
    };
  };
  export = zookeeper;
}
