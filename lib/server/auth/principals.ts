import { readFileSync, statSync } from "node:fs";
import { ConfigError, readString, type Env } from "../../config/env";
import { isPasswordHash } from "./passwords";

export type Role = "viewer" | "operator" | "admin";

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

export function hasRole(actual: Role, needed: Role): boolean {
  return RANK[actual] >= RANK[needed];
}

export interface User {
  name: string;
  role: Role;
  passwordHash: string;
}

export interface ApiToken {
  name: string;
  role: Role;
  token: string;
}

export interface AuthConfig {
  users: User[];
  tokens: ApiToken[];
  /** No users and no tokens were configured: a one-time admin password is generated at start. */
  generatedAdmin: boolean;
}

function parseRole(variable: string, role: string): Role {
  if (role === "viewer" || role === "operator" || role === "admin") return role;
  throw new ConfigError(variable, `role must be viewer, operator or admin, got ${JSON.stringify(role.slice(0, 20))}`);
}

const NAME = /^[A-Za-z0-9_.@-]{1,64}$/;

/**
 * API_TOKENS: `name:role:token,...`. USERS: `name:role:scrypt$...,...` (hashes from `npm run hash-password`), or
 * USERS_FILE: a JSON array of { name, role, passwordHash }. Secrets never appear in an error message.
 */
export function loadAuthConfig(env: Env): AuthConfig {
  const tokens: ApiToken[] = [];
  for (const entry of (env.API_TOKENS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name = "", role = "", ...rest] = entry.split(":");
    const token = rest.join(":");
    if (!NAME.test(name)) throw new ConfigError("API_TOKENS", `entry names no valid user (expected name:role:token)`);
    if (token.length < 16) throw new ConfigError("API_TOKENS", `token for ${name} must be at least 16 characters`);
    tokens.push({ name, role: parseRole("API_TOKENS", role), token });
  }
  const users: User[] = [];
  for (const entry of (env.USERS ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name = "", role = "", ...rest] = entry.split(":");
    const passwordHash = rest.join(":");
    if (!NAME.test(name)) throw new ConfigError("USERS", `entry names no valid user (expected name:role:scrypt$...)`);
    if (!isPasswordHash(passwordHash)) {
      throw new ConfigError(
        "USERS",
        `password for ${name} must be a hash from \`npm run hash-password\`, not a password`,
      );
    }
    users.push({ name, role: parseRole("USERS", role), passwordHash });
  }
  const file = readString(env, "USERS_FILE", "");
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, "utf8"));
    } catch (err) {
      throw new ConfigError("USERS_FILE", `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (!Array.isArray(parsed))
      throw new ConfigError("USERS_FILE", "must hold a JSON array of { name, role, passwordHash }");
    for (const u of parsed as Array<Record<string, unknown>>) {
      const name = String(u?.name ?? "");
      if (!NAME.test(name)) throw new ConfigError("USERS_FILE", "an entry has no valid name");
      const passwordHash = String(u?.passwordHash ?? "");
      if (!isPasswordHash(passwordHash))
        throw new ConfigError("USERS_FILE", `passwordHash for ${name} is not a scrypt hash`);
      users.push({ name, role: parseRole("USERS_FILE", String(u?.role ?? "")), passwordHash });
    }
  }
  const names = new Set<string>();
  for (const u of users) {
    if (names.has(u.name)) throw new ConfigError("USERS", `${u.name} is listed twice`);
    names.add(u.name);
  }
  return { users, tokens, generatedAdmin: users.length === 0 && tokens.length === 0 };
}

/**
 * USERS_FILE may be edited while the dashboard runs: `changed` says when its modification time moved (checked by
 * the authenticator about once a second), `reload` reads the whole user table again. Without USERS_FILE, the user
 * table changes only with a restart.
 */
export function usersFileReloader(env: Env): { usersChanged: () => boolean; reloadUsers: () => User[] } | null {
  const file = readString(env, "USERS_FILE", "");
  if (!file) return null;
  const stamp = () => {
    try {
      const st = statSync(file);
      return `${st.mtimeMs}:${st.size}`;
    } catch {
      return "missing";
    }
  };
  let last = stamp();
  return {
    usersChanged() {
      const now = stamp();
      if (now === last) return false;
      last = now;
      return true;
    },
    reloadUsers: () => loadAuthConfig(env).users,
  };
}
