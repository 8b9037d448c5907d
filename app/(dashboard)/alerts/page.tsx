import { AlertsList } from "@/components/alerts/alerts-list";

export default function AlertsPage() {
  return <AlertsList />;
}
