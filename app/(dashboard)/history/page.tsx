import { Suspense } from "react";
import { TopContendedView } from "@/components/history/top-contended";

export default function HistoryPage() {
  // The window and ranking are read from the URL (useSearchParams), which needs a Suspense boundary.
  return (
    <Suspense fallback={null}>
      <TopContendedView />
    </Suspense>
  );
}
