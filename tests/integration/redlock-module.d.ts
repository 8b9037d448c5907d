/**
 * redlock 5.0.0-beta.2 ships typings (dist/index.d.ts) but its package.json "exports" has no "types" condition, so
 * TypeScript's bundler resolution cannot find them. This declares the part the tests use, as that file has it.
 */
declare module "redlock" {
  import type { Redis } from "ioredis";

  export interface Settings {
    driftFactor: number;
    retryCount: number;
    retryDelay: number;
    retryJitter: number;
    automaticExtensionThreshold: number;
  }

  export class Lock {
    readonly resources: string[];
    readonly value: string;
    expiration: number;
    release(): Promise<unknown>;
    extend(duration: number): Promise<Lock>;
  }

  export default class Redlock {
    constructor(clients: Iterable<Redis>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    release(lock: Lock, settings?: Partial<Settings>): Promise<unknown>;
    extend(existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>;
    quit(): Promise<void>;
  }
}
