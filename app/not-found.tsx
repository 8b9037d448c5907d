import Link from "next/link";

export default function NotFound() {
  return (
    <div className="py-16 text-center">
      <p className="text-slate-300">No such page.</p>
      <Link href="/" className="text-sky-300 hover:underline">
        Back to the locks
      </Link>
    </div>
  );
}
