import { FleetOverview } from "@/components/fleet/fleet-overview";

export default function FleetPage() {
  return <FleetOverview />;
}
