/** Everything the bench starts registers its stop here; run.ts runs them in reverse order in its finally. */

interface Step {
  what: string;
  stop: () => Promise<void> | void;
}

export class Cleanup {
  private readonly steps: Step[] = [];

  /** Registers a stop; returns a function that runs it now (and only once) instead of at the end. */
  add(what: string, stop: () => Promise<void> | void): () => Promise<void> {
    const step: Step = { what, stop };
    this.steps.push(step);
    return async () => {
      const i = this.steps.indexOf(step);
      if (i === -1) return;
      this.steps.splice(i, 1);
      await runStep(step, () => undefined);
    };
  }

  async runAll(log: (line: string) => void): Promise<void> {
    while (this.steps.length > 0) await runStep(this.steps.pop()!, log);
  }
}

/** A stop that hangs must not keep the bench alive: each gets 10 s. */
async function runStep(step: Step, log: (line: string) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(step.stop),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out after 10 s")), 10_000);
      }),
    ]);
  } catch (err) {
    log(`cleanup: stopping ${step.what} failed: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}
