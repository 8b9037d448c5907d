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
