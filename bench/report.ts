/** Renders a run's results: the console table, and the Markdown section that BENCHMARKS.md embeds. Pure. */
import type { MachineFacts } from "./support/machine";
import type { SectionResult } from "./support/result";

export interface RunReport {
  machine: MachineFacts;
  durationMs: number;
  sections: SectionResult[];
}

export const DOC_START = "<!-- bench:results:start -->";
export const DOC_END = "<!-- bench:results:end -->";

function status(s: SectionResult): string {
  if (s.status === "failed") return `FAILED: ${s.error ?? "unknown error"}`;
  if (s.status === "not-measured") return "not measured";
  return "";
}

export function machineLine(m: MachineFacts, durationMs: number): string {
  const load = [
    `${m.loadStart.toFixed(2)} at start`,
    ...(m.loadMax === undefined ? [] : [`${m.loadMax.toFixed(2)} highest`]),
    ...(m.loadEnd === undefined ? [] : [`${m.loadEnd.toFixed(2)} at end`]),
  ].join(", ");
  return [
    `nproc ${m.nproc} (${m.cpuModel})`,
    `${(m.memTotalMb / 1024).toFixed(1)} GiB RAM`,
    m.redisServer.replace(/ sha=.*$/, ""),
    m.redisCli,
    `Node ${m.node}`,
    `Linux ${m.kernel}`,
    `1-min load average ${load}`,
    `bench wall time ${(durationMs / 1000).toFixed(0)} s`,
  ].join("; ");
}

/** Load above the core count means other work competed with the bench for the CPU: the numbers say so. */
export function busyWarning(m: MachineFacts): string | null {
  const peak = Math.max(m.loadStart, m.loadMax ?? 0, m.loadEnd ?? 0);
  if (peak <= m.nproc) return null;
  return `The machine was busy: the 1-minute load average reached ${peak.toFixed(1)} on ${m.nproc} cores shared with other work, so latencies and wall times include waiting for a CPU.`;
}

export function renderConsole(r: RunReport): string {
  const lines: string[] = [];
  const w = { measure: 0, result: 0, target: 0 };
  for (const s of r.sections) {
    for (const row of s.rows) {
      w.measure = Math.max(w.measure, row.measure.length);
      w.result = Math.max(w.result, row.result.length);
      w.target = Math.max(w.target, (row.target ?? "").length);
    }
  }
  w.measure = Math.min(w.measure, 90);
  for (const s of r.sections) {
    lines.push("", `== ${s.title} ${status(s)}`.trimEnd());
    for (const row of s.rows) {
      lines.push(
        [
          row.measure.padEnd(w.measure),
          row.result.padEnd(w.result),
          (row.target ?? "").padEnd(w.target),
          row.verdict ?? "",
        ]
          .join("  ")
          .trimEnd(),
      );
    }
  }
  lines.push("", machineLine(r.machine, r.durationMs));
  const busy = busyWarning(r.machine);
  if (busy) lines.push(busy);
  return lines.join("\n");
}

const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

export function renderMarkdown(r: RunReport): string {
  const out: string[] = [
    DOC_START,
    `Last run: ${r.machine.at.slice(0, 16).replace("T", " ")} UTC. ${machineLine(r.machine, r.durationMs)}.`,
    "",
    ...(busyWarning(r.machine) ? [`**${busyWarning(r.machine)}**`, ""] : []),
    "| Measurement | Result | Target | Met? |",
    "| --- | --- | --- | --- |",
  ];
  r.sections.forEach((s, i) => {
    out.push(`| **${i + 1}. ${s.title}**${status(s) ? ` (${cell(status(s))})` : ""} | | | |`);
    for (const row of s.rows) {
      out.push(`| ${cell(row.measure)} | ${cell(row.result)} | ${cell(row.target ?? "")} | ${row.verdict ?? ""} |`);
    }
  });
  out.push("", "Notes written by the run:", "");
  r.sections.forEach((s, i) => {
    if (s.notes.length === 0) return;
    out.push(`${i + 1}. **${s.title}**`);
    for (const n of s.notes) out.push(`   - ${n}`);
  });
  out.push(DOC_END);
  return out.join("\n");
}

/** Replaces the section between the markers; the rest of the document is hand-written and kept as it is. */
export function spliceDoc(doc: string, section: string): string | null {
  const a = doc.indexOf(DOC_START);
  const b = doc.indexOf(DOC_END);
  if (a === -1 || b === -1 || b < a) return null;
  return doc.slice(0, a) + section + doc.slice(b + DOC_END.length);
}
