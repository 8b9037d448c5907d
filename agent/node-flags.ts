/**
 * The V8 flags the agent runs with wherever it is started compiled (`npm run agent`, `npm start`, the tests' and the
 * bench's harness), so what is measured is what production runs. The only one: a young generation of at most
 * 2 MB a semi-space instead of 16. The agent keeps little short-lived data, but the default young generation grows
 * to two 16 MB semi-spaces early on and never gives them back: at 10,000 quiet locks that was 32 MB of a 144 MB
 * peak RSS, 113 MB with the flag, at the same steady-state CPU (2.2% and 2.2% of a core over 30 s) and discovery
 * time (84 and 82 s) in one measured run each (BENCHMARKS.md, issue 11). V8 reads it only at start: it cannot be
 * set from inside the process (v8.setFlagsFromString leaves the young generation as it is).
 */
export const AGENT_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=2"];

/**
 * How far the agent's heap may grow past what the last full collection left live (lib/runtime/heap-growth.ts; the
 * dashboard keeps 20). At 100,000 tracked locks the live heap is about 162 MB and the safety sweep's ioredis
 * commands reach the old generation at about 2 MB/s (a sampling heap profile: 130 MB in 60 s, most of it the
 * commands, their argument arrays and their replies), so at 20% a full collection came every 16 to 19 s, marking the
 * whole heap each time. At 50% one comes every 35 s: in `bench/agent-steady.ts` (100,000 locks, 60 s windows, in
 * turn) the agent used 3.3 and 3.8% of a core against 4.4 and 4.5% at 20%, for 310 to 318 MB of RSS after a full
 * collection against 281 to 296 MB. At 10,000 locks (about 25 MB live) the difference is a few MB.
 */
export const AGENT_HEAP_GROWING_PERCENT = 50;
