import { LockDetail } from "@/components/locks/lock-detail";

export default async function LockPage({ params }: { params: Promise<{ id: string }> }) {
  const { id } = await params;
  return <LockDetail id={id} />;
}
