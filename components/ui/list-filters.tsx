/** The filter controls the list pages share: a search box and a "hazards only" switch. */
export function SearchFilter({
  value,
  onChange,
  placeholder,
  label,
}: {
  value: string;
  onChange: (v: string) => void;
  placeholder: string;
  label: string;
}) {
  return (
    <input
      type="search"
      value={value}
      onChange={(e) => onChange(e.target.value)}
      placeholder={placeholder}
      aria-label={label}
      className="w-80 rounded border border-slate-700 bg-slate-900 px-2 py-1 text-sm placeholder:text-slate-400 focus:border-amber-400 focus:outline-none"
    />
  );
}

export function HazardsOnlyToggle({ checked, onChange }: { checked: boolean; onChange: (v: boolean) => void }) {
  return (
    <label className="flex items-center gap-1.5 text-sm text-slate-400">
      <input type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} />
      hazards only
    </label>
  );
}
