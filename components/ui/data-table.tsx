import type { ReactNode } from "react";

/** The bordered, scrollable table the list pages share: a header row of column names and the rows given. */
export function DataTable({
  columns,
  testId,
  children,
  empty,
}: {
  columns: readonly string[];
  testId: string;
  children: ReactNode;
  /** Shown under the header when there are no rows. */
  empty?: ReactNode;
}) {
  return (
    <div className="overflow-x-auto rounded border border-slate-800">
      <table className="w-full text-left text-sm" data-testid={testId}>
        <thead className="bg-slate-900 text-xs uppercase tracking-wide text-slate-400">
          <tr>
            {columns.map((h, i) => (
              <th key={`${h}-${i}`} className="px-3 py-2 font-medium">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-800/70">{children}</tbody>
      </table>
      {empty ? <p className="px-3 py-6 text-center text-sm text-slate-500">{empty}</p> : null}
    </div>
  );
}
