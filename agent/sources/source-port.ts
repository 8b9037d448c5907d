/**
 * The port between the agent loop and a watched system. It lives here, beside the backends, so that every source
 * imports it sideways and nothing under agent/sources/ imports upward from the loop.
 */
import type { Lock, SourceStatus } from "../../lib/contract/lock";
import type { ReleaseCommand, ReleaseResult } from "../../lib/contract/release";
import type { TrackerOutput } from "../core/tracker";

/** What the agent loop needs from a watched system (a Redis node, a Redlock group, a ZooKeeper ensemble, ...). */
export interface WatchedSource {
  status(): SourceStatus;
  /** A composite (a Redis Cluster: one source per master) reports one status per member. */
  statuses?(): SourceStatus[];
  poll(): Promise<TrackerOutput>;
  locks(): Lock[];
  /** Whether this source reports the lock (the one to ask for a release). */
  has?(lockId: string): boolean;
  /** Guarded force-release; the output carries the resulting events so the view updates at once. */
  release?(cmd: ReleaseCommand): Promise<{ result: ReleaseResult; output: TrackerOutput }>;
}
