import { TopContendedView } from "@/components/history/top-contended";

export default function HistoryPage() {
  return <TopContendedView />;
}
