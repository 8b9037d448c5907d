import type { Hazard } from "@/lib/contract/lock";
import { SEVERITY_CLASS } from "./format";

export function HazardBadges({ hazards }: { hazards: Hazard[] }) {
  if (hazards.length === 0) return null;
  return (
    <span className="flex flex-wrap gap-1">
      {hazards.map((h) => (
        <span
          key={h.code}
          title={h.message}
          data-testid="hazard"
          className={`rounded px-1.5 py-0.5 text-[11px] font-medium ring-1 ring-inset ${SEVERITY_CLASS[h.severity]}`}
        >
          {h.code}
        </span>
      ))}
    </span>
  );
}
