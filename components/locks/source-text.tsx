import { sourceLabel } from "./source-label";

/**
 * A lock's source as host:port without the scheme: when the column is narrow the host is cut, never the port (two
 * nodes on one host differ only there). The whole source, without credentials, on hover.
 */
export function SourceText({ source }: { source: string }) {
  const l = sourceLabel(source);
  return (
    <span className="flex min-w-0 max-w-full font-mono text-xs" title={l.full} data-testid="source">
      <span className="min-w-0 truncate">{l.host}</span>
      <span className="shrink-0 whitespace-nowrap">
        {l.port}
        {l.rest}
      </span>
    </span>
  );
}
