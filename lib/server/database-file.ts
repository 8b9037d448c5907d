import { accessSync, constants, mkdirSync, statSync } from "node:fs";
import path from "node:path";

/**
 * The SQLite file behind a `file:` DATABASE_URL, resolved against the working directory (the adapter's reading),
 * or null for an in-memory database. A query string (`?connection_limit=1`) is not part of the path.
 */
export function databaseFilePath(databaseUrl: string, cwd: string): string | null {
  if (!databaseUrl.startsWith("file:")) return null;
  const file = databaseUrl.slice("file:".length).split("?")[0]!;
  if (file === "" || file === ":memory:") return null;
  return path.resolve(cwd, file);
}

/** What a look at the file system found about the database file and its folder. */
export interface DatabaseFileProbe {
  folder: string;
  file: string;
  /** The nearest existing ancestor of the folder (the folder itself when it exists). */
  existingAncestor: string;
  ancestorIsDirectory: boolean;
  ancestorWritable: boolean;
  fileExists: boolean;
  fileIsDirectory: boolean;
  fileWritable: boolean;
}

/**
 * Says in one phrase why SQLite cannot open or create the file, or null when nothing is visibly wrong. Prisma's
 * JS engine reports every such failure as "External error id#0", which tells an operator nothing.
 */
export function describeDatabaseFileProblem(p: DatabaseFileProbe): string | null {
  if (!p.ancestorIsDirectory) {
    return `${p.existingAncestor} is a file, not a folder`;
  }
  if (p.existingAncestor !== p.folder) {
    return p.ancestorWritable
      ? `the folder ${p.folder} does not exist`
      : `the folder ${p.folder} does not exist and ${p.existingAncestor} is not writable`;
  }
  if (p.fileIsDirectory) return `${p.file} is a folder, not a database file`;
  if (p.fileExists && !p.fileWritable) return `the database file ${p.file} is not writable`;
  // SQLite also writes a journal next to the file, so the folder must be writable even when the file exists.
  if (!p.ancestorWritable) return `the folder ${p.folder} is not writable`;
  return null;
}

function writable(p: string): boolean {
  try {
    accessSync(p, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Looks at the file system for describeDatabaseFileProblem. */
export function probeDatabaseFile(file: string): DatabaseFileProbe {
  const folder = path.dirname(file);
  let existingAncestor = folder;
  for (;;) {
    try {
      statSync(existingAncestor);
      break;
    } catch {
      const up = path.dirname(existingAncestor);
      if (up === existingAncestor) break;
      existingAncestor = up;
    }
  }
  let ancestorIsDirectory = false;
  try {
    ancestorIsDirectory = statSync(existingAncestor).isDirectory();
  } catch {
    // the root itself is unreadable: reported as not a folder
  }
  let fileExists = false;
  let fileIsDirectory = false;
  try {
    const s = statSync(file);
    fileExists = true;
    fileIsDirectory = s.isDirectory();
  } catch {
    // not created yet
  }
  return {
    folder,
    file,
    existingAncestor,
    ancestorIsDirectory,
    ancestorWritable: writable(existingAncestor),
    fileExists,
    fileIsDirectory,
    fileWritable: fileExists && writable(file),
  };
}

/**
 * Creates the database's folder (a fresh clone has no ./data), so the first start works. Throws an Error whose
 * message says what is wrong with the path when the folder cannot be made.
 */
export function ensureDatabaseFolder(file: string): void {
  try {
    mkdirSync(path.dirname(file), { recursive: true });
  } catch (err) {
    const why = describeDatabaseFileProblem(probeDatabaseFile(file));
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new Error(`cannot create the database folder ${path.dirname(file)}: ${why ?? code}`);
  }
}
