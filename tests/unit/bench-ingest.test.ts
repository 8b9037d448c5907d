import { describe, expect, it } from "vitest";
import { bucketQuantile, parseBuckets, sumMetric } from "../../bench/ingest";

// Samples of GET /api/metrics as the dashboard writes it (prom-client text format).
const scrape = (counts: number[]) => `# HELP lockscope_locks_held Locks currently held, by backend and source.
# TYPE lockscope_locks_held gauge
lockscope_locks_held{backend="redis",source="redis://load-a:6379/0"} 5000
lockscope_locks_held{backend="redis",source="redis://load-b:6379/0"} 4999
# TYPE lockscope_store_write_seconds histogram
lockscope_store_write_seconds_bucket{le="0.01",provider="sqlite"} ${counts[0]}
lockscope_store_write_seconds_bucket{le="0.05",provider="sqlite"} ${counts[1]}
lockscope_store_write_seconds_bucket{le="0.25",provider="sqlite"} ${counts[2]}
lockscope_store_write_seconds_bucket{le="+Inf",provider="sqlite"} ${counts[3]}
lockscope_store_write_seconds_sum{provider="sqlite"} 12.5
lockscope_store_write_seconds_count{provider="sqlite"} ${counts[3]}
`;

describe("ingest bench: reading the dashboard's metrics", () => {
  it("sums a gauge over its label sets", () => {
    expect(sumMetric(scrape([0, 0, 0, 0]), "lockscope_locks_held")).toBe(9999);
    expect(sumMetric(scrape([0, 0, 0, 0]), "lockscope_missing")).toBe(0);
  });

  it("takes the bucket bound of a percentile between two scrapes (only the window's observations)", () => {
    const before = parseBuckets(scrape([10, 10, 10, 10]), "lockscope_store_write_seconds");
    // 100 observations in the window: 50 under 10 ms, 45 more under 50 ms, 4 more under 250 ms, 1 above.
    const after = parseBuckets(scrape([60, 105, 109, 110]), "lockscope_store_write_seconds");
    expect(bucketQuantile(before, after, 0.5)).toBe(0.01);
    expect(bucketQuantile(before, after, 0.95)).toBe(0.05);
    expect(bucketQuantile(before, after, 0.99)).toBe(0.25);
    expect(bucketQuantile(before, after, 1)).toBe(Infinity);
    expect(bucketQuantile(after, after, 0.99)).toBeNull();
  });
});
