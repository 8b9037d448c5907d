import type { ReactNode } from "react";

/** A column: its name, and the sort key when the table sorts by it. */
export type Column = string | { label: string; sortKey: string };

export interface TableSort {
  key: string;
  desc: boolean;
}

/** `aria-sort` for a header: only sortable columns carry it; "none" on those not sorted now. Pure. */
export function ariaSort(column: Column, sort: TableSort | undefined): "ascending" | "descending" | "none" | undefined {
  if (typeof column === "string") return undefined;
  if (!sort || column.sortKey !== sort.key) return "none";
  return sort.desc ? "descending" : "ascending";
}

/** The next sort after a click on a sortable header: the same column flips, another starts descending. Pure. */
export function nextSort(sort: TableSort | undefined, key: string): TableSort {
  return sort?.key === key ? { key, desc: !sort.desc } : { key, desc: true };
}

/** The bordered, scrollable table the list pages share: a header row of column names and the rows given. */
export function DataTable({
  columns,
  testId,
  children,
  empty,
  sort,
  onSort,
}: {
  columns: readonly Column[];
  testId: string;
  children: ReactNode;
  /** Shown under the header when there are no rows. */
  empty?: ReactNode;
  /** The current sort, for sortable columns ({ label, sortKey }). */
  sort?: TableSort;
  onSort?: (key: string) => void;
}) {
  return (
    <div className="overflow-x-auto rounded border border-slate-800">
      <table className="w-full text-left text-sm" data-testid={testId}>
        <thead className="bg-slate-900 text-xs uppercase tracking-wide text-slate-400">
          <tr>
            {columns.map((c, i) => {
              const label = typeof c === "string" ? c : c.label;
              const state = ariaSort(c, sort);
              return (
                <th key={`${label}-${i}`} className="px-3 py-2 font-medium" aria-sort={state}>
                  {typeof c !== "string" && onSort ? (
                    <button type="button" onClick={() => onSort(c.sortKey)} className="uppercase hover:text-slate-100">
                      {label}
                      {state === "descending" ? " ▼" : state === "ascending" ? " ▲" : ""}
                    </button>
                  ) : (
                    label
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody className="divide-y divide-slate-800/70">{children}</tbody>
      </table>
      {empty ? <p className="px-3 py-6 text-center text-sm text-slate-400">{empty}</p> : null}
    </div>
  );
}
