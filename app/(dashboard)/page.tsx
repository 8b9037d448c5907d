import { LocksTable } from "@/components/locks/locks-table";

export default function LocksPage() {
  return <LocksTable />;
}
