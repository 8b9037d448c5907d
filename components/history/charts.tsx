"use client";

import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import type { Distribution, ResourceHistory } from "@/lib/contract/alerts";
import { formatDuration } from "../locks/format";
import { formatClock, localZoneName } from "../time/format-time";
import { useZone } from "../time/time";

// Tick text in slate-400: 4.5:1 or better on the dark page (slate-500 was about 4:1).
const AXIS = { stroke: "#64748b", fill: "#94a3b8", fontSize: 11 };
const TOOLTIP = { contentStyle: { background: "#0f172a", border: "1px solid #334155", fontSize: 12 } };

/** Acquisitions, takeovers and expiries per time bucket. */
export function AcquisitionsChart({ buckets }: { buckets: ResourceHistory["buckets"] }) {
  const [zone] = useZone();
  const times = buckets.map((b) => Date.parse(b.t));
  const spansDays = times.length > 1 && times[times.length - 1]! - times[0]! >= 24 * 3600_000;
  // The one time format (components/time), short for ticks, with the zone named once under the chart.
  const data = buckets.map((b, i) => ({
    ...b,
    label: formatClock(times[i]!, zone, spansDays ? "date-minutes" : "minutes"),
  }));
  const zoneName = zone === "utc" ? "UTC" : times.length > 0 ? localZoneName(times[0]!) : "this browser's zone";
  return (
    <figure>
      <ResponsiveContainer width="100%" height={180}>
        <BarChart data={data} margin={{ top: 4, right: 8, bottom: 0, left: -20 }}>
          <CartesianGrid stroke="#1e293b" vertical={false} />
          <XAxis dataKey="label" tick={AXIS} minTickGap={24} />
          <YAxis allowDecimals={false} tick={AXIS} />
          <Tooltip {...TOOLTIP} />
          <Legend wrapperStyle={{ fontSize: 11 }} />
          <Bar dataKey="acquisitions" stackId="a" fill="#34d399" name="acquired" isAnimationActive={false} />
          <Bar dataKey="ownerChanges" stackId="b" fill="#f43f5e" name="taken over" isAnimationActive={false} />
          <Bar dataKey="expiries" stackId="b" fill="#fbbf24" name="expired" isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
      <figcaption className="text-right text-xs text-slate-400" data-testid="acquisitions-zone">
        times in {zoneName}
      </figcaption>
    </figure>
  );
}

/** A duration histogram with its p50, p95 and max. */
export function DistributionChart({ title, d, color }: { title: string; d: Distribution; color: string }) {
  const data = d.histogram.map((b) => ({
    label: Number.isFinite(b.leMs) ? `≤${formatDuration(b.leMs)}` : "longer",
    count: b.count,
  }));
  return (
    <div>
      <p className="mb-1 text-xs text-slate-400">
        {title}: {d.count} samples
        {d.count > 0
          ? ` · p50 ${formatDuration(d.p50!)} · p95 ${formatDuration(d.p95!)} · max ${formatDuration(d.max!)}`
          : ""}
      </p>
      <ResponsiveContainer width="100%" height={150}>
        <BarChart data={data} margin={{ top: 4, right: 8, bottom: 0, left: -20 }}>
          <CartesianGrid stroke="#1e293b" vertical={false} />
          <XAxis dataKey="label" tick={AXIS} interval={0} angle={-30} textAnchor="end" height={40} />
          <YAxis allowDecimals={false} tick={AXIS} />
          <Tooltip {...TOOLTIP} />
          <Bar dataKey="count" fill={color} isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}
