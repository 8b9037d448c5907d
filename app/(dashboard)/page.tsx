import { Suspense } from "react";
import { LocksTable } from "@/components/locks/locks-table";

export default function LocksPage() {
  // The table reads drill-down filters from the URL (useSearchParams), which needs a Suspense boundary.
  return (
    <Suspense fallback={null}>
      <LocksTable />
    </Suspense>
  );
}
