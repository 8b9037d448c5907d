import { ConfigError } from "../../lib/config/env";

/** Runs `fn` and returns the ConfigError it throws; fails the test when it throws nothing or something else. */
export function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
}
